import { connect, type IClientOptions, type MqttClient } from 'mqtt';
import { abortable } from '@rampart/plugin-kit';
import { decodeMessage, dxlId, encodeMessage, requestMessage, type DxlMessage } from './dxl-message.ts';

/** Where the broker is and how this client proves who it is (PEM texts, not paths). */
export interface DxlConnection {
  host: string;
  port: number;
  /** CA certificates the broker's certificate must chain to. */
  ca: string;
  /** Client certificate and its private key (TLS client authentication). */
  cert?: string;
  key?: string;
  /** Optional MQTT user name and password; DXL brokers authenticate by certificate. */
  username?: string;
  password?: string;
  /** Also check the broker's certificate names the host (DXL clients check the chain only). */
  checkHostname: boolean;
  /** The DXL client id (default a fresh `{uuid}`); replies come to `/mcafee/client/<id>`. */
  clientId?: string;
  connectTimeoutMs: number;
  requestTimeoutMs: number;
}

export class DxlError extends Error {
  constructor(
    readonly code: 'DXL_CONNECT_FAILED' | 'DXL_TIMEOUT' | 'DXL_ERROR_RESPONSE' | 'DXL_DISCONNECTED',
    message: string,
    readonly errorCode?: number,
  ) {
    super(message);
    this.name = 'DxlError';
  }
}

interface Pending {
  resolve(m: DxlMessage): void;
  reject(err: Error): void;
}

export { parseBrokerAddress } from './broker-address.ts';

/**
 * A DXL client on one MQTT connection over TLS with client certificates, as the OpenDXL clients
 * connect (MQTT 3.1, `MQIsdp`, QoS 0, chain checked against the broker CA bundle). It subscribes
 * to its own reply topic `/mcafee/client/<clientId>` and matches responses to requests by
 * message id. It does not reconnect by itself: a lost connection fails the calls in flight, and
 * the next call connects again (the agent owns retries).
 */
export class DxlClient {
  readonly clientId: string;
  readonly replyTopic: string;
  #mqtt: MqttClient | undefined;
  #connecting: Promise<MqttClient> | undefined;
  /** Raised by `close`: a connection opened under an older generation is ended, not kept. */
  #generation = 0;
  readonly #pending = new Map<string, Pending>();

  constructor(private readonly opts: DxlConnection) {
    this.clientId = opts.clientId ?? dxlId();
    this.replyTopic = `/mcafee/client/${this.clientId}`;
  }

  get connected(): boolean {
    return this.#mqtt?.connected === true;
  }

  /** Connects (or returns the live connection) and subscribes to the reply topic. */
  connect(signal?: AbortSignal): Promise<MqttClient> {
    if (this.#mqtt?.connected) return Promise.resolve(this.#mqtt);
    this.#connecting ??= this.#open().finally(() => {
      this.#connecting = undefined;
    });
    return abortable(this.#connecting, signal);
  }

  async #open(): Promise<MqttClient> {
    this.#drop(new DxlError('DXL_DISCONNECTED', 'the DXL connection was replaced'));
    const generation = this.#generation;
    const o = this.opts;
    const options: IClientOptions = {
      host: o.host,
      port: o.port,
      protocol: 'mqtts',
      protocolId: 'MQIsdp',
      protocolVersion: 3,
      clientId: this.clientId,
      clean: true,
      ca: o.ca,
      ...(o.cert ? { cert: o.cert } : {}),
      ...(o.key ? { key: o.key } : {}),
      ...(o.username ? { username: o.username } : {}),
      ...(o.password ? { password: o.password } : {}),
      rejectUnauthorized: true,
      ...(o.checkHostname ? {} : { checkServerIdentity: () => undefined }),
      reconnectPeriod: 0,
      connectTimeout: o.connectTimeoutMs,
      keepalive: 30,
    };
    const client = connect(options);
    // Errors after the handshake close the connection ('close' below); none may go unhandled.
    client.on('error', () => undefined);
    try {
      await new Promise<void>((resolve, reject) => {
        const fail = (err: Error) => {
          cleanup();
          reject(new DxlError('DXL_CONNECT_FAILED', `cannot connect to the DXL broker ${o.host}:${o.port}: ${err.message}`));
        };
        const onClose = () => fail(new Error('connection closed'));
        const onConnect = () => {
          cleanup();
          resolve();
        };
        const cleanup = () => {
          client.off('error', fail);
          client.off('close', onClose);
          client.off('connect', onConnect);
        };
        client.on('error', fail);
        client.on('close', onClose);
        client.on('connect', onConnect);
      });
      await client.subscribeAsync(this.replyTopic, { qos: 0 });
      if (generation !== this.#generation) throw new DxlError('DXL_DISCONNECTED', 'the DXL client was closed while connecting');
    } catch (err) {
      client.end(true);
      throw err;
    }
    client.on('message', (_topic, frame) => this.#onMessage(frame));
    client.on('close', () => {
      if (this.#mqtt === client) this.#drop(new DxlError('DXL_DISCONNECTED', 'the DXL broker connection closed'));
    });
    this.#mqtt = client;
    return client;
  }

  #onMessage(frame: Buffer): void {
    let m: DxlMessage;
    try {
      m = decodeMessage(frame);
    } catch {
      return; // not a DXL frame: nothing waits for it
    }
    if (m.type !== 'response' && m.type !== 'error') return;
    const pending = this.#pending.get(m.requestMessageId);
    if (!pending) return;
    this.#pending.delete(m.requestMessageId);
    if (m.type === 'error') pending.reject(new DxlError('DXL_ERROR_RESPONSE', `DXL error response ${m.errorCode}: ${m.errorMessage.slice(0, 300)}`, m.errorCode));
    else pending.resolve(m);
  }

  #drop(err: Error): void {
    const old = this.#mqtt;
    this.#mqtt = undefined;
    old?.end(true);
    for (const p of this.#pending.values()) p.reject(err);
    this.#pending.clear();
  }

  /**
   * Sends a request with `payload` to `topic` and resolves with the response; an error response
   * rejects with DXL_ERROR_RESPONSE, no answer within the request timeout with DXL_TIMEOUT.
   */
  async request(topic: string, payload: Buffer, signal?: AbortSignal): Promise<DxlMessage & { type: 'response' }> {
    const client = await this.connect(signal);
    signal?.throwIfAborted();
    const message = requestMessage(payload, this.replyTopic, { sourceClientId: this.clientId });
    const answer = new Promise<DxlMessage>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#pending.delete(message.messageId);
        reject(new DxlError('DXL_TIMEOUT', `no DXL response on ${topic} within ${this.opts.requestTimeoutMs} ms`));
      }, this.opts.requestTimeoutMs);
      const settle = <T>(f: (v: T) => void) => (v: T) => {
        clearTimeout(timer);
        f(v);
      };
      this.#pending.set(message.messageId, { resolve: settle(resolve), reject: settle(reject) });
    });
    try {
      await client.publishAsync(topic, encodeMessage(message), { qos: 0 });
      return (await abortable(answer, signal)) as DxlMessage & { type: 'response' };
    } catch (err) {
      const pending = this.#pending.get(message.messageId);
      this.#pending.delete(message.messageId);
      pending?.reject(err as Error);
      answer.catch(() => undefined);
      throw err;
    }
  }

  /** Ends the connection (also one still being opened) and fails the calls in flight. A later call connects again. */
  async close(): Promise<void> {
    this.#generation += 1;
    this.#drop(new DxlError('DXL_DISCONNECTED', 'the DXL client was closed'));
  }
}

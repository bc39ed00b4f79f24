import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import WebSocket from 'ws';
import { backoffDelay } from '@rampart/client';
import { SyncDecisionChanged, SyncFeedChanged, SyncHello, SyncPing, SyncPong, SyncSettingsChanged, type AgentSyncMessage } from '@rampart/contracts';
import type { PluginLogger } from '@rampart/plugin-kit';
import type { z } from 'zod';

export interface ChannelHandlers {
  hello(message: z.infer<typeof SyncHello>): void;
  settingsChanged(message: z.infer<typeof SyncSettingsChanged>): void;
  decisionChanged(message: z.infer<typeof SyncDecisionChanged>): void;
  feedChanged(message: z.infer<typeof SyncFeedChanged>): void;
  /** The agent's state for a `state` message. */
  state(): Omit<Extract<AgentSyncMessage, { type: 'state' }>, 'type' | 'hostname'>;
}

export interface ChannelOptions {
  url: string;
  headers: () => Record<string, string>;
  log: PluginLogger;
  handlers: ChannelHandlers;
  heartbeatMs?: number;
}

const PARSERS = { hello: SyncHello, settings_changed: SyncSettingsChanged, decision_changed: SyncDecisionChanged, feed_changed: SyncFeedChanged, ping: SyncPing, pong: SyncPong } as const;

/**
 * The live sync channel (`GET /api/v1/agents/sync`): receives pushes, answers pings, pings the
 * server and reconnects with jittered back-off. Messages of unknown types are ignored (a newer
 * server may send more). Missing a push is harmless: the scheduled pulls catch up from the cursor.
 */
export class SyncChannel {
  private socket: WebSocket | undefined;
  private attempt = 0;
  private stopped = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private awaitingPong: string | undefined;
  connected = false;

  constructor(private readonly options: ChannelOptions) {}

  start(): void {
    this.stopped = false;
    this.connect();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    clearInterval(this.heartbeat);
    this.socket?.close(1000, 'agent stopping');
    this.socket?.terminate();
  }

  /** Sends the agent's enforcement state (also a check-in). */
  sendState(): void {
    const s = this.options.handlers.state();
    this.send({ type: 'state', hostname: hostname(), ...s });
  }

  private send(message: AgentSyncMessage): void {
    if (this.socket?.readyState === WebSocket.OPEN) this.socket.send(JSON.stringify(message));
  }

  private connect(): void {
    if (this.stopped) return;
    const { log } = this.options;
    const socket = new WebSocket(this.options.url, { headers: this.options.headers(), handshakeTimeout: 10_000, maxPayload: 64 * 1024 * 1024 });
    this.socket = socket;
    socket.on('open', () => {
      this.attempt = 0;
      this.connected = true;
      log.info({ url: this.options.url }, 'sync channel connected');
      this.startHeartbeat();
      this.sendState();
    });
    socket.on('message', (data, isBinary) => {
      if (isBinary) return;
      this.onMessage(data.toString());
    });
    socket.on('unexpected-response', (_req, res) => {
      log.warn({ status: res.statusCode }, 'sync channel refused');
      socket.terminate();
    });
    socket.on('error', (err) => log.debug({ err }, 'sync channel error'));
    socket.on('close', (code) => {
      this.connected = false;
      clearInterval(this.heartbeat);
      if (this.stopped) return;
      const delay = backoffDelay(this.attempt++, { baseMs: 1000, maxMs: 60_000 });
      log.info({ code, retryInMs: delay }, 'sync channel closed; reconnecting');
      this.reconnectTimer = setTimeout(() => this.connect(), delay);
      this.reconnectTimer.unref();
    });
  }

  private startHeartbeat(): void {
    clearInterval(this.heartbeat);
    const every = this.options.heartbeatMs ?? 30_000;
    this.heartbeat = setInterval(() => {
      if (this.awaitingPong) {
        // No answer to the last ping within a whole period: the connection is dead.
        this.options.log.warn({}, 'sync channel heartbeat lost');
        this.awaitingPong = undefined;
        this.socket?.terminate();
        return;
      }
      this.awaitingPong = randomBytes(8).toString('hex');
      this.send({ type: 'ping', nonce: this.awaitingPong });
    }, every);
    this.heartbeat.unref();
  }

  private onMessage(text: string): void {
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      return;
    }
    const type = (raw as { type?: unknown })?.type;
    if (typeof type !== 'string' || !Object.hasOwn(PARSERS, type)) return;
    const parsed = PARSERS[type as keyof typeof PARSERS].safeParse(raw);
    if (!parsed.success) {
      this.options.log.warn({ type, issues: parsed.error.issues.slice(0, 5) }, 'sync message does not match its contract; ignored');
      return;
    }
    const message = parsed.data;
    const h = this.options.handlers;
    try {
      switch (message.type) {
        case 'hello':
          h.hello(message);
          break;
        case 'settings_changed':
          h.settingsChanged(message);
          break;
        case 'decision_changed':
          h.decisionChanged(message);
          break;
        case 'feed_changed':
          h.feedChanged(message);
          break;
        case 'ping':
          this.send({ type: 'pong', nonce: message.nonce });
          break;
        case 'pong':
          if (message.nonce === this.awaitingPong) this.awaitingPong = undefined;
          break;
      }
    } catch (err) {
      this.options.log.error({ err, type }, 'sync message handler failed');
    }
  }
}

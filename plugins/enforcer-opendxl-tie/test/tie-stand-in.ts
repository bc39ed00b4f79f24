import { readFile } from 'node:fs/promises';
import { connectAsync, type MqttClient } from 'mqtt';
import { decodeMessage, digestOf, encodeMessage, ENTERPRISE_PROVIDER, errorTo, responseTo, TIE_GET_FILE_REPUTATION, TIE_SET_FILE_REPUTATION, type DxlMessage, type TieHash } from '../src/index.ts';
import type { TestPki } from './tls-broker.ts';

/*
 * A stand-in TIE server on the test broker. What it models, from the public OpenDXL TIE
 * clients and the OpenDXL "fake McAfee services": requests arrive as DXL request frames on
 * `/mcafee/service/tie/file/reputation` (get) and `/mcafee/service/tie/file/reputation/set`,
 * with JSON payloads whose `hashes` are `{type, value(base64)}`; the answer is a DXL response
 * frame on the request's reply-to topic (an error response for a bad request), and a get answers
 * `{props, reputations: [{providerId, trustLevel, createDate, attributes}]}` with the GTI (1)
 * and enterprise (3) providers. What it does not model: the broker's service registry (it
 * subscribes to the topics directly; mosquitto routes by subscription), authorisation of the
 * set call ("TIE Server Set Enterprise Reputation"), and what TIE does with the set reply body
 * (`{}` here).
 */

export interface StoredReputation {
  trustLevel: number;
  filename: string;
  comment: string;
}

export interface TieStandIn {
  /** Enterprise reputations held, by canonical digest (trust level 0 removes the entry). */
  readonly store: Map<string, StoredReputation>;
  /** Requests answered, by topic. */
  readonly counts: { get: number; set: number; refused: number };
  /** Set requests for these digests are answered with an error response. */
  readonly refuse: Set<string>;
  /** The digests held at `trustLevel`, sorted. */
  at(trustLevel: number): string[];
  stop(): Promise<void>;
}

interface Body {
  hashes?: TieHash[];
  trustLevel?: unknown;
  providerId?: unknown;
  filename?: unknown;
  comment?: unknown;
}

const VALID_LENGTHS: Record<string, number> = { md5: 16, sha1: 20, sha256: 32 };

/** The canonical digest a request names, or a reason it is refused. */
function digestIn(body: Body): string | { error: string } {
  if (!Array.isArray(body.hashes) || body.hashes.length === 0) return { error: 'hashes missing' };
  const [hash] = body.hashes;
  if (typeof hash?.type !== 'string' || typeof hash.value !== 'string') return { error: 'hash without type or value' };
  if (Buffer.from(hash.value, 'base64').length !== VALID_LENGTHS[hash.type]) return { error: `bad ${hash.type} value` };
  return `${hash.type}:${digestOf(hash)}`;
}

export async function startTieStandIn(pki: TestPki, port: number): Promise<TieStandIn> {
  const client: MqttClient = await connectAsync({
    host: '127.0.0.1',
    port,
    protocol: 'mqtts',
    protocolId: 'MQIsdp',
    protocolVersion: 3,
    clientId: '{tie-stand-in}',
    ca: await readFile(pki.caFile, 'utf8'),
    cert: await readFile(pki.service.cert, 'utf8'),
    key: await readFile(pki.service.key, 'utf8'),
    rejectUnauthorized: true,
    reconnectPeriod: 0,
  });
  const store = new Map<string, StoredReputation>();
  const counts = { get: 0, set: 0, refused: 0 };
  const refuse = new Set<string>();

  const reply = (request: DxlMessage & { type: 'request' }, answer: DxlMessage) => client.publish(request.replyToTopic, encodeMessage(answer));
  const refused = (request: DxlMessage & { type: 'request' }, message: string) => {
    counts.refused += 1;
    reply(request, errorTo(request, 0, message));
  };

  client.on('message', (topic, frame) => {
    const request = decodeMessage(frame);
    if (request.type !== 'request') return;
    let body: Body;
    try {
      body = JSON.parse(request.payload.toString('utf8')) as Body;
    } catch {
      return refused(request, 'payload is not JSON');
    }
    const key = digestIn(body);
    if (typeof key !== 'string') return refused(request, key.error);
    const digest = key.slice(key.indexOf(':') + 1);
    if (topic === TIE_SET_FILE_REPUTATION) {
      if (body.providerId !== ENTERPRISE_PROVIDER) return refused(request, 'only the enterprise provider can be set');
      if (typeof body.trustLevel !== 'number' || ![0, 1, 15, 30, 50, 70, 85, 99, 100].includes(body.trustLevel)) return refused(request, 'bad trust level');
      if (refuse.has(digest)) return refused(request, 'refused by the test');
      counts.set += 1;
      if (body.trustLevel === 0) store.delete(digest);
      else store.set(digest, { trustLevel: body.trustLevel, filename: String(body.filename ?? ''), comment: String(body.comment ?? '') });
      return reply(request, responseTo(request, Buffer.from('{}')));
    }
    counts.get += 1;
    const held = store.get(digest);
    const now = Math.floor(Date.now() / 1000);
    const reputations = [
      { providerId: 1, trustLevel: 0, createDate: now, attributes: { '2120340': '2139160704' } },
      { providerId: ENTERPRISE_PROVIDER, trustLevel: held?.trustLevel ?? 0, createDate: now, attributes: { '2101652': '17' } },
    ];
    reply(request, responseTo(request, Buffer.from(JSON.stringify({ props: { serverTime: now, submitMetaData: 1 }, reputations }))));
  });
  await client.subscribeAsync([TIE_GET_FILE_REPUTATION, TIE_SET_FILE_REPUTATION], { qos: 0 });

  return {
    store,
    counts,
    refuse,
    at: (trustLevel) => [...store].filter(([, r]) => r.trustLevel === trustLevel).map(([d]) => d).sort(),
    async stop() {
      await client.endAsync(true);
    },
  };
}

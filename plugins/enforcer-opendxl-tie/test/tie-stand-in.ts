import { readFile } from 'node:fs/promises';
import { waitFor } from '@rampart/plugin-kit/testing';
import { DxlClient, digestOf, ENTERPRISE_PROVIDER, TIE_GET_FILE_REPUTATION, TIE_SET_FILE_REPUTATION, TieFiles, type TieHash } from '../src/index.ts';
import { dxl, type RefRequest } from './reference-dxl.ts';
import type { TestPki } from './tls-broker.ts';

/*
 * A stand-in TIE server on the test broker, speaking DXL through the official OpenDXL client.
 * What it models, from the public OpenDXL TIE clients and the OpenDXL "fake McAfee services":
 * requests on `/mcafee/service/tie/file/reputation` (get) and `.../reputation/set`, JSON payloads
 * whose `hashes` are `{type, value(base64)}`; a response on the request's reply-to topic (an
 * error response for a bad request); a get answers `{props, reputations: [{providerId,
 * trustLevel, createDate, attributes}]}` with the GTI (1) and enterprise (3) providers; setting
 * NOT_SET (0) removes the enterprise reputation. What it does not model: the broker's service
 * registry (it subscribes to the topics directly; mosquitto routes by subscription), the
 * authorisation of the set call ("TIE Server Set Enterprise Reputation"), and the body TIE
 * answers a set with (`{}` here).
 */

export interface StoredReputation {
  trustLevel: number;
  filename: string;
  comment: string;
}

export interface TieStandIn {
  /** Enterprise reputations held, by canonical digest. */
  readonly store: Map<string, StoredReputation>;
  /** Requests answered, by kind. */
  readonly counts: { get: number; set: number; refused: number };
  /** Set requests accepted, in order (a NOT_SET leaves no reputation in `store`, but shows here). */
  readonly sets: { digest: string; trustLevel: number }[];
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

const DIGEST_BYTES: Record<string, number> = { md5: 16, sha1: 20, sha256: 32 };
const TRUST_LEVELS = [0, 1, 15, 30, 50, 70, 85, 99, 100];

/** The canonical digest a request names, or why it is refused. */
function digestIn(body: Body): string | { error: string } {
  if (!Array.isArray(body.hashes) || body.hashes.length !== 1) return { error: 'expected the hashes of one file' };
  const [hash] = body.hashes;
  if (typeof hash?.type !== 'string' || typeof hash.value !== 'string') return { error: 'hash without type or value' };
  if (Buffer.from(hash.value, 'base64').length !== DIGEST_BYTES[hash.type]) return { error: `bad ${hash.type} value` };
  return digestOf(hash);
}

export async function startTieStandIn(pki: TestPki, port: number): Promise<TieStandIn> {
  const [ca, cert, key] = await Promise.all([readFile(pki.caFile, 'utf8'), readFile(pki.service.cert, 'utf8'), readFile(pki.service.key, 'utf8')]);
  const client = new dxl.Client(new dxl.Config(ca, cert, key, [dxl.Broker.parse(`ssl://127.0.0.1:${port}`)]));
  client.on('error', () => undefined);
  const store = new Map<string, StoredReputation>();
  const counts = { get: 0, set: 0, refused: 0 };
  const refuse = new Set<string>();
  const sets: { digest: string; trustLevel: number }[] = [];

  const refused = (request: RefRequest, message: string) => {
    counts.refused += 1;
    client.sendResponse(new dxl.ErrorResponse(request, 0, message));
  };
  const answer = (request: RefRequest, body: unknown) => {
    const response = new dxl.Response(request);
    response.payload = Buffer.from(JSON.stringify(body), 'utf8');
    client.sendResponse(response);
  };
  const parse = (request: RefRequest): Body | undefined => {
    try {
      return JSON.parse(Buffer.from(request.payload).toString('utf8')) as Body;
    } catch {
      refused(request, 'payload is not JSON');
      return undefined;
    }
  };

  client.addRequestCallback(TIE_SET_FILE_REPUTATION, (request) => {
    const body = parse(request);
    if (!body) return;
    const digest = digestIn(body);
    if (typeof digest !== 'string') return refused(request, digest.error);
    if (body.providerId !== ENTERPRISE_PROVIDER) return refused(request, 'only the enterprise provider can be set');
    if (typeof body.trustLevel !== 'number' || !TRUST_LEVELS.includes(body.trustLevel)) return refused(request, 'bad trust level');
    if (refuse.has(digest)) return refused(request, 'refused by the test');
    counts.set += 1;
    sets.push({ digest, trustLevel: body.trustLevel });
    if (body.trustLevel === 0) store.delete(digest);
    else store.set(digest, { trustLevel: body.trustLevel, filename: typeof body.filename === 'string' ? body.filename : '', comment: typeof body.comment === 'string' ? body.comment : '' });
    answer(request, {});
  });
  client.addRequestCallback(TIE_GET_FILE_REPUTATION, (request) => {
    const body = parse(request);
    if (!body) return;
    const digest = digestIn(body);
    if (typeof digest !== 'string') return refused(request, digest.error);
    counts.get += 1;
    const now = Math.floor(Date.now() / 1000);
    answer(request, {
      props: { serverTime: now, submitMetaData: 1 },
      reputations: [
        { providerId: 1, trustLevel: 0, createDate: now, attributes: { '2120340': '2139160704' } },
        { providerId: ENTERPRISE_PROVIDER, trustLevel: store.get(digest)?.trustLevel ?? 0, createDate: now, attributes: { '2101652': '17' } },
      ],
    });
  });
  await new Promise<void>((resolve) => client.connect(resolve));

  // Subscriptions are sent without waiting for the broker's acknowledgement: ready once a get is answered.
  const probe = new DxlClient({ host: '127.0.0.1', port, ca, cert, key, checkHostname: false, connectTimeoutMs: 10_000, requestTimeoutMs: 250 });
  try {
    await waitFor(async () => (await new TieFiles(probe).enterpriseTrustLevel('0'.repeat(32))) === 0, 'the stand-in TIE service to answer');
  } finally {
    await probe.close();
  }
  counts.get = 0;

  return {
    store,
    counts,
    sets,
    refuse,
    at: (trustLevel) => [...store].filter(([, r]) => r.trustLevel === trustLevel).map(([d]) => d).sort(),
    stop: () => new Promise<void>((resolve) => client.destroy(() => resolve())),
  };
}

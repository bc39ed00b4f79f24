import type { DxlClient } from './dxl-client.ts';

/*
 * TIE (Threat Intelligence Exchange) file reputations over DXL, as the public OpenDXL TIE
 * clients call them: JSON payloads on the service topics below, digests as
 * `{ type: 'md5'|'sha1'|'sha256', value: <base64 of the raw digest> }`.
 */

export const TIE_GET_FILE_REPUTATION = '/mcafee/service/tie/file/reputation';
export const TIE_SET_FILE_REPUTATION = '/mcafee/service/tie/file/reputation/set';

/** TIE trust levels (the OpenDXL TIE clients' TrustLevel). */
export const TrustLevel = {
  known_trusted_installer: 100,
  known_trusted: 99,
  most_likely_trusted: 85,
  might_be_trusted: 70,
  unknown: 50,
  might_be_malicious: 30,
  most_likely_malicious: 15,
  known_malicious: 1,
  not_set: 0,
} as const;
export type TrustLevelName = keyof typeof TrustLevel;

/** The provider whose reputation a set request writes and `enterpriseTrustLevel` reads. */
export const ENTERPRISE_PROVIDER = 3;

export type HashType = 'md5' | 'sha1' | 'sha256';

/** The hash type of a canonical (upper-case hex) digest, by its length. */
export function hashTypeOf(digest: string): HashType {
  if (digest.length === 32) return 'md5';
  if (digest.length === 40) return 'sha1';
  if (digest.length === 64) return 'sha256';
  throw new Error(`not an MD5, SHA-1 or SHA-256 digest: ${digest.slice(0, 80)}`);
}

export interface TieHash {
  type: string;
  value: string;
}

/** `{ type, value }` of a hex digest, the value in base64 as TIE takes it. */
export function tieHash(digest: string): TieHash {
  return { type: hashTypeOf(digest), value: Buffer.from(digest, 'hex').toString('base64') };
}

/** The canonical digest (upper-case hex) of a TIE hash entry. */
export function digestOf(hash: TieHash): string {
  return Buffer.from(hash.value, 'base64').toString('hex').toUpperCase();
}

export interface SetReputation {
  trustLevel: number;
  filename: string;
  comment: string;
}

export class TieError extends Error {
  readonly code = 'TIE_BAD_RESPONSE';
  constructor(message: string) {
    super(message);
    this.name = 'TieError';
  }
}

/** The TIE file reputation service as this enforcer uses it: one file (digest) per request. */
export class TieFiles {
  constructor(private readonly dxl: DxlClient) {}

  /** Sets the enterprise reputation of the file with this digest. */
  async set(digest: string, r: SetReputation, signal?: AbortSignal): Promise<void> {
    const body = { trustLevel: r.trustLevel, providerId: ENTERPRISE_PROVIDER, filename: r.filename, comment: r.comment, hashes: [tieHash(digest)] };
    await this.dxl.request(TIE_SET_FILE_REPUTATION, Buffer.from(JSON.stringify(body), 'utf8'), signal);
  }

  /** The enterprise trust level TIE holds for this digest (0, NOT_SET, when it holds none). */
  async enterpriseTrustLevel(digest: string, signal?: AbortSignal): Promise<number> {
    const body = { hashes: [tieHash(digest)] };
    const response = await this.dxl.request(TIE_GET_FILE_REPUTATION, Buffer.from(JSON.stringify(body), 'utf8'), signal);
    let parsed: unknown;
    try {
      parsed = JSON.parse(response.payload.toString('utf8'));
    } catch {
      throw new TieError('TIE answered a reputation request with a payload that is not JSON');
    }
    const reputations = (parsed as { reputations?: unknown }).reputations;
    if (!Array.isArray(reputations)) throw new TieError('TIE answered a reputation request without a reputations array');
    const enterprise = reputations.find((r: unknown) => (r as { providerId?: unknown })?.providerId === ENTERPRISE_PROVIDER) as { trustLevel?: unknown } | undefined;
    const level = enterprise?.trustLevel;
    return typeof level === 'number' ? level : TrustLevel.not_set;
  }
}

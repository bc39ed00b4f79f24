import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * API keys look like `rmp_<key_id>_<secret>`: key_id (12 hex chars) is public and indexes the
 * row; secret is 32 random bytes in base64url. Only sha256(secret) is stored: the secret has
 * 256 bits of entropy, so a slow password hash would add latency and no safety.
 */
const KEY_PATTERN = /^rmp_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$/;

export interface NewKey {
  keyId: string;
  secretHash: string;
  /** The whole key, to be shown once and never stored. */
  plaintext: string;
}

export function generateApiKey(): NewKey {
  const keyId = randomBytes(6).toString('hex');
  const secret = randomBytes(32).toString('base64url');
  return { keyId, secretHash: hashSecret(secret), plaintext: `rmp_${keyId}_${secret}` };
}

export function parseApiKey(value: string): { keyId: string; secret: string } | undefined {
  const m = KEY_PATTERN.exec(value);
  return m ? { keyId: m[1]!, secret: m[2]! } : undefined;
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

export function secretMatches(secret: string, storedHash: string): boolean {
  const a = Buffer.from(hashSecret(secret), 'hex');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The credential from `Authorization: <key>`, `Authorization: Bearer <key>` or HTTP Basic with
 * the key as password (`Basic base64(user:key)`, the way TAXII clients and TIPs connect; the user
 * name is not read, and a key given as user name with an empty password is taken too).
 */
export function credentialFrom(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const value = header.trim();
  const basic = /^basic\s+([A-Za-z0-9+/=]+)$/i.exec(value);
  if (basic) {
    const pair = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = pair.indexOf(':');
    if (colon < 0) return undefined;
    return pair.slice(colon + 1) || pair.slice(0, colon) || undefined;
  }
  const bearer = /^bearer\s+(.+)$/i.exec(value);
  return (bearer ? bearer[1]! : value).trim() || undefined;
}

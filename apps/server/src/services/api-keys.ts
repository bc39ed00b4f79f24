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

/** The credential from `Authorization: <key>` or `Authorization: Bearer <key>`. */
export function credentialFrom(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const value = header.trim();
  const bearer = /^bearer\s+(.+)$/i.exec(value);
  return (bearer ? bearer[1]! : value).trim() || undefined;
}

import { SignJWT, jwtVerify } from 'jose';

/*
 * The bearer token a CrowdSec watcher gets from `v1/watchers/login`: an HS256 JWT signed with
 * the agent key secret, for a distinct audience (so it is never taken for an agent key, nor an
 * agent key for it), naming the agent key it was exchanged for (`jti`), its agent (`sub`) and
 * organization (`org`). Each request checks that key again: revoking it or deactivating the
 * agent ends the watcher's token at once, not when it expires.
 */

const ISSUER = 'rampart';
const AUDIENCE = 'rampart-crowdsec-watcher';
/** How long a watcher token lasts; the agent logs in again when it expires (LAPI's default is an hour too). */
export const WATCHER_TOKEN_SECONDS = 3600;

export interface WatcherClaims {
  /** The agent key's token id. */
  jti: string;
  gaid: string;
  org: string;
}

export interface WatcherTokenCodec {
  sign(claims: WatcherClaims, nowSeconds: number): Promise<{ token: string; expiresAt: number }>;
  verify(token: string): Promise<WatcherClaims | undefined>;
}

export function watcherTokenCodec(secret: string): WatcherTokenCodec {
  const key = new TextEncoder().encode(secret);
  return {
    async sign(claims, nowSeconds) {
      const expiresAt = nowSeconds + WATCHER_TOKEN_SECONDS;
      const token = await new SignJWT({ org: claims.org })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuer(ISSUER)
        .setAudience(AUDIENCE)
        .setSubject(claims.gaid)
        .setJti(claims.jti)
        .setIssuedAt(nowSeconds)
        .setExpirationTime(expiresAt)
        .sign(key);
      return { token, expiresAt };
    },
    async verify(token) {
      try {
        const { payload } = await jwtVerify(token, key, { issuer: ISSUER, audience: AUDIENCE, algorithms: ['HS256'] });
        if (typeof payload.jti !== 'string' || typeof payload.sub !== 'string' || typeof payload.org !== 'string') return undefined;
        return { jti: payload.jti, gaid: payload.sub, org: payload.org };
      } catch {
        return undefined;
      }
    },
  };
}

/** RFC 3339 without fractions, as LAPI writes `expire` (the agent parses it with Go's time). */
export function rfc3339(epochSeconds: number): string {
  return new Date(epochSeconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

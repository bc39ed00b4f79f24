import { agentJwt, type AgentJwtClaims } from '../agents/jwt.ts';

/*
 * The bearer token a CrowdSec watcher gets from `v1/watchers/login`: an HS256 JWT signed with
 * the agent key secret, for a distinct audience (so it is never taken for an agent key, nor an
 * agent key for it), naming the agent key it was exchanged for (`jti`), its agent (`sub`) and
 * organization (`org`). Each request checks that key again: revoking it or deactivating the
 * agent ends the watcher's token at once, not when it expires.
 */

const AUDIENCE = 'rampart-crowdsec-watcher';
/** How long a watcher token lasts; the agent logs in again when it expires (LAPI's default is an hour too). */
export const WATCHER_TOKEN_SECONDS = 3600;

export type WatcherClaims = AgentJwtClaims;

export interface WatcherTokenCodec {
  sign(claims: WatcherClaims, nowSeconds: number): Promise<{ token: string; expiresAt: number }>;
  verify(token: string): Promise<WatcherClaims | undefined>;
}

export function watcherTokenCodec(secret: string): WatcherTokenCodec {
  const jwt = agentJwt(secret, AUDIENCE);
  return {
    async sign(claims, nowSeconds) {
      const expiresAt = nowSeconds + WATCHER_TOKEN_SECONDS;
      return { token: await jwt.sign(claims, { issuedAt: nowSeconds, expiresAt }), expiresAt };
    },
    verify: (token) => jwt.verify(token),
  };
}

/** RFC 3339 without fractions, as LAPI writes `expire` (the agent parses it with Go's time). */
export function rfc3339(epochSeconds: number): string {
  return new Date(epochSeconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

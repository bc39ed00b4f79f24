import { SignJWT, jwtVerify } from 'jose';

/*
 * The one shape of the server's own HS256 JWTs: `sub` = gaid, `org` = organization gid, `jti` =
 * the agent key's token id, issuer `rampart`. Agent keys and CrowdSec watcher tokens differ only
 * in their audience (so one is never taken for the other) and in how long they last.
 */

const ISSUER = 'rampart';

export interface AgentJwtClaims {
  jti: string;
  gaid: string;
  org: string;
}

export interface AgentJwt {
  /** `issuedAt` defaults to now; `expiresAt` null = no expiry (epoch seconds). */
  sign(claims: AgentJwtClaims, times: { issuedAt?: number; expiresAt: number | null }): Promise<string>;
  /** The claims of a token signed with this secret for this audience and not expired; undefined otherwise. */
  verify(token: string): Promise<AgentJwtClaims | undefined>;
}

export function agentJwt(secret: string, audience: string): AgentJwt {
  const key = new TextEncoder().encode(secret);
  return {
    async sign(claims, times) {
      const jwt = new SignJWT({ org: claims.org })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setIssuer(ISSUER)
        .setAudience(audience)
        .setSubject(claims.gaid)
        .setJti(claims.jti)
        .setIssuedAt(times.issuedAt);
      if (times.expiresAt !== null) jwt.setExpirationTime(times.expiresAt);
      return jwt.sign(key);
    },
    async verify(token) {
      try {
        const { payload } = await jwtVerify(token, key, { issuer: ISSUER, audience, algorithms: ['HS256'] });
        if (typeof payload.jti !== 'string' || typeof payload.sub !== 'string' || typeof payload.org !== 'string') return undefined;
        return { jti: payload.jti, gaid: payload.sub, org: payload.org };
      } catch {
        return undefined;
      }
    },
  };
}

import { randomBytes } from 'node:crypto';
import { ApiError, DEFAULT_AUTH_HEADER, ROLE, type AgentTokenIssued } from '@rampart/contracts';
import type { Organization, Store, UserRow } from '../../store/index.ts';
import { agentJwt, type AgentJwtClaims } from './jwt.ts';

/*
 * Agent keys (`api_jwt_key`) are HS256 JWTs: `sub` = gaid, `org` = organization gid, `jti` =
 * the token id recorded in agent_tokens. The signature proves the server issued it; the row
 * decides whether it still counts (revocation, agent deactivation, expiry). Every replica on
 * one database signs with the same key (env AGENT_TOKEN_SECRET, else a stored random secret).
 */

const AUDIENCE = 'rampart-agent';
const JWT_SHAPE = /^[A-Za-z0-9_-]{2,4096}\.[A-Za-z0-9_-]{2,4096}\.[A-Za-z0-9_-]{2,1024}$/;

export type AgentTokenClaims = AgentJwtClaims;

export interface AgentTokenCodec {
  sign(claims: AgentTokenClaims, expiresAt: number | null): Promise<string>;
  /** The claims of a token this server signed and that has not expired; undefined otherwise. */
  verify(token: string): Promise<AgentTokenClaims | undefined>;
}

/** Whether a credential has the shape of a JWT (API keys never do). */
export function looksLikeJwt(value: string): boolean {
  return JWT_SHAPE.test(value);
}

export function agentTokenCodec(secret: string): AgentTokenCodec {
  const jwt = agentJwt(secret, AUDIENCE);
  return { sign: (claims, expiresAt) => jwt.sign(claims, { expiresAt }), verify: (token) => jwt.verify(token) };
}

/** The signing secret: the configured one, else one made once and kept in the store. */
export async function agentTokenSecret(configured: string | undefined, store: Store): Promise<string> {
  return configured ?? (await store.secrets.get('agent_token'));
}

/**
 * Issues a key for an agent of the issuer's organization (API route and CLI). The token is
 * returned once; only its id is stored.
 */
export async function issueAgentToken(
  store: Store,
  codec: AgentTokenCodec,
  input: { org: Organization; issuer: UserRow; gaid: string; ttlDays?: number | undefined },
): Promise<AgentTokenIssued> {
  if (input.issuer.role < ROLE.admin || input.issuer.org_id !== input.org.id) {
    throw new ApiError('forbidden', 'only an admin of the organization issues agent keys');
  }
  const agent = await store.agents.get(input.org.id, input.gaid);
  if (!agent) throw new ApiError('not_found', `no agent ${input.gaid} in this organization`);
  if (agent.deactivated_at !== null) throw new ApiError('conflict', `agent ${input.gaid} is deactivated`);
  const jti = randomBytes(16).toString('base64url');
  const expiresAt = input.ttlDays ? Math.floor(Date.now() / 1000) + input.ttlDays * 86_400 : null;
  await store.agents.recordToken({ jti, agentId: agent.id, issuedBy: input.issuer.id, expiresAt });
  const token = await codec.sign({ jti, gaid: agent.gaid, org: input.org.gid }, expiresAt);
  return { token, token_id: jti, gaid: agent.gaid, org: input.org.gid, header: agent.document.auth_name || DEFAULT_AUTH_HEADER, expires_at: expiresAt };
}

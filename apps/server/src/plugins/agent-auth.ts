import type { FastifyRequest } from 'fastify';
import { ApiError, DEFAULT_AUTH_HEADER, ROLE } from '@rampart/contracts';
import type { Store } from '../store/index.ts';
import { credentialFrom } from '../services/operators/api-keys.ts';
import { looksLikeJwt, type AgentTokenCodec } from '../services/agents/tokens.ts';
import type { Principal } from './principal.ts';

export interface AgentKey {
  token: string;
  /** Lower-case name of the header it came in. */
  header: string;
}

/** Headers that never carry an agent key, skipped when looking for the agent's `auth_name` header. */
const NOT_KEY_HEADERS = new Set(['cookie', 'host', 'user-agent', 'content-type', 'content-length', 'accept', 'connection', 'upgrade']);
const MAX_HEADERS_SCANNED = 64;

/**
 * The agent key of a request, if it carries one: in Authorization (alone or after Bearer), or,
 * when there is no Authorization header, in whichever header holds a JWT (an agent whose
 * `auth_name` names another header). An API key in Authorization always means a user.
 */
export function agentCredential(request: FastifyRequest): AgentKey | undefined {
  const auth = credentialFrom(request.headers.authorization);
  if (auth) return looksLikeJwt(auth) ? { token: auth, header: 'authorization' } : undefined;
  let scanned = 0;
  for (const [name, value] of Object.entries(request.headers)) {
    if (++scanned > MAX_HEADERS_SCANNED) break;
    if (typeof value !== 'string' || NOT_KEY_HEADERS.has(name)) continue;
    const credential = credentialFrom(value);
    if (credential && looksLikeJwt(credential)) return { token: credential, header: name };
  }
  return undefined;
}

export interface AgentVerifier {
  store: Store;
  codec: AgentTokenCodec;
  cache: Map<string, { principal: Principal; until: number }>;
  cacheSeconds: number;
}

/**
 * The principal of an agent token id (`jti`) whose token claimed `gaid` in organization `orgGid`,
 * when that token, its agent and its issuer are all still valid.
 */
export async function agentPrincipal(store: Store, claims: { jti: string; gaid: string; org: string }): Promise<Principal | undefined> {
  const found = await store.agents.tokenPrincipal(claims.jti);
  if (!found || found.gaid !== claims.gaid || found.org.gid !== claims.org) return undefined;
  return {
    kind: 'agent',
    keyId: claims.jti,
    user: { ...found.issuer, role: Math.min(found.issuer.role, ROLE.contributor) },
    org: found.org,
    agent: { id: found.agentId, gaid: found.gaid, tokenId: claims.jti, header: (found.authName || DEFAULT_AUTH_HEADER).toLowerCase() },
  };
}

async function lookUp(v: AgentVerifier, token: string): Promise<Principal> {
  const claims = await v.codec.verify(token);
  if (!claims) throw new ApiError('unauthorized', 'the agent key is invalid or expired');
  const principal = await agentPrincipal(v.store, claims);
  if (!principal) throw new ApiError('unauthorized', 'the agent key was revoked or its agent deactivated');
  return principal;
}

/**
 * The principal of an agent key; 401 when it is not valid or, with a header named, came in
 * another header than the agent's `auth_name` (a key sent in a body, as CrowdSec's watcher
 * login does, names none).
 */
export async function verifyAgentToken(v: AgentVerifier, key: { token: string; header?: string }): Promise<Principal> {
  const now = Date.now();
  const cached = v.cache.get(key.token);
  const principal = cached && cached.until > now ? cached.principal : await lookUp(v, key.token);
  if (v.cacheSeconds > 0 && principal !== cached?.principal) {
    if (v.cache.size > 50_000) v.cache.clear();
    v.cache.set(key.token, { principal, until: now + v.cacheSeconds * 1000 });
  }
  if (key.header !== undefined && principal.agent!.header !== key.header) {
    throw new ApiError('unauthorized', `this agent sends its key in the ${principal.agent!.header} header (its auth_name)`);
  }
  return principal;
}

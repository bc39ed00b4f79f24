import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { API_BASE, ApiError, ROLE } from '@rampart/contracts';
import type { Store } from '../store/index.ts';
import { credentialFrom, parseApiKey, secretMatches } from '../services/operators/api-keys.ts';
import { AuthFailureGuard, UnknownKeyBudget, UnknownKeyIds, networkOf } from '../services/operators/auth-failures.ts';
import { agentTokenCodec, agentTokenSecret, looksLikeJwt, type AgentTokenCodec } from '../services/agents/tokens.ts';
import { agentKeyMayCall } from './agent-routes.ts';
import type { AuthMetrics } from './metrics.ts';
import { agentCredential, verifyAgentToken, type AgentVerifier } from './agent-auth.ts';
import type { Principal } from './principal.ts';
import { routeOf } from './route-config.ts';

export type { Principal } from './principal.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
  }
  interface FastifyInstance {
    /** Signs and verifies agent keys (shared secret of every replica). */
    agentTokens: AgentTokenCodec;
    /**
     * Verifies an agent key a route received otherwise than in a header (CrowdSec's watcher
     * login sends it in its body), with the lock-outs and failure counts of keys in headers.
     */
    verifyAgentKey: (request: FastifyRequest, reply: FastifyReply, token: string) => Promise<Principal>;
  }
}

export interface AuthOptions {
  store: Store;
  /** How long a verified key is trusted without asking the store again (revocation delay). */
  cacheSeconds: number;
  /** Agent key signing secret; when unset, the store's shared random secret. */
  agentTokenSecret?: string | undefined;
  /**
   * Failed authentications a replica allows per address and per API key id before locking them
   * out; and, for unknown key ids, per minute from all addresses and from one network.
   */
  failures: { perAddress: number; perKey: number; lockSeconds: number; unknownPerMinute: number; unknownPerNetwork: number };
  metrics: AuthMetrics;
}

type FailureReason = 'unknown_key' | 'wrong_secret' | 'revoked_key' | 'agent_key';
type Subject = 'address' | 'key_id';

/** How long a key id that failed as unknown is refused without a store look-up, and how many are kept. */
const UNKNOWN_ID_TTL_MS = 10 * 60_000;
const UNKNOWN_IDS_MAX = 100_000;

const FAILURE_WINDOW_MS = 10 * 60_000;
const MAX_LOCK_MS = 60 * 60_000;

/** Caller of a route that requires a key: the principal is always set there. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new ApiError('unauthorized', 'an API key is required');
  return request.principal;
}

const LAST_USED_WRITE_MS = 60_000;

export const authPlugin = fp<AuthOptions>(async (app: FastifyInstance, { store, cacheSeconds, agentTokenSecret: configured, failures, metrics }) => {
  const cache = new Map<string, { principal: Principal; until: number }>();
  const limits = { lockMs: failures.lockSeconds * 1000, maxLockMs: MAX_LOCK_MS, windowMs: FAILURE_WINDOW_MS, maxSubjects: 100_000 };
  const addresses = new AuthFailureGuard({ ...limits, budget: failures.perAddress });
  const keyIds = new AuthFailureGuard({ ...limits, budget: failures.perKey });
  const unknownBudget = new UnknownKeyBudget({ perWindow: failures.unknownPerMinute, perNetworkPerWindow: failures.unknownPerNetwork, windowMs: 60_000, maxNetworks: 100_000 });
  const unknownIds = new UnknownKeyIds(UNKNOWN_ID_TTL_MS, UNKNOWN_IDS_MAX);
  /**
   * Stored secret hash of key ids seen lately (verified or failed): a key's own secret, checked
   * against it without store work, passes the lock-outs, so that neither guessing at a key id nor
   * failing from a shared address (NAT, proxy) locks out users whose keys are known good.
   */
  const knownHashes = new Map<string, string>();
  function remember(keyId: string, hash: string | undefined) {
    knownHashes.delete(keyId);
    if (hash === undefined) return;
    knownHashes.set(keyId, hash);
    if (knownHashes.size > 50_000) knownHashes.delete(knownHashes.keys().next().value!);
  }
  /** Agent keys verified lately: like known key hashes, they pass an address lock-out. */
  const knownAgentKeys = new Set<string>();

  /** 429 with Retry-After when the subject is locked out; nothing else is done for the request. */
  function refuseIfLocked(guard: AuthFailureGuard, subject: string, reply: FastifyReply, what: Subject) {
    const ms = guard.lockedFor(subject);
    if (ms === 0) return;
    metrics.refused.inc({ subject: what });
    const seconds = Math.ceil(ms / 1000);
    void reply.header('retry-after', String(seconds));
    throw new ApiError('rate_limited', `too many failed authentications from this ${what === 'key_id' ? 'key id' : what}; retry in ${seconds} s`);
  }

  /** 429 with Retry-After while the unknown key id budget of all addresses, or of the request's network, is spent. */
  function refuseIfUnknownBudgetSpent(request: FastifyRequest, reply: FastifyReply) {
    const spent = unknownBudget.spent(networkOf(request.ip));
    if (!spent) return;
    metrics.refused.inc({ subject: spent.subject });
    const seconds = Math.max(1, Math.ceil(spent.ms / 1000));
    void reply.header('retry-after', String(seconds));
    throw new ApiError('rate_limited', `too many failed authentications with unknown key ids from ${spent.subject === 'all' ? 'all addresses' : 'this network'}; retry in ${seconds} s`);
  }

  function failedUnknown(request: FastifyRequest, keyId: string): never {
    unknownIds.add(keyId);
    unknownBudget.fail(networkOf(request.ip));
    failed(request, 'unknown_key');
    throw new ApiError('unauthorized', 'unknown API key');
  }

  function failed(request: FastifyRequest, reason: FailureReason, keyId?: string) {
    metrics.failures.inc({ reason });
    const locked = addresses.fail(request.ip);
    const keyLocked = keyId ? keyIds.fail(keyId) : 0;
    if (locked) metrics.lockouts.inc({ subject: 'address' });
    if (keyLocked) metrics.lockouts.inc({ subject: 'key_id' });
    // One line when a lock-out starts; the refused attempts that follow log nothing.
    if (locked || keyLocked) request.log.warn({ ip: request.ip, keyId, lockSeconds: Math.ceil(Math.max(locked, keyLocked) / 1000) }, 'authentication lock-out');
  }

  const agentTokens = agentTokenCodec(await agentTokenSecret(configured, store));
  app.decorate('agentTokens', agentTokens);
  const agentCache: AgentVerifier['cache'] = new Map();
  const lastUsedWrite = new Map<string, number>();

  /** The principal of a key verified less than `cacheSeconds` ago: no hashing, no store work. */
  function cachedPrincipal(credential: string, now: number): Principal | undefined {
    const cached = cache.get(credential);
    return cached && cached.until > now ? cached.principal : undefined;
  }

  async function verify(credential: string, request: FastifyRequest, reply: FastifyReply): Promise<Principal> {
    const now = Date.now();
    const cached = cachedPrincipal(credential, now);
    if (cached) return cached;
    const parsed = parseApiKey(credential);
    // Malformed or missing keys cost no store work: refused while locked out, but not counted.
    if (!parsed) {
      refuseIfLocked(addresses, request.ip, reply, 'address');
      throw new ApiError('unauthorized', 'the API key is malformed');
    }
    const known = knownHashes.get(parsed.keyId);
    if (!known || !secretMatches(parsed.secret, known)) {
      refuseIfLocked(addresses, request.ip, reply, 'address');
      refuseIfLocked(keyIds, parsed.keyId, reply, 'key_id');
      // A key id this replica has not read: while guesses at unknown ids are over budget, no look-up.
      if (!known) refuseIfUnknownBudgetSpent(request, reply);
    }
    // Seen failing as unknown lately: refused again without asking the store.
    if (!known && unknownIds.has(parsed.keyId)) failedUnknown(request, parsed.keyId);
    metrics.lookups.inc();
    const found = await store.keys.principal(parsed.keyId);
    if (!found) failedUnknown(request, parsed.keyId);
    if (found.key.revoked_at || !secretMatches(parsed.secret, found.key.secret_hash)) {
      failed(request, found.key.revoked_at ? 'revoked_key' : 'wrong_secret', parsed.keyId);
      remember(parsed.keyId, found.key.revoked_at ? undefined : found.key.secret_hash);
      await store.users.countFailedLogin(found.user.id);
      request.log.warn({ keyId: parsed.keyId, revoked: Boolean(found.key.revoked_at) }, 'rejected API key');
      throw new ApiError('unauthorized', found.key.revoked_at ? 'the API key was revoked' : 'unknown API key');
    }
    remember(parsed.keyId, found.key.secret_hash);
    const principal: Principal = { kind: 'user', keyId: parsed.keyId, user: found.user, org: found.org };
    if (cacheSeconds > 0) {
      if (cache.size > 10_000) cache.clear();
      cache.set(credential, { principal, until: now + cacheSeconds * 1000 });
    }
    return principal;
  }

  function touch(keyId: string, request: FastifyRequest) {
    const now = Date.now();
    if ((lastUsedWrite.get(keyId) ?? 0) + LAST_USED_WRITE_MS > now) return;
    lastUsedWrite.set(keyId, now);
    store.keys.touch(keyId).catch((err: unknown) => request.log.warn({ err, keyId }, 'could not record key use'));
  }

  /** An agent key's principal (header: the one it came in, checked against its auth_name). */
  async function agentKeyPrincipal(request: FastifyRequest, reply: FastifyReply, key: { token: string; header?: string }): Promise<Principal> {
    if (!knownAgentKeys.has(key.token)) refuseIfLocked(addresses, request.ip, reply, 'address');
    const principal = await verifyAgentToken({ store, codec: agentTokens, cache: agentCache, cacheSeconds }, key).catch((err: unknown) => {
      // Only a refused key is a failure: a store outage (503) must not lock out a whole fleet.
      if (err instanceof ApiError && err.code === 'unauthorized') {
        knownAgentKeys.delete(key.token);
        failed(request, 'agent_key');
      }
      throw err;
    });
    if (knownAgentKeys.size >= 10_000) knownAgentKeys.clear();
    knownAgentKeys.add(key.token);
    return principal;
  }
  app.decorate('verifyAgentKey', (request: FastifyRequest, reply: FastifyReply, token: string) => agentKeyPrincipal(request, reply, { token }));

  /**
   * A CrowdSec bouncer: an agent key in `X-Api-Key`. A missing, malformed, unknown or revoked key
   * is 403, as CrowdSec's Local API answers, and counts as a failed authentication.
   */
  async function crowdsecBouncer(request: FastifyRequest, reply: FastifyReply): Promise<Principal> {
    const header = request.headers['x-api-key'];
    const token = typeof header === 'string' ? header.trim() : '';
    if (!looksLikeJwt(token)) {
      if (!knownAgentKeys.has(token)) refuseIfLocked(addresses, request.ip, reply, 'address');
      if (token !== '') failed(request, 'agent_key');
      throw new ApiError('forbidden', 'send an agent key of a registered agent in the X-Api-Key header');
    }
    try {
      // No header named: the route names it (X-Api-Key), not the agent's auth_name.
      return await agentKeyPrincipal(request, reply, { token });
    } catch (err) {
      if (err instanceof ApiError && err.code === 'unauthorized') throw new ApiError('forbidden', err.message);
      throw err;
    }
  }

  app.decorateRequest('principal', null);

  /** A user key's principal, once its role is checked against the route's. */
  function admit(request: FastifyRequest, principal: Principal, minRole: number): void {
    if (principal.user.role < minRole) {
      throw new ApiError('forbidden', `this operation needs role ${minRole} or higher; the key's role is ${principal.user.role}`);
    }
    request.principal = principal;
    touch(principal.keyId, request);
  }

  /**
   * Sets the request's principal; a promise when that needs work (a key not verified lately, an
   * agent key, a CrowdSec bouncer), undefined when done. Throws the request's 401/403/429.
   */
  function authenticate(request: FastifyRequest, reply: FastifyReply): Promise<void> | undefined {
    const route = routeOf(request);
    const options = route.config.rampart ?? {};
    if (options.auth === 'public') return undefined;
    // The documentation page (swagger-ui registers its own routes) is readable without a key.
    if (route.url?.startsWith(`${API_BASE}/docs`)) return undefined;
    if (options.auth === 'crowdsec_bouncer') {
      return crowdsecBouncer(request, reply).then((principal) => {
        request.principal = principal;
      });
    }
    const agentKey = agentCredential(request);
    if (agentKey) {
      return agentKeyPrincipal(request, reply, agentKey).then((principal) => {
        // Agent keys open only the routes of AGENT_KEY_ROUTES; those scope what they return to the
        // calling agent, so the route's minimum user role does not apply.
        if (!agentKeyMayCall(request.method, route.url)) {
          throw new ApiError('forbidden', 'an agent key may call only its feed and list, reports, feedback, its own settings and the sync channel');
        }
        request.principal = principal;
      });
    }
    const credential = credentialFrom(request.headers.authorization);
    if (!credential) {
      refuseIfLocked(addresses, request.ip, reply, 'address');
      throw new ApiError('unauthorized', 'send an API key in the Authorization header');
    }
    const minRole = options.minRole ?? ROLE.reader;
    // A key verified lately (most requests): no promise, no microtask.
    const cached = cachedPrincipal(credential, Date.now());
    if (cached) {
      admit(request, cached, minRole);
      return undefined;
    }
    return verify(credential, request, reply).then((principal) => admit(request, principal, minRole));
  }

  // A callback hook, not an async one: a request whose key is cached is authenticated without a
  // promise. A refusal still leaves after the microtasks, as an async hook's did: by then node's
  // parser has reported what it found wrong in the rest of the request (bad chunking: 400).
  app.addHook('onRequest', (request, reply, done) => {
    let pending: Promise<void> | undefined;
    try {
      pending = authenticate(request, reply);
    } catch (err) {
      pending = Promise.reject(err);
    }
    if (pending) pending.then(() => done(), done);
    else done();
  });
});

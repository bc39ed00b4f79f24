import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ApiError, isIpv4Address, ROLE, Stix2Bundle, Stix2Params } from '@rampart/contracts';
import type { AppContext } from '../../context.ts';
import { principalOf, type Principal } from '../../plugins/auth.ts';
import { normalizeDomain, normalizeUrl } from '../../services/indicator-names.ts';
import { loadIpv4Policy, recordDecision } from '../../services/ipv4-policy.ts';
import { stixBundle, type StixFacts } from '../../services/stix.ts';
import { visibleTo } from '../../services/envelope.ts';
import { notFound, repriceTo } from '../indicator-common.ts';

const DIGEST = /^(?:[0-9a-fA-F]{32}|[0-9a-fA-F]{40}|[0-9a-fA-F]{64})$/;
const SCHEME = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//;

/** What the id names, read from its shape: IPv4 address, digest, URL (has a scheme) or domain. */
async function factsFor(context: AppContext, org: Principal['org'], id: string, onArchived: () => Promise<void>): Promise<StixFacts> {
  const { store } = context;
  const orgId = org.id;
  // A record the organization's delay still hides is not held, for it.
  const visible = visibleTo(org, Math.floor(Date.now() / 1000));
  if (isIpv4Address(id)) {
    // The address's own record, else the most specific held network containing it (as GET /ips/{ip}).
    const [rows, policy] = await Promise.all([store.ipv4.holding(orgId, id), loadIpv4Policy(store, orgId)]);
    const row = rows.find(visible);
    if (!row) throw notFound(`IPv4 ${id}`);
    const decided = recordDecision(row, policy, Math.floor(Date.now() / 1000));
    const value = row.network.endsWith('/32') ? row.network.slice(0, -3) : row.network;
    // The IPv4 precedence decides for the caller: reserved and whitelisted records say 0.
    const decision = decided.decision ?? -1;
    return { subject: { kind: 'ipv4', value, isNetwork: row.is_network }, score: row.score, entryTs: row.entry_ts, ts: row.ts, members: row.members, events: row.events, tags: row.tags, decision };
  }
  if (DIGEST.test(id)) {
    // The archive too: a bundle describes what the platform knows, wherever it is kept.
    let row = await store.files.byDigest(orgId, id);
    if (row && !visible(row)) row = undefined;
    if (!row) {
      row = await store.files.archivedByDigest(orgId, id);
      if (row && !visible(row)) row = undefined;
      // Found only in the archive: that is a deep scan, priced as one.
      if (row) await onArchived();
    }
    if (!row) throw notFound(`digest ${id.toUpperCase()}`);
    return {
      subject: { kind: 'file', md5: row.md5, sha1: row.sha1, sha256: row.sha256, fileName: row.file_name, fileType: row.file_type },
      score: row.score, entryTs: row.entry_ts, ts: row.ts, members: row.members, events: row.events, tags: row.tags, decision: row.decision ?? -1,
    };
  }
  const kind = SCHEME.test(id) ? 'url' : 'domain';
  const value = kind === 'url' ? normalizeUrl(id, 'params.stix2id') : normalizeDomain(id, 'params.stix2id');
  const row = await (kind === 'url' ? store.urls : store.domains).byValue(orgId, value);
  if (!row || !visible(row)) throw notFound(`${kind} ${value}`);
  return { subject: { kind, value }, score: row.score, entryTs: row.entry_ts, ts: row.ts, members: row.members, events: row.events, tags: row.tags, decision: row.decision ?? -1 };
}

/** `GET /stix2/{id}`: a STIX 2.0 bundle for an IPv4 address, a domain, a URL or a file digest. */
export const stixRoutes: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  app.get(
    '/stix2/:stix2id',
    {
      config: { rampart: { minRole: ROLE.reader, coin: 'stix' } },
      schema: {
        tags: ['tools'],
        summary: 'STIX 2.0 bundle for an indicator: an IPv4 address, a domain, a URL (URL-encoded) or an MD5/SHA1/SHA256 digest',
        params: Stix2Params,
        response: { 200: Stix2Bundle },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const id = request.params.stix2id.trim();
      if (!id) throw new ApiError('validation_failed', 'params.stix2id: empty', { errors: [{ path: 'params.stix2id', message: 'empty' }] });
      const priceAsDeepScan = () => repriceTo(context, request, context.config.coinPrices.deep_scan);
      return stixBundle(await factsFor(context, principal.org, id, priceAsDeepScan));
    },
  );
};

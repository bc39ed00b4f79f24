import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ApiError, IpDecisionBody, IpDecisionParams, IpsReportBody, IpsReportQuery, ROLE } from '@rampart/contracts';
import type { AppContext } from '../../context.ts';
import { principalOf } from '../../plugins/auth.ts';
import { describeIpv4Special, formatIpv4, ipv4SpecialRange, parseIpv4 } from '@rampart/contracts';
import type { AppConfig } from '../../config.ts';
import { randomIdPart } from '../../services/ids.ts';
import { ReportBatcher } from '../../services/ipv4-ingest.ts';
import type { Ipv4ReportItem } from '../../store/ipv4-ingest.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Whether the raw report body named `decision` (an explicit -1 clears a decision; absent keeps it). */
    decisionGiven?: boolean;
  }
}

/** `10.0.0.7/24` → `10.0.0.0/24`, `10.0.0.7` → `10.0.0.7/32`: one indicator is one row. */
export function canonicalNetwork(ip: string): { network: string; isNetwork: boolean; first: string } {
  const range = parseIpv4(ip)!;
  const first = formatIpv4(range.start);
  return { network: `${first}/${range.prefix}`, isNetwork: range.prefix < 32, first };
}

function fieldError(path: string, message: string): ApiError {
  return new ApiError('validation_failed', `${path}: ${message}`, { errors: [{ path, message }] });
}

/**
 * Only public unicast addresses are indicators: a report (not a decision) of a special-purpose
 * address, or of a network overlapping one, is 400 `non_public_address` naming the range, unless
 * ALLOW_NON_PUBLIC_REPORTS is set (labs); a network wider than MAX_REPORT_PREFIX is 400
 * `network_too_wide`. Firewalls apply `/ipv4` and `/flat` as they are: a reported 10.0.0.0/8
 * would cut every member off its own LAN.
 */
export function assertReportable(ip: string, config: Pick<AppConfig, 'allowNonPublicReports' | 'maxReportPrefix'>, path = 'body.ip'): void {
  const range = parseIpv4(ip)!;
  if (!config.allowNonPublicReports) {
    const special = ipv4SpecialRange(range);
    if (special) {
      const name = describeIpv4Special(special);
      const message = `${ip} ${range.start >= special.start && range.end <= special.end ? 'lies in' : 'overlaps'} ${name}, not a public address`;
      throw new ApiError('non_public_address', `${path}: ${message}`, { errors: [{ path, message }], extra: { range: special.cidr, range_class: special.class } });
    }
  }
  if (range.prefix < config.maxReportPrefix) {
    const message = `/${range.prefix} is wider than /${config.maxReportPrefix}, the widest network a report may name`;
    throw new ApiError('network_too_wide', `${path}: ${message}`, { errors: [{ path, message }], extra: { max_prefix: config.maxReportPrefix } });
  }
}

/** `POST /ips`: a report of an address or network, optionally with the caller's decision. */
export const ipsReportRoute: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  const batcher = new ReportBatcher({ db: context.store.db, events: context.events, log: app.log, observe: context.metrics.ipv4IngestBatch });

  app.post(
    '/ips',
    {
      config: { rampart: { minRole: ROLE.contributor, coin: 'report' } },
      schema: {
        tags: ['ipv4'],
        summary: 'Report a suspicious IPv4 address or network (200 merged into a held indicator, 201 new indicator)',
        querystring: IpsReportQuery,
        body: IpsReportBody,
        response: { 200: z.null().describe('empty body'), 201: z.null().describe('empty body') },
      },
      preValidation: async (request) => {
        const raw = request.body;
        request.decisionGiven = typeof raw === 'object' && raw !== null && 'decision' in raw;
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const body = request.body;
      const now = Math.floor(Date.now() / 1000);
      // Decisions are the organization's (a whitelist unblocks for every member): never an edge host's.
      if (principal.agent && (request.decisionGiven || body.ttl !== undefined)) {
        throw new ApiError('forbidden', 'an agent key reports without decision or ttl: decisions belong to the organization (use a contributor key)');
      }
      if (body.ttl !== undefined && body.decision !== 1) throw fieldError('body.ttl', 'a ttl applies only to decision 1');
      if (body.ttl !== undefined && body.ttl <= now) throw fieldError('body.ttl', `must lie in the future (now is ${now})`);
      // A whitelist is the organization saying the address is fine: it must not raise the score
      // for others, so it counts no report (and may name its own LAN).
      const addReport = body.decision !== 0;
      if (addReport) assertReportable(body.ip, context.config);
      const { network, isNetwork, first } = canonicalNetwork(body.ip);
      const item: Ipv4ReportItem = {
        orgId: principal.org.id,
        network,
        isNetwork,
        gid: `RMP-RULE-GID-${randomIdPart()}`,
        confidence: body.confidence,
        source: body.source,
        notes: body.notes ? body.notes : null,
        addReport,
        decision: request.decisionGiven ? { value: body.decision as -1 | 0 | 1, ttl: body.ttl ?? null } : null,
        ipInfo: context.enrichment.ipInfo(first),
      };
      const outcome = await batcher.submit(item);
      if (outcome.status === 'reserved') {
        throw new ApiError('reserved_ip', `${body.ip} lies in ${outcome.range}, one of the organization's reserved_ips; it cannot be reported`, {
          extra: { reserved_range: outcome.range },
        });
      }
      // An agent key checks in as its own agent, whatever the query names.
      const checkinGaid = principal.agent?.gaid ?? request.query.gaid;
      if (checkinGaid) await context.store.agents.checkIn(principal.org.id, checkinGaid, 'ipv4');
      // No body at all (the null schema documents it; undefined is never serialized).
      return reply.code(outcome.created ? 201 : 200).send(undefined as unknown as null);
    },
  );

  app.put(
    '/ips/:ip',
    {
      config: { rampart: { minRole: ROLE.contributor, coin: 'decision' } },
      schema: {
        tags: ['ipv4'],
        summary: "Set the organization's decision on an address or URL-encoded network, without reporting it",
        params: IpDecisionParams,
        body: IpDecisionBody,
        response: { 200: z.null().describe('empty body') },
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const { decision, ttl } = request.body;
      const now = Math.floor(Date.now() / 1000);
      if (ttl !== undefined && decision !== 1) throw fieldError('body.ttl', 'a ttl applies only to decision 1');
      if (ttl !== undefined && ttl <= now) throw fieldError('body.ttl', `must lie in the future (now is ${now})`);
      const { network, isNetwork } = canonicalNetwork(request.params.ip);
      const outcome = await batcher.submit({
        orgId: principal.org.id,
        network,
        isNetwork,
        gid: `RMP-RULE-GID-${randomIdPart()}`,
        confidence: 0,
        source: '',
        notes: null,
        addReport: false,
        decision: { value: decision as -1 | 0 | 1, ttl: ttl ?? null },
        ipInfo: null,
      });
      if (outcome.status === 'reserved') {
        throw new ApiError('reserved_ip', `${request.params.ip} lies in ${outcome.range}, one of the organization's reserved_ips`, { extra: { reserved_range: outcome.range } });
      }
      return reply.code(200).send(undefined as unknown as null);
    },
  );
};

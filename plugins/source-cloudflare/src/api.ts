import { z } from 'zod';
import { FirewallEvent } from './events.ts';

export interface CloudflareAuth {
  apiBase: string;
  email: string;
  key: string;
  signal: AbortSignal;
  timeoutMs?: number;
}

/** A Cloudflare API failure; the message never carries the credentials. */
export class CloudflareApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'CloudflareApiError';
  }
}

const ApiMessages = z.array(z.looseObject({ message: z.string() })).nullish();

async function call(auth: CloudflareAuth, path: string, init: { method: string; body?: string }): Promise<unknown> {
  const signal = AbortSignal.any([auth.signal, AbortSignal.timeout(auth.timeoutMs ?? 30_000)]);
  const res = await fetch(`${auth.apiBase}${path}`, {
    method: init.method,
    headers: { 'X-Auth-Email': auth.email, 'X-Auth-Key': auth.key, 'Content-Type': 'application/json', Accept: 'application/json' },
    ...(init.body ? { body: init.body } : {}),
    signal,
  });
  const text = await res.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new CloudflareApiError(res.status, `Cloudflare ${path} answered ${res.status} with a body that is not JSON`);
  }
  const errors = ApiMessages.safeParse((body as { errors?: unknown })?.errors);
  const messages = errors.success && errors.data ? errors.data.map((e) => e.message.slice(0, 200)) : [];
  if (!res.ok || messages.length > 0) {
    throw new CloudflareApiError(res.status, `Cloudflare ${path} answered ${res.status}${messages.length ? `: ${messages.join('; ')}` : ''}`);
  }
  return body;
}

const ZonesPage = z.looseObject({
  result: z.array(z.looseObject({ id: z.string().regex(/^[0-9a-f]{32}$/), name: z.string() })),
  result_info: z.looseObject({ page: z.number(), total_pages: z.number() }).optional(),
});

/** Every zone the credentials can read (at most `max`), through the REST zones list. */
export async function listZones(auth: CloudflareAuth, max = 500): Promise<string[]> {
  const ids: string[] = [];
  for (let page = 1; ids.length < max; page++) {
    const body = ZonesPage.parse(await call(auth, `/zones?per_page=50&page=${page}`, { method: 'GET' }));
    ids.push(...body.result.map((z) => z.id));
    if (!body.result_info || page >= body.result_info.total_pages || body.result.length === 0) break;
  }
  return ids.slice(0, max);
}

export const FIREWALL_EVENTS_QUERY = `query RampartFirewallEvents($zoneTag: string, $since: Time, $until: Time, $actions: [string!], $limit: uint64!) {
  viewer {
    zones(filter: { zoneTag: $zoneTag }) {
      firewallEventsAdaptive(
        filter: { datetime_geq: $since, datetime_lt: $until, action_in: $actions }
        limit: $limit
        orderBy: [datetime_ASC]
      ) {
        action
        clientIP
        datetime
        rayName
        source
        ruleId
        clientRequestHTTPHost
        clientRequestPath
      }
    }
  }
}`;

const EventsAnswer = z.looseObject({
  data: z.looseObject({
    viewer: z.looseObject({ zones: z.array(z.looseObject({ firewallEventsAdaptive: z.array(FirewallEvent) })) }),
  }),
});

/** Firewall events of one zone with `since <= datetime < until`, oldest first, at most `limit`. */
export async function firewallEvents(
  auth: CloudflareAuth,
  query: { zoneTag: string; since: string; until: string; actions: string[]; limit: number },
): Promise<FirewallEvent[]> {
  const body = EventsAnswer.parse(await call(auth, '/graphql', { method: 'POST', body: JSON.stringify({ query: FIREWALL_EVENTS_QUERY, variables: query }) }));
  return body.data.viewer.zones.flatMap((z) => z.firewallEventsAdaptive);
}

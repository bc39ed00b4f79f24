import type { DetectionMode, RunningSource, SourceContext } from '@rampart/plugin-kit';
import { firewallEvents, listZones } from './api.ts';
import type { CloudflareAuth } from './api.ts';
import { actionsFor, eventDetection } from './events.ts';
import type { FirewallEvent } from './events.ts';

/** The largest `limit` of firewallEventsAdaptive. */
const MAX_PAGE = 10_000;

export interface PollerOptions {
  apiBase: string;
  email: string;
  key: string;
  zoneIds: string[];
  mode: DetectionMode;
  pollIntervalSeconds: number;
  /** How far back the first poll of a zone reaches. */
  lookbackSeconds: number;
  /** Cloudflare's analytics arrive late; the newest `lagSeconds` are left for the next poll. */
  lagSeconds: number;
  pageSize: number;
  /** Pages per zone and poll; the rest waits for the next poll. */
  maxPages?: number;
  now?: () => number;
}

/**
 * Pulls firewall events zone by zone on an interval, from a per-zone time cursor kept in
 * `ctx.offsets` (its `offset` holds epoch milliseconds), so a restart neither skips nor repeats
 * a window. Pages follow `datetime` ascending; events sharing the boundary second are told
 * apart by their ray id. Any API failure ends the source (the runtime restarts it with back-off).
 */
export function startPoller(options: PollerOptions, ctx: SourceContext): RunningSource {
  const now = options.now ?? Date.now;
  const auth: CloudflareAuth = { apiBase: options.apiBase.replace(/\/+$/, ''), email: options.email, key: options.key, signal: ctx.signal };
  const actions = actionsFor(options.mode);

  async function pollZone(zoneTag: string): Promise<void> {
    const key = `cdn_waf:${zoneTag}`;
    const stored = await ctx.offsets?.load(key);
    let since = stored?.offset ?? now() - options.lookbackSeconds * 1000;
    const until = now() - options.lagSeconds * 1000;
    if (until <= since) return;
    // Ray ids already emitted at the instant `since` (pages overlap there by one instant).
    let boundary = new Set<string>();
    const emit = (events: FirewallEvent[]) => {
      for (const event of events) {
        if (event.rayName && boundary.has(event.rayName)) continue;
        const detection = eventDetection(event, options.mode);
        if (detection) ctx.emit(detection);
      }
    };
    const page = (from: number, to: number, limit: number) =>
      firewallEvents(auth, { zoneTag, since: new Date(from).toISOString(), until: new Date(to).toISOString(), actions, limit });
    for (let n = 0; n < (options.maxPages ?? 100) && !ctx.signal.aborted; n++) {
      const events = await page(since, until, options.pageSize);
      emit(events);
      const last = events.at(-1);
      if (events.length < options.pageSize || !last) {
        since = until;
        await ctx.offsets?.save(key, { ino: 0, offset: since, head: '' });
        return;
      }
      const lastMs = Date.parse(last.datetime);
      if (lastMs > since) {
        boundary = new Set(events.filter((e) => Date.parse(e.datetime) === lastMs && e.rayName).map((e) => e.rayName!));
        since = lastMs;
      } else {
        // A whole page within one instant cannot be paged by time: read that second alone with
        // the largest page the API allows, then step past it.
        for (const e of events) if (e.rayName) boundary.add(e.rayName);
        const second = await page(since, Math.min(since + 1000, until), MAX_PAGE);
        emit(second);
        if (second.length >= MAX_PAGE) ctx.log.warn({ zoneTag, at: last.datetime }, 'more firewall events in one second than one page holds');
        boundary = new Set();
        since = Math.min(since + 1000, until);
      }
      await ctx.offsets?.save(key, { ino: 0, offset: since, head: '' });
    }
  }

  const done = (async () => {
    const zones = options.zoneIds.length > 0 ? options.zoneIds : await listZones(auth);
    ctx.log.info({ zones: zones.length }, 'polling Cloudflare firewall events');
    while (!ctx.signal.aborted) {
      for (const zone of zones) if (!ctx.signal.aborted) await pollZone(zone);
      await sleep(options.pollIntervalSeconds * 1000, ctx.signal);
    }
  })().catch((err: unknown) => {
    if (ctx.signal.aborted) return;
    throw err;
  });
  return { done };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

import { access, constants } from 'node:fs/promises';
import { createEngineEnforcer, engineStats, type BlockEntry, type Enforcer, type EnforcerAdapter, type PluginLogger } from '@rampart/plugin-kit';
import { feedBody, feedEntries, parseFeed, publishFeed, readFeed, type Feed } from './feed-files.ts';
import type { FeedHttpServer, FetchRecord } from './feed-http.ts';
import type { DeviceRefresher, RefreshStatus } from './refresh.ts';
import type { ServerCertificate } from './tls.ts';

/** One feed; `enforced` is what its file serves now, `cut` the desired entries it leaves out. */
export type FeedStatus = {
  name: string;
  path: string;
  capacity: number;
  enforced: number;
  cut: number;
  last_fetch?: FetchRecord;
  fetches: number;
  not_modified: number;
  /** True when `updates` is known and no device fetched within twice that since the agent started. */
  fetch_overdue?: boolean;
};

/** The status of the enforcer: `parts` are the feeds (the agent exports each as a metric). */
export type FeedServerStatus = {
  label: string;
  url: string;
  username: string;
  updates_minutes: number | null;
  certificate: Omit<ServerCertificate, 'cert' | 'key'>;
  parts: FeedStatus[];
  auth_failures: ReturnType<FeedHttpServer['authFailures']>;
  refresh?: RefreshStatus;
};

export type FeedServerEnforcer = Omit<Enforcer, 'status'> & { status(): FeedServerStatus };

export interface FeedServerParts {
  label: string;
  dir: string;
  feeds: readonly Feed[];
  /** `https://host:port` as devices should be configured with (listen address and real port). */
  origin: string;
  username: string;
  updatesMinutes: number | null;
  http: FeedHttpServer;
  certificate: ServerCertificate;
  /** Absent when no `connections`/`command` is set. */
  refresher?: DeviceRefresher;
  log: PluginLogger;
  now?: () => number;
}

/**
 * The feeds as an engine target. Every feed serves the same block set, each cut to its own
 * capacity by score (the engine's capacity is the largest, so the engine cuts for that feed and
 * this adapter for the smaller ones, each counted in the status and logged when it changes).
 * A write publishes each feed's new version by rename and then asks the devices to refresh the
 * feeds that changed. `read` is what a device fetching now gets: every feed's lines, one after
 * the other, so a change to any one file is drift.
 */
export function feedServerAdapter(p: FeedServerParts): EnforcerAdapter & { served: Map<string, number> } {
  const served = new Map<string, number>();
  const loggedCut = new Map<string, number>();

  async function publish(entries: readonly BlockEntry[], signal?: AbortSignal): Promise<void> {
    const changed: string[] = [];
    for (const feed of p.feeds) {
      signal?.throwIfAborted();
      const kept = feedEntries(entries, feed.capacity);
      if (await publishFeed(p.dir, feed.name, feedBody(kept), p.now?.())) changed.push(feed.name);
      served.set(feed.name, kept.length);
      const cut = entries.length - kept.length;
      if (cut > 0 && cut !== loggedCut.get(feed.name)) p.log.warn({ feed: feed.name, cut, capacity: feed.capacity }, 'feed capacity reached; lowest scores cut');
      loggedCut.set(feed.name, cut);
    }
    if (changed.length > 0) {
      p.log.info({ feeds: changed, entries: entries.length }, 'feeds published');
      await p.refresher?.refresh(changed, signal);
    }
  }

  return {
    served,
    async read() {
      const out: string[] = [];
      for (const feed of p.feeds) out.push(...parseFeed((await readFeed(p.dir, feed.name)) ?? ''));
      return out;
    },
    expected: (enforced) => p.feeds.flatMap((feed) => feedEntries(enforced, feed.capacity).map((e) => e.value)),
    replaceAll: (entries, signal) => publish(entries, signal),
    // A feed is one file rewritten whole: a batch is the whole new set, published the same way.
    applyBatch: (_change, all, signal) => publish(all(), signal),
    // An empty list, never a missing file or a 404: a device keeps its last good copy when a
    // fetch fails, so only an empty list stops it blocking.
    removeAll: (signal) => publish([], signal),
    async probe() {
      if (!p.http.listening()) throw new Error('the feed server is not listening');
      await access(p.dir, constants.W_OK);
      const failing = p.refresher?.status().errors ?? [];
      if (failing.length > 0) throw new Error(`refresh failed on ${failing.map((e) => `${e.device} (${e.error})`).join(', ')}`.slice(0, 500));
    },
    async close() {
      await p.http.close();
      await p.refresher?.close();
    },
  };
}

export async function createFeedServerEnforcer(p: FeedServerParts): Promise<FeedServerEnforcer> {
  const adapter = feedServerAdapter(p);
  for (const feed of p.feeds) adapter.served.set(feed.name, parseFeed((await readFeed(p.dir, feed.name)) ?? '').length);
  const capacity = Math.max(...p.feeds.map((f) => f.capacity));
  const engine = createEngineEnforcer(adapter, { capacity, log: p.log });
  const now = p.now ?? Date.now;
  const startedAt = now();

  function status(): FeedServerStatus {
    const stats = engineStats(engine);
    const desired = stats ? stats.enforced + stats.cut : 0;
    const fetches = p.http.fetches();
    const { cert: _cert, key: _key, ...certificate } = p.certificate;
    const overdueAfter = p.updatesMinutes ? 2 * p.updatesMinutes * 60_000 : undefined;
    return {
      label: p.label,
      url: `${p.origin}/feeds/`,
      username: p.username,
      updates_minutes: p.updatesMinutes,
      certificate,
      parts: p.feeds.map((feed) => {
        const count = adapter.served.get(feed.name) ?? 0;
        const f = fetches[feed.name];
        const lastAt = f?.last ? Date.parse(f.last.at) : startedAt;
        return {
          name: feed.name,
          path: `/feeds/${feed.name}.txt`,
          capacity: feed.capacity,
          enforced: count,
          cut: Math.max(0, desired - count),
          ...(f?.last ? { last_fetch: f.last } : {}),
          fetches: f?.ok ?? 0,
          not_modified: f?.not_modified ?? 0,
          ...(overdueAfter ? { fetch_overdue: now() - lastAt > overdueAfter } : {}),
        };
      }),
      auth_failures: p.http.authFailures(),
      ...(p.refresher ? { refresh: p.refresher.status() } : {}),
    };
  }
  return Object.assign(engine, { status });
}

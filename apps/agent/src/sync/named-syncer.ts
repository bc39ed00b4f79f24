import type { RampartClient } from '@rampart/client';
import type { AgentCapabilities, DomainRecord, FileRecord, UrlRecord } from '@rampart/contracts';
import type { Enforcer, IndicatorKind, PluginLogger } from '@rampart/plugin-kit';
import type { AgentMetrics } from '../runtime/metrics.ts';
import type { BlockPolicy } from './block-state.ts';
import { EnforcerWorker } from './enforcer-worker.ts';
import { sendFeedback } from './feedback.ts';
import { EMPTY_NAMED_SET, NamedBlockState, countNamedRemovals, namedSetOps, type NamedRecordInput, type NamedSet } from './named-block-state.ts';
import type { NamedFeedStateFile } from './named-feed-state.ts';
import { SyncRefusedError, removalAllowed, type SyncKind, type SyncerOptions } from './syncer.ts';

export type NamedKind = Exclude<IndicatorKind, 'ipv4'>;

export interface NamedSyncerDeps {
  kind: NamedKind;
  client: RampartClient;
  state: NamedBlockState;
  feedState: NamedFeedStateFile;
  enforcers: () => EnforcerWorker<NamedSet>[];
  policy: () => BlockPolicy;
  log: PluginLogger;
  metrics: AgentMetrics;
  options: () => SyncerOptions;
  /** The agent's id, for feedback (none before registration). */
  gaid?: () => string | undefined;
  /** Announced with each feedback. */
  capabilities?: () => AgentCapabilities;
  now?: () => number;
}

/** The values of one feed record of a kind (a file record: every digest it carries). */
export function recordInput(kind: NamedKind, record: DomainRecord | UrlRecord | FileRecord): NamedRecordInput {
  const values =
    kind === 'domain' ? [(record as DomainRecord).domain] : kind === 'url' ? [(record as UrlRecord).url] : [(record as FileRecord).sha256, (record as FileRecord).sha1, (record as FileRecord).md5];
  return { values: values.filter((v) => v !== ''), score: record.score, ts: record.ts, decision: record.decision ?? -1 };
}

/** `/…/score/{m}` takes 1 < m < 1000: the threshold clamped into it. */
function listMinScore(threshold: number): number {
  return Math.min(999.999, Math.max(1.001, threshold));
}

/**
 * Keeps the enforcers of one named kind (domain, URL, file digest) in line with the server, with
 * the IPv4 syncer's guarantees: the feed pulled from the cursor saved on disk, a full reconcile
 * through the kind's score list, a decision or feed change pushed over the sync channel applied
 * at once, local decay on a timer, the never-block list, and the mass-removal / empty-list guard.
 * One operation at a time; each enforcer converges on its own worker queue.
 */
export class NamedSyncer {
  cursor = 0;
  lastSyncAt = 0;
  private chain: Promise<unknown> = Promise.resolve();
  private decayTimer: NodeJS.Timeout | undefined;
  private lastSave = 0;
  private dirty = false;
  private withdrawn = false;
  /** What `Enforcer.allow` was last given, joined (a change makes every enforcer replace whole). */
  private allowedKey = '';
  private allowedValues: string[] = [];

  constructor(private readonly deps: NamedSyncerDeps) {}

  get kind(): NamedKind {
    return this.deps.kind;
  }

  get state(): NamedBlockState {
    return this.deps.state;
  }

  worker(label: string, enforcer: Enforcer): EnforcerWorker<NamedSet> {
    enforcer.allow?.(this.allowedValues);
    return new EnforcerWorker(label, enforcer, {
      log: this.deps.log,
      metrics: this.deps.metrics,
      timeoutMs: () => this.deps.options().enforcerTimeoutMs ?? 120_000,
      ...namedSetOps,
      onSettled: (w) => void sendFeedback({ ...this.deps, gaid: this.deps.gaid ?? (() => undefined), threshold: () => this.deps.policy().threshold }, w),
      ...(this.deps.now ? { now: this.deps.now } : {}),
    });
  }

  private now(): number {
    return Math.floor((this.deps.now?.() ?? Date.now()) / 1000);
  }

  async restore(): Promise<void> {
    const saved = await this.deps.feedState.load();
    if (!saved) return;
    for (const entry of saved.entries) this.deps.state.restore(entry);
    this.deps.state.listedAt = saved.listedAt;
    this.cursor = saved.cursor;
    this.deps.log.info({ kind: this.kind, cursor: saved.cursor, indicators: saved.entries.length }, 'feed state restored');
  }

  private exclusive<T>(task: () => Promise<T>): Promise<T> {
    const run = this.chain.then(task, task);
    this.chain = run.catch(() => undefined);
    return run;
  }

  async idle(): Promise<void> {
    await this.chain;
    await Promise.all(this.deps.enforcers().map((w) => w.idle()));
  }

  incremental(): Promise<void> {
    return this.exclusive(async () => {
      await this.pullFeed();
      await this.enforce('incremental');
    });
  }

  full(force = false): Promise<void> {
    return this.exclusive(async () => {
      await this.pullList(force);
      await this.pullFeed();
      for (const w of this.deps.enforcers()) w.requireReplace();
      await this.enforce('full', force);
    });
  }

  decision(indicator: string, decision: -1 | 0 | 1, ttl: number | null): Promise<void> {
    return this.exclusive(async () => {
      if (this.deps.state.applyDecision(indicator, decision, ttl, this.now())) this.dirty = true;
      await this.enforce('decision');
    });
  }

  /** The short read-back loop (see Syncer.reconcile). */
  async reconcile(): Promise<number> {
    if (this.withdrawn || this.lastSyncAt === 0) return 0;
    const workers = this.deps.enforcers();
    const retry = (w: EnforcerWorker<NamedSet>) => {
      if (w.needsReplace && !w.busy && !this.withdrawn) void w.submit(this.deps.state.enforced);
    };
    for (const w of workers) retry(w);
    const drifts = await Promise.all(
      workers.map(async (w) => {
        const drifted = await w.reconcile();
        retry(w);
        return drifted === true ? 1 : 0;
      }),
    );
    return drifts.reduce<number>((a, b) => a + b, 0);
  }

  /** `running = no`: nothing is synced or enforced until `resume` (the caller withdraws the enforcers). */
  pause(): void {
    this.withdrawn = true;
    clearTimeout(this.decayTimer);
    this.deps.state.enforced = EMPTY_NAMED_SET;
    this.deps.metrics.kindSetSize.set({ kind: this.kind }, 0);
  }

  resume(): void {
    this.withdrawn = false;
    for (const w of this.deps.enforcers()) w.requireReplace();
  }

  async stop(): Promise<void> {
    clearTimeout(this.decayTimer);
    await this.exclusive(async () => this.save(true));
  }

  private async pullFeed(): Promise<void> {
    const { client, state, kind } = this.deps;
    const feed = kind === 'domain' ? client.domainsFeed(this.cursor) : kind === 'url' ? client.urlsFeed(this.cursor) : client.filesFeed(this.cursor);
    for (;;) {
      const step = await feed.next();
      if (step.done) break;
      for (const record of step.value.body) state.ingestRecord(recordInput(kind, record));
      this.cursor = step.value.header.next_ts ?? step.value.body.at(-1)!.ts;
      this.dirty = true;
    }
    this.deps.metrics.kindKnown.set({ kind }, state.size);
  }

  /** The kind's score list: every value the server says the organization should block now. */
  private async listed(): Promise<string[]> {
    const { client, kind, policy } = this.deps;
    const min = listMinScore(policy().threshold);
    const values: string[] = [];
    const walk = async (query: Parameters<RampartClient['scoreList']>[2], strip = '') => {
      for await (const page of client.scoreList(kind, min, query)) for (const item of page.items) values.push(strip && item.startsWith(strip) ? item.slice(strip.length) : item);
    };
    if (kind === 'domain') await walk({ protocol: 'HTTP' }, 'http://');
    else if (kind === 'url') await walk({});
    else for (const digest of ['SHA256', 'SHA1', 'MD5'] as const) await walk({ digest });
    return values;
  }

  private async pullList(force: boolean): Promise<void> {
    const { state, log } = this.deps;
    // The whole list is read before anything changes: a failed page leaves the state untouched.
    const values = await this.listed();
    const enforced = state.enforced.values.length;
    if (values.length === 0 && enforced > 0 && !(force || this.deps.options().forceSync)) {
      log.warn({ kind: this.kind, enforced }, 'server list came back empty; reconcile refused');
      this.deps.metrics.kindSyncs.inc({ kind: this.kind, sync: 'full', outcome: 'refused' });
      throw new SyncRefusedError('empty_list', { enforced });
    }
    state.applyServerList(values, this.now());
    this.dirty = true;
  }

  private async enforce(sync: SyncKind, force = false): Promise<void> {
    const { state, policy, log, metrics, kind } = this.deps;
    if (this.withdrawn) return;
    const now = this.now();
    const p = policy();
    const next = state.evaluate(now, p);
    const previous = state.enforced.values.length;
    const removals = countNamedRemovals(state.enforced, next);
    const additions = next.values.length - (previous - removals);
    if (!removalAllowed(previous, removals, force, this.deps.options())) {
      log.warn({ kind, sync, previous, remove: removals, add: additions }, 'sync would remove too much of the block set; refused');
      metrics.kindSyncs.inc({ kind, sync, outcome: 'refused' });
      this.scheduleDecay(now, p);
      throw new SyncRefusedError('mass_removal', { previous, remove: removals });
    }
    state.enforced = next;
    this.updateAllowed();
    for (const w of this.deps.enforcers()) void w.submit(next);
    this.lastSyncAt = now;
    metrics.kindSetSize.set({ kind }, next.values.length);
    metrics.kindSyncs.inc({ kind, sync, outcome: 'ok' });
    if (additions || removals) log.info({ kind, sync, add: additions, remove: removals, enforced: next.values.length, cut: next.cut }, 'block set changed');
    this.scheduleDecay(now, p);
    await this.save(false);
  }

  /** Hands a changed whitelist to the enforcers that take one; they then rewrite their target whole. */
  private updateAllowed(): void {
    const values = this.deps.state.allowed();
    const key = values.join('\n');
    if (key === this.allowedKey) return;
    this.allowedKey = key;
    this.allowedValues = values;
    for (const w of this.deps.enforcers()) {
      if (!w.enforcer.allow) continue;
      w.enforcer.allow(values);
      w.requireReplace();
    }
  }

  private scheduleDecay(now: number, policy: BlockPolicy): void {
    clearTimeout(this.decayTimer);
    const at = this.deps.state.nextChange(now, policy);
    if (!Number.isFinite(at)) return;
    const { min, max } = this.deps.options().decayTimerMs ?? { min: 1000, max: 3_600_000 };
    const delay = Math.min(max, Math.max(min, (at - now) * 1000 + 500));
    this.decayTimer = setTimeout(() => {
      this.exclusive(() => this.enforce('decay')).catch((err: unknown) => this.deps.log.warn({ err, kind: this.kind }, 'decay re-evaluation failed'));
    }, delay);
    this.decayTimer.unref();
  }

  private async save(always: boolean): Promise<void> {
    const every = this.deps.options().saveEveryMs ?? 60_000;
    if (!this.dirty || (!always && Date.now() - this.lastSave < every)) return;
    await this.deps.feedState.save({ cursor: this.cursor, listedAt: this.deps.state.listedAt, entries: this.deps.state.entries() });
    this.lastSave = Date.now();
    this.dirty = false;
  }
}

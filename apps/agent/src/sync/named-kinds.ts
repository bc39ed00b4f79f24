import type { RampartClient } from '@rampart/client';
import type { AgentCapabilities } from '@rampart/contracts';
import { codecOf, type Enforcer, type IndicatorKind, type PluginLogger } from '@rampart/plugin-kit';
import type { AgentMetrics } from '../runtime/metrics.ts';
import type { BlockPolicy } from './block-state.ts';
import type { EnforcerWorker } from './enforcer-worker.ts';
import { NamedBlockState, type NamedSet } from './named-block-state.ts';
import { NamedFeedStateFile } from './named-feed-state.ts';
import { forKind, type NamedNeverBlock } from './named-never-block.ts';
import { NamedSyncer, type NamedKind } from './named-syncer.ts';
import type { SyncerOptions } from './syncer.ts';

export const NAMED_KINDS: readonly NamedKind[] = ['domain', 'url', 'file'];

export interface NamedKindsDeps {
  client: RampartClient;
  stateDir: string;
  log: PluginLogger;
  metrics: AgentMetrics;
  policy: () => BlockPolicy;
  options: () => SyncerOptions;
  /** The live workers of one kind (EnforcerSlots). */
  workersOf: (kind: NamedKind) => EnforcerWorker<NamedSet>[];
  /** The kinds some configured enforcer takes now. */
  wanted: () => ReadonlySet<IndicatorKind>;
  gaid?: () => string | undefined;
  capabilities?: () => AgentCapabilities;
  /** The never-block list the kinds start with (see setNeverBlock). */
  neverBlock: NamedNeverBlock;
}

/**
 * The agent's domains, URLs and file digests: one NamedSyncer per kind, of which only the kinds
 * some configured enforcer takes are synced (no wasted pulls). A kind newly taken, and every kind
 * after `running = yes`, starts with a full reconcile.
 */
export class NamedKinds {
  private readonly syncers = new Map<NamedKind, NamedSyncer>();
  private readonly needFull = new Set<NamedKind>(NAMED_KINDS);

  constructor(private readonly deps: NamedKindsDeps) {
    for (const kind of NAMED_KINDS) {
      this.syncers.set(
        kind,
        new NamedSyncer({
          kind,
          client: deps.client,
          state: new NamedBlockState(codecOf(kind), forKind(deps.neverBlock, kind)),
          feedState: new NamedFeedStateFile(deps.stateDir, kind),
          enforcers: () => deps.workersOf(kind),
          policy: deps.policy,
          log: deps.log,
          metrics: deps.metrics,
          options: deps.options,
          ...(deps.gaid ? { gaid: deps.gaid } : {}),
          ...(deps.capabilities ? { capabilities: deps.capabilities } : {}),
        }),
      );
    }
  }

  /** Loads every kind's saved feed state (no pull). */
  async restore(): Promise<void> {
    for (const syncer of this.syncers.values()) await syncer.restore();
  }

  worker(kind: NamedKind, label: string, enforcer: Enforcer): EnforcerWorker<NamedSet> {
    return this.syncers.get(kind)!.worker(label, enforcer);
  }

  setNeverBlock(list: NamedNeverBlock): void {
    for (const s of this.syncers.values()) s.state.neverBlock = forKind(list, s.kind);
  }

  /** The syncers of the kinds some configured enforcer takes. */
  active(): NamedSyncer[] {
    const wanted = this.deps.wanted();
    return NAMED_KINDS.filter((kind) => wanted.has(kind) && this.syncers.has(kind)).map((kind) => this.syncers.get(kind)!);
  }

  /** Runs a sync of each active kind in `kinds` (default all) in the background; a failed full one is retried by the next. */
  kick(sync: 'incremental' | 'full', kinds?: readonly IndicatorKind[]): void {
    for (const syncer of this.active()) {
      if (kinds && !kinds.includes(syncer.kind)) continue;
      const full = sync === 'full' || this.needFull.has(syncer.kind);
      (full ? syncer.full() : syncer.incremental()).then(
        () => {
          if (full) this.needFull.delete(syncer.kind);
        },
        (err: unknown) => this.deps.log.warn({ err, kind: full ? 'full' : 'incremental', indicator: syncer.kind }, 'sync failed'),
      );
    }
  }

  /** After a settings change: kinds taken now that were not before need a full reconcile. */
  taken(before: ReadonlySet<IndicatorKind>): void {
    const now = this.deps.wanted();
    for (const kind of NAMED_KINDS) if (now.has(kind) && !before.has(kind)) this.needFull.add(kind);
  }

  /** The sync channel's hello: pull each active kind whose feed head is past its cursor. */
  hello(heads: Partial<Record<IndicatorKind, number>> | undefined): void {
    for (const syncer of this.active()) {
      const head = heads?.[syncer.kind];
      if (head === undefined || head > syncer.cursor) this.kick('incremental', [syncer.kind]);
    }
  }

  decision(kind: NamedKind, indicator: string, decision: -1 | 0 | 1, ttl: number | null, version?: number): Promise<void> | undefined {
    return this.active()
      .find((s) => s.kind === kind)
      ?.decision(indicator, decision, ttl, version);
  }

  reconcile(): Promise<number[]> {
    return Promise.all(this.active().map((s) => s.reconcile()));
  }

  pause(): void {
    for (const s of this.syncers.values()) s.pause();
  }

  resume(): void {
    for (const s of this.syncers.values()) s.resume();
    for (const kind of NAMED_KINDS) this.needFull.add(kind);
  }

  /** For /healthz: each synced kind. */
  health(): Record<string, { feed_cursor: number; enforced: number; known_indicators: number; last_sync_at: number | null }> {
    return Object.fromEntries(
      this.active().map((s) => [s.kind, { feed_cursor: s.cursor, enforced: s.state.enforced.values.length, known_indicators: s.state.size, last_sync_at: s.lastSyncAt || null }]),
    );
  }

  async stop(): Promise<void> {
    for (const s of this.syncers.values()) await s.stop().catch((err: unknown) => this.deps.log.warn({ err, kind: s.kind }, 'feed state not saved'));
  }
}

import { join } from 'node:path';
import pino from 'pino';
import { RampartClient } from '@rampart/client';
import { DryRunConfig, dryRunEnforcer, readDryRunFile } from '@rampart/enforcer-dry-run';
import { codecOf, type IndicatorKind } from '@rampart/plugin-kit';
import { createMetrics } from './runtime/metrics.ts';
import { BlockState } from './sync/block-state.ts';
import type { EnforcerWorker } from './sync/enforcer-worker.ts';
import { FeedStateFile } from './sync/feed-state.ts';
import { NamedBlockState, type NamedSet } from './sync/named-block-state.ts';
import { NamedFeedStateFile } from './sync/named-feed-state.ts';
import { NamedNeverBlock, forKind } from './sync/named-never-block.ts';
import { NamedSyncer, type NamedKind } from './sync/named-syncer.ts';
import { NeverBlock } from './sync/never-block.ts';
import { Syncer, type SyncerOptions } from './sync/syncer.ts';

export interface DryRunFollowerOptions {
  /** The control plane's API base, e.g. `http://127.0.0.1:8080/api/v1`. */
  baseUrl: string;
  apiKey: string;
  /** Where the feed state and the dry-run files are kept (one empty directory per follower). */
  dir: string;
  /** The agent's `score_threshold`. */
  threshold: number;
  kinds: readonly IndicatorKind[];
}

/** Neither guard refuses: the caller compares every change, removals included. */
const OPTIONS: SyncerOptions = { pageSize: 1000, forceSync: true, maxRemovalFraction: 1, minGuardedRemovals: 0, saveEveryMs: 0, decayTimerMs: { min: 3_600_000, max: 3_600_000 } };

/**
 * One agent of an organization as the agent's own sync code runs it, for tests that compare what
 * the agent enforces with what the server lists: the real syncers (IPv4 and each named kind) over
 * HTTP, each kind enforced by the dry-run enforcer, whose file is read back as the enforced set.
 * No registration, scheduler or sync channel: the caller drives full and incremental syncs and
 * hands it the decisions the channel would push. Every call returns once the enforcers are idle.
 */
export class DryRunFollower {
  private constructor(
    private readonly ipv4: { syncer: Syncer; workers: EnforcerWorker[] } | undefined,
    private readonly named: Map<NamedKind, { syncer: NamedSyncer; workers: EnforcerWorker<NamedSet>[] }>,
    private readonly paths: Map<IndicatorKind, string>,
  ) {}

  static async create(o: DryRunFollowerOptions): Promise<DryRunFollower> {
    const log = pino({ level: 'silent' });
    const client = new RampartClient({ baseUrl: o.baseUrl, apiKey: o.apiKey, retries: 0 });
    const metrics = createMetrics();
    const policy = () => ({ threshold: o.threshold, maximumRules: 1_000_000 });
    const ipv4Never = new NeverBlock({ ownAddresses: [], controlPlane: [], reservedIps: [], allowList: [] });
    const never = new NamedNeverBlock({ controlPlane: [], domains: [], urls: [], digests: [], ipv4: ipv4Never });
    const paths = new Map<IndicatorKind, string>();
    const kinds = Object.fromEntries(o.kinds.filter((k) => k !== 'ipv4').map((k) => [k, { path: join(o.dir, `${k}.json`) }]));
    paths.set('ipv4', join(o.dir, 'ipv4.json'));
    for (const [k, v] of Object.entries(kinds)) paths.set(k as IndicatorKind, v.path);
    const config = DryRunConfig.parse({ active: true, path: paths.get('ipv4'), kinds });
    let ipv4: { syncer: Syncer; workers: EnforcerWorker[] } | undefined;
    if (o.kinds.includes('ipv4')) {
      const workers: EnforcerWorker[] = [];
      const syncer = new Syncer({ client, state: new BlockState(ipv4Never), feedState: new FeedStateFile(o.dir), enforcers: () => workers, policy, gaid: () => undefined, log, metrics, options: () => OPTIONS });
      workers.push(syncer.worker('dry_run', await dryRunEnforcer.create(config, { log })));
      ipv4 = { syncer, workers };
    }
    const named = new Map<NamedKind, { syncer: NamedSyncer; workers: EnforcerWorker<NamedSet>[] }>();
    for (const kind of o.kinds) {
      if (kind === 'ipv4') continue;
      const workers: EnforcerWorker<NamedSet>[] = [];
      const state = new NamedBlockState(codecOf(kind), forKind(never, kind));
      const syncer = new NamedSyncer({ kind, client, state, feedState: new NamedFeedStateFile(o.dir, kind), enforcers: () => workers, policy, log, metrics, options: () => OPTIONS });
      workers.push(syncer.worker(`dry_run/${kind}`, await dryRunEnforcer.create(config, { log, kind })));
      named.set(kind, { syncer, workers });
    }
    return new DryRunFollower(ipv4, named, paths);
  }

  private syncerOf(kind: IndicatorKind): Syncer | NamedSyncer {
    const s = kind === 'ipv4' ? this.ipv4?.syncer : this.named.get(kind)?.syncer;
    if (!s) throw new Error(`this follower does not take kind '${kind}'`);
    return s;
  }

  private async settled(kind: IndicatorKind, op: Promise<void>): Promise<void> {
    try {
      await op;
    } finally {
      await this.syncerOf(kind).idle();
    }
  }

  /** A full reconcile: the score list, then the feed from the saved cursor. */
  full(kind: IndicatorKind): Promise<void> {
    return this.settled(kind, this.syncerOf(kind).full(true));
  }

  /** The feed from the saved cursor. */
  incremental(kind: IndicatorKind): Promise<void> {
    return this.settled(kind, this.syncerOf(kind).incremental());
  }

  /** A decision as the sync channel pushes it (`decision_changed`, with its `ts` as `version`). */
  decision(kind: IndicatorKind, indicator: string, decision: -1 | 0 | 1, ttl: number | null, version?: number): Promise<void> {
    return this.settled(kind, this.syncerOf(kind).decision(indicator, decision, ttl, version));
  }

  /** What the kind's dry-run enforcer holds now, read back from its file (the enforcer's canonical form and order). */
  async enforced(kind: IndicatorKind): Promise<string[]> {
    return (await readDryRunFile(this.paths.get(kind)!))?.enforced ?? [];
  }

  async close(): Promise<void> {
    for (const w of this.ipv4?.workers ?? []) await w.close(1000);
    for (const { syncer, workers } of this.named.values()) {
      for (const w of workers) await w.close(1000);
      await syncer.stop();
    }
    await this.ipv4?.syncer.stop();
  }
}

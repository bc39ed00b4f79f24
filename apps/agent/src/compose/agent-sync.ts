import type { Logger } from 'pino';
import type { AgentCapabilities, SyncDecisionChanged, SyncHello } from '@rampart/contracts';
import type { IndicatorKind } from '@rampart/plugin-kit';
import type { z } from 'zod';
import type { PlannedEnforcer } from '../config/plugins.ts';
import { EnforcerSlots, type RefusedEnforcer } from '../runtime/enforcer-slots.ts';
import { BlockState } from '../sync/block-state.ts';
import { FeedStateFile } from '../sync/feed-state.ts';
import { NamedKinds, type NamedKindsDeps } from '../sync/named-kinds.ts';
import type { NamedNeverBlock } from '../sync/named-never-block.ts';
import type { NeverBlock } from '../sync/never-block.ts';
import { Syncer } from '../sync/syncer.ts';

/** What the named kinds take, but the slots' (AgentSync gives those), and the never-block lists to start with. */
export interface AgentSyncDeps extends Omit<NamedKindsDeps, 'workersOf' | 'wanted' | 'neverBlock' | 'log' | 'gaid' | 'capabilities'> {
  log: Logger;
  gaid: () => string | undefined;
  capabilities: () => AgentCapabilities;
  /** `running = yes`: syncs run only then. */
  running: () => boolean;
  neverBlock: NeverBlock;
  namedNeverBlock: NamedNeverBlock;
}

/**
 * The agent's sync engine, built whole: the IPv4 block state and syncer, the named kinds, and
 * the enforcer slots they feed (each slot's worker comes from its kind's syncer; slot changes
 * run between IPv4 sync operations).
 */
export class AgentSync {
  readonly state: BlockState;
  readonly slots: EnforcerSlots;
  readonly ipv4: Syncer;
  /** Domains, URLs and file digests (synced only while some configured enforcer takes them). */
  readonly named: NamedKinds;
  /** The next IPv4 sync is a full one (at start, after `running = yes`, after a failed full one). */
  private needFull = true;

  constructor(private readonly deps: AgentSyncDeps) {
    const { client, stateDir, metrics, policy, options, gaid, capabilities } = deps;
    const log = deps.log.child({ component: 'sync' });
    this.state = new BlockState(deps.neverBlock);
    this.slots = new EnforcerSlots({
      log: deps.log,
      metrics,
      serialize: (task) => this.ipv4.between(task),
      worker: (label, enforcer, kind) => (kind === 'ipv4' ? this.ipv4.worker(label, enforcer) : this.named.worker(kind, label, enforcer)),
      onCreated: () => this.kick('incremental'),
    });
    const enforcers = () => this.slots.workersOf('ipv4');
    this.ipv4 = new Syncer({ client, state: this.state, feedState: new FeedStateFile(stateDir), enforcers, policy, gaid, capabilities, log, metrics, options });
    const workersOf = (kind: IndicatorKind) => this.slots.workersOf(kind);
    const wanted = () => this.slots.kinds;
    this.named = new NamedKinds({ client, stateDir, log, metrics, policy, options, workersOf, wanted, gaid, capabilities, neverBlock: deps.namedNeverBlock });
  }

  /** Loads the saved feed states (no pull). */
  async restore(): Promise<void> {
    await this.ipv4.restore();
    await this.named.restore();
  }

  /**
   * Runs a sync in the background for `kinds` (default: IPv4 and every named kind some enforcer
   * takes); a full reconcile that failed is retried by the next one.
   */
  kick(kind: 'incremental' | 'full', kinds?: readonly IndicatorKind[]): void {
    if (!this.deps.running()) return;
    this.named.kick(kind, kinds);
    if (kinds && !kinds.includes('ipv4')) return;
    const full = kind === 'full' || this.needFull;
    const task = full ? this.ipv4.full() : this.ipv4.incremental();
    task.then(
      () => {
        if (full) this.needFull = false;
      },
      (err: unknown) => this.deps.log.warn({ err, kind: full ? 'full' : 'incremental' }, 'sync failed'),
    );
  }

  /** The sync channel's hello: pull each kind whose feed head is past its cursor. */
  hello(feed: z.infer<typeof SyncHello>['feed']): void {
    const cursor = feed?.ipv4;
    if (cursor === undefined || cursor > this.ipv4.cursor) this.kick('incremental', ['ipv4']);
    if (this.deps.running()) this.named.hello(feed);
  }

  /** A decision pushed over the sync channel, applied by its kind's syncer. */
  decision(m: z.infer<typeof SyncDecisionChanged>): void {
    if (!this.deps.running()) return;
    const task = m.kind === 'ipv4' ? this.ipv4.decision(m.indicator, m.decision, m.ttl, m.ts) : this.named.decision(m.kind, m.indicator, m.decision, m.ttl, m.ts);
    task?.catch((err: unknown) => this.deps.log.warn({ err, kind: m.kind }, 'decision not applied'));
  }

  /** The short read-back loop of every kind; bounded by the enforcer timeout. */
  async reconcile(): Promise<void> {
    try {
      await Promise.all([this.ipv4.reconcile(), this.named.reconcile()]);
    } catch (err) {
      this.deps.log.warn({ err }, 'reconcile failed');
    }
  }

  setNeverBlock(neverBlock: NeverBlock, named: NamedNeverBlock): void {
    this.state.neverBlock = neverBlock;
    this.named.setNeverBlock(named);
  }

  /**
   * The enforcers of new settings, in one step between syncs: the syncers stop before rules are
   * withdrawn and start after the new instances exist, so no sync ever reaches an instance that
   * is going away. A kind newly taken by some enforcer starts with a full reconcile of its own.
   */
  async applyEnforcers(planned: PlannedEnforcer[], refused: RefusedEnforcer[], running: boolean, wasRunning: boolean): Promise<void> {
    const kindsBefore = new Set(this.slots.kinds);
    await this.ipv4.between(async () => {
      if (!running && wasRunning) for (const s of [this.ipv4, this.named]) s.pause();
      await this.slots.apply(planned, running, refused);
      if (running && !wasRunning) for (const s of [this.ipv4, this.named]) s.resume();
    });
    this.named.taken(kindsBefore);
  }

  /** `running = yes` again: the next IPv4 sync is a full one. */
  resumed(): void {
    this.needFull = true;
  }

  /** Enforcer calls in progress are aborted and waited for at most `timeoutMs`. */
  closeEnforcers(timeoutMs: number): Promise<void> {
    return this.slots.close(timeoutMs);
  }

  /** Saves every kind's feed state. */
  async stop(): Promise<void> {
    await this.ipv4.stop().catch((err: unknown) => this.deps.log.warn({ err }, 'feed state not saved'));
    await this.named.stop();
  }
}

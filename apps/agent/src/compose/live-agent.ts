import { SourceOptionsBase, policyOptionsOf, type DetectionMode } from '@rampart/plugin-kit';
import { ReportedPlugin } from '@rampart/contracts';
import { planPlugins, type PlannedEnforcer, type PluginPlan } from '../config/plugins.ts';
import type { Registry } from '../registry.ts';
import { memoryMb, refusedEnforcers } from '../runtime/agent-support.ts';
import type { RefusedEnforcer } from '../runtime/enforcer-slots.ts';
import { startOpsServer } from '../runtime/http.ts';
import { Scheduler, cronForMinutes } from '../runtime/scheduler.ts';
import type { EffectiveSettings } from '../runtime/settings.ts';
import type { Supervisor } from '../runtime/supervisor.ts';
import type { BlockPolicy } from '../sync/block-state.ts';
import type { SyncChannel } from '../sync/channel.ts';
import { syncerOptionsOf } from '../sync/syncer.ts';
import { AGENT_VERSION } from '../defaults.ts';
import { AgentSync } from './agent-sync.ts';
import {
  connectControlPlane,
  namedNeverBlockFor,
  neverBlockOf,
  openReporting,
  sourcesOf,
  syncChannelOf,
  type AgentContext,
  type ControlPlane,
  type Reporting,
} from './parts.ts';

/** The state a running agent changes as settings change (the parts themselves never change). */
export interface RunState {
  /** `running = yes`: enforcing and reporting. */
  running: boolean;
  stopping: boolean;
}

export interface LiveAgentParts {
  controlPlane: ControlPlane;
  sync: AgentSync;
  reporting: Reporting;
  sources: Supervisor;
  scheduler: Scheduler;
  channel: SyncChannel | undefined;
  ops: Awaited<ReturnType<typeof startOpsServer>>;
}

/** The agent's /healthz body. */
export type AgentHealth = { healthy: boolean; [key: string]: unknown };

/**
 * A started agent: every part built complete before it runs (see `open`), then settings applied
 * to them as they change. Only the run state, the plugin plan and the timers change after.
 */
export class LiveAgent {
  /** The enforcers of the last settings, and the configured ones that cannot run. */
  private planned: PlannedEnforcer[] = [];
  private refused: RefusedEnforcer[] = [];
  private applying: Promise<void> = Promise.resolve();
  private readonly timers: NodeJS.Timeout[] = [];
  private reconcileTimer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly ctx: AgentContext & { registry: Registry; run: RunState; health: () => Promise<AgentHealth> },
    readonly parts: LiveAgentParts,
  ) {}

  /** Builds every part: control plane, sync engine (restored), reporting, sources, scheduler, ops endpoint, sync channel. */
  static async open(ctx: AgentContext & { registry: Registry; run: RunState; health: () => Promise<AgentHealth> }, current: EffectiveSettings): Promise<LiveAgent> {
    const { settings, metrics } = ctx;
    const local = settings.local.local;
    const controlPlane = await connectControlPlane(settings.local);
    const neverBlock = neverBlockOf(settings, controlPlane, current);
    const sync = new AgentSync({
      client: controlPlane.client,
      stateDir: local.state_dir,
      log: ctx.log,
      metrics,
      policy: () => policyOf(settings.current()),
      options: () => syncerOptionsOf(settings.local.local),
      gaid: () => settings.current().settings.gaid,
      capabilities: ctx.capabilities,
      running: ctx.running,
      neverBlock,
      namedNeverBlock: namedNeverBlockFor(settings, controlPlane, neverBlock),
    });
    await sync.restore();
    const reporting = await openReporting(ctx, controlPlane.client, () => sync.state.neverBlock);
    const sources = sourcesOf(ctx, reporting.pipeline);
    const scheduler = new Scheduler(ctx.log.child({ component: 'scheduler' }));
    metrics.provideStates({ enforcers: () => sync.slots.health(), sources: () => sources.health(), engines: () => sync.slots.engines() });
    const ops = await startOpsServer({ host: local.metrics_host, port: local.metrics_port, registry: metrics.registry, health: ctx.health });
    const channel = syncChannelOf(ctx, controlPlane.client, sync);
    return new LiveAgent(ctx, { controlPlane, sync, reporting, sources, scheduler, channel, ops });
  }

  /** Applies the first settings (the plan already checked) and follows every change after. */
  async applyFirst(current: EffectiveSettings, plan: PluginPlan): Promise<void> {
    this.ctx.settings.onChange((next, previous) => {
      this.applying = this.applying.then(() => this.apply(next, previous)).catch((err: unknown) => this.ctx.log.error({ err }, 'settings change not applied'));
    });
    await this.apply(current, undefined, plan);
    this.parts.reporting.reporter.start();
  }

  /** Connects the sync channel (when configured). */
  connect(): void {
    this.parts.channel?.start();
  }

  /** The periodic work: full reconcile, read-back loop, settings pull, enforcer health checks. */
  schedule(): void {
    const local = this.ctx.settings.local.local;
    const every = (ms: number, task: () => void) => {
      const timer = setInterval(task, ms);
      timer.unref();
      this.timers.push(timer);
    };
    every(local.full_reconcile_hours * 3_600_000, () => this.parts.sync.kick('full'));
    this.scheduleReconcile();
    every(local.settings_pull_minutes * 60_000, () => void this.pullSettings());
    every(local.healthcheck_seconds * 1000, () => void this.parts.sync.slots.checkHealth());
  }

  /**
   * The short loop: repairs what a firewall reload or a flush took away within one interval.
   * A chain of timeouts rather than an interval: the next check starts `reconcile_seconds`
   * (re-read, so SIGHUP changes it) after the previous one ended, so slow read-backs never pile up.
   */
  private scheduleReconcile(): void {
    if (this.ctx.run.stopping) return;
    const timer = setTimeout(() => {
      // Bounded by the enforcer timeout; a stalled enforcer is skipped, so it holds up no other.
      const check = this.ctx.run.running ? this.parts.sync.reconcile() : Promise.resolve();
      void check.then(() => this.scheduleReconcile());
    }, this.ctx.settings.local.local.reconcile_seconds * 1000);
    timer.unref();
    this.reconcileTimer = timer;
  }

  private async pullSettings(): Promise<void> {
    const { settings, log } = this.ctx;
    const { client } = this.parts.controlPlane;
    const { gaid } = settings.current().settings;
    try {
      await settings.fromServer({ settings: await client.agentSettings(gaid, { retries: 1 }) });
    } catch (err) {
      log.debug({ err }, 'settings pull failed');
    }
    // Every pull is a check-in too, so `running = no` agents stay alive on the console.
    if (!this.ctx.run.running) {
      await client
        .agentFeedback({ agid: gaid, plugin: 'agent', code: 'not_running', blacklist: 0 }, { retries: 0 })
        .catch((err: unknown) => log.debug({ err }, 'check-in failed'));
    }
  }

  /**
   * The plugins of new settings: the plan, or undefined (plugins left as they were) when a
   * source cannot run. An `ips` entry that cannot run is refused alone: reported as a failed
   * enforcer (in /healthz, feedback and metrics), while every other entry is applied.
   */
  private replan(next: EffectiveSettings): { plan: PluginPlan | undefined; refused: RefusedEnforcer[] } {
    const planned = planPlugins(next.settings, this.ctx.registry, this.ctx.settings.local.local);
    const refused = refusedEnforcers(planned.problems);
    const others = planned.problems.filter((p) => !p.path.startsWith('ips.'));
    if (others.length > 0) {
      this.ctx.log.error({ problems: others }, 'new settings name sources that cannot run; plugins left as they were');
      return { plan: undefined, refused };
    }
    if (refused.length > 0) this.ctx.log.error({ refused }, 'new settings name enforcers that cannot run; the others are applied');
    return { plan: planned.plan, refused };
  }

  /** Applies a settings state: plugins, never-block list, schedule and `running`. */
  private async apply(next: EffectiveSettings, previous: EffectiveSettings | undefined, plan?: PluginPlan): Promise<void> {
    const { settings, log, run } = this.ctx;
    const { sync, controlPlane } = this.parts;
    const { plan: resolved, refused } = plan ? { plan, refused: [] } : this.replan(next);
    const neverBlock = neverBlockOf(settings, controlPlane, next);
    sync.setNeverBlock(neverBlock, namedNeverBlockFor(settings, controlPlane, neverBlock));
    const running = next.settings.running === 'yes';
    const wasRunning = run.running;
    if (resolved) {
      this.planned = resolved.enforcers;
      this.refused = refused;
    }
    if (running !== wasRunning) {
      if (!running) log.warn({}, 'running = no: withdrawing rules, not enforcing or reporting');
      else log.info({}, 'running = yes: enforcing and reporting again');
    }
    await sync.applyEnforcers(this.planned, this.refused, running, wasRunning);
    if (resolved) await this.applySources(resolved);
    if (resolved && previous) {
      this.parts.channel?.sendState();
      await this.reportRefused(refused);
    }
    this.parts.scheduler.set(settings.local.local.sync_cron ?? cronForMinutes(next.settings.sync_time), { name: 'sync', run: async () => sync.kick('incremental') });
    if (running !== wasRunning) {
      run.running = running;
      this.parts.reporting.reporter.setPaused(!running);
      if (running) sync.resumed();
    }
    if (previous && (policyChanged(previous, next) || resolved)) sync.kick(policyChanged(previous, next) ? 'full' : 'incremental');
  }

  /**
   * Feedback for each enforcer the new settings name but the agent cannot run, so the control
   * plane learns of the refusal at once (the console shows it with the agent).
   */
  private async reportRefused(refused: RefusedEnforcer[]): Promise<void> {
    const { gaid } = this.ctx.settings.current().settings;
    if (!gaid) return;
    for (const r of refused) {
      const plugin = ReportedPlugin.safeParse(r.label);
      if (!plugin.success) continue;
      const feedback = { agid: gaid, plugin: plugin.data, code: `refused: ${r.error}`, blacklist: 0, state: 'failed' as const, error: r.detail.slice(0, 500), capabilities: this.ctx.capabilities() };
      await this.parts.controlPlane.client.agentFeedback(feedback, { retries: 1 }).catch((err: unknown) => this.ctx.log.debug({ err, enforcer: r.label }, 'refusal not reported'));
    }
  }

  private async applySources(plan: PluginPlan): Promise<void> {
    const specs = plan.sources.map((s) => {
      // The plugin's own options schema extends the base one (sshd adds `programs`), hence strip().
      const options = SourceOptionsBase.strip().safeParse((s.config as { options?: unknown }).options ?? {});
      const mode: DetectionMode = options.success ? options.data.mode : 'normal';
      if (options.success) this.parts.reporting.pipeline.setPolicy(s.label, policyOptionsOf(options.data));
      return { label: s.label, definition: s.definition, config: s.config, mode };
    });
    await this.parts.sources.update(specs);
  }

  health(): AgentHealth {
    const current = this.ctx.settings.current();
    const { sync, reporting, sources, channel } = this.parts;
    const now = Math.floor(Date.now() / 1000);
    const lastSync = sync.ipv4.lastSyncAt;
    const stale = current.settings.sync_time * 60 * 3;
    const enforcers = sync.slots.health();
    // A configured enforcer that is missing (no plugin, invalid entry, create failing) or whose
    // last call failed is not enforcing: unhealthy until it is. Degraded is still healthy.
    const healthy = (!this.ctx.run.running || (lastSync > 0 && now - lastSync <= stale)) && enforcers.every((e) => e.state !== 'failed');
    return {
      healthy,
      gaid: current.settings.gaid,
      version: AGENT_VERSION,
      running: current.settings.running,
      settings_origin: current.origin,
      last_sync_at: lastSync || null,
      sync_age_seconds: lastSync ? now - lastSync : null,
      feed_cursor: sync.ipv4.cursor,
      enforced: sync.state.enforced.keys.length,
      known_indicators: sync.state.table.size,
      // Domains, URLs and digests, for each kind some configured enforcer takes.
      kinds: sync.named.health(),
      spool_depth: reporting.spool.depth,
      sources: sources.health(),
      enforcers,
      channel_connected: channel?.connected ?? false,
      memory_mb: memoryMb(),
    };
  }

  /**
   * Graceful stop: sources first, every detection spooled, reports in flight finished, state
   * saved. Rules stay in place. Enforcer calls in progress are aborted at once and waited for at
   * most `stop_timeout_seconds`, so a stalled target cannot hold the stop.
   */
  async stop(): Promise<void> {
    const { sync, reporting, sources, scheduler, channel, ops } = this.parts;
    for (const t of this.timers) clearInterval(t);
    clearTimeout(this.reconcileTimer);
    scheduler.stop();
    channel?.stop();
    const enforcersClosed = sync.closeEnforcers(this.ctx.settings.local.local.stop_timeout_seconds * 1000);
    await sources.stop();
    await reporting.pipeline.flushed();
    await reporting.reporter.stop();
    await this.applying;
    await sync.stop();
    await enforcersClosed;
    await reporting.spool.close();
    await ops.close();
  }
}

/** The block policy of a settings state. */
export function policyOf({ settings, organization }: EffectiveSettings): BlockPolicy {
  return { threshold: settings.score_threshold, maximumRules: settings.maximum_rules, blockingRule: organization.blocking_roule ?? null };
}

/** A change that re-evaluates every entry: threshold, rule cap, organization or `running`. */
function policyChanged(previous: EffectiveSettings, next: EffectiveSettings): boolean {
  return (
    previous.settings.score_threshold !== next.settings.score_threshold ||
    previous.settings.maximum_rules !== next.settings.maximum_rules ||
    JSON.stringify(previous.organization) !== JSON.stringify(next.organization) ||
    previous.settings.running !== next.settings.running
  );
}

import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { RampartClient } from '@rampart/client';
import { ReportedPlugin, type AgentCapabilities } from '@rampart/contracts';
import { INDICATOR_KINDS, SourceOptionsBase, fileOffsetStore, policyOptionsOf, type DetectionMode, type IndicatorKind } from '@rampart/plugin-kit';
import { ConfigInvalidError, type AgentFileConfig } from './config/load.ts';
import { planPlugins, type PlannedEnforcer, type PluginPlan } from './config/plugins.ts';
import { REGISTRY, type Registry } from './registry.ts';
import { pickKey, loadCredentials } from './runtime/credentials.ts';
import { startOpsServer } from './runtime/http.ts';
import { createMetrics, type AgentMetrics } from './runtime/metrics.ts';
import { EnforcerSlots, type RefusedEnforcer } from './runtime/enforcer-slots.ts';
import { memoryMb, refusedEnforcers, resolveHost } from './runtime/agent-support.ts';
import { DetectionPipeline } from './runtime/pipeline.ts';
import { Reporter } from './runtime/reporter.ts';
import { Scheduler, cronForMinutes } from './runtime/scheduler.ts';
import { SettingsManager, type EffectiveSettings } from './runtime/settings.ts';
import { Spool } from './runtime/spool.ts';
import { Supervisor } from './runtime/supervisor.ts';
import { BlockState, type BlockPolicy } from './sync/block-state.ts';
import { SyncChannel } from './sync/channel.ts';
import { FeedStateFile } from './sync/feed-state.ts';
import { NeverBlock, hostAddresses } from './sync/never-block.ts';
import { Syncer, syncerOptionsOf, type SyncerOptions } from './sync/syncer.ts';
import { NamedKinds } from './sync/named-kinds.ts';
import { namedNeverBlockOf, type NamedNeverBlock } from './sync/named-never-block.ts';
import { AGENT_VERSION } from './defaults.ts';

export { AGENT_VERSION };

export interface AgentOptions {
  file: AgentFileConfig;
  log: Logger;
  registry?: Registry;
  /** Overrides the sync-channel heartbeat (tests). */
  heartbeatMs?: number;
}

/**
 * The agent daemon: wires settings, the sync engine, the enforcers, the sources, the report
 * spool and the operations endpoint, and applies setting changes without a restart.
 */
export class Agent {
  readonly metrics: AgentMetrics = createMetrics();
  readonly settings: SettingsManager;
  private readonly registry: Registry;
  private readonly log: Logger;
  private client!: RampartClient;
  private state!: BlockState;
  private syncer!: Syncer;
  /** Domains, URLs and file digests (synced only while some configured enforcer takes them). */
  private named!: NamedKinds;
  private controlPlaneHost = '';
  private spool!: Spool;
  private reporter!: Reporter;
  private pipeline!: DetectionPipeline;
  private supervisor!: Supervisor;
  private scheduler!: Scheduler;
  private channel: SyncChannel | undefined;
  private ops: Awaited<ReturnType<typeof startOpsServer>> | undefined;
  private slots!: EnforcerSlots;
  /** The enforcers of the last settings, and the configured ones that cannot run. */
  private planned: PlannedEnforcer[] = [];
  private refused: RefusedEnforcer[] = [];
  private controlPlaneAddresses: string[] = [];
  private applying: Promise<void> = Promise.resolve();
  private running = true;
  private needFull = true;
  private timers: NodeJS.Timeout[] = [];
  private reconcileTimer: NodeJS.Timeout | undefined;
  private stopping = false;

  constructor(private readonly options: AgentOptions) {
    this.log = options.log;
    this.registry = options.registry ?? REGISTRY;
    this.settings = new SettingsManager(options.file, this.log.child({ component: 'settings' }));
  }

  /** What this agent build can run: announced on the sync channel and in feedback. */
  get capabilities(): AgentCapabilities {
    return {
      version: AGENT_VERSION,
      enforcers: [...this.registry.enforcers.keys()].sort(),
      sources: [...this.registry.sources.keys()].sort(),
      // Every kind some enforcer of this build can take.
      kinds: INDICATOR_KINDS.filter((kind) => [...this.registry.enforcers.values()].some((d) => (d.kinds ?? ['ipv4']).includes(kind))),
    };
  }

  get opsPort(): number | undefined {
    return this.ops?.port;
  }

  async start(): Promise<void> {
    const file = this.settings.local;
    const { local } = file;
    await mkdir(local.state_dir, { recursive: true, mode: 0o700 });
    await this.settings.restore();
    const current = this.settings.current();
    // Fail before anything starts when the plugins cannot be planned.
    const planned = planPlugins(current.settings, this.registry, local);
    if (planned.problems.length > 0) throw new ConfigInvalidError(planned.problems);

    const key = pickKey(file.settings.api_jwt_key, await loadCredentials(local.state_dir), file.settings.gaid);
    if (!key) throw new ConfigInvalidError([{ path: 'api_jwt_key', message: 'no agent key: set api_jwt_key (e.g. "${RAMPART_AGENT_KEY}") or run `rampart-agent register`' }]);
    this.client = new RampartClient({
      baseUrl: file.controlPlaneUrl,
      apiKey: key,
      authName: file.settings.auth_name ?? 'Authorization',
      authScheme: local.auth_scheme,
      userAgent: `rampart-agent/${AGENT_VERSION}`,
    });
    this.controlPlaneHost = new URL(file.controlPlaneUrl).hostname;
    this.controlPlaneAddresses = await resolveHost(this.controlPlaneHost);

    this.state = new BlockState(this.buildNeverBlock(current));
    this.slots = new EnforcerSlots({
      log: this.log,
      metrics: this.metrics,
      serialize: (task) => this.syncer.between(task),
      worker: (label, enforcer, kind) => (kind === 'ipv4' ? this.syncer.worker(label, enforcer) : this.named.worker(kind, label, enforcer)),
      onCreated: () => this.kick('incremental'),
    });
    this.syncer = new Syncer({
      client: this.client,
      state: this.state,
      feedState: new FeedStateFile(local.state_dir),
      enforcers: () => this.slots.workersOf('ipv4'),
      policy: () => this.policy(),
      gaid: () => this.settings.current().settings.gaid,
      capabilities: () => this.capabilities,
      log: this.log.child({ component: 'sync' }),
      metrics: this.metrics,
      options: () => this.syncOptions(),
    });
    await this.syncer.restore();
    this.named = new NamedKinds({
      client: this.client,
      stateDir: local.state_dir,
      log: this.log.child({ component: 'sync' }),
      metrics: this.metrics,
      policy: () => this.policy(),
      options: () => this.syncOptions(),
      workersOf: (kind) => this.slots.workersOf(kind),
      wanted: () => this.slots.kinds,
      gaid: () => this.settings.current().settings.gaid,
      capabilities: () => this.capabilities,
    });
    await this.named.restore(this.buildNamedNeverBlock(current));

    this.spool = await Spool.open({ dir: join(local.state_dir, 'spool') });
    this.reporter = new Reporter({
      client: this.client,
      spool: this.spool,
      log: this.log.child({ component: 'reporter' }),
      metrics: this.metrics,
      gaid: () => this.settings.current().settings.gaid,
    });
    this.pipeline = new DetectionPipeline({
      spool: this.spool,
      metrics: this.metrics,
      log: this.log.child({ component: 'pipeline' }),
      neverBlock: () => this.state.neverBlock,
      reporting: () => this.running,
      onSpooled: () => this.reporter.notify(),
    });
    this.supervisor = new Supervisor({
      log: this.log,
      metrics: this.metrics,
      offsets: fileOffsetStore(join(local.state_dir, 'offsets.json')),
      stateDir: local.state_dir,
      emit: (label, detection) => this.pipeline.push(label, detection),
    });
    this.scheduler = new Scheduler(this.log.child({ component: 'scheduler' }));
    this.metrics.provideStates({ enforcers: () => this.slots.health(), sources: () => this.supervisor.health(), engines: () => this.slots.engines() });
    this.ops = await startOpsServer({ host: local.metrics_host, port: local.metrics_port, registry: this.metrics.registry, health: async () => this.health() });

    this.settings.onChange((next, previous) => {
      this.applying = this.applying.then(() => this.apply(next, previous)).catch((err: unknown) => this.log.error({ err }, 'settings change not applied'));
    });
    await this.apply(current, undefined, planned.plan);
    this.reporter.start();

    if (local.websocket) {
      this.channel = new SyncChannel({
        url: this.client.syncUrl(),
        headers: () => this.client.authHeaders(),
        log: this.log.child({ component: 'channel' }),
        heartbeatMs: this.options.heartbeatMs,
        handlers: {
          hello: (m) => {
            void this.settings.fromServer({ settings: m.settings, organization: m.organization });
            const cursor = m.feed?.ipv4;
            if (cursor === undefined || cursor > this.syncer.cursor) this.kick('incremental', ['ipv4']);
            if (this.running) this.named.hello(m.feed);
          },
          settingsChanged: (m) => void this.settings.fromServer({ settings: m.settings, organization: m.organization }),
          decisionChanged: (m) => {
            if (!this.running) return;
            const task = m.kind === 'ipv4' ? this.syncer.decision(m.indicator, m.decision, m.ttl, m.ts) : this.named.decision(m.kind, m.indicator, m.decision, m.ttl);
            task?.catch((err: unknown) => this.log.warn({ err, kind: m.kind }, 'decision not applied'));
          },
          feedChanged: (m) => this.kick('incremental', [m.kind]),
          state: () => ({
            version: AGENT_VERSION,
            enforced: this.state.enforced.keys.length,
            plugins: this.slots
              .health()
              // A label outside the contract's list could not be named in the message at all.
              .filter((e) => ReportedPlugin.safeParse(e.label).success)
              .map((e) => ({ plugin: ReportedPlugin.parse(e.label), enforced: e.enforced, healthy: e.healthy, state: e.state, ...(e.detail ? { error: e.detail.slice(0, 500) } : {}) })),
            capabilities: this.capabilities,
          }),
        },
      });
      this.channel.start();
    }

    const every = (ms: number, task: () => void) => {
      const timer = setInterval(task, ms);
      timer.unref();
      this.timers.push(timer);
    };
    every(local.full_reconcile_hours * 3_600_000, () => this.kick('full'));
    this.scheduleReconcile();
    every(local.settings_pull_minutes * 60_000, () => void this.pullSettings());
    every(local.healthcheck_seconds * 1000, () => void this.slots.checkHealth());
    this.kick('full');
    this.log.info({ gaid: current.settings.gaid, origin: current.origin, ops: this.ops.port }, 'agent started');
  }

  private syncOptions(): SyncerOptions {
    return syncerOptionsOf(this.settings.local.local);
  }

  /**
   * Runs a sync in the background for `kinds` (default: IPv4 and every named kind some enforcer
   * takes); a full reconcile that failed is retried by the next one.
   */
  private kick(kind: 'incremental' | 'full', kinds?: readonly IndicatorKind[]): void {
    if (!this.running) return;
    this.named.kick(kind, kinds);
    if (kinds && !kinds.includes('ipv4')) return;
    const full = kind === 'full' || this.needFull;
    const task = full ? this.syncer.full() : this.syncer.incremental();
    task.then(
      () => {
        if (full) this.needFull = false;
      },
      (err: unknown) => this.log.warn({ err, kind: full ? 'full' : 'incremental' }, 'sync failed'),
    );
  }

  /**
   * The short loop: repairs what a firewall reload or a flush took away within one interval.
   * A chain of timeouts rather than an interval: the next check starts `reconcile_seconds`
   * (re-read, so SIGHUP changes it) after the previous one ended, so slow read-backs never pile up.
   */
  private scheduleReconcile(): void {
    if (this.stopping) return;
    const timer = setTimeout(async () => {
      if (this.running) {
        // Bounded by the enforcer timeout; a stalled enforcer is skipped, so it holds up no other.
        try {
          await Promise.all([this.syncer.reconcile(), this.named.reconcile()]);
        } catch (err) {
          this.log.warn({ err }, 'reconcile failed');
        }
      }
      this.scheduleReconcile();
    }, this.settings.local.local.reconcile_seconds * 1000);
    timer.unref();
    this.reconcileTimer = timer;
  }

  private async pullSettings(): Promise<void> {
    const { gaid } = this.settings.current().settings;
    try {
      const settings = await this.client.agentSettings(gaid, { retries: 1 });
      await this.settings.fromServer({ settings });
    } catch (err) {
      this.log.debug({ err }, 'settings pull failed');
    }
    // Every pull is a check-in too, so `running = no` agents stay alive on the console.
    if (!this.running) {
      await this.client
        .agentFeedback({ agid: gaid, plugin: 'agent', code: 'not_running', blacklist: 0 }, { retries: 0 })
        .catch((err: unknown) => this.log.debug({ err }, 'check-in failed'));
    }
  }

  private policy(): BlockPolicy {
    const { settings, organization } = this.settings.current();
    return { threshold: settings.score_threshold, maximumRules: settings.maximum_rules, blockingRule: organization.blocking_roule ?? null };
  }

  /** Domains, URLs and digests never blocked: the control plane's host name and the local allow lists. */
  private buildNamedNeverBlock(current: EffectiveSettings): NamedNeverBlock {
    return namedNeverBlockOf([this.controlPlaneHost], this.settings.local.local, this.state?.neverBlock ?? this.buildNeverBlock(current));
  }

  private buildNeverBlock(current: EffectiveSettings): NeverBlock {
    return new NeverBlock({
      ownAddresses: hostAddresses(),
      controlPlane: this.controlPlaneAddresses,
      reservedIps: current.organization.reserved_ips,
      allowList: this.settings.local.local.allow_list,
    });
  }

  /** Applies a settings state: plugins, never-block list, schedule and `running`. */
  private async apply(next: EffectiveSettings, previous: EffectiveSettings | undefined, plan?: PluginPlan): Promise<void> {
    const local = this.settings.local.local;
    let resolved = plan;
    let refused: RefusedEnforcer[] = [];
    if (!resolved) {
      const planned = planPlugins(next.settings, this.registry, local);
      // An `ips` entry that cannot run is refused alone: reported as a failed enforcer (in
      // /healthz, feedback and metrics), while every other entry is applied.
      refused = refusedEnforcers(planned.problems);
      const others = planned.problems.filter((p) => !p.path.startsWith('ips.'));
      if (others.length > 0) {
        this.log.error({ problems: others }, 'new settings name sources that cannot run; plugins left as they were');
      } else {
        resolved = planned.plan;
        if (refused.length > 0) this.log.error({ refused }, 'new settings name enforcers that cannot run; the others are applied');
      }
    }
    this.state.neverBlock = this.buildNeverBlock(next);
    const namedNeverBlock = this.buildNamedNeverBlock(next);
    this.named.setNeverBlock(namedNeverBlock);
    const kindsBefore = new Set(this.slots.kinds);
    const running = next.settings.running === 'yes';
    const wasRunning = this.running;
    if (resolved) {
      this.planned = resolved.enforcers;
      this.refused = refused;
    }
    if (running !== wasRunning) {
      if (!running) this.log.warn({}, 'running = no: withdrawing rules, not enforcing or reporting');
      else this.log.info({}, 'running = yes: enforcing and reporting again');
    }
    // One step between syncs: the syncer stops before rules are withdrawn and starts after
    // the new instances exist, so no sync ever reaches an instance that is going away.
    await this.syncer.between(async () => {
      if (!running && wasRunning) for (const s of [this.syncer, this.named]) s.pause();
      await this.slots.apply(this.planned, running, this.refused);
      if (running && !wasRunning) for (const s of [this.syncer, this.named]) s.resume();
    });
    // A kind newly taken by some enforcer starts with a full reconcile of its own.
    this.named.taken(kindsBefore);
    if (resolved) await this.applySources(resolved);
    if (resolved && previous) {
      this.channel?.sendState();
      await this.reportRefused(refused);
    }
    this.scheduler.set(local.sync_cron ?? cronForMinutes(next.settings.sync_time), { name: 'sync', run: async () => this.kick('incremental') });
    if (running !== wasRunning) {
      this.running = running;
      this.reporter?.setPaused(!running);
      if (running) this.needFull = true;
    }
    const policyChanged =
      previous &&
      (previous.settings.score_threshold !== next.settings.score_threshold ||
        previous.settings.maximum_rules !== next.settings.maximum_rules ||
        JSON.stringify(previous.organization) !== JSON.stringify(next.organization) ||
        previous.settings.running !== next.settings.running);
    if (previous && (policyChanged || resolved)) this.kick(policyChanged ? 'full' : 'incremental');
  }

  /**
   * Feedback for each enforcer the new settings name but the agent cannot run, so the control
   * plane learns of the refusal at once (the console shows it with the agent).
   */
  private async reportRefused(refused: RefusedEnforcer[]): Promise<void> {
    const { gaid } = this.settings.current().settings;
    if (!gaid) return;
    for (const r of refused) {
      const plugin = ReportedPlugin.safeParse(r.label);
      if (!plugin.success) continue;
      await this.client
        .agentFeedback(
          {
            agid: gaid,
            plugin: plugin.data,
            code: `refused: ${r.error}`,
            blacklist: 0,
            state: 'failed',
            error: r.detail.slice(0, 500),
            capabilities: this.capabilities,
          },
          { retries: 1 },
        )
        .catch((err: unknown) => this.log.debug({ err, enforcer: r.label }, 'refusal not reported'));
    }
  }

  private async applySources(plan: PluginPlan): Promise<void> {
    const specs = plan.sources.map((s) => {
      // The plugin's own options schema extends the base one (sshd adds `programs`), hence strip().
      const options = SourceOptionsBase.strip().safeParse((s.config as { options?: unknown }).options ?? {});
      const mode: DetectionMode = options.success ? options.data.mode : 'normal';
      if (options.success) this.pipeline.setPolicy(s.label, policyOptionsOf(options.data));
      return { label: s.label, definition: s.definition, config: s.config, mode };
    });
    await this.supervisor.update(specs);
  }

  /** SIGHUP: re-read the local file (already parsed by the caller). */
  reload(file: AgentFileConfig): void {
    this.settings.reloadLocal(file);
  }

  async health(): Promise<{ healthy: boolean; [key: string]: unknown }> {
    const current = this.settings.current();
    const now = Math.floor(Date.now() / 1000);
    const lastSync = this.syncer?.lastSyncAt ?? 0;
    const stale = current.settings.sync_time * 60 * 3;
    const enforcers = this.slots?.health() ?? [];
    // A configured enforcer that is missing (no plugin, invalid entry, create failing) or whose
    // last call failed is not enforcing: unhealthy until it is. Degraded is still healthy.
    const healthy = (!this.running || (lastSync > 0 && now - lastSync <= stale)) && enforcers.every((e) => e.state !== 'failed');
    return {
      healthy,
      gaid: current.settings.gaid,
      version: AGENT_VERSION,
      running: current.settings.running,
      settings_origin: current.origin,
      last_sync_at: lastSync || null,
      sync_age_seconds: lastSync ? now - lastSync : null,
      feed_cursor: this.syncer?.cursor ?? 0,
      enforced: this.state?.enforced.keys.length ?? 0,
      known_indicators: this.state?.table.size ?? 0,
      // Domains, URLs and digests, for each kind some configured enforcer takes.
      kinds: this.named?.health() ?? {},
      spool_depth: this.spool?.depth ?? 0,
      sources: this.supervisor?.health() ?? [],
      enforcers,
      channel_connected: this.channel?.connected ?? false,
      memory_mb: memoryMb(),
    };
  }

  /**
   * Graceful stop: sources first, every detection spooled, reports in flight finished, state
   * saved. Rules stay in place. Enforcer calls in progress are aborted at once and waited for at
   * most `stop_timeout_seconds`, so a stalled target cannot hold the stop.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const t of this.timers) clearInterval(t);
    clearTimeout(this.reconcileTimer);
    this.scheduler?.stop();
    this.channel?.stop();
    const enforcersClosed = this.slots?.close(this.settings.local.local.stop_timeout_seconds * 1000);
    await this.supervisor?.stop();
    await this.pipeline?.flushed();
    await this.reporter?.stop();
    await this.applying;
    await this.syncer?.stop().catch((err: unknown) => this.log.warn({ err }, 'feed state not saved'));
    await this.named?.stop();
    await enforcersClosed;
    await this.spool?.close();
    await this.ops?.close();
    this.log.info({}, 'agent stopped');
  }
}

import { mkdir } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { AgentCapabilities } from '@rampart/contracts';
import { INDICATOR_KINDS } from '@rampart/plugin-kit';
import { ConfigInvalidError, type AgentFileConfig } from './config/load.ts';
import { planPlugins, type PluginPlan } from './config/plugins.ts';
import { REGISTRY, type Registry } from './registry.ts';
import { createMetrics, type AgentMetrics } from './runtime/metrics.ts';
import { SettingsManager, type EffectiveSettings } from './runtime/settings.ts';
import { LiveAgent, type AgentHealth, type RunState } from './compose/live-agent.ts';
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
 * The agent daemon: its settings, and once started the live agent composed of its parts (control
 * plane, sync engine with the enforcer slots, reporting, sources, scheduler, sync channel,
 * operations endpoint; see compose/), which applies setting changes without a restart.
 */
export class Agent {
  readonly metrics: AgentMetrics = createMetrics();
  readonly settings: SettingsManager;
  private readonly registry: Registry;
  private readonly log: Logger;
  private readonly run: RunState = { running: true, stopping: false };
  /** Lifecycle: the started agent, from `start` on. */
  private live: LiveAgent | undefined;

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
    return this.live?.parts.ops.port;
  }

  async start(): Promise<void> {
    const { current, plan } = await this.restoreSettings();
    const live = await this.compose(current);
    this.live = live;
    await live.applyFirst(current, plan);
    live.connect();
    live.schedule();
    live.parts.sync.kick('full');
    this.log.info({ gaid: current.settings.gaid, origin: current.origin, ops: live.parts.ops.port }, 'agent started');
  }

  /** The saved settings, and their plugin plan: fails before anything starts when it cannot be made. */
  private async restoreSettings(): Promise<{ current: EffectiveSettings; plan: PluginPlan }> {
    const { local } = this.settings.local;
    await mkdir(local.state_dir, { recursive: true, mode: 0o700 });
    await this.settings.restore();
    const current = this.settings.current();
    const planned = planPlugins(current.settings, this.registry, local);
    if (planned.problems.length > 0) throw new ConfigInvalidError(planned.problems);
    return { current, plan: planned.plan };
  }

  private compose(current: EffectiveSettings): Promise<LiveAgent> {
    const ctx = {
      settings: this.settings,
      log: this.log,
      metrics: this.metrics,
      registry: this.registry,
      capabilities: () => this.capabilities,
      run: this.run,
      running: () => this.run.running,
      heartbeatMs: this.options.heartbeatMs,
      health: async () => this.health(),
    };
    return LiveAgent.open(ctx, current);
  }

  /** SIGHUP: re-read the local file (already parsed by the caller). */
  reload(file: AgentFileConfig): void {
    this.settings.reloadLocal(file);
  }

  async health(): Promise<AgentHealth> {
    if (this.live) return this.live.health();
    const current = this.settings.current();
    return { healthy: false, gaid: current.settings.gaid, version: AGENT_VERSION, running: current.settings.running, settings_origin: current.origin, last_sync_at: null };
  }

  /** Graceful stop (see LiveAgent.stop); rules stay in place. */
  async stop(): Promise<void> {
    this.run.stopping = true;
    await this.live?.stop();
    this.log.info({}, 'agent stopped');
  }
}

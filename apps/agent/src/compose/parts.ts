import { join } from 'node:path';
import type { Logger } from 'pino';
import { RampartClient } from '@rampart/client';
import { ReportedPlugin, type AgentCapabilities } from '@rampart/contracts';
import { fileOffsetStore } from '@rampart/plugin-kit';
import { ConfigInvalidError, type AgentFileConfig } from '../config/load.ts';
import { pickKey, loadCredentials } from '../runtime/credentials.ts';
import { resolveHost } from '../runtime/agent-support.ts';
import type { AgentMetrics } from '../runtime/metrics.ts';
import { DetectionPipeline } from '../runtime/pipeline.ts';
import { Reporter } from '../runtime/reporter.ts';
import type { EffectiveSettings, SettingsManager } from '../runtime/settings.ts';
import { Spool } from '../runtime/spool.ts';
import { Supervisor } from '../runtime/supervisor.ts';
import { SyncChannel } from '../sync/channel.ts';
import { namedNeverBlockOf, type NamedNeverBlock } from '../sync/named-never-block.ts';
import { NeverBlock, hostAddresses } from '../sync/never-block.ts';
import { AGENT_VERSION } from '../defaults.ts';
import type { AgentSync } from './agent-sync.ts';

/* The agent's parts, each built complete by one function here; live-agent.ts runs them. */

/** What every part may read: the agent's settings, log, metrics and what this build can run. */
export interface AgentContext {
  settings: SettingsManager;
  log: Logger;
  metrics: AgentMetrics;
  capabilities: () => AgentCapabilities;
  /** `running = yes` now. */
  running: () => boolean;
  heartbeatMs?: number | undefined;
}

/** The control plane: its client (with the agent key) and its host, which is never blocked. */
export interface ControlPlane {
  client: RampartClient;
  host: string;
  addresses: string[];
}

export async function connectControlPlane(file: AgentFileConfig): Promise<ControlPlane> {
  const { local } = file;
  const key = pickKey(file.settings.api_jwt_key, await loadCredentials(local.state_dir), file.settings.gaid);
  if (!key) throw new ConfigInvalidError([{ path: 'api_jwt_key', message: 'no agent key: set api_jwt_key (e.g. "${RAMPART_AGENT_KEY}") or run `rampart-agent register`' }]);
  const client = new RampartClient({
    baseUrl: file.controlPlaneUrl,
    apiKey: key,
    authName: file.settings.auth_name ?? 'Authorization',
    authScheme: local.auth_scheme,
    userAgent: `rampart-agent/${AGENT_VERSION}`,
  });
  const host = new URL(file.controlPlaneUrl).hostname;
  return { client, host, addresses: await resolveHost(host) };
}

/** Addresses never blocked: this host's, the control plane's, the organization's reserved ones and the local allow list. */
export function neverBlockOf(settings: SettingsManager, controlPlane: ControlPlane, current: EffectiveSettings): NeverBlock {
  return new NeverBlock({
    ownAddresses: hostAddresses(),
    controlPlane: controlPlane.addresses,
    reservedIps: current.organization.reserved_ips,
    allowList: settings.local.local.allow_list,
  });
}

/** Domains, URLs and digests never blocked: the control plane's host name and the local allow lists. */
export function namedNeverBlockFor(settings: SettingsManager, controlPlane: ControlPlane, neverBlock: NeverBlock): NamedNeverBlock {
  return namedNeverBlockOf([controlPlane.host], settings.local.local, neverBlock);
}

/** Detections in, reports out: the on-disk spool, the reporter that drains it, the pipeline that fills it. */
export interface Reporting {
  spool: Spool;
  reporter: Reporter;
  pipeline: DetectionPipeline;
}

export async function openReporting(ctx: AgentContext, client: RampartClient, neverBlock: () => NeverBlock): Promise<Reporting> {
  const spool = await Spool.open({ dir: join(ctx.settings.local.local.state_dir, 'spool') });
  const reporter = new Reporter({
    client,
    spool,
    log: ctx.log.child({ component: 'reporter' }),
    metrics: ctx.metrics,
    gaid: () => ctx.settings.current().settings.gaid,
  });
  const pipeline = new DetectionPipeline({
    spool,
    metrics: ctx.metrics,
    log: ctx.log.child({ component: 'pipeline' }),
    neverBlock,
    reporting: ctx.running,
    onSpooled: () => reporter.notify(),
  });
  return { spool, reporter, pipeline };
}

/** The detection sources, each supervised, their detections into the pipeline. */
export function sourcesOf(ctx: AgentContext, pipeline: DetectionPipeline): Supervisor {
  const stateDir = ctx.settings.local.local.state_dir;
  return new Supervisor({
    log: ctx.log,
    metrics: ctx.metrics,
    offsets: fileOffsetStore(join(stateDir, 'offsets.json')),
    stateDir,
    emit: (label, detection) => pipeline.push(label, detection),
  });
}

/** The sync channel (when `local.websocket`): settings, decisions and feed heads pushed, the agent's state sent back. */
export function syncChannelOf(ctx: AgentContext, client: RampartClient, sync: AgentSync): SyncChannel | undefined {
  if (!ctx.settings.local.local.websocket) return undefined;
  const fromServer = (m: Parameters<SettingsManager['fromServer']>[0]) => void ctx.settings.fromServer({ settings: m.settings, organization: m.organization });
  return new SyncChannel({
    url: client.syncUrl(),
    headers: () => client.authHeaders(),
    log: ctx.log.child({ component: 'channel' }),
    heartbeatMs: ctx.heartbeatMs,
    handlers: {
      hello: (m) => {
        fromServer(m);
        sync.hello(m.feed);
      },
      settingsChanged: fromServer,
      decisionChanged: (m) => sync.decision(m),
      feedChanged: (m) => sync.kick('incremental', [m.kind]),
      state: () => ({
        version: AGENT_VERSION,
        enforced: sync.state.enforced.keys.length,
        plugins: sync.slots
          .health()
          // A label outside the contract's list could not be named in the message at all.
          .filter((e) => ReportedPlugin.safeParse(e.label).success)
          .map((e) => ({ plugin: ReportedPlugin.parse(e.label), enforced: e.enforced, healthy: e.healthy, state: e.state, ...(e.detail ? { error: e.detail.slice(0, 500) } : {}) })),
        capabilities: ctx.capabilities(),
      }),
    },
  });
}

import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { EngineStats, EnforcerStatus } from '@rampart/plugin-kit';

/** What the state gauges read at each scrape (set by the agent once its parts exist). */
export interface StateProvider {
  enforcers(): { label: string; state: string; status?: EnforcerStatus }[];
  sources(): { label: string; state: string }[];
  /** The engine's own counts for each live enforcer instance (`<label>` or `<label>/<kind>`). */
  engines?(): { label: string; stats: Readonly<EngineStats> }[];
}

/** The engine's counts exported as `rampart_agent_engine_operations_total{enforcer, operation}`. */
const ENGINE_OPERATIONS = { replaces: 'replace', batches: 'batch', fallbacks: 'fallback', drifts: 'drift', failures: 'failure' } as const;

const STATES = ['ok', 'degraded', 'failed'] as const;

/**
 * Read from the engines at each scrape: monotonic per instance, so a counter (reset when an
 * instance is replaced, which Prometheus' rate() tolerates).
 */
function engineOperations(registry: Registry, states: { provider: StateProvider | undefined }): void {
  new Counter({
    name: 'rampart_agent_engine_operations_total',
    help: 'What each enforcer engine did to its target: full replaces, incremental batches, batches that fell back to a replace, drifts repaired, failed calls',
    labelNames: ['enforcer', 'operation'],
    registers: [registry],
    collect() {
      this.reset();
      for (const { label, stats } of states.provider?.engines?.() ?? []) {
        for (const [field, operation] of Object.entries(ENGINE_OPERATIONS)) this.inc({ enforcer: label, operation }, stats[field as keyof typeof ENGINE_OPERATIONS]);
      }
    },
  });
}

/** Targets with parts of their own (the feeds of a feed server): each part's count and cut. */
function partGauges(registry: Registry, provider: () => StateProvider | undefined): void {
  for (const [name, help, field] of [
    ['rampart_agent_enforcer_part_entries', 'Entries each part of an enforcer target holds (a feed of a feed server)', 'enforced'],
    ['rampart_agent_enforcer_part_cut_entries', "Entries of the block set a part of an enforcer target left out because of the part's capacity", 'cut'],
  ] as const) {
    new Gauge({
      name,
      help,
      labelNames: ['enforcer', 'part'],
      registers: [registry],
      collect() {
        this.reset();
        for (const item of provider()?.enforcers() ?? []) {
          for (const part of item.status?.parts ?? []) this.set({ enforcer: item.label, part: part.name }, part[field]);
        }
      },
    });
  }
}

/** Seconds since `lastSync` (-1 before the first sync), computed at each scrape. */
function syncAgeGauge(registry: Registry, lastSync: Gauge): void {
  new Gauge({
    name: 'rampart_agent_sync_age_seconds',
    help: 'Seconds since the block list was last synchronised',
    registers: [registry],
    async collect() {
      const last = (await lastSync.get()).values[0]?.value ?? 0;
      this.set(last > 0 ? Date.now() / 1000 - last : -1);
    },
  });
}

/** Every metric of the agent, on a registry of its own (no module-level state). */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'rampart_agent_' });
  const m = {
    registry,
    linesRead: new Counter({ name: 'rampart_agent_lines_read_total', help: 'Log lines read by sources', labelNames: ['source'], registers: [registry] }),
    detections: new Counter({ name: 'rampart_agent_detections_total', help: 'Detections emitted by sources', labelNames: ['source'], registers: [registry] }),
    detectionsIgnored: new Counter({
      name: 'rampart_agent_detections_ignored_total',
      help: 'Detections not reported (never-block list, IPv6, running = no)',
      labelNames: ['reason'],
      registers: [registry],
    }),
    reportsSpooled: new Counter({ name: 'rampart_agent_reports_spooled_total', help: 'Reports written to the spool', registers: [registry] }),
    reportsSent: new Counter({ name: 'rampart_agent_reports_sent_total', help: 'Reports acknowledged by the server', registers: [registry] }),
    reportsDeduplicated: new Counter({ name: 'rampart_agent_reports_deduplicated_total', help: 'Pending reports found already stored on the server after a failure (not resent)', registers: [registry] }),
    reportsRejected: new Counter({ name: 'rampart_agent_reports_rejected_total', help: 'Reports the server refused for good (dropped)', registers: [registry] }),
    reportErrors: new Counter({ name: 'rampart_agent_report_errors_total', help: 'Failed report attempts', labelNames: ['kind'], registers: [registry] }),
    spoolDepth: new Gauge({ name: 'rampart_agent_spool_depth', help: 'Reports waiting in the spool', registers: [registry] }),
    setSize: new Gauge({ name: 'rampart_agent_block_set_size', help: 'Entries enforced now', registers: [registry] }),
    tableSize: new Gauge({ name: 'rampart_agent_known_indicators', help: 'Indicators the agent holds from the feed', registers: [registry] }),
    lastSync: new Gauge({ name: 'rampart_agent_last_sync_timestamp_seconds', help: 'When the block list was last synchronised', registers: [registry] }),
    kindSetSize: new Gauge({ name: 'rampart_agent_kind_block_set_size', help: 'Domains, URLs or digests enforced now, by kind', labelNames: ['kind'], registers: [registry] }),
    kindKnown: new Gauge({ name: 'rampart_agent_kind_known_indicators', help: 'Domains, URLs or files the agent holds from their feed, by kind', labelNames: ['kind'], registers: [registry] }),
    kindSyncs: new Counter({ name: 'rampart_agent_kind_syncs_total', help: 'Block-list syncs of domains, URLs and digests', labelNames: ['kind', 'sync', 'outcome'], registers: [registry] }),
    syncs: new Counter({ name: 'rampart_agent_syncs_total', help: 'Block-list syncs', labelNames: ['kind', 'outcome'], registers: [registry] }),
    sourceRestarts: new Counter({ name: 'rampart_agent_source_restarts_total', help: 'Sources restarted after a failure', labelNames: ['source'], registers: [registry] }),
    driftsRepaired: new Counter({
      name: 'rampart_agent_drifts_repaired_total',
      help: 'Enforcer targets found changed by someone else (firewall reload, flush, deleted file) and re-asserted',
      labelNames: ['enforcer'],
      registers: [registry],
    }),
    enforcerEntries: new Gauge({ name: 'rampart_agent_enforcer_entries', help: 'Entries each enforcer reports enforcing', labelNames: ['enforcer'], registers: [registry] }),
    enforcerCut: new Gauge({
      name: 'rampart_agent_enforcer_cut_entries',
      help: "Entries of the block set an enforcer left out because its backend's capacity was reached",
      labelNames: ['enforcer'],
      registers: [registry],
    }),
    reconciles: new Counter({ name: 'rampart_agent_reconciles_total', help: 'Read-back checks of the enforcers', labelNames: ['enforcer', 'outcome'], registers: [registry] }),
    enforcerErrors: new Counter({ name: 'rampart_agent_enforcer_errors_total', help: 'Enforcer calls that failed', labelNames: ['enforcer'], registers: [registry] }),
  };
  const states: { provider: StateProvider | undefined } = { provider: undefined };
  // One series per configured plugin and state, 1 for the state it is in (missing enforcers included).
  for (const [name, kind, help] of [
    ['rampart_agent_enforcer_state', 'enforcers', 'State of each configured enforcer (1 for the current one of ok, degraded, failed)'],
    ['rampart_agent_source_state', 'sources', 'State of each configured source (1 for the current one of ok, degraded, failed)'],
  ] as const) {
    new Gauge({
      name,
      help,
      labelNames: [kind === 'enforcers' ? 'enforcer' : 'source', 'state'],
      registers: [registry],
      collect() {
        this.reset();
        for (const item of states.provider?.[kind]() ?? []) {
          for (const state of STATES) this.set({ [kind === 'enforcers' ? 'enforcer' : 'source']: item.label, state }, item.state === state ? 1 : 0);
        }
      },
    });
  }
  engineOperations(registry, states);
  partGauges(registry, () => states.provider);
  syncAgeGauge(registry, m.lastSync);
  return Object.assign(m, {
    /** Where the state gauges read from. */
    provideStates(provider: StateProvider) {
      states.provider = provider;
    },
  });
}

export type AgentMetrics = ReturnType<typeof createMetrics>;

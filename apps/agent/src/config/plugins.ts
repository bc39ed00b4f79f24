import { enforcerKinds, type EnforcerDefinition, type IndicatorKind, type SourceDefinition } from '@rampart/plugin-kit';
import type { AgentSettingsDocument } from '@rampart/contracts';
import type { ConfigProblem } from './load.ts';
import { UnknownPluginError, findEnforcer, findSource, type Registry } from '../registry.ts';

export interface PlannedSource {
  label: string;
  definition: SourceDefinition<unknown>;
  config: unknown;
}

export interface PlannedEnforcer {
  /** The slot's name: the `ips` label, suffixed `/<kind>` for a kind other than IPv4 (`dry_run/domain`). */
  label: string;
  definition: EnforcerDefinition<unknown>;
  config: unknown;
  /** The indicator kind this instance enforces (one instance per kind the config turns on). */
  kind: IndicatorKind;
}

/** The slot name of an `ips` label's instance for `kind`. */
export function slotLabel(label: string, kind: IndicatorKind): string {
  return kind === 'ipv4' ? label : `${label}/${kind}`;
}

export interface PluginPlan {
  sources: PlannedSource[];
  enforcers: PlannedEnforcer[];
}

function activeEntries(group: Record<string, unknown> | undefined): [string, unknown][] {
  return Object.entries(group ?? {}).filter(([, entry]) => (entry as { active?: boolean } | undefined)?.active === true);
}

/** The plugins' local options (`local.sources`, `local.enforcers`), by label. */
export interface LocalPluginOptions {
  sources?: Record<string, unknown>;
  enforcers?: Record<string, unknown>;
}

function withOptions(raw: unknown, options: unknown): unknown {
  return options === undefined ? raw : { ...(raw as object), options };
}

/**
 * Resolves every active `ids`/`ips` entry to its plugin and validates the entry, with its local
 * `options` merged in, with the plugin's own schema. No I/O; every problem is listed.
 */
export function planPlugins(settings: AgentSettingsDocument, registry: Registry, local: LocalPluginOptions = {}): { plan: PluginPlan; problems: ConfigProblem[] } {
  const problems: ConfigProblem[] = [];
  const plan: PluginPlan = { sources: [], enforcers: [] };
  for (const [label, raw] of activeEntries(settings.ids as Record<string, unknown> | undefined)) {
    const entry = withOptions(raw, local.sources?.[label]);
    resolve('ids', label, entry, () => findSource(label, registry.sources), (definition, config) => plan.sources.push({ label, definition, config }));
  }
  for (const [label, raw] of activeEntries(settings.ips as Record<string, unknown> | undefined)) {
    const entry = withOptions(raw, local.enforcers?.[label]);
    resolve('ips', label, entry, () => findEnforcer(label, registry.enforcers), (definition, config) => {
      for (const kind of enforcerKinds(definition, config)) plan.enforcers.push({ label: slotLabel(label, kind), definition, config, kind });
    });
  }
  return { plan, problems };

  function resolve<D extends { configSchema: { safeParse(v: unknown): { success: boolean; data?: unknown; error?: { issues: { path: PropertyKey[]; message: string }[] } } } }>(
    group: 'ids' | 'ips',
    label: string,
    entry: unknown,
    find: () => D,
    add: (definition: D, config: unknown) => void,
  ): void {
    let definition: D;
    try {
      definition = find();
    } catch (err) {
      if (err instanceof UnknownPluginError) {
        problems.push({ path: `${group}.${label}`, message: err.message });
        return;
      }
      throw err;
    }
    const parsed = definition.configSchema.safeParse(entry);
    if (!parsed.success) {
      for (const issue of parsed.error?.issues ?? []) problems.push({ path: [group, label, ...issue.path.map(String)].join('.'), message: issue.message });
      return;
    }
    add(definition, parsed.data);
  }
}

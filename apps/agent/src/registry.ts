import type { EnforcerDefinition, SourceDefinition } from '@rampart/plugin-kit';
import { DRY_RUN_LABEL, dryRunEnforcer } from '@rampart/enforcer-dry-run';
import { sshdSource } from '@rampart/source-sshd';
import { modsecuritySource } from '@rampart/source-modsecurity';
import { bridgeFilterLogSource, netfilterLogSource } from '@rampart/source-netfilter-log';
import { jsonSource } from '@rampart/source-json';
import { cloudflareSource } from '@rampart/source-cloudflare';

/*
 * Every plugin the agent can run, listed by hand (conventions §6): no directory scanning, so
 * what an agent build can do is visible here and an unknown name fails with the known ones.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each definition validates its own config type
type AnySource = SourceDefinition<any>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyEnforcer = EnforcerDefinition<any>;

/** Detection sources by the `ids` label they serve. */
export const SOURCES: ReadonlyMap<string, AnySource> = new Map<string, AnySource>([
  [sshdSource.serves, sshdSource],
  [modsecuritySource.serves, modsecuritySource],
  [netfilterLogSource.serves, netfilterLogSource],
  [bridgeFilterLogSource.serves, bridgeFilterLogSource],
  [jsonSource.serves, jsonSource],
  [cloudflareSource.serves, cloudflareSource],
]);

/** Enforcers by the `ips` label they are configured under. */
export const ENFORCERS: ReadonlyMap<string, AnyEnforcer> = new Map<string, AnyEnforcer>([[DRY_RUN_LABEL, dryRunEnforcer]]);

export class UnknownPluginError extends Error {
  constructor(
    readonly kind: 'source' | 'enforcer',
    readonly label: string,
    readonly known: string[],
  ) {
    super(`no ${kind} for '${label}'; known ${kind}s: ${known.length ? known.join(', ') : '(none)'}`);
    this.name = 'UnknownPluginError';
  }
}

export function findSource(label: string, sources: ReadonlyMap<string, AnySource> = SOURCES): AnySource {
  const found = sources.get(label);
  if (!found) throw new UnknownPluginError('source', label, [...sources.keys()].sort());
  return found;
}

export function findEnforcer(label: string, enforcers: ReadonlyMap<string, AnyEnforcer> = ENFORCERS): AnyEnforcer {
  const found = enforcers.get(label);
  if (!found) throw new UnknownPluginError('enforcer', label, [...enforcers.keys()].sort());
  return found;
}

export interface Registry {
  sources: ReadonlyMap<string, AnySource>;
  enforcers: ReadonlyMap<string, AnyEnforcer>;
}

export const REGISTRY: Registry = { sources: SOURCES, enforcers: ENFORCERS };

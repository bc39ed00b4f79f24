import type { SourceDefinition } from '@rampart/plugin-kit';
import { sshdSource } from '@rampart/source-sshd';
import { modsecuritySource } from '@rampart/source-modsecurity';
import { bridgeFilterLogSource, netfilterLogSource } from '@rampart/source-netfilter-log';
import { jsonSource } from '@rampart/source-json';
import { cloudflareSource } from '@rampart/source-cloudflare';

/*
 * The detection sources of this build (registry.ts lists them with the enforcers). Apart, so that
 * `rampart-agent parse` loads the sources' parsers and not every enforcer plugin.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each definition validates its own config type
export type AnySource = SourceDefinition<any>;

/** Detection sources by the `ids` label they serve. */
export const SOURCES: ReadonlyMap<string, AnySource> = new Map<string, AnySource>([
  [sshdSource.serves, sshdSource],
  [modsecuritySource.serves, modsecuritySource],
  [netfilterLogSource.serves, netfilterLogSource],
  [bridgeFilterLogSource.serves, bridgeFilterLogSource],
  [jsonSource.serves, jsonSource],
  [cloudflareSource.serves, cloudflareSource],
]);

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


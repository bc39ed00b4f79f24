import { enforcerByBackend, type EnforcerDefinition } from '@rampart/plugin-kit';
import { AgentConfig, secretKeysOf } from '@rampart/contracts';
import { DRY_RUN_LABEL, dryRunEnforcer } from '@rampart/enforcer-dry-run';
import { nftablesEnforcer } from '@rampart/enforcer-nftables';
import { ipsetEnforcer } from '@rampart/enforcer-ipset';
import { nftablesBridgeEnforcer } from '@rampart/enforcer-nftables-bridge';
import { pfEnforcer } from '@rampart/enforcer-pf';
import { csvEnforcer } from '@rampart/enforcer-csv';
import { bindRpzEnforcer } from '@rampart/enforcer-bind-rpz';
import { infobloxRpzEnforcer } from '@rampart/enforcer-infoblox-rpz';
import { modsecurityEnforcer } from '@rampart/enforcer-modsecurity';
import { nginxEnforcer } from '@rampart/enforcer-nginx';
import { haproxyEnforcer } from '@rampart/enforcer-haproxy';
import { mikrotikEnforcer } from '@rampart/enforcer-mikrotik';
import { checkpointMgmtEnforcer } from '@rampart/enforcer-checkpoint-mgmt';
import { checkpointSecureXlEnforcer } from '@rampart/enforcer-checkpoint-securexl';
import { cspFeedEnforcer, firewallBFeedEnforcer } from '@rampart/enforcer-feed-server';
import { ciscoAsaEnforcer, ciscoIosEnforcer } from '@rampart/enforcer-cisco';
import { cloudflareEnforcer } from '@rampart/enforcer-cloudflare';
import { awsEnforcer } from '@rampart/enforcer-aws';
import { squidEnforcer } from '@rampart/enforcer-squid';
import { openDxlTieEnforcer } from '@rampart/enforcer-opendxl-tie/definition';
import { SOURCES, UnknownPluginError, type AnySource } from './sources.ts';

export { SOURCES, UnknownPluginError, findSource } from './sources.ts';

/*
 * Every plugin the agent can run, listed by hand (conventions §6): no directory scanning, so
 * what an agent build can do is visible here and an unknown name fails with the known ones.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each definition validates its own config type
type AnyEnforcer = EnforcerDefinition<any>;

/**
 * `packet_filter` is served by two plugins; `options.backend` picks one (nftables by default),
 * and validation reports the chosen plugin's issues at their own paths.
 */
export const packetFilterEnforcer = enforcerByBackend('packet_filter', { nftables: nftablesEnforcer, ipset: ipsetEnforcer }, 'nftables');

/** `router_a` is a RouterOS router unless `options.dialect` says `ios` (Cisco IOS / IOS-XE). */
export const routerEnforcer = enforcerByBackend('router_a', { routeros: mikrotikEnforcer, ios: ciscoIosEnforcer }, 'routeros', 'dialect');

/** `dns_e` is a BIND response policy zone file unless `options.dialect` says `infoblox` (NIOS WAPI). */
export const dnsEnforcer = enforcerByBackend('dns_e', { bind: bindRpzEnforcer, infoblox: infobloxRpzEnforcer }, 'bind', 'dialect');

/** Enforcers by the `ips` label they are configured under. */
export const ENFORCERS: ReadonlyMap<string, AnyEnforcer> = new Map<string, AnyEnforcer>(
  [
    packetFilterEnforcer,
    nftablesBridgeEnforcer,
    pfEnforcer,
    csvEnforcer,
    dnsEnforcer,
    modsecurityEnforcer,
    nginxEnforcer,
    haproxyEnforcer,
    routerEnforcer,
    ciscoAsaEnforcer,
    checkpointMgmtEnforcer,
    checkpointSecureXlEnforcer,
    firewallBFeedEnforcer,
    cspFeedEnforcer,
    cloudflareEnforcer,
    awsEnforcer,
    squidEnforcer,
    openDxlTieEnforcer,
    dryRunEnforcer,
  ].map((definition): [string, AnyEnforcer] => [definition.serves, definition]),
);

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

/**
 * The field names declared secret in the settings document's schema and in every plugin's
 * config schema: what print-config masks and the log redacts, wherever they are nested.
 */
export function secretKeysOfRegistry(registry: Registry = REGISTRY): string[] {
  return secretKeysOf(AgentConfig, ...[...registry.sources.values(), ...registry.enforcers.values()].map((plugin) => plugin.configSchema));
}

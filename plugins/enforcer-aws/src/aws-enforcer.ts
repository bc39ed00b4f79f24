import { compareCidrs, createEngineEnforcer, type BlockEntry, type Enforcer, type EnforcerAdapter, type PluginLogger } from '@rampart/plugin-kit';
import { converge, readSlots, type NetworkAclTarget } from './network-acl.ts';
import { IP_SET_ADDRESSES, convergeShards, readAddresses, readShards, type IpSetsTarget } from './wafv2-ip-sets.ts';

export interface AwsEnforcerOptions {
  nacl?: NetworkAclTarget;
  waf?: IpSetsTarget;
  log: PluginLogger;
}

const isDefaultRoute = (cidr: string) => cidr.endsWith('/0');

/**
 * AWS enforcement on two layers: the highest-scored entries as deny entries of a network ACL
 * (all traffic, but only a few rules fit), and the whole list in WAFv2 IP sets (HTTP through
 * ALB, API Gateway or CloudFront, 10,000 addresses per set). Both are converged to the entries
 * read back from AWS with the fewest writes, so the adapter needs no batch primitive: a change
 * is a full replace that writes only what differs. WAFv2 takes /1 to /32, so a /0 goes to the
 * network ACL first (and is refused without one).
 */
export function awsAdapter(o: AwsEnforcerOptions): EnforcerAdapter {
  function plan(entries: readonly BlockEntry[]): { nacl: string[]; waf: string[] } {
    const byScore = [...entries].sort(
      (a, b) => Number(isDefaultRoute(b.value)) - Number(isDefaultRoute(a.value)) || b.score - a.score || compareCidrs(a.value, b.value),
    );
    return {
      nacl: o.nacl ? byScore.slice(0, o.nacl.slots).map((e) => e.value) : [],
      waf: o.waf ? entries.filter((e) => !isDefaultRoute(e.value)).map((e) => e.value) : [],
    };
  }

  return {
    async read(signal?: AbortSignal) {
      const nacl = o.nacl ? [...(await readSlots(o.nacl, signal)).values()] : [];
      const waf = o.waf ? await readAddresses(o.waf, signal) : [];
      return [...nacl, ...waf];
    },
    // Both layers, so an entry lost from the network ACL is drift even while WAFv2 holds it.
    expected(enforced) {
      const p = plan(enforced);
      return [...p.nacl, ...p.waf];
    },
    async replaceAll(entries, signal?: AbortSignal) {
      const p = plan(entries);
      const naclCalls = o.nacl ? await converge(o.nacl, p.nacl, signal) : 0;
      const wafWrites = o.waf ? await convergeShards(o.waf, p.waf, signal) : 0;
      o.log.debug({ nacl_calls: naclCalls, waf_writes: wafWrites, entries: entries.length }, 'aws converged');
    },
    async removeAll(signal?: AbortSignal) {
      if (o.nacl) await converge(o.nacl, [], signal);
      if (o.waf) await convergeShards(o.waf, [], signal);
    },
    async probe(signal?: AbortSignal) {
      if (o.nacl) await readSlots(o.nacl, signal);
      if (o.waf) await readShards(o.waf, false, signal);
    },
    async close() {
      o.nacl?.ec2.destroy();
      o.waf?.waf.destroy();
    },
  };
}

export function createAwsEnforcer(o: AwsEnforcerOptions): Enforcer {
  return createEngineEnforcer(awsAdapter(o), {
    capacity: o.waf ? o.waf.shards * IP_SET_ADDRESSES : (o.nacl?.slots ?? 0),
    log: o.log,
    accepts: (cidr) => !isDefaultRoute(cidr) || o.nacl !== undefined,
  });
}

import {
  DesiredSet,
  compareCidrs,
  sortCidrs,
  type BlockEntry,
  type EnforceResult,
  type Enforcer,
  type PluginLogger,
  type ReconcileResult,
} from '@rampart/plugin-kit';
import { converge, readSlots, type NetworkAclTarget } from './network-acl.ts';
import { IP_SET_ADDRESSES, convergeShards, readAddresses, readShards, type IpSetsTarget } from './wafv2-ip-sets.ts';

export interface AwsEnforcerOptions {
  nacl?: NetworkAclTarget;
  waf?: IpSetsTarget;
  log: PluginLogger;
}

/**
 * AWS enforcement on two layers: the highest-scored entries as deny entries of a network ACL
 * (all traffic, but only a few rules fit), and the whole list in WAFv2 IP sets (HTTP through
 * ALB, API Gateway or CloudFront, 10,000 addresses per set). Both are converged to the desired
 * state read back from AWS, so a sync and a diff differ only in what they start from.
 */
export function createAwsEnforcer(o: AwsEnforcerOptions): Enforcer {
  const desired = new DesiredSet();
  const capacity = o.waf ? o.waf.shards * IP_SET_ADDRESSES : (o.nacl?.slots ?? 0);

  function plan() {
    const all = desired.entries();
    // WAFv2 IP sets take /1 to /32; a /0 can only go to the network ACL.
    const { kept, cut } = desired.withinCapacity(capacity);
    const byScore = [...kept].sort((a, b) => b.score - a.score || compareCidrs(a.value, b.value));
    const naclCidrs = o.nacl ? byScore.slice(0, o.nacl.slots).map((e) => e.value) : [];
    const wafCidrs = o.waf ? sortCidrs(kept.filter((e) => !e.value.endsWith('/0')).map((e) => e.value)) : [];
    const enforced = sortCidrs([...naclCidrs, ...wafCidrs]);
    return { enforced, naclCidrs, wafCidrs, cut: cut + (kept.length - enforced.length), total: all.length };
  }

  async function commit(signal?: AbortSignal): Promise<EnforceResult> {
    const p = plan();
    const naclCalls = o.nacl ? await converge(o.nacl, p.naclCidrs, signal) : 0;
    const wafWrites = o.waf ? await convergeShards(o.waf, p.wafCidrs, signal) : 0;
    o.log.debug({ nacl_calls: naclCalls, waf_writes: wafWrites, entries: p.enforced.length }, 'aws converged');
    if (p.cut > 0) o.log.warn({ cut: p.cut, capacity }, 'capacity reached; lowest scores cut');
    if (desired.invalid > 0) o.log.warn({ invalid: desired.invalid }, 'inputs that are not IPv4 CIDRs ignored');
    return { enforced: p.enforced.length, cut: p.cut, ...(desired.invalid > 0 ? { invalid: desired.invalid } : {}) };
  }

  async function list(signal?: AbortSignal): Promise<string[]> {
    const nacl = o.nacl ? [...(await readSlots(o.nacl, signal)).values()] : [];
    const waf = o.waf ? await readAddresses(o.waf, signal) : [];
    return sortCidrs([...nacl, ...waf]);
  }

  return {
    capacity,
    async healthcheck(signal?: AbortSignal) {
      try {
        if (o.nacl) await readSlots(o.nacl, signal);
        if (o.waf) await readShards(o.waf, false, signal);
        return { ok: true };
      } catch (err) {
        return { ok: false, detail: (err as Error).message };
      }
    },
    async sync(entries: BlockEntry[], signal?: AbortSignal) {
      desired.replace(entries);
      return commit(signal);
    },
    async apply(diff, signal?: AbortSignal) {
      desired.apply(diff);
      return commit(signal);
    },
    list,
    async reconcile(signal?: AbortSignal): Promise<ReconcileResult> {
      const p = plan();
      const live = await list(signal);
      const drifted = live.length !== p.enforced.length || live.some((c, i) => c !== p.enforced[i]);
      if (!drifted) return { enforced: p.enforced.length, cut: p.cut, drifted };
      o.log.warn({ live: live.length, expected: p.enforced.length }, 'aws drifted; re-asserting');
      desired.invalid = 0;
      return { ...(await commit(signal)), drifted };
    },
    async withdraw(signal?: AbortSignal) {
      desired.replace([]);
      if (o.nacl) await converge(o.nacl, [], signal);
      if (o.waf) await convergeShards(o.waf, [], signal);
    },
    async close() {
      o.nacl?.ec2.destroy();
      o.waf?.waf.destroy();
    },
  };
}

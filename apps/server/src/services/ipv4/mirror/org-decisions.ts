import { parseIpv4 } from '@rampart/contracts';
import type { MirrorDecisionRow } from '../../../store/index.ts';

export interface MirrorDecision {
  addr: number;
  len: number;
  decision: number;
  ttl: number | null;
  micros: number;
  changed: string;
}

/** One organization's decisions, indexed by prefix length (most specific first) for look-ups. */
export class OrgDecisions {
  readonly byNetwork = new Map<string, MirrorDecision>();
  private index: Array<{ len: number; mask: number; map: Map<number, MirrorDecision> }> | null = null;
  private latest: MirrorDecision | null | undefined;

  set(network: string, d: MirrorDecision): void {
    this.byNetwork.set(network, d);
    this.index = null;
    this.latest = undefined;
  }

  delete(network: string): void {
    if (this.byNetwork.delete(network)) {
      this.index = null;
      this.latest = undefined;
    }
  }

  /** What `Ipv4Store.decisionsVersion` returns for the organization. */
  version(epoch: string): { count: number; changed: string } {
    if (this.latest === undefined) {
      this.latest = null;
      for (const d of this.byNetwork.values()) if (!this.latest || d.micros > this.latest.micros) this.latest = d;
    }
    return { count: this.byNetwork.size, changed: this.latest?.changed ?? epoch };
  }

  /** The most specific decision whose network contains (or is) addr/len. */
  lookup(): (addr: number, len: number) => MirrorDecision | undefined {
    if (!this.index) {
      const groups = new Map<number, Map<number, MirrorDecision>>();
      for (const d of this.byNetwork.values()) {
        let m = groups.get(d.len);
        if (!m) groups.set(d.len, (m = new Map()));
        m.set(d.addr, d);
      }
      this.index = [...groups.entries()].sort((a, b) => b[0] - a[0]).map(([len, map]) => ({ len, mask: len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0, map }));
    }
    const index = this.index;
    return (addr, len) => {
      for (const g of index) {
        if (g.len > len) continue;
        const d = g.map.get((addr & g.mask) >>> 0);
        if (d) return d;
      }
      return undefined;
    };
  }
}

/** Every organization's decisions, as the mirror holds them. */
export class AllDecisions {
  private readonly orgs = new Map<number, OrgDecisions>();

  of(orgId: number): OrgDecisions | undefined {
    return this.orgs.get(orgId);
  }

  set(d: MirrorDecisionRow): void {
    const r = parseIpv4(d.network);
    if (!r) throw new Error(`ipv4 decision network ${d.network} is not IPv4`);
    let org = this.orgs.get(Number(d.org_id));
    if (!org) this.orgs.set(Number(d.org_id), (org = new OrgDecisions()));
    org.set(d.network, { addr: r.start, len: r.prefix, decision: Number(d.decision), ttl: d.ttl === null ? null : Number(d.ttl), micros: Number(d.micros), changed: d.changed });
  }

  delete(orgId: number, network: string): void {
    this.orgs.get(orgId)?.delete(network);
  }

  clear(): void {
    this.orgs.clear();
  }
}

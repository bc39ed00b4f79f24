import { parseIpv4 } from '@rampart/contracts';
import type { Ipv4ListFilter } from '../../../store/index.ts';
import type { Columns } from './columns.ts';
import type { MirrorDecision, OrgDecisions } from './org-decisions.ts';

/** An organization's (ts, score) for one indicator (migration 0011). */
export interface Anchor {
  ts: number;
  score: number;
}

/** What one request lists: the filter of `ipv4ListFilter`, reduced to what the mirror evaluates. */
export interface MirrorPlan {
  now: number;
  /** The organization's delay: rows whose ts (its anchor's when newer) is later are not listed. */
  visibleUpTo: number;
  cutoffs: Float64Array;
  ranges: Array<{ start: number; end: number }>;
  decision: ((addr: number, len: number) => MirrorDecision | undefined) | null;
  /** The organization's anchors by indicator id (ts, score), in force while newer than the row's ts. */
  anchors: Map<number, Anchor> | null;
}

/**
 * What a list filter selects, for the mirror; null when the mirror cannot evaluate it (a
 * blocking rule with tags needs the tags and sources, which only SQL holds).
 */
export function planOf(filter: Ipv4ListFilter, decisions: OrgDecisions | undefined, anchors: Map<number, Anchor> | undefined): MirrorPlan | null {
  if (filter.rule && filter.rule.tags.length > 0) return null;
  const ranges: MirrorPlan['ranges'] = [];
  for (const cidr of filter.reserved) {
    const r = parseIpv4(cidr);
    if (r) ranges.push({ start: r.start, end: r.end });
    else if (!cidr.includes(':')) return null; // not a network the mirror understands: SQL decides
  }
  const org = filter.hasDecisions ? decisions : undefined;
  return {
    now: filter.now,
    visibleUpTo: filter.visibleUpTo ?? Number.POSITIVE_INFINITY,
    cutoffs: Float64Array.from(filter.cutoffs),
    ranges,
    decision: org && org.byNetwork.size > 0 ? org.lookup() : null,
    anchors: anchors && anchors.size > 0 ? anchors : null,
  };
}

/**
 * The first position >= i and < end whose row the plan lists (end when none). The twin of
 * `listWhere` (store/ipv4.ts), and so of `isBlocked`: reserved > whitelist > blacklist until ttl
 * > live score >= threshold (test/blocking-rule.property.test.ts holds the three equal).
 */
export function nextListed(c: Columns, plan: MirrorPlan, i: number, end: number): number {
  const { cutoffs, ranges, decision, now, anchors, visibleUpTo } = plan;
  const nr = ranges.length;
  const ts = c.ts;
  const score = c.score;
  const delayed = visibleUpTo !== Number.POSITIVE_INFINITY;
  for (; i < end; i++) {
    // The organization's anchor replaces the row's (ts, score) while newer.
    let rowTs = ts[i]!;
    let rowScore = score[i]!;
    if (anchors) {
      const a = anchors.get(c.id[i]!);
      if (a && a.ts > rowTs) {
        rowTs = a.ts;
        rowScore = a.score;
      }
    }
    if (delayed && rowTs > visibleUpTo) continue;
    if (nr > 0 || decision) {
      const addr = c.addr[i]!;
      const len = c.len[i]!;
      if (nr > 0) {
        const last = addr + 2 ** (32 - len) - 1;
        let reserved = false;
        for (let k = 0; k < nr; k++) {
          const r = ranges[k]!;
          if (r.start <= last && addr <= r.end) {
            reserved = true;
            break;
          }
        }
        if (reserved) continue;
      }
      if (decision) {
        const d = decision(addr, len);
        if (d) {
          if (d.decision === 0) continue;
          if (d.decision === 1 && (d.ttl === null || d.ttl > now)) return i;
        }
      }
    }
    if (rowTs >= cutoffs[rowScore - 1]!) return i;
  }
  return end;
}

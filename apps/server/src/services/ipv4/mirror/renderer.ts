import { liveScore } from '@rampart/scoring';
import { ByteWriter, floorSeconds } from '../../list-bytes.ts';
import type { Columns } from './columns.ts';
import type { MirrorFacts } from './facts.ts';
import { nextListed, type MirrorPlan } from './listing.ts';

// The lists written from the mirror's columns straight to bytes, exactly as the SQL path writes
// them from rows (services/ipv4/lists.ts; test/ipv4-mirror.test.ts compares them byte for byte).

/** Entries of a list written by the mirror, and the id of the last one. */
export interface MirrorText {
  text: Buffer;
  last: number | null;
  count: number;
}

/** A page of a list as the mirror computed it: the figures `Ipv4Store.listBoundary` returns. */
export interface MirrorPage {
  last: number | null;
  more: boolean;
  version: string;
}

/** Count, id sum and largest updated_at (µs) of listed rows, as `versionText` (store/ipv4.ts) writes them. */
export class VersionSum {
  count = 0;
  private sum = 0;
  private big: bigint | null = null;
  private changed = 0;

  add(id: number, updated: number): void {
    this.count++;
    if (this.big !== null) this.big += BigInt(id);
    else {
      this.sum += id;
      // Past 2^53 a double no longer adds ids exactly.
      if (this.sum > 2 ** 52) {
        this.big = BigInt(this.sum);
        this.sum = 0;
      }
    }
    if (updated > this.changed) this.changed = updated;
  }

  text(): string {
    return `${this.count}:${this.big !== null ? this.big.toString() : String(this.sum)}:${this.changed}`;
  }
}

/** `Ipv4Store.listVersion` over the positions [start, end). */
export function listedVersion(c: Columns, plan: MirrorPlan, start: number, end: number): string {
  const v = new VersionSum();
  for (let i = nextListed(c, plan, start, end); i < end; i = nextListed(c, plan, i + 1, end)) v.add(c.id[i]!, c.updated[i]!);
  return v.text();
}

/**
 * Up to `limit` listed rows of [start, end) written as address-list entries: a /32 as the bare
 * address, a network in CIDR notation (`displayIp`), each followed by a line break (`lines`) or
 * preceded by a comma unless it is the list's first; `v` sums their version on the way.
 */
export function writeAddresses(c: Columns, plan: MirrorPlan, start: number, end: number, limit: number, format: 'lines' | 'comma', first: boolean, v: VersionSum | null): MirrorText & { next: number } {
  const w = new ByteWriter(Math.min(limit, end - start) * 16 + 16);
  let count = 0;
  let last: number | null = null;
  let i = nextListed(c, plan, start, end);
  for (; i < end && count < limit; i = nextListed(c, plan, i + 1, end)) {
    if (format === 'comma' && !(first && count === 0)) w.byte(44);
    w.network(c.addr[i]!, c.len[i]!);
    if (format === 'lines') w.byte(10);
    count++;
    last = c.id[i]!;
    v?.add(last, c.updated[i]!);
  }
  return { text: w.take(), last, count, next: i };
}

/** Up to `limit` listed rows of [start, end) written as `/flat` CSV lines (`csvLine`), LiveScore at `plan.now`. */
export function writeCsv(c: Columns, facts: MirrorFacts, plan: MirrorPlan, start: number, end: number, limit: number): MirrorText {
  const w = new ByteWriter(Math.min(limit, end - start) * 100 + 16);
  let count = 0;
  let last: number | null = null;
  for (let i = nextListed(c, plan, start, end); i < end && count < limit; i = nextListed(c, plan, i + 1, end)) {
    w.network(c.addr[i]!, c.len[i]!);
    w.byte(44);
    const a = plan.anchors?.get(c.id[i]!);
    w.fixed2(a && a.ts > c.ts[i]! ? liveScore(a.score, plan.now - a.ts) : liveScore(c.score[i]!, plan.now - c.ts[i]!));
    w.byte(44);
    w.int(c.members[i]!);
    w.byte(44);
    w.int(c.events[i]!);
    w.byte(44);
    w.isoSeconds(floorSeconds(c.updated[i]!));
    w.byte(44);
    facts.writeAs(w, c.as[i]!);
    w.byte(44);
    facts.writeCdn(w, c.cdn[i]!);
    w.byte(10);
    count++;
    last = c.id[i]!;
  }
  return { text: w.take(), last, count };
}

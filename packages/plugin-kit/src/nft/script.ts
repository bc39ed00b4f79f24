import { parseIpv4 } from '@rampart/contracts';

/*
 * The nft scripts this enforcer feeds to `nft -f -`. Each script is one kernel transaction: it
 * applies whole or not at all. Single addresses live in a plain hash set and networks in a
 * separate `flags interval` set: an update to a 100k-entry interval set costs seconds, to a hash
 * set milliseconds (stack notes), and most entries are single addresses.
 */

export const ADDR_SET = 'addrs';
export const NET_SET = 'nets';

export interface NftLayout {
  /** `inet` for the host's packet filter, `bridge` for frames crossing a bridge. */
  family: 'inet' | 'bridge';
  table: string;
  /** Hooks that get a drop chain, e.g. `['input', 'forward']`. */
  hooks: readonly string[];
  priority: number;
  capacity: number;
}

/** Change of the two sets, as canonical CIDRs. */
export interface SetChange {
  addAddrs: string[];
  delAddrs: string[];
  addNets: string[];
  delNets: string[];
}

const PER_LINE = 1000;

/**
 * `{ a, b, ... }` with a line break every PER_LINE elements. A hash set takes bare addresses, so
 * `/32` is dropped: every element is `a.b.c.d/NN` followed by a separator, hence `/32` occurs
 * only as a whole suffix and one replaceAll over the text does it without a copy per element.
 */
function elementList(cidrs: readonly string[]): string {
  const lines: string[] = [];
  for (let i = 0; i < cidrs.length; i += PER_LINE) lines.push(cidrs.slice(i, i + PER_LINE).join(', '));
  return `{ ${lines.join(',\n').replaceAll('/32', '')} }`;
}

function setBlock(name: string, flags: string, size: number, cidrs: readonly string[]): string {
  const elements = cidrs.length > 0 ? `\n    elements = ${elementList(cidrs)}` : '';
  return `  set ${name} {\n    type ipv4_addr;${flags}\n    size ${size};${elements}\n  }\n`;
}

function chainBlock(hook: string, priority: number): string {
  return (
    `  chain ${hook} {\n    type filter hook ${hook} priority ${priority}; policy accept;\n` +
    `    ip saddr @${ADDR_SET} counter drop\n    ip saddr @${NET_SET} counter drop\n  }\n`
  );
}

/**
 * Replaces the whole table in one transaction: declaring the table first makes the delete valid
 * whether or not it exists, so the script is also what the `acl` file holds for a firewall reload.
 */
export function fullReplaceScript(layout: NftLayout, addrs: readonly string[], nets: readonly string[]): string {
  const table = `${layout.family} ${layout.table}`;
  return (
    `# rampart block list (generated; replaced whole on every change, do not edit)\n` +
    `table ${table} {}\ndelete table ${table}\n` +
    `table ${table} {\n` +
    setBlock(ADDR_SET, '', layout.capacity, addrs) +
    setBlock(NET_SET, '\n    flags interval;', layout.capacity, nets) +
    layout.hooks.map((hook) => chainBlock(hook, layout.priority)).join('') +
    `}\n`
  );
}

/** Removes the table if it is there (valid whether or not it exists). */
export function withdrawScript(layout: Pick<NftLayout, 'family' | 'table'>): string {
  return `table ${layout.family} ${layout.table} {}\ndelete table ${layout.family} ${layout.table}\n`;
}

/**
 * Splits a change into element transactions of at most `batchSize` elements: deletions first, so
 * that a network replacing the networks it covers never overlaps them inside the interval set.
 */
export function elementBatches(layout: Pick<NftLayout, 'family' | 'table'>, change: SetChange, batchSize: number): string[] {
  const ops: { verb: 'add' | 'delete'; set: string; cidr: string }[] = [];
  for (const cidr of change.delNets) ops.push({ verb: 'delete', set: NET_SET, cidr });
  for (const cidr of change.delAddrs) ops.push({ verb: 'delete', set: ADDR_SET, cidr });
  for (const cidr of change.addAddrs) ops.push({ verb: 'add', set: ADDR_SET, cidr });
  for (const cidr of change.addNets) ops.push({ verb: 'add', set: NET_SET, cidr });
  const scripts: string[] = [];
  for (let i = 0; i < ops.length; i += batchSize) {
    const groups = new Map<string, string[]>();
    for (const op of ops.slice(i, i + batchSize)) {
      const key = `${op.verb} element ${layout.family} ${layout.table} ${op.set}`;
      const group = groups.get(key) ?? [];
      group.push(op.cidr);
      groups.set(key, group);
    }
    scripts.push([...groups].map(([head, cidrs]) => `${head} ${elementList(cidrs)}\n`).join(''));
  }
  return scripts;
}

/**
 * The networks an interval set can hold: nft refuses overlapping intervals, so a network inside
 * another enforced network is left out (the outer one already drops its traffic).
 */
export function outermostNets(cidrs: Iterable<string>): string[] {
  const ranges = [...cidrs].flatMap((cidr) => {
    const range = parseIpv4(cidr);
    return range ? [{ cidr, ...range }] : [];
  });
  ranges.sort((a, b) => a.start - b.start || a.prefix - b.prefix);
  const out: string[] = [];
  let lastEnd = -1;
  for (const range of ranges) {
    if (range.start <= lastEnd) continue;
    out.push(range.cidr);
    lastEnd = range.end;
  }
  return out;
}

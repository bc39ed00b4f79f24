/*
 * `ipset restore` scripts. A full replace fills `<set>-new` and swaps it with `<set>` (the kernel
 * exchanges the two in one step, so the drop rules never see a half-filled set), then destroys
 * the old content. Diffs are `del`/`add` lines with `-exist`, so re-applying one is a no-op.
 */

export interface IpsetLayout {
  set: string;
  capacity: number;
}

/** Bucket count for `count` entries: a power of two ≥ count/4 (ipset's buckets hold up to 12). */
export function hashsizeFor(count: number): number {
  let size = 1024;
  while (size * 4 < count) size *= 2;
  return size;
}

/** `<verb> <set> <cidr>` lines (ipset takes `1.2.3.4/32` as the address); one join, no per-line copies. */
function lines(verb: string, set: string, cidrs: readonly string[], suffix = ''): string {
  return cidrs.length === 0 ? '' : `${verb} ${set} ${cidrs.join(`${suffix}\n${verb} ${set} `)}${suffix}\n`;
}

export function createLine(name: string, layout: IpsetLayout, count: number): string {
  return `create ${name} hash:net family inet hashsize ${hashsizeFor(count)} maxelem ${layout.capacity}`;
}

/**
 * The full replace. `createLive` is false when `<set>` already exists (creating it again with other
 * sizes would fail); the twin is destroyed beforehand by the caller if a crash left it behind.
 */
export function fullReplaceScript(layout: IpsetLayout, cidrs: readonly string[], createLive: boolean): string {
  const twin = `${layout.set}-new`;
  return (
    (createLive ? `${createLine(layout.set, layout, cidrs.length)}\n` : '') +
    `${createLine(twin, layout, cidrs.length)}\n` +
    lines('add', twin, cidrs) +
    `swap ${twin} ${layout.set}\ndestroy ${twin}\n`
  );
}

/** What the `acl` file holds: restores the set on boot with `ipset restore -exist < acl`. */
export function saveScript(layout: IpsetLayout, cidrs: readonly string[]): string {
  return (
    `# rampart block list (generated; do not edit)\n${createLine(layout.set, layout, cidrs.length)} -exist\nflush ${layout.set}\n` +
    lines('add', layout.set, cidrs)
  );
}

export function diffBatches(layout: IpsetLayout, added: readonly string[], removed: readonly string[], batchSize: number): string[] {
  const ops = [...removed.map((cidr) => ({ verb: 'del', value: cidr })), ...added.map((cidr) => ({ verb: 'add', value: cidr }))];
  const out: string[] = [];
  for (let i = 0; i < ops.length; i += batchSize) {
    out.push(
      ops
        .slice(i, i + batchSize)
        .map((op) => `${op.verb} ${layout.set} ${op.value} -exist\n`)
        .join(''),
    );
  }
  return out;
}

/** Members of `ipset save <set>` output, as canonical-ready strings (`1.2.3.4`, `10.0.0.0/8`). */
export function parseSave(text: string, set: string): string[] {
  const prefix = `add ${set} `;
  const out: string[] = [];
  for (const line of text.split('\n')) if (line.startsWith(prefix)) out.push(line.slice(prefix.length).split(' ')[0]!);
  return out;
}

/**
 * From `iptables-save -t filter` output: each wanted chain that exists (INPUT and FORWARD always
 * count, even when a flush removed the table) and whether `-A <chain> <rule>` is in it.
 */
export function parseRuleState(saved: string, chains: readonly string[], rule: string): { chain: string; present: boolean }[] {
  const lines = new Set(saved.split('\n').map((l) => l.trim()));
  const existing = new Set([...lines].filter((l) => l.startsWith(':')).map((l) => l.slice(1).split(' ')[0]));
  return chains
    .filter((chain) => existing.has(chain) || chain === 'INPUT' || chain === 'FORWARD')
    .map((chain) => ({ chain, present: lines.has(`-A ${chain} ${rule}`) }));
}

import { canonicalIpv4Cidr, parseIpv4 } from '@rampart/contracts';
import { rangeToCidrs } from '../ipv4-range.ts';
import { ADDR_SET, NET_SET } from './script.ts';

/** What `nft -j list table <family> <table>` shows of this enforcer's table. */
export interface TableState {
  addrs: string[];
  nets: string[];
  /** Every hook has a chain at the expected priority that drops on both sets. */
  wired: boolean;
}

type Json = Record<string, unknown>;

/** One set element in nft's JSON: `"1.2.3.4"`, `{prefix:{addr,len}}`, `{range:[a,b]}`, `{elem:{val}}`. */
function elementCidrs(elem: unknown): string[] {
  if (typeof elem === 'string') {
    const cidr = canonicalIpv4Cidr(elem);
    return cidr ? [cidr] : [];
  }
  if (!elem || typeof elem !== 'object') return [];
  const e = elem as Json;
  if ('elem' in e) return elementCidrs((e.elem as Json).val);
  if ('prefix' in e) {
    const p = e.prefix as { addr: string; len: number };
    const cidr = canonicalIpv4Cidr(`${p.addr}/${p.len}`);
    return cidr ? [cidr] : [];
  }
  if ('range' in e) {
    const [from, to] = e.range as [string, string];
    const a = parseIpv4(from);
    const b = parseIpv4(to);
    return a && b ? rangeToCidrs(a.start, b.start) : [];
  }
  return [];
}

function dropsOn(rule: Json, set: string): boolean {
  const expr = (rule.expr as Json[] | undefined) ?? [];
  const matches = expr.some((x) => (x.match as Json | undefined)?.right === `@${set}`);
  return matches && expr.some((x) => 'drop' in x);
}

/** Parses the JSON listing of the table; the chains must sit on `hooks` at `priority`. */
export function parseTable(json: string, priority: number, hooks: readonly string[]): TableState {
  const items = (JSON.parse(json) as { nftables: Json[] }).nftables;
  const state: TableState = { addrs: [], nets: [], wired: false };
  const chains = new Map<string, string>();
  const rules: Json[] = [];
  for (const item of items) {
    if (item.set) {
      const set = item.set as Json;
      const cidrs = ((set.elem as unknown[] | undefined) ?? []).flatMap(elementCidrs);
      if (set.name === ADDR_SET) state.addrs = cidrs;
      if (set.name === NET_SET) state.nets = cidrs;
    } else if (item.chain) {
      const chain = item.chain as Json;
      if (chain.type === 'filter' && chain.prio === priority && typeof chain.hook === 'string') chains.set(chain.name as string, chain.hook);
    } else if (item.rule) {
      rules.push(item.rule as Json);
    }
  }
  state.wired = hooks.every((hook) => {
    const names = [...chains].filter(([, h]) => h === hook).map(([name]) => name);
    const inChain = rules.filter((r) => names.includes(r.chain as string));
    return inChain.some((r) => dropsOn(r, ADDR_SET)) && inChain.some((r) => dropsOn(r, NET_SET));
  });
  return state;
}

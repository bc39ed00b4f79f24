import { createEngineEnforcer, domainCodec, type BlockEntry, type Enforcer, type EnforcerAdapter, type PluginLogger, type TargetChange } from '@rampart/plugin-kit';
import type { WapiClient } from './wapi.ts';

/*
 * The response policy zone of an Infoblox Grid as an engine adapter. Each blocked domain is two
 * `record:rpz:cname` rules of the zone (`policy`) in the DNS view: the name and its `*.` wildcard
 * (every sub-domain), like the BIND dialect's zone file. The rule's `canonical` is the action:
 * `""` NXDOMAIN, `"*"` NODATA, a domain name substitutes it (walled garden); an exempt name is a
 * passthru rule (canonical = the rule's own name without the zone). The records this plugin owns
 * carry `comment` = the owner marker; every other record of the zone is left alone.
 */

export const RPZ_CNAME = 'record:rpz:cname';

export interface LiveRecord {
  ref: string;
  /** Full record name, `<rule>.<zone>`, lower case. */
  name: string;
  canonical: string;
}

export interface RpzAdapterOptions {
  client: WapiClient;
  /** The response policy zone (`zone_rp` fqdn), no trailing dot. */
  zone: string;
  view: string;
  /** The `comment` that marks the records this plugin owns. */
  owner: string;
  /** The canonical of a blocking rule: '' (NXDOMAIN), '*' (NODATA) or a substitute name. */
  canonical: string;
  /** Names exempt (passthru rules), read at every write. */
  passthru: () => string[];
  batchSize: number;
  pageSize: number;
}

type RequestItem = { method: 'POST'; object: string; data: Record<string, unknown> } | { method: 'DELETE'; object: string };

class RpzAdapter implements EnforcerAdapter {
  readonly #o: RpzAdapterOptions;
  readonly #suffix: string;
  /** Refs of the records the last read or write left, by name: what applyBatch deletes by. */
  #refs = new Map<string, string>();
  /** The exempt names of the last write. */
  #exempt = new Set<string>();

  constructor(o: RpzAdapterOptions) {
    this.#o = o;
    this.#suffix = `.${o.zone.toLowerCase()}`;
  }

  async probe(signal?: AbortSignal): Promise<void> {
    const { client, zone, view } = this.#o;
    const zones = await client.get('zone_rp', { fqdn: zone, view, _return_fields: 'fqdn,view' }, signal);
    if (!Array.isArray(zones) || zones.length === 0) throw new Error(`response policy zone '${zone}' not found in DNS view '${view}'`);
  }

  async read(signal?: AbortSignal): Promise<string[]> {
    const values: string[] = [];
    for (const record of await this.#owned(signal)) {
      if (record.canonical !== this.#o.canonical) continue;
      const rule = this.#rule(record.name);
      values.push(rule.startsWith('*.') ? rule.slice(2) : rule);
    }
    return values;
  }

  /** Each enforced name reads back twice (the name and its wildcard); exempt names not at all. */
  expected(enforced: readonly BlockEntry[]): string[] {
    return enforced.filter((e) => !this.#exempt.has(e.value)).flatMap((e) => [e.value, e.value]);
  }

  async replaceAll(entries: readonly BlockEntry[], signal?: AbortSignal): Promise<void> {
    const want = this.#desired(entries);
    const live = await this.#owned(signal);
    const kept = new Map<string, string>();
    const remove: string[] = [];
    for (const record of live) {
      if (want.get(record.name) === record.canonical && !kept.has(record.name)) kept.set(record.name, record.ref);
      else remove.push(record.ref);
    }
    const add = [...want].filter(([name]) => !kept.has(name));
    this.#refs = kept;
    await this.#commit(remove, add, signal);
  }

  async applyBatch(change: TargetChange, _all: () => BlockEntry[], signal?: AbortSignal): Promise<void> {
    const remove: string[] = [];
    const removed: string[] = [];
    for (const value of change.remove) {
      if (this.#exempt.has(value)) continue;
      for (const name of this.#names(value)) {
        const ref = this.#refs.get(name);
        if (!ref) throw new Error(`no known record for ${name}; replacing whole`);
        remove.push(ref);
        removed.push(name);
      }
    }
    const add: [string, string][] = [];
    for (const entry of change.add) if (!this.#exempt.has(entry.value)) for (const name of this.#names(entry.value)) add.push([name, this.#o.canonical]);
    for (const name of removed) this.#refs.delete(name);
    await this.#commit(remove, add, signal);
  }

  async removeAll(signal?: AbortSignal): Promise<void> {
    const live = await this.#owned(signal);
    this.#refs = new Map();
    this.#exempt = new Set();
    await this.#commit(
      live.map((r) => r.ref),
      [],
      signal,
    );
  }

  async close(): Promise<void> {
    this.#o.client.close();
  }

  /** The record names of a domain: the name and its wildcard, in the zone. */
  #names(value: string): [string, string] {
    return [`${value}${this.#suffix}`, `*.${value}${this.#suffix}`];
  }

  #rule(name: string): string {
    return name.slice(0, -this.#suffix.length);
  }

  /** Record name → canonical of everything this plugin should own for `entries`. */
  #desired(entries: readonly BlockEntry[]): Map<string, string> {
    const exempt = new Set(this.#o.passthru());
    this.#exempt = exempt;
    const want = new Map<string, string>();
    for (const e of entries) if (!exempt.has(e.value)) for (const name of this.#names(e.value)) want.set(name, this.#o.canonical);
    for (const value of exempt) for (const name of this.#names(value)) want.set(name, this.#rule(name));
    return want;
  }

  /** The records of the zone in the view that carry the owner marker, page by page. */
  async #owned(signal?: AbortSignal): Promise<LiveRecord[]> {
    const { client, zone, view, owner, pageSize } = this.#o;
    const records: LiveRecord[] = [];
    let args: Record<string, string | number> = { zone, view, _paging: 1, _max_results: pageSize, _return_as_object: 1, _return_fields: 'name,canonical,comment' };
    for (;;) {
      const page = (await client.get(RPZ_CNAME, args, signal)) as { result?: unknown; next_page_id?: unknown };
      if (!Array.isArray(page?.result)) throw new Error(`GET ${RPZ_CNAME}: a reply without a result array`);
      for (const item of page.result as Record<string, unknown>[]) {
        const name = typeof item.name === 'string' ? item.name.toLowerCase() : '';
        if (item.comment !== owner || !name.endsWith(this.#suffix) || typeof item._ref !== 'string') continue;
        records.push({ ref: item._ref, name, canonical: typeof item.canonical === 'string' ? item.canonical : '' });
      }
      if (typeof page.next_page_id !== 'string' || !page.next_page_id) return records;
      args = { _page_id: page.next_page_id };
    }
  }

  /**
   * Deletes, then creates, through the `request` object, `batchSize` items a call (each call one
   * WAPI transaction). A failed call fails the write; the engine then replaces the target whole.
   */
  async #commit(remove: string[], add: [string, string][], signal?: AbortSignal): Promise<void> {
    const { client, zone, view, owner, batchSize } = this.#o;
    const items: RequestItem[] = [
      ...remove.map((ref): RequestItem => ({ method: 'DELETE', object: ref })),
      ...add.map(([name, canonical]): RequestItem => ({ method: 'POST', object: RPZ_CNAME, data: { name, rp_zone: zone, view, canonical, comment: owner } })),
    ];
    for (let i = 0; i < items.length; i += batchSize) {
      const chunk = items.slice(i, i + batchSize);
      const results = await client.post('request', chunk, signal);
      chunk.forEach((item, k) => {
        const ref = Array.isArray(results) ? refOf(results[k]) : undefined;
        if (item.method === 'POST' && ref) this.#refs.set(item.data.name as string, ref);
      });
    }
  }
}

function refOf(result: unknown): string | undefined {
  if (typeof result === 'string') return result;
  const ref = (result as { _ref?: unknown } | null)?._ref;
  return typeof ref === 'string' ? ref : undefined;
}

export interface RpzEnforcerOptions extends RpzAdapterOptions {
  capacity: number;
  log: PluginLogger;
}

export function createRpzEnforcer(o: RpzEnforcerOptions): Enforcer {
  const longest = 253 - o.zone.length - 3;
  return createEngineEnforcer(new RpzAdapter(o), { capacity: o.capacity, log: o.log, codec: domainCodec, accepts: (value) => value.length <= longest });
}

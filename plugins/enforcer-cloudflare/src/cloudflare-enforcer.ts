import {
  DesiredSet,
  abortable,
  canonicalCidr,
  cidrToListForm,
  selectWithinCapacity,
  sortCidrs,
  sortEntries,
  type BlockEntry,
  type Diff,
  type EnforceResult,
  type Enforcer,
  type PluginLogger,
  type ReconcileResult,
} from '@rampart/plugin-kit';
import { CloudflareApi, CloudflareApiError } from './api.ts';

export interface CloudflareEnforcerOptions {
  api: CloudflareApi;
  accountId: string;
  zoneId: string;
  listName: string;
  ruleDescription: string;
  ruleAction: string;
  capacity: number;
  pollIntervalMs: number;
  timeoutMs: number;
  log: PluginLogger;
  sleep?: (ms: number) => Promise<void>;
}

interface ListItem {
  id: string;
  ip?: string;
}
interface Ruleset {
  id: string;
  rules?: { id: string; description?: string; expression?: string; action?: string; enabled?: boolean }[];
}

const PHASE = 'http_request_firewall_custom';
/** Cloudflare IP lists accept IPv4 networks from /8 to /32 only. */
const MIN_PREFIX = 8;
const PAGE = 500;
/** Items per bulk call: one request body stays well under the API's size limit. */
const BULK = 1000;

export function createCloudflareEnforcer(o: CloudflareEnforcerOptions): Enforcer {
  const desired = new DesiredSet();
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const lists = `/accounts/${encodeURIComponent(o.accountId)}/rules/lists`;
  const entrypoint = `/zones/${encodeURIComponent(o.zoneId)}/rulesets/phases/${PHASE}/entrypoint`;
  const expression = `ip.src in $${o.listName}`;
  let listId: string | undefined;

  async function findList(signal?: AbortSignal): Promise<string | undefined> {
    const found = (await o.api.get<{ id: string; name: string }[]>(lists, signal)).result.find((l) => l.name === o.listName);
    return found?.id;
  }

  async function ensureList(signal?: AbortSignal): Promise<string> {
    if (listId) return listId;
    listId =
      (await findList(signal)) ??
      (await o.api.call<{ id: string }>('POST', lists, { name: o.listName, kind: 'ip', description: 'Rampart block list (managed)' }, false, signal))!.result.id;
    return listId;
  }

  /** The zone's custom rule that blocks the list; created or corrected when needed. */
  async function ensureRule(signal?: AbortSignal): Promise<void> {
    const rule = { description: o.ruleDescription, expression, action: o.ruleAction, enabled: true };
    const ruleset = (await o.api.call<Ruleset>('GET', entrypoint, undefined, true, signal))?.result;
    if (!ruleset) {
      await o.api.call('PUT', entrypoint, { rules: [rule] }, false, signal);
      return;
    }
    const mine = ruleset.rules?.find((r) => r.description === o.ruleDescription);
    const base = `/zones/${encodeURIComponent(o.zoneId)}/rulesets/${encodeURIComponent(ruleset.id)}/rules`;
    if (!mine) await o.api.call('POST', base, { ...rule, position: { index: 1 } }, false, signal);
    else if (mine.expression !== expression || mine.action !== o.ruleAction || mine.enabled === false) {
      await o.api.call('PATCH', `${base}/${encodeURIComponent(mine.id)}`, rule, false, signal);
    }
  }

  /** Bulk item changes are asynchronous: poll the operation until it completes or fails. */
  async function settle(operationId: string, signal?: AbortSignal): Promise<void> {
    const deadline = Date.now() + o.timeoutMs;
    for (;;) {
      const op = (await o.api.get<{ status: string; error?: string }>(`${lists}/bulk_operations/${encodeURIComponent(operationId)}`, signal)).result;
      if (op.status === 'completed') return;
      if (op.status === 'failed') throw new CloudflareApiError(200, [{ message: `bulk operation failed: ${op.error ?? 'no detail'}` }], 'bulk_operations');
      if (Date.now() > deadline) throw new CloudflareApiError(0, [{ message: `bulk operation ${operationId} still ${op.status}` }], 'bulk_operations');
      await abortable(sleep(o.pollIntervalMs), signal);
    }
  }

  async function bulk(method: 'PUT' | 'POST' | 'DELETE', body: unknown, signal?: AbortSignal): Promise<void> {
    const id = await ensureList(signal);
    const res = await o.api.call<{ operation_id: string }>(method, `${lists}/${encodeURIComponent(id)}/items`, body, false, signal);
    await settle(res!.result.operation_id, signal);
  }

  async function items(signal?: AbortSignal): Promise<ListItem[]> {
    const id = listId ?? (await findList(signal));
    if (!id) return [];
    listId = id;
    const out: ListItem[] = [];
    let cursor: string | undefined;
    do {
      const q = `per_page=${PAGE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = await o.api.get<ListItem[]>(`${lists}/${encodeURIComponent(id)}/items?${q}`, signal);
      out.push(...page.result);
      cursor = page.result_info?.cursors?.after;
    } while (cursor);
    return out;
  }

  function kept(): { entries: BlockEntry[]; cut: number; unsupported: number } {
    const all = desired.entries();
    const supported = all.filter((e) => Number(e.value.split('/')[1]) >= MIN_PREFIX);
    const { kept, cut } = selectWithinCapacity(supported, o.capacity);
    return { entries: sortEntries(kept), cut, unsupported: all.length - supported.length };
  }

  function result(k: { entries: BlockEntry[]; cut: number; unsupported: number }): EnforceResult {
    if (k.cut > 0) o.log.warn({ cut: k.cut, capacity: o.capacity }, 'capacity reached; lowest scores cut');
    const invalid = desired.invalid + k.unsupported;
    if (invalid > 0) o.log.warn({ invalid, unsupported_prefix: k.unsupported }, 'entries Cloudflare lists cannot hold ignored');
    return { enforced: k.entries.length, cut: k.cut, ...(invalid > 0 ? { invalid } : {}) };
  }

  async function replace(signal?: AbortSignal): Promise<EnforceResult> {
    const k = kept();
    await ensureList(signal);
    // PUT replaces the whole list in one asynchronous operation: never a half-filled list.
    await bulk('PUT', k.entries.map((e) => ({ ip: cidrToListForm(e.value), comment: `rampart score ${Math.round(e.score)}` })), signal);
    await ensureRule(signal);
    return result(k);
  }

  async function list(signal?: AbortSignal): Promise<string[]> {
    return sortCidrs((await items(signal)).map((i) => canonicalCidr(i.ip ?? '')).filter((c): c is string => !!c));
  }

  return {
    capacity: o.capacity,
    async healthcheck(signal?: AbortSignal) {
      try {
        await o.api.get(lists, signal);
        return { ok: true };
      } catch (err) {
        return { ok: false, detail: (err as Error).message };
      }
    },
    async sync(entries: BlockEntry[], signal?: AbortSignal) {
      desired.replace(entries);
      return replace(signal);
    },
    async apply(diff: Diff, signal?: AbortSignal) {
      desired.apply(diff);
      const k = kept();
      const live = await items(signal);
      const want = new Set(k.entries.map((e) => e.value));
      const liveCidrs = new Set<string>();
      const stale: { id: string }[] = [];
      for (const item of live) {
        const cidr = canonicalCidr(item.ip ?? '');
        if (cidr && want.has(cidr) && !liveCidrs.has(cidr)) liveCidrs.add(cidr);
        else stale.push({ id: item.id });
      }
      for (let i = 0; i < stale.length; i += BULK) await bulk('DELETE', { items: stale.slice(i, i + BULK) }, signal);
      const missing = k.entries.filter((e) => !liveCidrs.has(e.value));
      for (let i = 0; i < missing.length; i += BULK) {
        await bulk('POST', missing.slice(i, i + BULK).map((e) => ({ ip: cidrToListForm(e.value), comment: `rampart score ${Math.round(e.score)}` })), signal);
      }
      await ensureRule(signal);
      return result(k);
    },
    list,
    async reconcile(signal?: AbortSignal): Promise<ReconcileResult> {
      const k = kept();
      const want = k.entries.map((e) => e.value);
      const live = await list(signal);
      const drifted = live.length !== want.length || live.some((c, i) => c !== want[i]);
      if (!drifted) return { enforced: want.length, cut: k.cut, drifted };
      o.log.warn({ live: live.length, expected: want.length }, 'Cloudflare list drifted; re-asserting');
      desired.invalid = 0;
      return { ...(await replace(signal)), drifted };
    },
    async withdraw(signal?: AbortSignal) {
      desired.replace([]);
      const ruleset = (await o.api.call<Ruleset>('GET', entrypoint, undefined, true, signal))?.result;
      const mine = ruleset?.rules?.find((r) => r.description === o.ruleDescription);
      if (ruleset && mine) {
        await o.api.call('DELETE', `/zones/${encodeURIComponent(o.zoneId)}/rulesets/${encodeURIComponent(ruleset.id)}/rules/${encodeURIComponent(mine.id)}`, undefined, false, signal);
      }
      if (listId ?? (await findList(signal))) await bulk('PUT', [], signal);
    },
    async close() {},
  };
}

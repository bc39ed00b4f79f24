import {
  abortable,
  canonicalCidr,
  cidrToListForm,
  createEngineEnforcer,
  type BlockEntry,
  type Enforcer,
  type EnforcerAdapter,
  type PluginLogger,
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

/**
 * One account-level IP list and the zone's custom rule that blocks it. A full replace is one
 * asynchronous bulk `PUT` (never a half-filled list) followed by creating or correcting the rule;
 * a batch deletes the removed items by id and appends the added ones. A list whose rule is
 * missing, disabled or edited blocks nothing and reads as empty, so `reconcile` restores both.
 */
export function cloudflareAdapter(o: CloudflareEnforcerOptions): EnforcerAdapter {
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

  async function ruleset(signal?: AbortSignal): Promise<Ruleset | undefined> {
    return (await o.api.call<Ruleset>('GET', entrypoint, undefined, true, signal))?.result;
  }

  const ours = (rs: Ruleset | undefined) => rs?.rules?.find((r) => r.description === o.ruleDescription);
  const blocks = (rule: ReturnType<typeof ours>) => !!rule && rule.expression === expression && rule.action === o.ruleAction && rule.enabled !== false;

  /** The zone's custom rule that blocks the list; created or corrected when needed. */
  async function ensureRule(signal?: AbortSignal): Promise<void> {
    const rule = { description: o.ruleDescription, expression, action: o.ruleAction, enabled: true };
    const rs = await ruleset(signal);
    if (!rs) {
      await o.api.call('PUT', entrypoint, { rules: [rule] }, false, signal);
      return;
    }
    const mine = ours(rs);
    const base = `/zones/${encodeURIComponent(o.zoneId)}/rulesets/${encodeURIComponent(rs.id)}/rules`;
    if (!mine) await o.api.call('POST', base, { ...rule, position: { index: 1 } }, false, signal);
    else if (!blocks(mine)) await o.api.call('PATCH', `${base}/${encodeURIComponent(mine.id)}`, rule, false, signal);
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

  const item = (e: BlockEntry) => ({ ip: cidrToListForm(e.value), comment: `rampart score ${Math.round(e.score)}` });

  return {
    async read(signal?: AbortSignal) {
      if (!blocks(ours(await ruleset(signal)))) return [];
      return (await items(signal)).flatMap((i) => canonicalCidr(i.ip ?? '') ?? []);
    },
    async replaceAll(entries, signal?: AbortSignal) {
      await ensureList(signal);
      await bulk('PUT', entries.map(item), signal);
      await ensureRule(signal);
    },
    async applyBatch(change, _all, signal?: AbortSignal) {
      const remove = new Set(change.remove);
      const live = await items(signal);
      const present = new Set(live.flatMap((i) => canonicalCidr(i.ip ?? '') ?? []));
      const stale = live.filter((i) => remove.has(canonicalCidr(i.ip ?? '') ?? '')).map((i) => ({ id: i.id }));
      for (let i = 0; i < stale.length; i += BULK) await bulk('DELETE', { items: stale.slice(i, i + BULK) }, signal);
      const missing = change.add.filter((e) => !present.has(e.value));
      for (let i = 0; i < missing.length; i += BULK) await bulk('POST', missing.slice(i, i + BULK).map(item), signal);
    },
    async removeAll(signal?: AbortSignal) {
      const rs = await ruleset(signal);
      const mine = ours(rs);
      if (rs && mine) {
        await o.api.call('DELETE', `/zones/${encodeURIComponent(o.zoneId)}/rulesets/${encodeURIComponent(rs.id)}/rules/${encodeURIComponent(mine.id)}`, undefined, false, signal);
      }
      if (listId ?? (await findList(signal))) await bulk('PUT', [], signal);
    },
    async probe(signal?: AbortSignal) {
      await o.api.get(lists, signal);
    },
  };
}

export function createCloudflareEnforcer(o: CloudflareEnforcerOptions): Enforcer {
  return createEngineEnforcer(cloudflareAdapter(o), {
    capacity: o.capacity,
    log: o.log,
    // Cloudflare IP lists accept IPv4 networks from /8 to /32 only.
    accepts: (cidr) => Number(cidr.split('/')[1]) >= MIN_PREFIX,
  });
}

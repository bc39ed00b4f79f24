import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/*
 * Test stand-in for the parts of the Cloudflare API v4 the enforcer uses: account IP lists
 * (items paged by cursor, bulk changes that complete asynchronously and only then show),
 * the zone's custom-rules entrypoint ruleset, both authentication schemes, the 10,000-item
 * cap and 429 responses with Retry-After.
 */

interface Item {
  id: string;
  ip: string;
  comment?: string;
}
interface List {
  id: string;
  name: string;
  kind: string;
  items: Item[];
}
interface Op {
  polls: number;
  apply: () => string | undefined;
  status: 'pending' | 'running' | 'completed' | 'failed';
  error?: string;
}
export interface Rule {
  id: string;
  description: string;
  expression: string;
  action: string;
  enabled: boolean;
}

export interface CloudflareState {
  lists: Map<string, List>;
  rulesets: Map<string, { id: string; rules: Rule[] }>;
  ops: Map<string, Op>;
  /** Answer the next N requests with 429. */
  throttle: number;
  /** The next bulk operation fails with this error. */
  failNextOp?: string;
  requests: string[];
}

export interface CloudflareStandIn {
  url: string;
  state: CloudflareState;
  /** Items of a list by name, as Cloudflare holds them now. */
  items(name: string): string[];
  stop(): Promise<void>;
}

const MAX_ITEMS = 10_000;

export async function startCloudflareStandIn(auth: { token?: string; email?: string; key?: string }): Promise<CloudflareStandIn> {
  const state: CloudflareState = { lists: new Map(), rulesets: new Map(), ops: new Map(), throttle: 0, requests: [] };

  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  };
  const ok = (res: ServerResponse, result: unknown, extra: object = {}) => send(res, 200, { success: true, errors: [], messages: [], result, ...extra });
  const fail = (res: ServerResponse, status: number, code: number, message: string) =>
    send(res, status, { success: false, errors: [{ code, message }], messages: [], result: null });

  function authorised(req: IncomingMessage): boolean {
    if (auth.token) return req.headers.authorization === `Bearer ${auth.token}`;
    return req.headers['x-auth-email'] === auth.email && req.headers['x-auth-key'] === auth.key;
  }

  function startOp(mutate: () => string | undefined): string {
    const id = randomUUID();
    const injected = state.failNextOp;
    state.failNextOp = undefined;
    state.ops.set(id, { polls: 0, apply: injected ? () => injected : mutate, status: 'pending' });
    return id;
  }

  async function body(req: IncomingMessage): Promise<unknown> {
    let text = '';
    for await (const chunk of req) text += chunk;
    return text ? JSON.parse(text) : undefined;
  }

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const path = url.pathname.replace(/^\/client\/v4/, '');
    state.requests.push(`${req.method} ${path}`);
    if (state.throttle > 0) {
      state.throttle -= 1;
      res.writeHead(429, { 'retry-after': '0', 'content-type': 'application/json' }).end(
        JSON.stringify({ success: false, errors: [{ code: 971, message: 'Please wait and consider throttling your request speed' }] }),
      );
      return;
    }
    if (!authorised(req)) return fail(res, 403, 10000, 'Authentication error');
    const input = (await body(req)) as never;
    let m: RegExpExecArray | null;

    if ((m = /^\/accounts\/(\w+)\/rules\/lists$/.exec(path))) {
      if (req.method === 'GET') return ok(res, [...state.lists.values()].map(({ items, ...l }) => ({ ...l, num_items: items.length })));
      if (req.method === 'POST') {
        const { name, kind } = input as { name: string; kind: string };
        if ([...state.lists.values()].some((l) => l.name === name)) return fail(res, 400, 10017, 'list name already exists');
        const list = { id: randomUUID().replace(/-/g, ''), name, kind, items: [] };
        state.lists.set(list.id, list);
        return ok(res, { id: list.id, name, kind });
      }
    }
    if ((m = /^\/accounts\/(\w+)\/rules\/lists\/bulk_operations\/([\w-]+)$/.exec(path)) && req.method === 'GET') {
      const op = state.ops.get(m[2]!);
      if (!op) return fail(res, 404, 10003, 'operation not found');
      // pending → running → completed (or failed): the change shows only once completed.
      op.polls += 1;
      if (op.status === 'pending') op.status = 'running';
      else if (op.status === 'running') {
        const error = op.apply();
        op.status = error ? 'failed' : 'completed';
        op.error = error;
      }
      return ok(res, { id: m[2], status: op.status, ...(op.error ? { error: op.error } : {}) });
    }
    if ((m = /^\/accounts\/(\w+)\/rules\/lists\/(\w+)\/items$/.exec(path))) {
      const list = state.lists.get(m[2]!);
      if (!list) return fail(res, 404, 10001, 'list not found');
      if (req.method === 'GET') {
        const perPage = Math.min(Number(url.searchParams.get('per_page') ?? 25), 500);
        const start = Number(url.searchParams.get('cursor') ?? 0);
        const page = list.items.slice(start, start + perPage);
        const after = start + perPage < list.items.length ? String(start + perPage) : undefined;
        return ok(res, page, { result_info: { cursors: after ? { after } : {} } });
      }
      const newItems = (items: { ip: string; comment?: string }[]) => items.map((i) => ({ id: randomUUID().replace(/-/g, ''), ...i }));
      if (req.method === 'PUT') {
        const items = input as { ip: string }[];
        return ok(res, {
          operation_id: startOp(() => {
            if (items.length > MAX_ITEMS) return 'exceeded maximum number of list items';
            list.items = newItems(items);
            return undefined;
          }),
        });
      }
      if (req.method === 'POST') {
        const items = input as { ip: string }[];
        return ok(res, {
          operation_id: startOp(() => {
            if (list.items.length + items.length > MAX_ITEMS) return 'exceeded maximum number of list items';
            if (items.some((i) => list.items.some((x) => x.ip === i.ip))) return 'duplicate item';
            list.items.push(...newItems(items));
            return undefined;
          }),
        });
      }
      if (req.method === 'DELETE') {
        const ids = new Set((input as { items: { id: string }[] }).items.map((i) => i.id));
        return ok(res, {
          operation_id: startOp(() => {
            list.items = list.items.filter((i) => !ids.has(i.id));
            return undefined;
          }),
        });
      }
    }
    if ((m = /^\/zones\/(\w+)\/rulesets\/phases\/http_request_firewall_custom\/entrypoint$/.exec(path))) {
      const rs = state.rulesets.get(m[1]!);
      if (req.method === 'GET') return rs ? ok(res, { id: rs.id, phase: 'http_request_firewall_custom', rules: rs.rules }) : fail(res, 404, 10003, 'ruleset not found');
      if (req.method === 'PUT') {
        const rules = ((input as { rules: Omit<Rule, 'id'>[] }).rules ?? []).map((r) => ({ ...r, id: randomUUID().replace(/-/g, '') }));
        const next = { id: rs?.id ?? randomUUID().replace(/-/g, ''), rules };
        state.rulesets.set(m[1]!, next);
        return ok(res, next);
      }
    }
    if ((m = /^\/zones\/(\w+)\/rulesets\/(\w+)\/rules(?:\/(\w+))?$/.exec(path))) {
      const rs = state.rulesets.get(m[1]!);
      if (!rs || rs.id !== m[2]) return fail(res, 404, 10003, 'ruleset not found');
      if (req.method === 'POST' && !m[3]) {
        const { position, ...rule } = input as Omit<Rule, 'id'> & { position?: { index?: number } };
        const at = position?.index ? position.index - 1 : rs.rules.length;
        rs.rules.splice(at, 0, { ...rule, id: randomUUID().replace(/-/g, '') });
        return ok(res, rs);
      }
      const idx = rs.rules.findIndex((r) => r.id === m![3]);
      if (idx < 0) return fail(res, 404, 10003, 'rule not found');
      if (req.method === 'PATCH') {
        rs.rules[idx] = { ...rs.rules[idx]!, ...(input as object) };
        return ok(res, rs);
      }
      if (req.method === 'DELETE') {
        rs.rules.splice(idx, 1);
        return ok(res, rs);
      }
    }
    return fail(res, 404, 7003, `no route for ${req.method} ${path}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/client/v4`,
    state,
    items(name) {
      const list = [...state.lists.values()].find((l) => l.name === name);
      return (list?.items ?? []).map((i) => i.ip).sort();
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FirewallEvent } from '../src/events.ts';

/**
 * A local stand-in for the two Cloudflare endpoints the source uses (REST `GET /zones` and the
 * GraphQL `firewallEventsAdaptive` dataset), with Cloudflare's auth headers and error shape. It
 * filters and pages events exactly as the query asks, so the source's paging is really exercised.
 */
export interface CloudflareStandIn {
  url: string;
  events: Map<string, FirewallEvent[]>;
  zones: string[];
  requests: { path: string; variables?: Record<string, unknown> }[];
  close(): Promise<void>;
}

export async function startCloudflareStandIn(auth: { email: string; key: string }): Promise<CloudflareStandIn> {
  const state: Omit<CloudflareStandIn, 'url' | 'close'> = { events: new Map(), zones: [], requests: [] };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const send = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      const url = new URL(req.url ?? '/', 'http://x');
      if (req.headers['x-auth-email'] !== auth.email || req.headers['x-auth-key'] !== auth.key) {
        return send(403, { success: false, errors: [{ code: 9103, message: 'Unknown X-Auth-Key or X-Auth-Email' }], result: null });
      }
      if (req.method === 'GET' && url.pathname === '/client/v4/zones') {
        const page = Number(url.searchParams.get('page') ?? 1);
        const per = Number(url.searchParams.get('per_page') ?? 20);
        state.requests.push({ path: `${url.pathname}?page=${page}` });
        const result = state.zones.slice((page - 1) * per, page * per).map((id, i) => ({ id, name: `zone${i}.example` }));
        return send(200, { success: true, errors: [], result, result_info: { page, per_page: per, total_pages: Math.max(1, Math.ceil(state.zones.length / per)) } });
      }
      if (req.method === 'POST' && url.pathname === '/client/v4/graphql') {
        const { query, variables } = JSON.parse(Buffer.concat(chunks).toString()) as { query: string; variables: Record<string, unknown> };
        state.requests.push({ path: url.pathname, variables });
        if (!/firewallEventsAdaptive/.test(query) || !/clientIP/.test(query)) return send(200, { data: null, errors: [{ message: 'unknown field' }] });
        const since = Date.parse(String(variables.since));
        const until = Date.parse(String(variables.until));
        const actions = variables.actions as string[];
        const rows = (state.events.get(String(variables.zoneTag)) ?? [])
          .filter((e) => Date.parse(e.datetime) >= since && Date.parse(e.datetime) < until && actions.includes(e.action))
          .sort((a, b) => Date.parse(a.datetime) - Date.parse(b.datetime))
          .slice(0, Number(variables.limit));
        return send(200, { data: { viewer: { zones: [{ firewallEventsAdaptive: rows }] } }, errors: null });
      }
      send(404, { success: false, errors: [{ code: 7003, message: 'No route for that URI' }] });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    ...state,
    url: `http://127.0.0.1:${port}/client/v4`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

import { API_BASE } from '@rampart/contracts';

/**
 * Everything an agent key may call, and why: what `apps/agent` calls through `@rampart/client`
 * (feed, list, report, the look-up that confirms a resent report, feedback, its own settings,
 * the sync channel). Every other route answers an agent key 403, so a key stolen from an edge
 * host reads no other feed, spends no coins on lists its enforcers do not use and changes no
 * organization-wide setting or decision. The README's table of agent key routes is checked
 * against this list (test/hostile-clients.test.ts).
 */
export const AGENT_KEY_ROUTES = [
  { method: 'GET', url: `${API_BASE}/ips`, use: 'the IPv4 feed it syncs from' },
  { method: 'GET', url: `${API_BASE}/ipv4/:min_score`, use: 'the list of addresses its enforcers block' },
  { method: 'GET', url: `${API_BASE}/ips/:ipv4`, use: 'whether a report it resends after a failure has arrived' },
  { method: 'POST', url: `${API_BASE}/ips`, use: 'reports, without `decision` or `ttl` (403)' },
  { method: 'GET', url: `${API_BASE}/domains`, use: 'the domain feed, when an enforcer takes domains' },
  { method: 'GET', url: `${API_BASE}/domains/score/:min_score`, use: 'the list of domains its enforcers block' },
  { method: 'GET', url: `${API_BASE}/urls`, use: 'the URL feed, when an enforcer takes URLs' },
  { method: 'GET', url: `${API_BASE}/urls/score/:min_score`, use: 'the list of URLs its enforcers block' },
  { method: 'GET', url: `${API_BASE}/files`, use: 'the file feed, when an enforcer takes file digests' },
  { method: 'GET', url: `${API_BASE}/files/score/:min_score`, use: 'the list of digests its enforcers block' },
  { method: 'POST', url: `${API_BASE}/agents/feedback`, use: 'feedback after an enforcement run, for itself only' },
  { method: 'GET', url: `${API_BASE}/agents/:agid/config`, use: 'its own settings document, unmasked' },
  { method: 'GET', url: `${API_BASE}/agents/sync`, use: 'the sync channel (WebSocket)' },
] as const;

const allowed = new Set<string>(AGENT_KEY_ROUTES.map((r) => `${r.method} ${r.url}`));

/** Whether an agent key may call the route (HEAD is a GET without a body). */
export function agentKeyMayCall(method: string, routeUrl: string | undefined): boolean {
  return routeUrl !== undefined && allowed.has(`${method === 'HEAD' ? 'GET' : method} ${routeUrl}`);
}

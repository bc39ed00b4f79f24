import type { IpsFeedQuery, Ipv4Page } from '@rampart/contracts';
import { EVAL_JS, EXEC_PYTHON } from '@rampart/scoring';
import type { Principal } from '../../plugins/principal.ts';
import { checkInCaller } from '../agents/checkin.ts';
import type { Ipv4Row, Organization, Store } from '../../store/index.ts';
import { delaySeconds, userObject } from '../envelope.ts';
import { loadIpv4Policy, recordDecision } from './policy.ts';
import { ipv4Record } from './records.ts';

/**
 * `GET /ips`: one page of the IPv4 feed as the original clients page it (decisions.md,
 * Compatibility), each record decided for the caller. The agent's poll is its check-in; an agent
 * key checks in as itself (checkInCaller).
 */
export async function ipv4FeedPage(store: Store, principal: Principal, query: IpsFeedQuery): Promise<Ipv4Page> {
  const { ts, page_size, full, gaid } = query;
  await checkInCaller(store, principal, gaid, 'feed');
  const delay = delaySeconds(principal.org);
  const [rows, policy] = await Promise.all([ipv4FeedRows(store, principal.org, ts, page_size), loadIpv4Policy(store, principal.org.id)]);
  const now = Math.floor(Date.now() / 1000);
  return {
    header: { type: 'IPv4', version: 2, ts: String(ts), next_ts: rows.at(-1)?.ts ?? ts, page_size, delay, eval: EVAL_JS, exec_python: EXEC_PYTHON, user: userObject(principal) },
    body: rows.map((row) => ipv4Record(row, delay, full === 'yes', now, recordDecision(row, policy, now))),
  };
}

/**
 * The rows of one `/ips` page as the organization sees them (its anchors, its most specific
 * decision, its delay); `settled`: the first unsettled second read beforehand (TAXII bounds its
 * other reads with it).
 */
export function ipv4FeedRows(store: Store, org: Organization, since: number, pageSize: number, settled?: number): Promise<Ipv4Row[]> {
  return store.ipv4.feedPage(org.id, since, pageSize, delaySeconds(org), settled);
}

import { parseIpv4Address, type Ipv4Page } from '@rampart/contracts';
import { EVAL_JS, EXEC_PYTHON, liveScore, scoreV32, V32_VERSION } from '@rampart/scoring';
import type { Principal } from '../../plugins/principal.ts';
import type { Ipv4Row, Store } from '../../store/index.ts';
import { delaySeconds, userObject, visibleTo } from '../envelope.ts';
import type { Ipv4Mirror } from './mirror/index.ts';
import { loadIpv4Policy, recordDecision, type RecordDecision } from './policy.ts';
import { ipv4Record } from './records.ts';

/**
 * Why a record scores and is decided as it is now: the v3.2 components from its reporters as
 * they stand now (trust may have changed since the last report), its live score and its decision.
 */
async function explained(store: Store, row: Ipv4Row, decided: RecordDecision, now: number) {
  const reporters = await store.ipv4.reporters(row.id);
  const { s0, components } = scoreV32(reporters.map((r) => ({ orgTrust: r.trust, confidence: r.confidence, events: r.events })));
  return {
    algorithm: V32_VERSION,
    ...components,
    s0,
    live_score: liveScore(row.score, now - row.ts),
    seconds_since_ts: Math.max(0, now - row.ts),
    decision_reason: decided.reason,
  };
}

/**
 * The records holding `ip` as the organization sees them: from the in-process mirror when it is
 * ready (its freshness rule: `Ipv4Mirror.freshForLookup`), otherwise from SQL, where concurrent
 * look-ups of this replica leave as one statement (Store.ipv4Lookups). Both give the same rows
 * for the same state (test/ipv4-lookup-mirror.property.test.ts).
 */
async function holding(store: Store, mirror: Ipv4Mirror | null, orgId: number, ip: string): Promise<Ipv4Row[]> {
  const addr = mirror?.ready ? parseIpv4Address(ip) : undefined;
  const fromMirror = addr === undefined ? null : await mirror!.holding(orgId, addr);
  return fromMirror ?? store.ipv4Lookups.holding(orgId, ip);
}

/**
 * `GET /ips/{ipv4}`: a page envelope whose body holds the records for that address — the address
 * itself and any held network containing it, most specific first; empty when nothing is held
 * (spec 4.2: "the record for that IP if it is held"). `explain` reads the reporters from SQL, and
 * so reads the records from SQL too.
 */
export async function lookupIpv4(store: Store, mirror: Ipv4Mirror | null, principal: Principal, ip: string, options: { full: boolean; explain: boolean }): Promise<Ipv4Page> {
  const delay = delaySeconds(principal.org);
  const orgId = principal.org.id;
  const [held, policy] = await Promise.all([options.explain ? store.ipv4Lookups.holding(orgId, ip) : holding(store, mirror, orgId, ip), loadIpv4Policy(store, orgId)]);
  const now = Math.floor(Date.now() / 1000);
  // Records the organization's delay still hides are not held, for it.
  const rows = held.filter(visibleTo(principal.org, now));
  const record = (row: Ipv4Row) => {
    const decided = recordDecision(row, policy, now);
    return { row, decided, record: ipv4Record(row, delay, options.full, now, decided) };
  };
  // Without explain nothing more is read: no promise per record.
  const body = options.explain
    ? await Promise.all(rows.map(record).map(async (x) => ({ ...x.record, explain: await explained(store, x.row, x.decided, now) })))
    : rows.map((row) => record(row).record);
  return {
    header: { type: 'IPv4', version: 2, ts: String(now), page_size: body.length, delay, eval: EVAL_JS, exec_python: EXEC_PYTHON, user: userObject(principal) },
    body,
  };
}

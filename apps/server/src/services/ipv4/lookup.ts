import { parseIpv4Address, type Ipv4Page, type Ipv4Record } from '@rampart/contracts';
import { EVAL_JS, EXEC_PYTHON, liveScore, scoreV32, V32_VERSION } from '@rampart/scoring';
import type { Principal } from '../../plugins/principal.ts';
import type { Ipv4Row, Store } from '../../store/index.ts';
import { delaySeconds, userObject, visibleTo } from '../envelope.ts';
import type { Ipv4Mirror } from './mirror/index.ts';
import { cachedIpv4Policy, loadIpv4Policy, recordDecision, type Ipv4Policy, type RecordDecision } from './policy.ts';
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
 * for the same state (test/ipv4-lookup-mirror.property.test.ts). No promise when the mirror
 * answers at once.
 */
function holding(store: Store, mirror: Ipv4Mirror | null, orgId: number, ip: string): Ipv4Row[] | Promise<Ipv4Row[]> {
  const addr = mirror?.ready ? parseIpv4Address(ip) : undefined;
  if (addr === undefined) return store.ipv4Lookups.holding(orgId, ip);
  const fromMirror = mirror!.holding(orgId, addr);
  if (fromMirror instanceof Promise) return fromMirror.then((rows) => rows ?? store.ipv4Lookups.holding(orgId, ip));
  return fromMirror ?? store.ipv4Lookups.holding(orgId, ip);
}

/**
 * `GET /ips/{ipv4}`: a page envelope whose body holds the records for that address — the address
 * itself and any held network containing it, most specific first; empty when nothing is held
 * (spec 4.2: "the record for that IP if it is held"). `explain` reads the reporters from SQL, and
 * so reads the records from SQL too. Without `explain`, a look-up the mirror answers at once with
 * the organization's settings cached (most of them) is answered without a promise.
 */
export function lookupIpv4(store: Store, mirror: Ipv4Mirror | null, principal: Principal, ip: string, options: { full: boolean; explain: boolean }): Ipv4Page | Promise<Ipv4Page> {
  if (options.explain) return explainedLookup(store, principal, ip, options.full);
  const orgId = principal.org.id;
  const held = holding(store, mirror, orgId, ip);
  const policy = held instanceof Promise ? undefined : cachedIpv4Policy(store, orgId);
  if (held instanceof Promise || policy === undefined) {
    return Promise.all([held, loadIpv4Policy(store, orgId)]).then(([rows, loaded]) => lookupPage(principal, rows, loaded, options.full));
  }
  return lookupPage(principal, held, policy, options.full);
}

/** The look-up's page: the rows the organization's delay lets it see, as it sees them now. */
function lookupPage(principal: Principal, held: Ipv4Row[], policy: Ipv4Policy, full: boolean): Ipv4Page {
  const delay = delaySeconds(principal.org);
  const now = Math.floor(Date.now() / 1000);
  // Records the organization's delay still hides are not held, for it.
  const visible = visibleTo(principal.org, now);
  const body: Ipv4Record[] = [];
  for (const row of held) if (visible(row)) body.push(ipv4Record(row, delay, full, now, recordDecision(row, policy, now)));
  return pageOf(principal, body, delay, now);
}

function pageOf(principal: Principal, body: Ipv4Page['body'], delay: number, now: number): Ipv4Page {
  return {
    header: { type: 'IPv4', version: 2, ts: String(now), page_size: body.length, delay, eval: EVAL_JS, exec_python: EXEC_PYTHON, user: userObject(principal) },
    body,
  };
}

/** `explain=yes`: the records and their reporters from SQL, each record with its score components. */
async function explainedLookup(store: Store, principal: Principal, ip: string, full: boolean): Promise<Ipv4Page> {
  const delay = delaySeconds(principal.org);
  const orgId = principal.org.id;
  const [held, policy] = await Promise.all([store.ipv4Lookups.holding(orgId, ip), loadIpv4Policy(store, orgId)]);
  const now = Math.floor(Date.now() / 1000);
  const rows = held.filter(visibleTo(principal.org, now));
  const body = await Promise.all(
    rows.map(async (row) => {
      const decided = recordDecision(row, policy, now);
      return { ...ipv4Record(row, delay, full, now, decided), explain: await explained(store, row, decided, now) };
    }),
  );
  return pageOf(principal, body, delay, now);
}

import { ApiError, ipv4Key, parseIpv4, type CrowdsecDecision, type CrowdsecDecisions, type CrowdsecDecisionsQuery, type CrowdsecStream, type CrowdsecStreamQuery } from '@rampart/contracts';
import { lastSecondAtOrAbove, liveScore } from '@rampart/scoring';
import type { CursorChange, DeliveredEntry, Ipv4DecisionRow, Store } from '../../store/index.ts';
import type { Principal } from '../../plugins/principal.ts';
import { displayIp, type Ipv4Lists } from '../ipv4/lists.ts';
import { recordDecision, type Ipv4Policy } from '../ipv4/policy.ts';

/*
 * CrowdSec-compatible bouncers (issue 32 item 1). A bouncer authenticates with an agent key and
 * gets that agent's list: the rows `/ipv4/{score_threshold}` lists for its organization now (the
 * same rule, services/ipv4/lists.ts), cut to its `maximum_rules` (highest rank first, as the
 * agent cuts), none while its settings say `running: no`.
 *
 * Kernel timeouts stay honest. A bouncer puts each entry in its set with a timeout of
 * `duration` and ignores a `new` entry it already holds, so an entry's timeout can only be
 * changed by deleting and adding it in one answer (`deleted` is applied first). Each key's cursor
 * keeps, per entry sent, the second until which the bouncer's kernel keeps it at least; whenever
 * Rampart will list the entry longer than that, it is sent again in both lists.
 */

/**
 * Longest `duration` given: ipset's timeout limit (2,147,483 s; the bouncer caps longer ones at
 * 2,147,482). Entries listed for longer (a blacklist without ttl, a high score far from decaying)
 * are sent again, in `deleted` and `new`, once half of it has passed.
 */
export const MAX_DURATION_SECONDS = 2_147_482;
const REFRESH_BEFORE_SECONDS = Math.floor(MAX_DURATION_SECONDS / 2);
/** Rank of an entry a blacklist decision lists (above any score): the agent's capacity cut keeps these first. */
const BLACKLIST_RANK = 1001;
const SCENARIO_MAX = 256;

/** One entry a bouncer should hold now. */
export interface ListedEntry {
  id: number;
  /** Canonical CIDR text. */
  network: string;
  /** First epoch second at which Rampart no longer lists it (Infinity: no end in sight). */
  until: number;
  /** Blacklist decisions 1001, otherwise the live score (1..1000): the maximum_rules cut keeps the highest. */
  rank: number;
  scenario: string;
}

/** Go's `time.Duration.String()` of whole seconds: `37h12m5s`, `12m5s`, `5s`, `0s`. */
export function goDuration(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const r = s % 60;
  if (h > 0) return `${h}h${m}m${r}s`;
  if (m > 0) return `${m}m${r}s`;
  return `${r}s`;
}

/**
 * How long a listed row stays listed for a caller of `threshold`: until the later of its decision's
 * end (a blacklist's ttl, a blocking rule's score end, as the record's `decision`/`ttl` say) and
 * the first second its live score is below the threshold. Never before the next second: the row
 * is listed now.
 */
export function listedUntil(row: Ipv4DecisionRow, policy: Ipv4Policy, threshold: number, now: number): { until: number; byDecision: boolean } {
  const decided = recordDecision(row, policy, now);
  const byDecision = decided.decision === 1;
  let until = byDecision ? (decided.ttl ?? Infinity) : -Infinity;
  if (row.score >= 1) {
    const last = lastSecondAtOrAbove(row.score, threshold);
    if (last === Infinity) until = Infinity;
    else if (last >= 0) until = Math.max(until, Number(row.ts) + last + 1);
  }
  return { until: Math.max(until, now + 1), byDecision };
}

function scenarioOf(row: Ipv4DecisionRow, byDecision: boolean): string {
  const parts = [...(byDecision ? ['blacklist'] : []), ...[...row.sources].sort()];
  return `rampart/${parts.length > 0 ? parts.join('+') : 'score'}`.slice(0, SCENARIO_MAX);
}

/** The entries of listed rows, cut to `maximumRules`: highest rank first, then lowest network. */
export function listedEntries(rows: readonly Ipv4DecisionRow[], policy: Ipv4Policy, threshold: number, now: number, maximumRules: number): ListedEntry[] {
  const entries = rows.map((row): ListedEntry => {
    const { until, byDecision } = listedUntil(row, policy, threshold, now);
    const rank = byDecision ? BLACKLIST_RANK : Math.min(1000, Math.max(1, Math.round(liveScore(row.score, now - Number(row.ts)))));
    return { id: Number(row.id), network: row.network, until, rank, scenario: scenarioOf(row, byDecision) };
  });
  if (entries.length <= maximumRules) return entries;
  return entries
    .map((e) => ({ e, key: ipv4Key(e.network) }))
    .sort((a, b) => b.e.rank - a.e.rank || a.key - b.key)
    .slice(0, Math.max(0, maximumRules))
    .map((x) => x.e);
}

const words = (text: string | undefined) =>
  (text ?? '')
    .split(',')
    .map((w) => w.trim().toLowerCase())
    .filter((w) => w.length > 0);

const scopeOf = (network: string): 'Ip' | 'Range' => (network.endsWith('/32') ? 'Ip' : 'Range');

/** LAPI's filters every bouncer may send: scopes, origins, scenario words. */
export function filterEntries(entries: ListedEntry[], q: { scopes?: string | undefined; origins?: string | undefined; scenarios_containing?: string | undefined; scenarios_not_containing?: string | undefined }): ListedEntry[] {
  const origins = words(q.origins);
  if (origins.length > 0 && !origins.includes('rampart')) return [];
  const scopes = words(q.scopes);
  const containing = words(q.scenarios_containing);
  const notContaining = words(q.scenarios_not_containing);
  return entries.filter((e) => {
    if (scopes.length > 0 && !scopes.includes(scopeOf(e.network).toLowerCase())) return false;
    const scenario = e.scenario.toLowerCase();
    if (containing.length > 0 && !containing.some((w) => scenario.includes(w))) return false;
    return !notContaining.some((w) => scenario.includes(w));
  });
}

function decision(id: number, network: string, duration: string, scenario: string): CrowdsecDecision {
  return { id, origin: 'rampart', type: 'ban', scope: scopeOf(network), value: displayIp(network), duration, scenario, simulated: false };
}

/** The `duration` an entry is sent with at `nowMs`, and the second until which the kernel then keeps it at least. */
export function sendTerms(until: number, nowMs: number): { seconds: number; keptUntil: number } {
  const now = nowMs / 1000;
  const exact = Math.ceil(until - now);
  if (exact <= MAX_DURATION_SECONDS) return { seconds: Math.max(1, exact), keptUntil: until };
  return { seconds: MAX_DURATION_SECONDS, keptUntil: Math.floor(now) + MAX_DURATION_SECONDS };
}

/**
 * Whether an entry the bouncer holds must be sent again (in `deleted` and `new`): Rampart lists it
 * past the second its kernel keeps it until, and either a new duration covers that end, or the
 * capped duration it holds is half gone.
 */
export function needsResend(keptUntil: number, until: number, nowMs: number): boolean {
  if (until <= keptUntil) return false;
  const now = nowMs / 1000;
  return until - now <= MAX_DURATION_SECONDS || keptUntil - now < REFRESH_BEFORE_SECONDS;
}

/**
 * One stream answer and the cursor change it makes. Start-up: every current entry in `new`, and
 * every entry this key was sent before in `deleted` (its kernel may still hold them, with
 * timeouts this answer replaces). Otherwise: entries no longer listed in `deleted`, new ones in
 * `new`, and entries listed longer than their kernel keeps them in both. An entry that ended when
 * its duration said leaves the cursor without a `deleted`: the kernel dropped it on its own.
 */
export function streamStep(delivered: readonly DeliveredEntry[], current: readonly ListedEntry[], nowMs: number, startup: boolean): { change: CursorChange; answer: CrowdsecStream } {
  const answer: CrowdsecStream = { new: [], deleted: [] };
  const upsert: DeliveredEntry[] = [];
  const send = (e: ListedEntry) => {
    const terms = sendTerms(e.until, nowMs);
    answer.new.push(decision(e.id, e.network, goDuration(terms.seconds), e.scenario));
    upsert.push({ network: e.network, indicatorId: e.id, keptUntil: terms.keptUntil, scenario: e.scenario });
  };
  const withdraw = (d: DeliveredEntry) => answer.deleted.push(decision(d.indicatorId, d.network, '0s', d.scenario));
  if (startup) {
    delivered.forEach(withdraw);
    current.forEach(send);
    return { change: { replace: true, upsert, remove: [] }, answer };
  }
  const held = new Map(delivered.map((d) => [d.network, d]));
  const listed = new Set<string>();
  for (const e of current) {
    listed.add(e.network);
    const before = held.get(e.network);
    if (!before) send(e);
    else if (needsResend(before.keptUntil, e.until, nowMs)) {
      withdraw(before);
      send(e);
    }
  }
  const remove: string[] = [];
  for (const d of delivered) {
    if (listed.has(d.network)) continue;
    // An entry whose kernel timeout has run out (it ended when its duration said: a ttl, a score
    // decaying below the threshold) is gone from the set already: deleting it again makes the
    // bouncer fail its commit ("netlink receive: no such file or directory", an error in its log).
    if (d.keptUntil * 1000 > nowMs) withdraw(d);
    remove.push(d.network);
  }
  return { change: { replace: false, upsert, remove }, answer };
}

/** Whether an entry matches the look-up filters of `GET v1/decisions`. */
export function lookupMatches(e: ListedEntry, q: CrowdsecDecisionsQuery): boolean {
  if (q.type !== undefined && q.type.toLowerCase() !== 'ban') return false;
  if (q.scope !== undefined && q.scope.toLowerCase() !== scopeOf(e.network).toLowerCase()) return false;
  if (q.value !== undefined && q.value !== displayIp(e.network) && q.value !== e.network) return false;
  const net = parseIpv4(e.network)!;
  if (q.ip !== undefined) {
    const ip = parseIpv4(q.ip)!;
    if (!(net.start <= ip.start && ip.end <= net.end)) return false;
  }
  if (q.range !== undefined) {
    const range = parseIpv4(q.range)!;
    const holds = q.contains === 'false' ? range.start <= net.start && net.end <= range.end : net.start <= range.start && range.end <= net.end;
    if (!holds) return false;
  }
  return true;
}

export interface CrowdsecBouncersDeps {
  store: Store;
  ipv4Lists: Ipv4Lists;
}

/** The bouncer side of CrowdSec's Local API over one agent key. */
export class CrowdsecBouncers {
  constructor(private readonly deps: CrowdsecBouncersDeps) {}

  /** The key's agent (every call is its check-in) and what it holds now. */
  private async current(principal: Principal): Promise<{ entries: ListedEntry[]; nowMs: number; tokenId: string; agentId: number }> {
    const agentKey = principal.agent;
    if (!agentKey) throw new ApiError('forbidden', 'a CrowdSec bouncer authenticates with an agent key');
    const { store, ipv4Lists } = this.deps;
    const [agent] = await Promise.all([store.agents.get(principal.org.id, agentKey.gaid), store.agents.checkIn(principal.org.id, agentKey.gaid, 'bouncer', 'crowdsec')]);
    if (!agent) throw new ApiError('forbidden', 'the agent of this key is not registered');
    const threshold = Math.max(1, Math.min(1000, agent.document.score_threshold));
    const listed = await ipv4Lists.decisionRows(principal.org, threshold);
    const running = agent.document.running !== 'no';
    const entries = running ? listedEntries(listed.rows, listed.policy, threshold, listed.now, agent.document.maximum_rules) : [];
    return { entries, nowMs: listed.nowMs, tokenId: agentKey.tokenId, agentId: agentKey.id };
  }

  /** `GET v1/decisions/stream`: the changes since this key's previous call (everything on start-up). */
  async stream(principal: Principal, q: CrowdsecStreamQuery): Promise<CrowdsecStream> {
    const { entries, nowMs, tokenId, agentId } = await this.current(principal);
    const wanted = filterEntries(entries, q);
    const startup = q.startup === 'true';
    return this.deps.store.crowdsec.advance(tokenId, agentId, startup, (delivered) => {
      const { change, answer } = streamStep(delivered, wanted, nowMs, startup);
      return { change, result: answer };
    });
  }

  /** `GET v1/decisions`: the entries held now that match the filters; null when none does. */
  async decisions(principal: Principal, q: CrowdsecDecisionsQuery): Promise<CrowdsecDecisions> {
    const { entries, nowMs } = await this.current(principal);
    const found = filterEntries(entries, q)
      .filter((e) => lookupMatches(e, q))
      .map((e) => decision(e.id, e.network, goDuration(sendTerms(e.until, nowMs).seconds), e.scenario));
    return found.length > 0 ? found : null;
  }

  /** `POST v1/usage-metrics`: kept as the key's last report; counts as a check-in. */
  async usageMetrics(principal: Principal, metrics: unknown): Promise<void> {
    const agentKey = principal.agent;
    if (!agentKey) throw new ApiError('forbidden', 'a CrowdSec bouncer authenticates with an agent key');
    await Promise.all([
      this.deps.store.crowdsec.recordUsageMetrics(agentKey.tokenId, agentKey.id, metrics),
      this.deps.store.agents.checkIn(principal.org.id, agentKey.gaid, 'bouncer', 'crowdsec'),
    ]);
  }
}

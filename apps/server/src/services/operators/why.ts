import { ApiError, AnyDigest, formatIpv4, parseIpv4, type IndicatorKind, type WhyQuery, type WhyResponse } from '@rampart/contracts';
import { isBlocked, lastSecondAtOrAbove, liveScore, type BlockReason } from '@rampart/scoring';
import type { AgentRow, DecisionOn, Organization, ReportAggregate, Store } from '../../store/index.ts';
import { stateOf, type KeyCount } from '../agents/summary.ts';
import { visibleTo } from '../envelope.ts';
import { explanation } from '../named/indicators.ts';
import { normalizeDomain, normalizeUrl } from '../named/indicator-names.ts';
import { loadIpv4Policy, reservedRangeOf, type Ipv4Policy } from '../ipv4/policy.ts';

/*
 * "Why is this blocked?" for one indicator and one organization, now. Every verdict comes from
 * the one shared precedence (`isBlocked` in packages/scoring) that the lists and the agent use,
 * evaluated at each active agent's threshold; nothing here decides on its own.
 */

const fieldError = (path: string, message: string) => new ApiError('validation_failed', `${path}: ${message}`, { errors: [{ path, message }] });

/** One held record as the organization sees it, with what the precedence needs. */
interface Held {
  id: number;
  value: string;
  score: number;
  ts: number;
  tags: string[];
  decision: DecisionOn | undefined;
}

interface Subject {
  kind: WhyQuery['kind'];
  value: string;
  records: Held[];
  /** The decision on the value itself, held or not. */
  decision: DecisionOn | undefined;
  reserved: string | null;
  rule: Ipv4Policy['rule'];
  aggregates: (id: number) => Promise<ReportAggregate[]>;
}

const MAX_CIDR_PREFIX_FOR_WHY = 8;

async function ipv4Subject(store: Store, org: Organization, text: string, now: number): Promise<Subject> {
  const net = parseIpv4(text);
  if (!net) throw fieldError('querystring.value', 'not an IPv4 address or CIDR network');
  if (net.prefix < MAX_CIDR_PREFIX_FOR_WHY) throw fieldError('querystring.value', `a network wider than /${MAX_CIDR_PREFIX_FOR_WHY} is not one indicator`);
  const first = formatIpv4(net.start);
  const value = net.prefix === 32 ? first : `${first}/${net.prefix}`;
  const [held, policy, decision] = await Promise.all([store.ipv4.holding(org.id, first), loadIpv4Policy(store, org.id), store.why.ipv4Decision(org.id, `${first}/${net.prefix}`)]);
  const visible = held.filter(visibleTo(org, now)).filter((r) => (parseIpv4(r.network)?.prefix ?? 33) <= net.prefix);
  const records: Held[] = visible.map((r) => {
    const shown = r.network.endsWith('/32') ? r.network.slice(0, -3) : r.network;
    const dv = r.decision === null ? null : Number(r.decision);
    const d: DecisionOn | undefined = dv === 0 || dv === 1 ? { decision: dv, ttl: r.ttl === null ? null : Number(r.ttl), on: shown, reason: null, set_by: null } : undefined;
    return { id: Number(r.id), value: shown, score: Number(r.score), ts: Number(r.ts), tags: [...r.tags, ...r.sources], decision: d };
  });
  return {
    kind: 'ipv4',
    value,
    records,
    decision,
    reserved: reservedRangeOf(policy, value),
    rule: policy.rule,
    aggregates: (id) => store.ipv4.reporters(id),
  };
}

async function namedSubject(store: Store, org: Organization, kind: 'domain' | 'url', text: string, now: number): Promise<Subject> {
  const value = kind === 'domain' ? normalizeDomain(text, 'querystring.value') : normalizeUrl(text, 'querystring.value');
  const named = kind === 'domain' ? store.domains : store.urls;
  const [row, decision] = await Promise.all([named.byValue(org.id, value), store.why.namedDecision(kind, org.id, value)]);
  const records: Held[] = row && visibleTo(org, now)(row) ? [{ id: Number(row.id), value, score: Number(row.score), ts: Number(row.ts), tags: row.tags, decision }] : [];
  return { kind, value, records, decision, reserved: null, rule: null, aggregates: (id) => named.aggregates(id) };
}

async function fileSubject(store: Store, org: Organization, text: string, now: number): Promise<Subject> {
  if (!AnyDigest.safeParse(text).success) throw fieldError('querystring.value', 'not an MD5, SHA1 or SHA256 hex digest');
  const value = text.toUpperCase();
  const row = await store.files.byDigest(org.id, value);
  const held = row && !row.archived && visibleTo(org, now)(row) ? row : undefined;
  const digests = held ? [held.md5, held.sha1, held.sha256].filter((d): d is string => d !== null) : [value];
  const decision = await store.why.fileDecision(org.id, digests);
  const records: Held[] = held ? [{ id: Number(held.id), value: held.sha256 ?? held.sha1 ?? held.md5 ?? value, score: Number(held.score), ts: Number(held.ts), tags: held.tags, decision }] : [];
  return { kind: 'file', value, records, decision, reserved: null, rule: null, aggregates: (id) => store.files.aggregates(id) };
}

/**
 * What the lists carry for the subject: its held records or, for a value nobody reported, the
 * record of score 0 the organization's decision on it makes (the lists and the feed carry a
 * blacklisted unreported value so, issue 30; a named decision has no ttl); none when there is neither.
 */
function listed(subject: Subject, now: number): Held[] {
  const d = subject.decision;
  if (subject.records.length > 0 || !d) return subject.records;
  return [{ id: 0, value: d.on, score: 0, ts: now, tags: [], decision: d }];
}

/** The verdict for one record at one threshold, and the first second it stops holding. */
function verdictAt(subject: Subject, record: Held, threshold: number, now: number): { blocked: boolean; reason: BlockReason; until: number | null } {
  const d = record.decision;
  const live = liveScore(record.score, now - record.ts);
  const verdict = isBlocked({
    reserved: subject.reserved !== null,
    decision: d ? d.decision : -1,
    ttl: d?.ttl ?? null,
    now,
    liveScore: live,
    threshold,
    blockingRule: subject.rule,
    tags: record.tags,
  });
  const end = (level: number) => {
    const last = lastSecondAtOrAbove(record.score, level);
    return last === Infinity ? null : record.ts + last + 1;
  };
  const until = verdict.reason === 'blacklist' ? (d?.ttl ?? null) : verdict.reason === 'score' ? end(threshold) : verdict.reason === 'blocking_rule' ? end(subject.rule!.score) : null;
  return { ...verdict, until };
}

/** The integration that enforces only this kind, where one does (the others report `<label>/<kind>` when configured for it). */
const DEDICATED: Record<Exclude<IndicatorKind, 'ipv4'>, string> = { domain: 'dns_e', url: 'proxy_f', file: 'endpoint_d' };

/**
 * The enforcers of an agent that concern one kind: for IPv4 the active integrations and every
 * plain name it reported; for domains, URLs and digests what it reported as `<label>/<kind>`, and
 * the kind's own integration (`dns_e`, `proxy_f`, `endpoint_d`) when it is active.
 */
function enforcerNames(kind: IndicatorKind, ips: Record<string, { active?: boolean } | undefined>, reported: string[]): string[] {
  if (kind === 'ipv4') return [...new Set([...Object.keys(ips).filter((n) => ips[n]?.active === true && !Object.values(DEDICATED).includes(n)), ...reported.filter((n) => !n.includes('/'))])].sort();
  const dedicated = DEDICATED[kind];
  return [...new Set([...(ips[dedicated]?.active === true ? [`${dedicated}/${kind}`] : []), ...reported.filter((n) => n.endsWith(`/${kind}`))])].sort();
}

function agentVerdict(subject: Subject, agent: AgentRow, keys: KeyCount | undefined, now: number): WhyResponse['agents'][number] {
  const threshold = agent.document.score_threshold;
  const verdicts = listed(subject, now).map((r) => verdictAt(subject, r, threshold, now));
  // The address is on the list when any held record covering it is (the lists are per record).
  const blocking = verdicts.filter((v) => v.blocked);
  const blocked = blocking.length > 0;
  const reason: WhyResponse['agents'][number]['reason'] = verdicts.length === 0 ? 'not_held' : blocked ? blocking[0]!.reason : verdicts[0]!.reason;
  const until = blocked ? (blocking.some((v) => v.until === null) ? null : Math.max(...blocking.map((v) => v.until!))) : null;
  const ips = (agent.document.ips ?? {}) as Record<string, { active?: boolean } | undefined>;
  const names = enforcerNames(subject.kind, ips, Object.keys(agent.enforced));
  const enforcers = names.map((name) => {
    const e = agent.enforced[name];
    return {
      name,
      active: ips[name.split('/')[0]!]?.active === true,
      state: e?.state ?? null,
      score_threshold: e?.score_threshold ?? null,
      enforced: e?.enforced ?? null,
      error: e?.error ?? null,
      at: e?.at ?? null,
    };
  });
  const { alive, state, since } = stateOf(agent, keys, now);
  const running = agent.document.running ?? 'yes';
  const healthy = enforcers.some((e) => e.active && e.at !== null && e.state !== 'failed');
  return { gaid: agent.gaid, alive, running, state, state_since: since, score_threshold: threshold, blocked, reason, blocked_until: until, enforcing: blocked && alive && running === 'yes' && healthy, enforcers };
}

function decisionOf(on: DecisionOn | undefined, now: number): WhyResponse['decision'] {
  if (!on) return null;
  return { decision: on.decision, ttl: on.ttl, expired: on.decision === 1 && on.ttl !== null && on.ttl <= now, on: on.on, reason: on.reason, set_by: on.set_by };
}

/** The organization-level reason, before any threshold: what decides unless the score does. */
function organizationReason(subject: Subject, now: number): WhyResponse['reason'] {
  const records = listed(subject, now);
  if (records.length === 0) return 'not_held';
  // At an unreachable threshold only reserved ranges, decisions and the blocking rule block.
  const verdicts = records.map((r) => verdictAt(subject, r, Number.POSITIVE_INFINITY, now));
  const decisive = verdicts.find((v) => v.blocked) ?? verdicts[0]!;
  return decisive.reason === 'below_threshold' ? 'score' : decisive.reason;
}

export async function whyBlocked(store: Store, org: Organization, query: WhyQuery, now: number): Promise<WhyResponse> {
  const subject =
    query.kind === 'ipv4'
      ? await ipv4Subject(store, org, query.value, now)
      : query.kind === 'file'
        ? await fileSubject(store, org, query.value, now)
        : await namedSubject(store, org, query.kind, query.value, now);
  const primary = subject.records[0];
  const [reporters, aggregates, agents, keys] = await Promise.all([
    primary ? store.why.reporters(subject.kind, primary.id) : [],
    primary ? subject.aggregates(primary.id) : [],
    store.agents.list(org.id),
    store.agents.keyCounts(org.id),
  ]);
  return {
    kind: subject.kind,
    value: subject.value,
    at: now,
    held: subject.records.length > 0,
    reason: organizationReason(subject, now),
    decision: decisionOf(subject.decision ?? primary?.decision, now),
    reserved_range: subject.reserved,
    blocking_rule: subject.rule ? { ...subject.rule, matches: subject.records.some((r) => subject.rule!.tags.some((t) => r.tags.includes(t))) } : null,
    records: subject.records.map((r) => {
      const applies = r.decision && !(r.decision.decision === 1 && r.decision.ttl !== null && r.decision.ttl <= now);
      return { value: r.value, score: r.score, ts: r.ts, live_score: Math.round(liveScore(r.score, now - r.ts) * 100) / 100, decision: applies ? r.decision!.decision : null, ttl: applies ? r.decision!.ttl : null };
    }),
    reporters,
    score_components: primary ? explanation(aggregates, primary, now) : null,
    agents: agents.filter((a) => a.deactivated_at === null).map((a) => agentVerdict(subject, a, keys.get(a.id), now)),
  };
}

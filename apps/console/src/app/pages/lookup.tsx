import { useEffect, useRef, useState } from 'preact/hooks';
import type { z } from 'zod';
import { DomainRecord, FileRecord, Ipv4Page, UrlRecord, formatIpv4, parseIpv4, type Ipv4Record } from '@rampart/contracts';
import { liveScore } from '@rampart/scoring';
import { ClientApiError } from '@rampart/client';
import { describeError } from '../api.ts';
import { Field, Notice, ScorePlot, formatTime } from '../components.tsx';
import { canContribute, type Session } from '../session.ts';
import { kindOf, type IndicatorKind } from '../indicator-kind.ts';
import { INDICATOR_PATHS, setDecision } from '../decide.ts';
import { WhyPanel } from './why.tsx';
import { componentRows } from '../table-logic.ts';

interface Found {
  kind: IndicatorKind;
  id: string;
  score: number;
  ts: number;
  decision: number | null | undefined;
  ttl: number | null | undefined;
  explain: Record<string, unknown> | undefined;
  fields: Array<[string, string]>;
}

const PATHS = INDICATOR_PATHS;

const show = (v: unknown): string =>
  v === null || v === undefined ? '—' : Array.isArray(v) ? v.map(show).join(v.some((x) => typeof x === 'object' && x !== null) ? '; ' : ', ') || '—' : typeof v === 'object' ? describeObject(v as Record<string, unknown>) : String(v);

/** `trust 1 · confidence 0.9 · events 2`: one object (a reporter, say) in words, not `[object Object]`. */
const describeObject = (o: Record<string, unknown>): string =>
  Object.entries(o)
    .map(([k, v]) => `${k} ${typeof v === 'number' ? Number(v.toFixed(3)) : show(v)}`)
    .join(' · ') || '—';

/**
 * The held record that answers a typed address or network: `GET /ips/{ipv4}` takes an address
 * and answers with every held record containing it, most specific first. For a network, its
 * first address is asked and only records that hold the whole network count.
 */
export function heldRecordFor(text: string, body: readonly Ipv4Record[]): Ipv4Record | undefined {
  const net = parseIpv4(text);
  if (!net) return body[0];
  return body.find((r) => (parseIpv4(r.ip)?.prefix ?? 33) <= net.prefix);
}

async function find(session: Session, kind: IndicatorKind, id: string): Promise<Found | null> {
  const { api } = session;
  if (kind === 'ipv4') {
    const net = parseIpv4(id);
    const page = await api.get(PATHS.ipv4(net ? formatIpv4(net.start) : id), Ipv4Page, { explain: 'yes', full: 'yes' });
    const r = heldRecordFor(id, page.body);
    if (!r) return null;
    return {
      kind,
      id: r.ip,
      score: r.score,
      ts: r.ts,
      decision: r.decision,
      ttl: r.ttl,
      explain: r.explain,
      fields: [
        ['Members', show(r.info?.members)],
        ['Reports', show(r.info?.events)],
        ['Sources', show(r.info?.sources)],
        ['First seen', formatTime(r.entry_ts)],
        ['Last update', formatTime(r.ts)],
        ['Country / AS', show(r.ip_info && (r.ip_info.country_name || r.ip_info.asn) ? [r.ip_info.country_name, r.ip_info.asn && `AS${r.ip_info.asn.replace(/^AS/i, '')} ${r.ip_info.as_name}`].filter(Boolean).join(' · ') : undefined)],
      ],
    };
  }
  const schema: z.ZodType = kind === 'file' ? FileRecord : kind === 'domain' ? DomainRecord : UrlRecord;
  const r = (await api.get(PATHS[kind](id), schema, { explain: 'yes' })) as z.infer<typeof FileRecord> & { domain?: string; url?: string };
  return {
    kind,
    id,
    score: r.score,
    ts: r.ts,
    decision: r.decision,
    explain: r.explain,
    ttl: undefined,
    fields: [
      ['Members', show(r.total_members)],
      ['Reports', show(r.total_reports)],
      ['Tags', show(r.tags)],
      ['First seen', formatTime(r.elk_entry_ts)],
      ['Last update', formatTime(r.elk_ts)],
      ...(kind === 'file' ? ([['File type', show(r.file_type)], ['File name', show(r.file_name)]] as Array<[string, string]>) : []),
    ],
  };
}

const DECISIONS = [
  { value: 0, label: 'Whitelist', help: 'never block' },
  { value: 1, label: 'Blacklist', help: 'always block (until the TTL for IPv4)' },
  { value: -1, label: 'Follow score', help: 'block when the live score reaches the threshold' },
];

export function LookupPage({ session, initial }: { session: Session; initial: string }) {
  const [query, setQuery] = useState(initial);
  const [found, setFound] = useState<Found | null | undefined>();
  // What was last looked up (the why panel explains it, held or not), and a key to reset it.
  const [asked, setAsked] = useState<{ kind: IndicatorKind; text: string; n: number }>();
  const [error, setError] = useState<string>();
  const [saved, setSaved] = useState<string>();
  const [ttlHours, setTtlHours] = useState('24');
  // One look-up or decision at a time: a double click must not spend two look-ups.
  const [busy, setBusy] = useState(false);
  const inFlight = useRef(false);

  async function search(e?: Event, text = query.trim()) {
    e?.preventDefault();
    if (inFlight.current) return;
    inFlight.current = true;
    setBusy(true);
    try {
      await lookUp(text);
    } finally {
      inFlight.current = false;
      setBusy(false);
    }
  }

  // Opened with an indicator (a click on one in a table: #/lookup?q=…): its look-up runs at once.
  useEffect(() => {
    const text = initial.trim();
    if (text === '') return;
    setQuery(text);
    void search(undefined, text);
  }, [initial]);

  async function lookUp(text = query.trim()) {
    setError(undefined);
    setSaved(undefined);
    try {
      setFound(await find(session, kindOf(text), text));
      setAsked((a) => ({ kind: kindOf(text), text, n: (a?.n ?? 0) + 1 }));
    } catch (err) {
      const d = err instanceof ClientApiError && err.status === 404 ? undefined : describeError(err);
      // Either an error or "not held", never both.
      setFound(d ? undefined : null);
      setError(d?.message);
      if (!d) setAsked((a) => ({ kind: kindOf(text), text, n: (a?.n ?? 0) + 1 }));
    }
  }

  async function decide(decision: number) {
    if (!found || inFlight.current) return;
    inFlight.current = true;
    setBusy(true);
    setError(undefined);
    try {
      const hours = Number(ttlHours);
      const ttl = found.kind === 'ipv4' && decision === 1 && hours > 0 ? Math.floor(Date.now() / 1000 + hours * 3600) : undefined;
      await setDecision(session.api, found.kind, found.id, decision as -1 | 0 | 1, ttl);
      // Re-read the record first: a look-up clears the previous messages.
      await lookUp();
      setSaved(`Decision saved: ${DECISIONS.find((d) => d.value === decision)!.label}.`);
    } catch (err) {
      setError(describeError(err).message);
    } finally {
      inFlight.current = false;
      setBusy(false);
    }
  }

  const live = found ? liveScore(found.score, Date.now() / 1000 - found.ts) : 0;
  return (
    <section aria-labelledby="lookup-h">
      <h1 id="lookup-h">Look-up</h1>
      <form class="inline" onSubmit={search} role="search" aria-busy={busy ? 'true' : undefined}>
        <Field label="IPv4, domain, URL or digest" name="q" value={query} onInput={setQuery} />
        <button type="submit" disabled={busy || query.trim() === ''}>
          {busy ? 'Looking up…' : 'Look up'}
        </button>
      </form>
      {error && <Notice kind="error">{error}</Notice>}
      {found === null && <Notice kind="info">Not held: no organization has reported it.</Notice>}
      {found === null && asked && <WhyPanel key={asked.n} session={session} kind={asked.kind} value={asked.text} />}
      {found && (
        <article class="card wide" aria-label="Indicator">
          <h2>
            {found.id} <span class="badge">{found.kind}</span>
          </h2>
          <dl class="record">
            <dt>Score at time zero</dt>
            <dd>{found.score}</dd>
            <dt>Live score now</dt>
            <dd data-testid="live-score">{live.toFixed(1)}</dd>
            <dt>Your decision</dt>
            <dd data-testid="decision">
              {DECISIONS.find((d) => d.value === (found.decision ?? -1))?.label}
              {found.ttl ? ` until ${formatTime(found.ttl)}` : ''}
            </dd>
            {found.fields.map(([k, v]) => (
              <>
                <dt>{k}</dt>
                <dd>{v}</dd>
              </>
            ))}
          </dl>
          {found.explain && (
            <details open>
              <summary>Score components</summary>
              <dl class="record components" data-testid="score-components">
                {componentRows(found.explain).map((c) => (
                  <>
                    <dt title={c.meaning || undefined}>{c.label}</dt>
                    <dd>
                      {show(c.value)}
                      {c.meaning && <small class="muted meaning">{c.meaning}</small>}
                    </dd>
                  </>
                ))}
              </dl>
            </details>
          )}
          <h3>Live score over the next 14 days</h3>
          <ScorePlot s0={found.score} ts={found.ts} />
          {canContribute(session) && (
            <fieldset class="decisions">
              <legend>Decision for your organization</legend>
              {found.kind === 'ipv4' && <Field label="TTL of a blacklisting (hours, 0 = none)" type="number" value={ttlHours} onInput={setTtlHours} />}
              {DECISIONS.map((d) => (
                <button key={d.value} type="button" class={d.value === 1 ? 'danger' : 'secondary'} title={d.help} disabled={busy} onClick={() => void decide(d.value)}>
                  {d.label}
                </button>
              ))}
            </fieldset>
          )}
          {saved && <Notice kind="ok">{saved}</Notice>}
        </article>
      )}
      {found && asked && <WhyPanel key={asked.n} session={session} kind={asked.kind} value={asked.text} />}
    </section>
  );
}

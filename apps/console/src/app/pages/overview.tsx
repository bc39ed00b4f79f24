import { z } from 'zod';
import { AgentSummary, OrganizationConfig, OverviewHistoryResponse, OverviewResponse } from '@rampart/contracts';
import { DEFAULT_BANDS, bandOf, type Bands } from '@rampart/scoring';
import { BarChart, Loading, useLoad } from '../components.tsx';
import { bandsWithToday, dayLabel } from '../chart-scale.ts';
import { TimeChart } from '../charts.tsx';
import { isAdmin, type Session } from '../session.ts';

const COLORS = { LOW: '#5b8def', MEDIUM: '#e0a100', HIGH: '#e06a00', CRITICAL: '#c4302b' } as const;

/** Counts of a live-score histogram per band of the organization (floor(score) is what the histogram keeps). */
export function countByBand(histogram: number[], bands: Bands): Record<keyof typeof COLORS, number> {
  const out = { LOW: 0, MEDIUM: 0, HIGH: 0, CRITICAL: 0 };
  histogram.forEach((n, score) => {
    const band = bandOf(score, bands);
    if (band) out[band] += n;
  });
  return out;
}

export function OverviewPage({ session }: { session: Session }) {
  const { api } = session;
  const state = useLoad(async () => {
    const [overview, history, config, agents] = await Promise.all([
      api.get('/overview', OverviewResponse),
      api.get('/overview/history?days=30', OverviewHistoryResponse),
      isAdmin(session) ? api.get('/organization/config', OrganizationConfig).catch(() => undefined) : Promise.resolve(undefined),
      isAdmin(session) ? api.get('/agents', z.array(AgentSummary)).catch(() => undefined) : Promise.resolve(undefined),
    ]);
    return { overview, history, config, agents };
  });
  if (!state.data) return <Loading {...state} />;
  const { overview, history, config, agents } = state.data;
  const bands: Bands = config?.live ?? DEFAULT_BANDS;
  const counts = countByBand(overview.ipv4.histogram, bands);
  // By the server's one state (contracts agent-state.ts): a never-seen or withdrawn agent is not "dead".
  const count = (...states: Array<AgentSummary['state']>) => agents?.filter((a) => states.includes(a.state)).length ?? 0;
  const alive = count('alive', 'drifting');
  const down = count('silent', 'keys_revoked');
  const idle = count('never_seen', 'withdrawn');
  const drifting = agents?.filter((a) => a.drifting).length ?? 0;
  return (
    <section aria-labelledby="overview-h">
      <h1 id="overview-h">Overview</h1>
      <div class="cards">
        <article class="card">
          <h2>IPv4 indicators by band</h2>
          <BarChart
            title="IPv4 indicators by band"
            data={(Object.keys(COLORS) as Array<keyof typeof COLORS>).map((b) => ({ label: b, value: counts[b], color: COLORS[b] }))}
          />
          <p class="muted">
            {overview.ipv4.total.toLocaleString()} held; bands {config ? "of your organization's settings" : '(defaults)'}: LOW {bands.low_score.join('–')}, MEDIUM{' '}
            {bands.medium_score.join('–')}, HIGH {bands.high_score.join('–')}, CRITICAL {bands.critical_score.join('–')}.
          </p>
        </article>
        <article class="card">
          <h2>Agents</h2>
          {agents ? (
            <p class="figure">
              <span data-testid="agents-alive">{alive}</span> alive, <span data-testid="agents-dead">{down}</span> silent or cut off
              {idle > 0 && (
                <>
                  , <span data-testid="agents-idle">{idle}</span> never seen or withdrawn
                </>
              )}
            </p>
          ) : (
            <p class="muted">Visible to organization admins.</p>
          )}
          {agents && (
            <p class={drifting ? 'error-text' : 'muted'} data-testid="agents-drifting-line">
              <span data-testid="agents-drifting">{drifting}</span> {drifting === 1 ? 'agent' : 'agents'} drifting
            </p>
          )}
        </article>
        <article class="card">
          <h2>Addresses you reported in the last 24 hours</h2>
          <p class="figure" data-testid="reports-24h">
            {overview.reports_24h.toLocaleString()}
          </p>
          <p class="muted">IPv4 addresses and networks, each counted once however often your organization reported it.</p>
        </article>
        <article class="card">
          <h2>Coins</h2>
          <p class="figure">{overview.coins.debit_tokens.toLocaleString()} used</p>
          <p class="muted">
            {overview.coins.balance.toLocaleString()} left of {overview.coins.credit_tokens.toLocaleString()} granted
          </p>
        </article>
      </div>
      <History history={history} live={counts} />
    </section>
  );
}

const DAY = 86_400;

/** Hourly points folded into UTC days (sum, or the most at once) for the charts' tables. */
function perDay<T extends { hour: number }>(points: T[], fold: (rows: T[]) => Array<number>): Array<[string, ...number[]]> {
  const days = new Map<number, T[]>();
  for (const p of points) {
    const day = p.hour - (p.hour % DAY);
    days.set(day, [...(days.get(day) ?? []), p]);
  }
  return [...days].map(([day, rows]) => [dayLabel(day), ...fold(rows)]);
}

const total = (values: number[]) => values.reduce((a, b) => a + b, 0);

function range(times: number[], step: number): string {
  return `from ${dayLabel(times[0] ?? 0)} to ${dayLabel((times.at(-1) ?? 0) + step - 1)} (UTC)`;
}

/** The organization's figures over time, from the stored rollups (GET /overview/history). */
function History({ history, live }: { history: OverviewHistoryResponse; live: Record<keyof typeof COLORS, number> }) {
  return (
    <>
      <h2 id="history-h">The last {history.days} days</h2>
      <div class="cards wide" aria-labelledby="history-h" role="group">
        <article class="card">
          <h3>Reports per hour</h3>
          <ReportsChart history={history} />
        </article>
        <article class="card">
          <h3>Agents alive</h3>
          <AgentsChart history={history} />
        </article>
        <article class="card">
          <h3>Coins spent per day</h3>
          <CoinsChart history={history} />
        </article>
        <article class="card">
          <h3>IPv4 indicators per band</h3>
          <BandsChart history={history} live={live} />
        </article>
      </div>
    </>
  );
}

function ReportsChart({ history }: { history: OverviewHistoryResponse }) {
  const hours = history.reports_per_hour.map((p) => p.hour);
  const own = history.reports_per_hour.map((p) => p.organization);
  const alliance = history.reports_per_hour.map((p) => p.alliance);
  return (
    <TimeChart
      testId="chart-reports"
      title="Reports per hour"
      description={`Reports received per UTC hour ${range(hours, 3600)}: your organization ${total(own).toLocaleString()} in all, at most ${Math.max(0, ...own).toLocaleString()} in an hour; the alliance ${total(alliance).toLocaleString()}, at most ${Math.max(0, ...alliance).toLocaleString()} in an hour.`}
      unit="reports per hour"
      times={hours}
      step={3600}
      kind="lines"
      series={[
        { name: 'Alliance', className: 'series-2', values: alliance },
        { name: 'Your organization', className: 'series-1', values: own },
      ]}
      table={{ head: ['Day (UTC)', 'Your organization', 'Alliance'], rows: perDay(history.reports_per_hour, (rows) => [total(rows.map((r) => r.organization)), total(rows.map((r) => r.alliance))]) }}
    />
  );
}

function AgentsChart({ history }: { history: OverviewHistoryResponse }) {
  const hours = history.agents_alive_per_hour.map((p) => p.hour);
  const alive = history.agents_alive_per_hour.map((p) => p.alive);
  const active = history.agents_alive_per_hour.map((p) => p.active);
  return (
    <TimeChart
      testId="chart-agents"
      title="Agents alive per hour"
      description={`The most agents alive at once in each UTC hour ${range(hours, 3600)}: at most ${Math.max(0, ...alive)} alive of ${Math.max(0, ...active)} active.`}
      unit="agents"
      times={hours}
      step={3600}
      kind="lines"
      series={[
        { name: 'Active', className: 'series-2', values: active },
        { name: 'Alive', className: 'series-1', values: alive },
      ]}
      table={{ head: ['Day (UTC)', 'Most alive', 'Most active'], rows: perDay(history.agents_alive_per_hour, (rows) => [Math.max(...rows.map((r) => r.alive)), Math.max(...rows.map((r) => r.active))]) }}
    />
  );
}

function CoinsChart({ history }: { history: OverviewHistoryResponse }) {
  const days = history.coins_spent_per_day.map((d) => d.day);
  const coins = history.coins_spent_per_day.map((d) => d.coins);
  return (
    <TimeChart
      testId="chart-coins"
      title="Coins spent per day"
      description={`Coins charged per UTC day ${range(days, DAY)}: ${total(coins).toLocaleString()} in all, at most ${Math.max(0, ...coins).toLocaleString()} in a day.`}
      unit="coins per day"
      times={days}
      step={DAY}
      kind="bars"
      series={[{ name: 'Coins', className: 'series-1', values: coins }]}
      table={{ head: ['Day (UTC)', 'Coins'], rows: history.coins_spent_per_day.map((d) => [dayLabel(d.day), d.coins]) }}
    />
  );
}

/** The daily snapshots of the rollups, and today as it is now (the overview's live histogram). */
function BandsChart({ history, live }: { history: OverviewHistoryResponse; live: Record<keyof typeof COLORS, number> }) {
  const { days, snapshots } = bandsWithToday(
    history.coins_spent_per_day.map((d) => d.day),
    history.indicators_per_band,
    Math.floor(Date.now() / 1000),
    { low: live.LOW, medium: live.MEDIUM, high: live.HIGH, critical: live.CRITICAL },
  );
  const snapshot = new Map(snapshots.map((b) => [b.day, b]));
  const band = (key: 'low' | 'medium' | 'high' | 'critical') => days.map((d) => snapshot.get(d)?.[key] ?? 0);
  return (
    <TimeChart
      testId="chart-bands"
      title="IPv4 indicators per band, per day"
      description={`IPv4 indicators you saw in each band at each day's latest snapshot ${range(days, DAY)}, today as it is now; ${snapshots.length} days have figures (days without a snapshot are left empty).`}
      unit="indicators"
      times={days}
      step={DAY}
      kind="bars"
      series={[
        { name: 'LOW', className: 'band-low', values: band('low') },
        { name: 'MEDIUM', className: 'band-medium', values: band('medium') },
        { name: 'HIGH', className: 'band-high', values: band('high') },
        { name: 'CRITICAL', className: 'band-critical', values: band('critical') },
      ]}
      table={{ head: ['Day (UTC)', 'LOW', 'MEDIUM', 'HIGH', 'CRITICAL'], rows: snapshots.map((b) => [dayLabel(b.day), b.low, b.medium, b.high, b.critical]) }}
    />
  );
}

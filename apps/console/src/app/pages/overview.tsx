import { z } from 'zod';
import { AgentSummary, OrganizationConfig, OverviewResponse } from '@rampart/contracts';
import { DEFAULT_BANDS, bandOf, type Bands } from '@rampart/scoring';
import { BarChart, Loading, useLoad } from '../components.tsx';
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
    const [overview, config, agents] = await Promise.all([
      api.get('/overview', OverviewResponse),
      isAdmin(session) ? api.get('/organization/config', OrganizationConfig).catch(() => undefined) : Promise.resolve(undefined),
      isAdmin(session) ? api.get('/agents', z.array(AgentSummary)).catch(() => undefined) : Promise.resolve(undefined),
    ]);
    return { overview, config, agents };
  });
  if (!state.data) return <Loading {...state} />;
  const { overview, config, agents } = state.data;
  const bands: Bands = config?.live ?? DEFAULT_BANDS;
  const counts = countByBand(overview.ipv4.histogram, bands);
  const alive = agents?.filter((a) => a.alive).length;
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
              <span data-testid="agents-alive">{alive}</span> alive, <span data-testid="agents-dead">{agents.length - (alive ?? 0)}</span> dead
            </p>
          ) : (
            <p class="muted">Visible to organization admins.</p>
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
    </section>
  );
}

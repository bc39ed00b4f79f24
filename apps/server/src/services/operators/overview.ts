import { ApiError, type OverviewResponse } from '@rampart/contracts';
import type { CoinLedger } from '../coins/ledger.ts';
import type { Organization, Store } from '../../store/index.ts';
import { visibleUpTo } from '../envelope.ts';

/** What the console's first page shows: the live-score histogram, reports of the last day, coins. */
export async function overviewOf(store: Store, ledger: Pick<CoinLedger, 'shown'>, org: Organization): Promise<OverviewResponse> {
  const now = Math.floor(Date.now() / 1000);
  const [histogram, reports, current] = await Promise.all([
    store.overview.ipv4Histogram(now, visibleUpTo(org, now)),
    store.overview.reportsSince(org.id, now - 86_400),
    store.orgs.byId(org.id),
  ]);
  if (!current) throw new ApiError('unauthorized', 'the organization of this key no longer exists');
  const { credit_tokens, debit_tokens } = ledger.shown(current);
  return {
    at: now,
    ipv4: { total: histogram.reduce((a, b) => a + b, 0), histogram },
    reports_24h: reports,
    coins: { credit_tokens, debit_tokens, balance: credit_tokens - debit_tokens },
  };
}

import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Counter } from 'prom-client';
import { ApiError } from '@rampart/contracts';
import type { CoinKind, CoinPrices } from '../config.ts';
import type { Store } from '../store/index.ts';
import { CoinLedger } from '../services/coins/ledger.ts';
import { routeOf } from './route-config.ts';

declare module 'fastify' {
  interface FastifyRequest {
    coinCharge: { orgId: number; price: number; remaining: number } | null;
    /** Set by a handler whose answer costs nothing after all (an empty feed page): refunded in onSend. */
    coinFree: boolean;
    /**
     * A feed or list request the balance cannot pay for: 402 unless its answer turns out free
     * (an empty feed page: chargeFeedPage; a 304: chargeListAnswer).
     */
    coinShort: ApiError | null;
  }
  interface FastifyInstance {
    /** Debits and refunds coins, combined per organization (a route charging extra uses it too). */
    coinLedger: CoinLedger;
  }
}

export interface CoinOptions {
  store: Store;
  prices: CoinPrices;
  debits: Counter<'kind'>;
  /** Most coins leased into this replica per organization (CoinLedger); 0 turns leases off. */
  leaseMax: number;
  /** Coins a request was charged for good (its answer sent, nothing refunded): the coins-per-day rollup. */
  onSpent?: (orgId: number, coins: number) => void;
}

/**
 * Charging runs after validation (bad input costs nothing) and before the handler (402
 * comes before any work). The price is taken up front by a conditional UPDATE (combined with
 * the other requests of the organization in flight on this replica, see CoinLedger), so
 * concurrent requests on any number of replicas cannot spend more than the balance;
 * a request that then fails gets its coins back before the response leaves. Organizations
 * with large balances are charged from a per-replica lease without a round trip (CoinLedger).
 */
/**
 * A feed page's price: an empty page (the "nothing new" poll) costs nothing, whatever was charged
 * goes back before the response leaves, and it is served even at a zero balance; a page with
 * records the balance could not pay for is 402.
 */
export function chargeFeedPage(request: FastifyRequest, records: number): void {
  if (records === 0) request.coinFree = true;
  else if (request.coinShort) throw request.coinShort;
}

/**
 * A list answer with content (called once its ETag did not match): 402 now if the balance could
 * not pay for it. A 304 costs nothing and is served even at a zero balance.
 */
export function chargeListAnswer(request: FastifyRequest): void {
  if (request.coinShort) throw request.coinShort;
}

/** Answers that cost nothing whatever the price of their route: failures, 304, waived pages. */
function freeAnswer(request: FastifyRequest, status: number): boolean {
  return status >= 400 || status === 304 || request.coinFree;
}

export const coinsPlugin = fp<CoinOptions>(async (app: FastifyInstance, { store, prices, debits, leaseMax, onSpent }) => {
  app.decorateRequest('coinCharge', null);
  app.decorateRequest('coinFree', false);
  app.decorateRequest('coinShort', null);
  const ledger = new CoinLedger(store.orgs, { max: leaseMax });
  app.decorate('coinLedger', ledger);
  // Unspent leased coins go back to the organizations before the store closes.
  app.addHook('onClose', async () => {
    await ledger.close().catch((err: unknown) => app.log.warn({ err }, 'could not give leased coins back'));
  });

  /** A request the lease could not pay for: the store is asked (or the balance is short). */
  async function chargeFromStore(request: FastifyRequest, reply: FastifyReply, kind: CoinKind, orgId: number, price: number): Promise<void> {
    const remaining = await ledger.debit(orgId, price);
    if (remaining === undefined) {
      const balance = (await store.orgs.balance(orgId)) + ledger.unspent(orgId);
      reply.header('X-Coins-Cost', '0').header('X-Coins-Remaining', String(balance));
      const short = new ApiError('insufficient_coins', `this request costs ${price} coins; the organization's balance is ${balance}`, {
        extra: { balance, price },
      });
      // Whether a feed page or a list costs anything is known once it is read (chargeFeedPage,
      // chargeListAnswer); the onSend hook refuses what a handler sent without asking.
      if (kind === 'feed' || kind === 'list') {
        request.coinShort = short;
        return;
      }
      throw short;
    }
    request.coinCharge = { orgId, price, remaining };
  }

  // Callback hooks, not async ones: a request its organization's lease pays for (most of them)
  // is charged and answered without a promise or a microtask.
  app.addHook('preHandler', (request, reply, done) => {
    const kind = routeOf(request).config.rampart?.coin;
    const principal = request.principal;
    if (!kind || !principal) return done();
    const price = prices[kind];
    if (price <= 0) return done();
    const orgId = principal.org.id;
    const remaining = ledger.debitFromLease(orgId, price);
    if (remaining === undefined) {
      chargeFromStore(request, reply, kind, orgId, price).then(() => done(), done);
      return;
    }
    request.coinCharge = { orgId, price, remaining };
    done();
  });

  app.addHook('onSend', (request, reply, payload, done) => {
    if (request.coinShort && !freeAnswer(request, reply.statusCode)) {
      // A handler sent content it was not paid for without asking (a bug): refuse it all the same.
      request.log.error({ route: routeOf(request).url }, 'unpaid answer refused: its handler did not check the balance');
      if (payload && typeof (payload as { destroy?: unknown }).destroy === 'function') (payload as { destroy(): void }).destroy();
      return done(request.coinShort);
    }
    const charge = request.coinCharge;
    if (!charge) return done(null, payload);
    // Failures, 304 (nothing new to send) and answers the handler waived (an empty feed page) cost 0.
    if (freeAnswer(request, reply.statusCode)) {
      request.coinCharge = null;
      const refunded = (remaining: number) => {
        reply.header('X-Coins-Cost', '0').header('X-Coins-Remaining', String(remaining));
        done(null, payload);
      };
      const remaining = ledger.refundToLease(charge.orgId, charge.price);
      if (remaining === undefined) ledger.refund(charge.orgId, charge.price).then(refunded, done);
      else refunded(remaining);
      return;
    }
    debits.inc({ kind: routeOf(request).config.rampart?.coin ?? 'unknown' }, charge.price);
    onSpent?.(charge.orgId, charge.price);
    reply.header('X-Coins-Cost', String(charge.price)).header('X-Coins-Remaining', String(charge.remaining));
    done(null, payload);
  });
});

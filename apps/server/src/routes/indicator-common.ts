import type { FastifyRequest } from 'fastify';
import { ApiError, type FeedUser } from '@rampart/contracts';
import type { AppContext } from '../context.ts';
import { principalOf } from '../plugins/auth.ts';
import { feedUserObject } from '../services/envelope.ts';

export { EMPTY, NO_BODY } from './empty-reply.ts';

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

/** `header.user` of file, domain and URL pages: the caller with the organization's coin figures now. */
export async function feedUser(context: AppContext, request: FastifyRequest): Promise<FeedUser> {
  const principal = principalOf(request);
  const fresh = await context.store.orgs.byId(principal.org.id);
  return feedUserObject(principal, request.server.coinLedger.shown(fresh ?? principal.org));
}

export { notFound } from '../services/named/indicators.ts';

/**
 * Adds `price` coins to what the request is charged (e.g. a deep scan on top of a look-up).
 * The charge joins the request's own, so the coins plugin refunds both if the request fails.
 */
/**
 * Makes the request cost `total` coins in all, whatever its route's price was: charges the
 * difference (402 when the balance lacks it) or gives the surplus back.
 */
export async function repriceTo(context: AppContext, request: FastifyRequest, total: number): Promise<void> {
  const charge = request.coinCharge;
  const diff = total - (charge?.price ?? 0);
  if (diff > 0) return chargeExtra(context, request, diff);
  if (diff < 0 && charge) {
    const remaining = await request.server.coinLedger.refund(charge.orgId, -diff);
    request.coinCharge = { ...charge, price: total, remaining };
  }
}

export async function chargeExtra(context: AppContext, request: FastifyRequest, price: number): Promise<void> {
  if (price <= 0 || !request.principal) return;
  const orgId = request.principal.org.id;
  const remaining = await request.server.coinLedger.debit(orgId, price);
  if (remaining === undefined) {
    const balance = (await context.store.orgs.balance(orgId)) + request.server.coinLedger.unspent(orgId);
    const already = request.coinCharge?.price ?? 0;
    throw new ApiError('insufficient_coins', `this request costs ${already + price} coins; the organization's balance is ${balance + already}`, {
      extra: { balance: balance + already, price: already + price },
    });
  }
  request.coinCharge = { orgId, price: (request.coinCharge?.price ?? 0) + price, remaining };
}

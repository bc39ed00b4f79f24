import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { API_BASE, ROLE, VpnCreateBody, VpnLicenseDetail, VpnLicenseList, VpnParams, type VpnLicense } from '@rampart/contracts';
import type { CoinLedger } from '../../services/coins/ledger.ts';
import type { AppContext } from '../../context.ts';
import { principalOf } from '../../plugins/auth.ts';
import { EMPTY, NO_BODY } from '../empty-reply.ts';


/**
 * A license's `member_of` coin figures as `/me` shows them: the store's, with this replica's
 * unspent coin lease counted as unspent (CoinLedger.shown).
 */
function withShownCoins<T extends VpnLicense>(ledger: CoinLedger, orgId: number, record: T): T {
  const org = record.user.member_of;
  const { debit_tokens } = ledger.shown({ id: orgId, debit_tokens: org.debit_tokens });
  return { ...record, user: { ...record.user, member_of: { ...org, debit_tokens } } };
}

/** Secure-VPN licenses of the caller's organization (spec 4.6). */
export const vpnRoutes: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  const { vpn } = context;

  app.get(
    '/vpn',
    {
      config: { rampart: {} },
      schema: { tags: ['vpn'], summary: "The organization's active VPN licenses", response: { 200: VpnLicenseList } },
    },
    async (request) => {
      const principal = principalOf(request);
      // Every license listed is of the caller's organization.
      return (await vpn.list(principal)).map((r) => withShownCoins(request.server.coinLedger, principal.org.id, r));
    },
  );

  app.post(
    '/vpn',
    {
      config: { rampart: { minRole: ROLE.admin, coin: 'vpn' } },
      schema: {
        tags: ['vpn'],
        summary: 'Create a VPN license: a new WireGuard key pair and an address of the pool (Location names it; 409 when the pool is exhausted)',
        body: VpnCreateBody,
        response: { 200: EMPTY },
      },
    },
    async (request, reply) => {
      const license = await vpn.create(principalOf(request), request.body);
      void reply.header('location', `${API_BASE}/vpn/${license.vid}`);
      return reply.code(200).send(NO_BODY);
    },
  );

  app.get(
    '/vpn/:vid',
    {
      config: { rampart: {} },
      schema: {
        tags: ['vpn'],
        summary: "A VPN license with installation instructions (the private key only for the organization's admins)",
        params: VpnParams,
        response: { 200: VpnLicenseDetail },
      },
    },
    async (request) => {
      const principal = principalOf(request);
      return withShownCoins(request.server.coinLedger, principal.org.id, await vpn.detail(principal, request.params.vid));
    },
  );

  app.delete(
    '/vpn/:vid',
    {
      config: { rampart: { minRole: ROLE.admin } },
      schema: { tags: ['vpn'], summary: 'Deactivate a VPN license (kept with exist false; its address returns to the pool)', params: VpnParams, response: { 200: EMPTY } },
    },
    async (request, reply) => {
      await vpn.deactivate(principalOf(request), request.params.vid);
      return reply.code(200).send(NO_BODY);
    },
  );
};

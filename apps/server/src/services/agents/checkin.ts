import type { Principal } from '../../plugins/principal.ts';
import type { CheckinVia, Store } from '../../store/index.ts';

/**
 * The check-in a request makes (decisions.md, Agents): an agent key checks in as its own agent,
 * whatever the request names; a member key checks in the agent the request names (`gaid` or
 * `agid`, an original client polling with its organization's key); nothing when it names none.
 * An unknown or foreign gaid changes nothing (`checkIn` matches the organization's agents only).
 */
export async function checkInCaller(store: Store, principal: Principal, named: string | undefined, via: CheckinVia, plugin?: string): Promise<void> {
  const gaid = principal.agent?.gaid ?? named;
  if (gaid) await store.agents.checkIn(principal.org.id, gaid, via, plugin);
}

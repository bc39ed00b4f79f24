import type { StoreConnection } from '../store/index.ts';

/**
 * Changes that connected agents must hear about. Published through the store's notification
 * channel (PostgreSQL NOTIFY, in-process on PGlite), so a change made through any server
 * replica reaches subscribers on every replica.
 */
export type PlatformEvent =
  | { type: 'settings_changed'; org_id: number; subject: 'organization' | 'agent'; gaid?: string; version: number }
  /** `ts`: the feed second of the change (IPv4), see the contract's SyncDecisionChanged. */
  | { type: 'decision_changed'; org_id: number; kind: 'ipv4' | 'file' | 'domain' | 'url'; indicator: string; decision: -1 | 0 | 1; ttl: number | null; ts?: number }
  /** Records moved in the feeds (org_id: of one organization's view only; every agent re-reads, which is harmless). */
  | { type: 'feed_changed'; org_id: number | null; kind: 'ipv4' | 'file' | 'domain' | 'url'; ts: number }
  /** An agent's key was revoked (token_id) or the agent deactivated (no token_id): drop its live connections. */
  | { type: 'agent_revoked'; org_id: number; gaid: string; token_id?: string };

export const EVENTS_CHANNEL = 'rampart_events';

export interface EventBus {
  publish(event: PlatformEvent): Promise<void>;
  subscribe(handler: (event: PlatformEvent) => void): Promise<() => Promise<void>>;
}

export function eventBus(db: Pick<StoreConnection, 'notify' | 'listen'>): EventBus {
  // One notification at a time, in the order they were published: on PostgreSQL each NOTIFY is a
  // statement on some pooled connection, and two sent side by side may commit (and reach the
  // listeners) in either order. A decision acknowledged and then changed again must reach the
  // agents in that order, or the older one is applied last (issue 30: a blacklisted address
  // removed while the server listed it).
  let tail: Promise<unknown> = Promise.resolve();
  return {
    publish(event) {
      const payload = JSON.stringify(event);
      const sent = tail.then(() => db.notify(EVENTS_CHANNEL, payload));
      tail = sent.catch(() => undefined);
      return sent;
    },
    async subscribe(handler) {
      return db.listen(EVENTS_CHANNEL, (payload) => {
        let event: PlatformEvent;
        try {
          event = JSON.parse(payload) as PlatformEvent;
        } catch {
          return;
        }
        handler(event);
      });
    },
  };
}

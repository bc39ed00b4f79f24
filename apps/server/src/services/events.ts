import type { StoreConnection } from '../store/index.ts';

/**
 * Changes that connected agents must hear about. Published through the store's notification
 * channel (PostgreSQL NOTIFY, in-process on PGlite), so a change made through any server
 * replica reaches subscribers on every replica.
 */
export type PlatformEvent =
  | { type: 'settings_changed'; org_id: number; subject: 'organization' | 'agent'; gaid?: string; version: number }
  | { type: 'decision_changed'; org_id: number; kind: 'ipv4' | 'file' | 'domain' | 'url'; indicator: string; decision: -1 | 0 | 1; ttl: number | null }
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
  return {
    async publish(event) {
      await db.notify(EVENTS_CHANNEL, JSON.stringify(event));
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

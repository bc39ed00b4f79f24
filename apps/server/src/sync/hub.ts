import type { FastifyBaseLogger } from 'fastify';
import type { WebSocket, RawData } from 'ws';
import { AgentSyncMessage, organizationForAgents, SYNC_CLOSE, type OrganizationConfig, type ServerSyncMessage } from '@rampart/contracts';
import type { EventBus, PlatformEvent } from '../services/events.ts';
import type { Store } from '../store/index.ts';

type SyncStateMessage = Extract<AgentSyncMessage, { type: 'state' }>;

/*
 * The sync hub of one server replica: it subscribes once to the event bus (PostgreSQL
 * LISTEN/NOTIFY, so changes made through any replica arrive here) and fans each event out in
 * memory to the agents connected to this replica, by organization and by agent. Per
 * connection it keeps a few fields and three listeners; heartbeats and check-ins run on one
 * timer each for all connections, so 10,000 idle agents cost no timers of their own.
 */

export interface SyncClient {
  readonly socket: WebSocket;
  readonly orgId: number;
  readonly agentId: number;
  readonly gaid: string;
  readonly tokenId: string;
  /** Something arrived from the peer since the last heartbeat. */
  seen: boolean;
  /** Messages that arrived while the hello was being prepared; null once it was sent. */
  queued: string[] | null;
  lastState: number;
  /** The newest state report not yet written (a burst within STATE_MIN_INTERVAL_MS), and its timer. */
  pendingState?: SyncStateMessage | undefined;
  stateTimer?: NodeJS.Timeout | undefined;
}

export interface SyncHubOptions {
  store: Store;
  events: EventBus;
  log: FastifyBaseLogger;
  heartbeatMs: number;
  /** How often a connected agent's check-in is written (it is alive while connected). */
  checkinEveryMs?: number;
  /** Bursts of feed changes within this window reach agents as one message per feed. */
  feedCoalesceMs?: number;
}

/** A peer that lets this much pile up unread is dropped rather than let it grow the heap. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;
const STATE_MIN_INTERVAL_MS = 5_000;
const CHECKIN_FLUSH_MS = 1_000;
const OPEN = 1;
const ORG_DOC_TTL_MS = 30_000;
const FEED_HEAD_TTL_MS = 1_000;

type FeedHead = Record<'ipv4' | 'file' | 'domain' | 'url', number>;

interface Versioned<T> {
  document: T;
  version: number;
}

export class SyncHub {
  private readonly byOrg = new Map<number, Set<SyncClient>>();
  private readonly byGaid = new Map<string, SyncClient>();
  private readonly pendingCheckins = new Set<number>();
  private readonly feedPending = new Map<'ipv4' | 'file' | 'domain' | 'url', number>();
  private readonly timers: NodeJS.Timeout[] = [];
  private feedTimer: NodeJS.Timeout | undefined;
  private chain: Promise<void> = Promise.resolve();
  private unsubscribe: (() => Promise<void>) | undefined;
  private stopWatching: (() => void) | undefined;
  private tick = 0;
  private readonly orgDocs = new Map<number, { at: number; value: Promise<Versioned<OrganizationConfig>> }>();
  private feedHead: { at: number; value: Promise<FeedHead> } | undefined;

  constructor(private readonly o: SyncHubOptions) {}

  get size(): number {
    return this.byGaid.size;
  }

  async start(): Promise<void> {
    this.unsubscribe = await this.o.events.subscribe((event) => {
      // One event at a time, in arrival order, so versions reach each agent in order.
      this.chain = this.chain.then(() => this.handle(event)).catch((err: unknown) => this.o.log.error({ err, event: event.type }, 'sync event failed'));
    });
    // Events missed while this replica was not listening are replayed by the store on its return;
    // cached documents are dropped anyway. When some could not be replayed (away longer than the
    // store keeps them), every agent is asked to reconnect: its new hello carries the current
    // documents and feed heads, and its key is checked again.
    this.stopWatching = this.o.store.connection.onConnection((event) => {
      if (event.role !== 'listener' || event.state !== 'restored') return;
      this.orgDocs.clear();
      this.feedHead = undefined;
      if (!event.gap) return;
      this.o.log.warn({ agents: this.byGaid.size }, 'live events were missed beyond replay: agents asked to reconnect');
      for (const c of Array.from(this.byGaid.values())) {
        this.remove(c);
        c.socket.close(SYNC_CLOSE.resync, 'events missed; reconnect');
      }
    });
    const checkinEvery = this.o.checkinEveryMs ?? 60_000;
    let sinceCheckin = 0;
    this.timers.push(
      setInterval(() => {
        this.heartbeat();
        sinceCheckin += this.o.heartbeatMs;
        if (sinceCheckin >= checkinEvery) {
          sinceCheckin = 0;
          for (const c of this.byGaid.values()) this.pendingCheckins.add(c.agentId);
        }
      }, this.o.heartbeatMs),
      setInterval(() => void this.flushCheckins(), CHECKIN_FLUSH_MS),
    );
    for (const t of this.timers) t.unref();
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.stopWatching?.();
    if (this.feedTimer) clearTimeout(this.feedTimer);
    await this.unsubscribe?.();
    for (const c of Array.from(this.byGaid.values())) c.socket.close(SYNC_CLOSE.shutdown, 'server shutting down');
    await this.chain;
  }

  /** Takes over an authenticated agent connection: registers it, then sends the hello. */
  async attach(socket: WebSocket, who: { orgId: number; agentId: number; gaid: string; tokenId: string }): Promise<void> {
    const client: SyncClient = { socket, ...who, seen: true, queued: [], lastState: 0 };
    const previous = this.byGaid.get(who.gaid);
    if (previous) {
      this.remove(previous);
      previous.socket.close(SYNC_CLOSE.replaced, 'replaced by a newer connection');
    }
    // Registered before the documents are read, so a change committed meanwhile is queued, not lost.
    this.byGaid.set(who.gaid, client);
    let org = this.byOrg.get(who.orgId);
    if (!org) this.byOrg.set(who.orgId, (org = new Set()));
    org.add(client);
    socket.on('message', (data: RawData, isBinary: boolean) => this.onMessage(client, data, isBinary));
    socket.on('pong', () => {
      client.seen = true;
    });
    socket.on('close', () => this.remove(client));
    socket.on('error', (err) => this.o.log.debug({ err, gaid: client.gaid }, 'sync socket error'));
    this.pendingCheckins.add(who.agentId);

    try {
      const hello = await this.hello(client);
      if (!hello) return;
      this.write(client, JSON.stringify(hello));
      const queued = client.queued ?? [];
      client.queued = null;
      for (const text of queued) this.write(client, text);
    } catch (err) {
      this.o.log.error({ err, gaid: who.gaid }, 'sync hello failed');
      socket.close(1011, 'could not read settings');
    }
  }

  /**
   * Read-through caches for what every hello of an organization shares. The organization
   * document is refreshed by its settings_changed event (and expires anyway, in case a
   * notification was lost); the feed head is dropped on feed_changed and may otherwise be a second old.
   */
  private organization(orgId: number): Promise<Versioned<OrganizationConfig>> {
    const now = Date.now();
    const hit = this.orgDocs.get(orgId);
    if (hit && now - hit.at < ORG_DOC_TTL_MS) return hit.value;
    const value = this.o.store.settings.organization(orgId);
    this.orgDocs.set(orgId, { at: now, value });
    value.catch(() => this.orgDocs.delete(orgId));
    if (this.orgDocs.size > 10_000) this.orgDocs.clear();
    return value;
  }

  private feed(): Promise<FeedHead> {
    const now = Date.now();
    if (this.feedHead && now - this.feedHead.at < FEED_HEAD_TTL_MS) return this.feedHead.value;
    const value = this.o.store.agents.feedHead();
    this.feedHead = { at: now, value };
    value.catch(() => (this.feedHead = undefined));
    return value;
  }

  private async hello(client: SyncClient): Promise<ServerSyncMessage | undefined> {
    const [agent, org, feed] = await Promise.all([this.o.store.agents.get(client.orgId, client.gaid), this.organization(client.orgId), this.feed()]);
    if (!agent || agent.deactivated_at !== null) {
      client.socket.close(SYNC_CLOSE.unauthorized, 'agent deactivated');
      return undefined;
    }
    return {
      type: 'hello',
      gaid: agent.gaid,
      server_time: Math.floor(Date.now() / 1000),
      settings: agent.document,
      settings_version: agent.version,
      organization: organizationForAgents(org.document),
      organization_version: org.version,
      feed,
    };
  }

  private remove(client: SyncClient): void {
    // A report still waiting out its interval is written now: the agent said it.
    if (client.stateTimer) {
      clearTimeout(client.stateTimer);
      client.stateTimer = undefined;
      const pending = client.pendingState;
      client.pendingState = undefined;
      if (pending) this.recordState(client, pending);
    }
    if (this.byGaid.get(client.gaid) === client) this.byGaid.delete(client.gaid);
    const org = this.byOrg.get(client.orgId);
    if (org?.delete(client) && org.size === 0) this.byOrg.delete(client.orgId);
  }

  private write(client: SyncClient, text: string): void {
    if (client.queued) {
      client.queued.push(text);
      return;
    }
    const socket = client.socket;
    if (socket.readyState !== OPEN) return;
    if (socket.bufferedAmount > MAX_BUFFERED_BYTES) {
      this.o.log.warn({ gaid: client.gaid, buffered: socket.bufferedAmount }, 'sync peer too slow: dropped');
      this.remove(client);
      socket.terminate();
      return;
    }
    socket.send(text);
  }

  private broadcast(clients: Iterable<SyncClient> | undefined, message: ServerSyncMessage): void {
    if (!clients) return;
    // Serialized once: every connection gets the same string.
    const text = JSON.stringify(message);
    for (const c of clients) this.write(c, text);
  }

  private async handle(event: PlatformEvent): Promise<void> {
    switch (event.type) {
      case 'settings_changed': {
        if (event.subject === 'organization') {
          const clients = this.byOrg.get(event.org_id);
          if (!clients?.size) {
            this.orgDocs.delete(event.org_id);
            return;
          }
          this.orgDocs.delete(event.org_id);
          const { document, version } = await this.organization(event.org_id);
          this.broadcast(clients, { type: 'settings_changed', subject: 'organization', version, organization: organizationForAgents(document) });
          return;
        }
        const client = event.gaid ? this.byGaid.get(event.gaid) : undefined;
        if (!client || client.orgId !== event.org_id) return;
        const agent = await this.o.store.agents.get(event.org_id, client.gaid);
        if (!agent) return;
        // The agent's own document, unmasked: it needs its secrets to run.
        this.broadcast([client], { type: 'settings_changed', subject: 'agent', version: agent.version, settings: agent.document });
        return;
      }
      case 'decision_changed':
        this.broadcast(this.byOrg.get(event.org_id), {
          type: 'decision_changed',
          kind: event.kind,
          indicator: event.indicator,
          decision: event.decision,
          ttl: event.ttl,
          ...(event.ts !== undefined ? { ts: event.ts } : {}),
        });
        return;
      case 'feed_changed':
        this.feedHead = undefined;
        this.feedChanged(event.kind, event.ts);
        return;
      case 'agent_revoked': {
        const client = this.byGaid.get(event.gaid);
        if (!client || client.orgId !== event.org_id || (event.token_id && event.token_id !== client.tokenId)) return;
        this.remove(client);
        client.socket.close(SYNC_CLOSE.unauthorized, 'agent key revoked');
        return;
      }
    }
  }

  private feedChanged(kind: 'ipv4' | 'file' | 'domain' | 'url', ts: number): void {
    this.feedPending.set(kind, Math.max(ts, this.feedPending.get(kind) ?? 0));
    this.armFeedTimer(this.o.feedCoalesceMs ?? 200);
  }

  private armFeedTimer(ms: number): void {
    if (this.feedTimer) return;
    this.feedTimer = setTimeout(() => void this.flushFeed(), ms);
    this.feedTimer.unref();
  }

  /**
   * Sends each pending feed change once the feeds serve its second: a record is read only once
   * no writer can still give one its second (the settled-second rule), so a change announced
   * earlier sent every agent to pull a page without it, and nothing told them to pull again
   * (issue 30: bursts took seconds to reach the agents). An IPv4 change whose second is not
   * settled yet waits for the next second (the other feeds keep their own clock: sent as they come).
   */
  private async flushFeed(): Promise<void> {
    let settled = Number.POSITIVE_INFINITY;
    if (this.feedPending.has('ipv4')) {
      try {
        settled = await this.o.store.ipv4.completeBefore();
      } catch (err) {
        this.o.log.warn({ err }, 'could not read the settled second; feed changes sent now');
      }
    }
    this.feedTimer = undefined;
    // Deleting the entry being visited is safe while iterating a Map.
    for (const [kind, ts] of this.feedPending) {
      if (kind === 'ipv4' && ts >= settled) continue;
      this.feedPending.delete(kind);
      this.broadcast(this.byGaid.values(), { type: 'feed_changed', kind, ts });
    }
    if (this.feedPending.size > 0) this.armFeedTimer(Math.max(20, 1000 - (Date.now() % 1000) + 20));
  }

  private onMessage(client: SyncClient, data: RawData, isBinary: boolean): void {
    client.seen = true;
    if (isBinary) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(data.toString());
    } catch {
      return;
    }
    const message = AgentSyncMessage.safeParse(parsed);
    // Unknown or malformed messages are ignored: newer agents may send types this server does not know.
    if (!message.success) return;
    const m = message.data;
    if (m.type === 'ping') {
      this.write(client, JSON.stringify({ type: 'pong', nonce: m.nonce } satisfies ServerSyncMessage));
    } else if (m.type === 'state') {
      this.acceptState(client, m);
    }
  }

  /**
   * State reports are written at most once per STATE_MIN_INTERVAL_MS per agent, but never lost:
   * a report inside the interval waits, replaced by any newer one, and the newest is written when
   * the interval ends (the agent's refusal of a setting, sent right after its hello, must land).
   */
  private acceptState(client: SyncClient, m: SyncStateMessage): void {
    const wait = client.lastState + STATE_MIN_INTERVAL_MS - Date.now();
    if (wait > 0) {
      client.pendingState = m;
      client.stateTimer ??= setTimeout(() => {
        client.stateTimer = undefined;
        const next = client.pendingState;
        client.pendingState = undefined;
        if (next) this.recordState(client, next);
      }, wait);
      client.stateTimer.unref();
      return;
    }
    this.recordState(client, m);
  }

  private recordState(client: SyncClient, m: SyncStateMessage): void {
    const now = Date.now();
    client.lastState = now;
    const at = Math.floor(now / 1000);
    const entries = m.plugins.map((p) => ({ plugin: p.plugin, enforced: p.enforced, healthy: p.healthy as boolean | null, state: p.state ?? null, error: p.error ?? null }));
    // An agent that reports only its total is recorded under `all`.
    if (entries.length === 0) entries.push({ plugin: 'all', enforced: m.enforced, healthy: null, state: null, error: null });
    const plugins = Object.fromEntries(
      entries.map((p) => [p.plugin, { enforced: p.enforced, code: null, score_threshold: null, healthy: p.healthy, state: p.state, error: p.error, at }]),
    );
    this.o.store.agents
      .recordEnforcement(client.orgId, client.gaid, 'sync', { plugins, hostname: m.hostname, version: m.version, capabilities: m.capabilities })
      .catch((err: unknown) => this.o.log.warn({ err, gaid: client.gaid }, 'could not record agent state'));
  }

  /** Pings every peer; a peer that sent nothing (not even a pong) since the last ping is dropped. */
  private heartbeat(): void {
    this.tick += 1;
    const ping = JSON.stringify({ type: 'ping', nonce: String(this.tick) } satisfies ServerSyncMessage);
    for (const c of Array.from(this.byGaid.values())) {
      if (!c.seen) {
        this.remove(c);
        c.socket.terminate();
        continue;
      }
      c.seen = false;
      if (c.socket.readyState === OPEN) c.socket.ping();
      this.write(c, ping);
    }
  }

  private async flushCheckins(): Promise<void> {
    if (this.pendingCheckins.size === 0) return;
    const ids = [...this.pendingCheckins];
    this.pendingCheckins.clear();
    await this.o.store.agents.checkInMany(ids, 'sync').catch((err: unknown) => this.o.log.warn({ err, agents: ids.length }, 'could not record sync check-ins'));
  }
}

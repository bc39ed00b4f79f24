import pg from 'pg';
import type { HostSelector } from './pg-hosts.ts';
import { StoreUnavailableError, type ConnectionEvent, type ConnectionRole, type NotificationHandler } from './db.ts';

/* The PostgreSQL driver's connection roles (pool, listener): when they are down, and the LISTEN session kept open. */

/**
 * Catch-up after a listener outage (migration 0012): every notification is also stored under an
 * id its payload carries ("<id> <payload>"); a listener that comes back reads the stored ones
 * after the last id it delivered. Commits may land out of id order, so the read starts
 * REPLAY_LOOKBACK ids earlier and skips ids already delivered (the last SEEN_IDS are kept).
 * Stored notifications are kept NOTIFICATION_RETENTION; a replica that was away for longer is
 * told it missed some (ConnectionEvent `gap`).
 */
const REPLAY_LOOKBACK = 1_000;
const SEEN_IDS = 10_000;
export const NOTIFICATION_RETENTION = '1 hour';
export const PRUNE_EVERY_MS = 60_000;
/** Table missing (a database migrated before 0012): nothing to catch up from. */
const UNDEFINED_TABLE = '42P01';


/** SQLSTATEs that say the server, not the statement, is the problem (class 08, shutdown, crash, too many clients). */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);
// ESTANDBY: a connection reached a standby while the primary was asked for (pg-hosts.ts).
const UNAVAILABLE_ERRNOS = new Set(['ESTANDBY', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

/**
 * Whether an error raised by pg means "the database cannot be reached". PostgreSQL's own errors
 * carry a SQLSTATE; socket errors carry an errno code; pg's connection-level errors
 * (terminated connection, connect timeout, client no longer queryable) are plain Errors without
 * a code. Only errors that come out of pg calls are classified here.
 */
export function isUnavailable(err: unknown): boolean {
  if (err instanceof pg.DatabaseError) return err.code !== undefined && (err.code.startsWith('08') || UNAVAILABLE_SQLSTATES.has(err.code));
  if (!(err instanceof Error)) return false;
  const code = (err as NodeJS.ErrnoException).code;
  if (typeof code === 'string') return UNAVAILABLE_ERRNOS.has(code);
  return Object.getPrototypeOf(err) === Error.prototype;
}

/**
 * The pool reconnects on demand: every query while PostgreSQL is down tries a new connection
 * (and fails fast as StoreUnavailableError, a 503 with Retry-After); the first that succeeds
 * restores it. Only the transitions are reported, to the observers.
 */
export class ConnectionStates {
  private readonly observers = new Set<(event: ConnectionEvent) => void>();
  private readonly down = new Map<ConnectionRole, number>();

  observe(handler: (event: ConnectionEvent) => void): () => void {
    this.observers.add(handler);
    return () => this.observers.delete(handler);
  }

  emit(event: ConnectionEvent): void {
    for (const o of this.observers) o(event);
  }

  wentDown(role: ConnectionRole, err?: unknown): void {
    if (this.down.has(role)) return;
    this.down.set(role, Date.now());
    this.emit({ role, state: 'lost', err });
  }

  cameBack(role: ConnectionRole, caughtUp?: { replayed: number; gap: boolean }): void {
    const since = this.down.get(role);
    if (since === undefined) return;
    this.down.delete(role);
    this.emit({ role, state: 'restored', downMs: Date.now() - since, ...caughtUp });
  }

  /** Runs one pg call of the pool role: unavailable errors become StoreUnavailableError. */
  async viaPool<T>(call: () => Promise<T>): Promise<T> {
    try {
      const result = await call();
      if (this.down.size > 0) this.cameBack('pool');
      return result;
    } catch (err) {
      if (!isUnavailable(err)) throw err;
      this.wentDown('pool', err);
      throw new StoreUnavailableError({ cause: err });
    }
  }
}

/**
 * LISTEN needs one session that stays open. When PostgreSQL drops it (restart, failover, idle
 * timeout, pg_terminate_backend), it is reopened in the background with capped exponential
 * back-off, forever, and every channel is listened to again, so a replica never goes deaf
 * silently. `listening` is false in between (/readyz answers 503).
 */
export class PgListener {
  private listener: pg.Client | undefined;
  private connecting: Promise<pg.Client> | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private attempt = 0;
  private closed = false;
  private readonly handlers = new Map<string, Set<NotificationHandler>>();
  /** Highest stored notification id delivered (undefined until a first listener read the head). */
  private lastSeenId: number | undefined;
  private readonly seenIds = new Set<number>();

  constructor(
    private readonly newClient: () => pg.Client,
    private readonly selector: HostSelector | undefined,
    private readonly states: ConnectionStates,
    private readonly retry: { minMs: number; maxMs: number },
  ) {}

  get listening(): boolean {
    return this.handlers.size === 0 || this.listener !== undefined;
  }

  async listen(channel: string, handler: NotificationHandler): Promise<() => Promise<void>> {
    if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`invalid channel name ${channel}`);
    let set = this.handlers.get(channel);
    if (!set) {
      set = new Set();
      this.handlers.set(channel, set);
      // Registered first: a listener (re)opened from now on issues LISTEN for it. If PostgreSQL
      // is down now, the background reconnection picks the channel up when it is back.
      const client = await this.ensureListener().catch(() => undefined);
      // LISTEN is idempotent: a listener opened just now may already have issued it.
      if (client) await client.query(`listen ${channel}`).catch((err: unknown) => this.lost(client, err));
    } else {
      await this.ensureListener().catch(() => undefined);
    }
    set.add(handler);
    return async () => {
      set.delete(handler);
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    const client = this.listener;
    this.listener = undefined;
    await client?.end().catch(() => {});
  }

  /** Hands one notification to its handlers, once per stored id; false for one delivered before. */
  private deliver(channel: string, raw: string): boolean {
    let payload = raw;
    const tagged = /^(\d+) /.exec(raw);
    if (tagged) {
      const id = Number(tagged[1]);
      if (this.seenIds.has(id)) return false;
      this.seenIds.add(id);
      if (this.seenIds.size > SEEN_IDS) this.seenIds.delete(this.seenIds.values().next().value!);
      this.lastSeenId = Math.max(this.lastSeenId ?? 0, id);
      payload = raw.slice(tagged[0].length);
    }
    for (const h of this.handlers.get(channel) ?? []) h(payload);
    return true;
  }

  /**
   * What this replica missed while it was not listening, read on the new listener session after
   * its LISTENs (so nothing falls between the two). On the first session: only the head id.
   */
  private async missed(client: pg.Client): Promise<{ rows: { id: number; channel: string; payload: string }[]; gap: boolean }> {
    try {
      if (this.lastSeenId === undefined) {
        const head = await client.query<{ id: number }>('select coalesce(max(id), 0)::bigint as id from store_notifications');
        this.lastSeenId = head.rows[0]!.id;
        return { rows: [], gap: false };
      }
      const { rows } = await client.query<{ id: number; channel: string; payload: string }>(
        'select id, channel, payload from store_notifications where id > $1 and channel = any($2) order by id',
        [this.lastSeenId - REPLAY_LOOKBACK, [...this.handlers.keys()]],
      );
      // The oldest id still stored (the next to be issued when none is): a higher one than the
      // one after the last delivered means notifications were deleted before this replica read them.
      const oldest = await client.query<{ id: number }>(
        "select coalesce((select min(id) from store_notifications), coalesce(pg_sequence_last_value(pg_get_serial_sequence('store_notifications', 'id')), 0) + 1)::bigint as id",
      );
      return { rows, gap: oldest.rows[0]!.id > this.lastSeenId + 1 };
    } catch (err) {
      if (err instanceof pg.DatabaseError && err.code === UNDEFINED_TABLE) return { rows: [], gap: false };
      throw err;
    }
  }

  private lost(client: pg.Client, err?: unknown): void {
    // Events of a client that is no longer (or never became) the listener change nothing.
    if (this.listener !== client) return;
    this.listener = undefined;
    client.removeAllListeners('notification');
    void client.end().catch(() => {});
    if (this.closed) return;
    this.states.wentDown('listener', err);
    this.scheduleReconnect();
  }

  private delay(): number {
    return Math.min(this.retry.maxMs, this.retry.minMs * 2 ** Math.min(this.attempt, 16));
  }

  private scheduleReconnect(): void {
    if (this.closed || this.retryTimer || this.connecting || this.listener) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.ensureListener().catch(() => {});
    }, this.delay());
    this.retryTimer.unref();
  }

  private async connectListener(): Promise<pg.Client> {
    const client = this.newClient();
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    // Live notifications wait while the missed ones are read, so that they are delivered in order.
    let waiting: pg.Notification[] | null = [];
    client.on('notification', (msg) => (waiting ? waiting.push(msg) : this.deliver(msg.channel, msg.payload ?? '')));
    let caughtUp: Awaited<ReturnType<PgListener['missed']>>;
    try {
      await client.connect();
      await this.selector?.verify(client as never);
      for (const channel of this.handlers.keys()) await client.query(`listen ${channel}`);
      caughtUp = await this.missed(client);
    } catch (err) {
      client.removeAllListeners('notification');
      void client.end().catch(() => {});
      throw err;
    }
    if (this.closed) {
      void client.end().catch(() => {});
      throw new StoreUnavailableError();
    }
    this.listener = client;
    this.attempt = 0;
    let replayed = 0;
    for (const row of caughtUp.rows) if (this.deliver(row.channel, `${row.id} ${row.payload}`)) replayed += 1;
    for (const msg of waiting) this.deliver(msg.channel, msg.payload ?? '');
    waiting = null;
    this.states.cameBack('listener', { replayed, gap: caughtUp.gap });
    return client;
  }

  /** The open listener, or one connection attempt; a failed attempt schedules the next. */
  private ensureListener(): Promise<pg.Client> {
    if (this.listener) return Promise.resolve(this.listener);
    this.connecting ??= this.connectListener()
      .catch((err: unknown) => {
        this.attempt += 1;
        this.states.wentDown('listener', err);
        this.connecting = undefined;
        this.scheduleReconnect();
        this.states.emit({ role: 'listener', state: 'retry_failed', attempt: this.attempt, nextDelayMs: this.delay(), err });
        throw new StoreUnavailableError({ cause: err });
      })
      .finally(() => {
        this.connecting = undefined;
      });
    return this.connecting;
  }
}

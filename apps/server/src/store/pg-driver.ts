import pg from 'pg';
import { HostSelector, parseHostList } from './pg-hosts.ts';
import { StoreUnavailableError, type ConnectionEvent, type ConnectionRole, type Db, type NotificationHandler, type QueryOptions, type QueryResult, type Transaction } from './db.ts';

const INT8_OID = 20;
const NUMERIC_OID = 1700;

/** int8 and numeric come back as JS numbers, as PGlite returns them, so both drivers agree. */
const types = {
  getTypeParser(oid: number, format?: string) {
    if (oid === INT8_OID || oid === NUMERIC_OID) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format as 'text');
  },
};

export interface PgDriverOptions {
  connectionString: string;
  max?: number;
  /** Listener reconnection back-off: first delay and cap (defaults 100 ms and 5 s). */
  retryMinMs?: number;
  retryMaxMs?: number;
}

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
const NOTIFICATION_RETENTION = '1 hour';
const PRUNE_EVERY_MS = 60_000;
/** Table missing (a database migrated before 0012): nothing to catch up from. */
const UNDEFINED_TABLE = '42P01';

/** A connection that cannot be made within this is a failure (503), never a request that hangs. */
const CONNECT_TIMEOUT_MS = 5_000;

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

export async function openPostgres(options: PgDriverOptions): Promise<Db> {
  const retryMinMs = options.retryMinMs ?? 100;
  const retryMaxMs = options.retryMaxMs ?? 5_000;
  // A host list (`host1:port,host2:port`, target_session_attrs): each new connection goes to the
  // host that answered as the primary last (pg-hosts.ts).
  const hostList = parseHostList(options.connectionString);
  const selector = hostList ? new HostSelector(hostList) : undefined;
  const connectionString = hostList?.url ?? options.connectionString;
  const hostOptions = selector ? { stream: selector.stream } : {};
  const poolConfig: pg.PoolConfig = { connectionString, max: options.max ?? 10, types, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, keepAlive: true, ...hostOptions };
  // pg-pool waits for an onConnect that returns a promise and drops the connection if it rejects
  // (its types say void): with a host list, a standby is refused there.
  if (selector) Object.assign(poolConfig, { onConnect: (client: pg.ClientBase) => selector.verify(client as never) });
  const pool = new pg.Pool(poolConfig);
  // Idle-client errors (server restart) must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  await pool.query('select 1');

  const observers = new Set<(event: ConnectionEvent) => void>();
  const emit = (event: ConnectionEvent) => {
    for (const o of observers) o(event);
  };

  // The pool reconnects on demand: every query while PostgreSQL is down tries a new connection
  // (and fails fast as StoreUnavailableError, a 503 with Retry-After); the first that succeeds
  // restores it. Only the transitions are reported.
  const down = new Map<ConnectionRole, number>();
  function wentDown(role: ConnectionRole, err?: unknown) {
    if (down.has(role)) return;
    down.set(role, Date.now());
    emit({ role, state: 'lost', err });
  }
  function cameBack(role: ConnectionRole, caughtUp?: { replayed: number; gap: boolean }) {
    const since = down.get(role);
    if (since === undefined) return;
    down.delete(role);
    emit({ role, state: 'restored', downMs: Date.now() - since, ...caughtUp });
  }
  /** Runs one pg call of the pool role: unavailable errors become StoreUnavailableError. */
  async function viaPool<T>(call: () => Promise<T>): Promise<T> {
    try {
      const result = await call();
      if (down.size > 0) cameBack('pool');
      return result;
    } catch (err) {
      if (!isUnavailable(err)) throw err;
      wentDown('pool', err);
      throw new StoreUnavailableError({ cause: err });
    }
  }

  // LISTEN needs one session that stays open. When PostgreSQL drops it (restart, failover, idle
  // timeout, pg_terminate_backend), it is reopened in the background with capped exponential
  // back-off, forever, and every channel is listened to again, so a replica never goes deaf
  // silently. health().listening is false in between (/readyz answers 503).
  let listener: pg.Client | undefined;
  let connecting: Promise<pg.Client> | undefined;
  let retryTimer: NodeJS.Timeout | undefined;
  let attempt = 0;
  let closed = false;
  let lastPrune = 0;
  const handlers = new Map<string, Set<NotificationHandler>>();
  /** Highest stored notification id delivered (undefined until a first listener read the head). */
  let lastSeenId: number | undefined;
  const seenIds = new Set<number>();

  /** Hands one notification to its handlers, once per stored id; false for one delivered before. */
  function deliver(channel: string, raw: string): boolean {
    let payload = raw;
    const tagged = /^(\d+) /.exec(raw);
    if (tagged) {
      const id = Number(tagged[1]);
      if (seenIds.has(id)) return false;
      seenIds.add(id);
      if (seenIds.size > SEEN_IDS) seenIds.delete(seenIds.values().next().value!);
      lastSeenId = Math.max(lastSeenId ?? 0, id);
      payload = raw.slice(tagged[0].length);
    }
    for (const h of handlers.get(channel) ?? []) h(payload);
    return true;
  }

  /**
   * What this replica missed while it was not listening, read on the new listener session after
   * its LISTENs (so nothing falls between the two). On the first session: only the head id.
   */
  async function missed(client: pg.Client): Promise<{ rows: { id: number; channel: string; payload: string }[]; gap: boolean }> {
    try {
      if (lastSeenId === undefined) {
        const head = await client.query<{ id: number }>('select coalesce(max(id), 0)::bigint as id from store_notifications');
        lastSeenId = head.rows[0]!.id;
        return { rows: [], gap: false };
      }
      const { rows } = await client.query<{ id: number; channel: string; payload: string }>(
        'select id, channel, payload from store_notifications where id > $1 and channel = any($2) order by id',
        [lastSeenId - REPLAY_LOOKBACK, [...handlers.keys()]],
      );
      // The oldest id still stored (the next to be issued when none is): a higher one than the
      // one after the last delivered means notifications were deleted before this replica read them.
      const oldest = await client.query<{ id: number }>(
        "select coalesce((select min(id) from store_notifications), coalesce(pg_sequence_last_value(pg_get_serial_sequence('store_notifications', 'id')), 0) + 1)::bigint as id",
      );
      return { rows, gap: oldest.rows[0]!.id > lastSeenId + 1 };
    } catch (err) {
      if (err instanceof pg.DatabaseError && err.code === UNDEFINED_TABLE) return { rows: [], gap: false };
      throw err;
    }
  }

  function lost(client: pg.Client, err?: unknown) {
    // Events of a client that is no longer (or never became) the listener change nothing.
    if (listener !== client) return;
    listener = undefined;
    client.removeAllListeners('notification');
    void client.end().catch(() => {});
    if (closed) return;
    wentDown('listener', err);
    scheduleReconnect();
  }

  function scheduleReconnect() {
    if (closed || retryTimer || connecting || listener) return;
    const delay = Math.min(retryMaxMs, retryMinMs * 2 ** Math.min(attempt, 16));
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      ensureListener().catch(() => {});
    }, delay);
    retryTimer.unref();
  }

  async function connectListener(): Promise<pg.Client> {
    const client = new pg.Client({ connectionString, types, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, keepAlive: true, ...hostOptions });
    client.on('error', (err) => lost(client, err));
    client.on('end', () => lost(client));
    // Live notifications wait while the missed ones are read, so that they are delivered in order.
    let waiting: pg.Notification[] | null = [];
    client.on('notification', (msg) => (waiting ? waiting.push(msg) : deliver(msg.channel, msg.payload ?? '')));
    let caughtUp: Awaited<ReturnType<typeof missed>>;
    try {
      await client.connect();
      await selector?.verify(client as never);
      for (const channel of handlers.keys()) await client.query(`listen ${channel}`);
      caughtUp = await missed(client);
    } catch (err) {
      client.removeAllListeners('notification');
      void client.end().catch(() => {});
      throw err;
    }
    if (closed) {
      void client.end().catch(() => {});
      throw new StoreUnavailableError();
    }
    listener = client;
    attempt = 0;
    let replayed = 0;
    for (const row of caughtUp.rows) if (deliver(row.channel, `${row.id} ${row.payload}`)) replayed += 1;
    for (const msg of waiting) deliver(msg.channel, msg.payload ?? '');
    waiting = null;
    cameBack('listener', { replayed, gap: caughtUp.gap });
    return client;
  }

  /** The open listener, or one connection attempt; a failed attempt schedules the next. */
  function ensureListener(): Promise<pg.Client> {
    if (listener) return Promise.resolve(listener);
    connecting ??= connectListener()
      .catch((err: unknown) => {
        attempt += 1;
        wentDown('listener', err);
        connecting = undefined;
        scheduleReconnect();
        emit({ role: 'listener', state: 'retry_failed', attempt, nextDelayMs: Math.min(retryMaxMs, retryMinMs * 2 ** Math.min(attempt, 16)), err });
        throw new StoreUnavailableError({ cause: err });
      })
      .finally(() => {
        connecting = undefined;
      });
    return connecting;
  }

  const query = <T>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<T>> =>
    viaPool(async () => {
      const res = options?.name
        ? await pool.query({ name: options.name, text: sql, values: params as unknown[] | undefined })
        : await pool.query(sql, params as unknown[] | undefined);
      return { rows: res.rows as T[], rowCount: res.rowCount ?? 0 };
    });

  return {
    kind: 'postgres',
    query,
    async exec(sql) {
      await viaPool(() => pool.query(sql));
    },
    async transaction(fn) {
      const client = await viaPool(() => pool.connect());
      let broken: Error | undefined;
      // A checked-out client has no listener of the pool's: a connection that dies under it
      // (PostgreSQL crashed, the network cut) emits 'error', which unheard would end the process.
      // Heard, it marks the connection broken; the statement waiting on it fails on its own.
      const onError = (err: Error) => {
        broken ??= new StoreUnavailableError({ cause: err });
      };
      client.on('error', onError);
      const run = async <R>(call: () => Promise<R>): Promise<R> => {
        try {
          return await viaPool(call);
        } catch (err) {
          if (err instanceof StoreUnavailableError) broken = err;
          throw err;
        }
      };
      const tx: Transaction = {
        async query<T>(sql: string, params?: readonly unknown[], options?: QueryOptions) {
          const res = await run(() =>
            options?.name ? client.query({ name: options.name, text: sql, values: params as unknown[] | undefined }) : client.query(sql, params as unknown[] | undefined),
          );
          return { rows: res.rows as T[], rowCount: res.rowCount ?? 0 };
        },
        async exec(sql: string) {
          await run(() => client.query(sql));
        },
      };
      try {
        await run(() => client.query('begin'));
        const result = await fn(tx);
        await run(() => client.query('commit'));
        return result;
      } catch (err) {
        if (!broken) await client.query('rollback').catch(() => {});
        throw err;
      } finally {
        // A connection that broke is destroyed, not handed to the next caller.
        client.off('error', onError);
        client.release(broken);
      }
    },
    async listen(channel, handler) {
      if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`invalid channel name ${channel}`);
      let set = handlers.get(channel);
      if (!set) {
        set = new Set();
        handlers.set(channel, set);
        // Registered first: a listener (re)opened from now on issues LISTEN for it. If PostgreSQL
        // is down now, the background reconnection picks the channel up when it is back.
        const client = await ensureListener().catch(() => undefined);
        // LISTEN is idempotent: a listener opened just now may already have issued it.
        if (client) await client.query(`listen ${channel}`).catch((err: unknown) => lost(client, err));
      } else {
        await ensureListener().catch(() => undefined);
      }
      set.add(handler);
      return async () => {
        set.delete(handler);
      };
    },
    async notify(channel, payload) {
      // Stored, then notified with its id, in one statement (one round trip, one commit). The
      // commit does not wait for its WAL flush (synchronous_commit off for this transaction
      // only): waiting made a notification cost 4-5 ms instead of 0.3-1.5 ms here, and every
      // POST /ips batch awaits one; a row lost to a PostgreSQL crash is a catch-up for a replica
      // that was not listening at that very moment, while the change it announces is durable.
      // Prepared once per connection (named): planning it took PostgreSQL longer than running it.
      await viaPool(() =>
        pool.query({
          name: 'rampart_notify',
          text: "with s as (select set_config('synchronous_commit', 'off', true)), n as (insert into store_notifications (channel, payload) select $1, $2 from s returning id) select pg_notify($1, n.id || ' ' || $2) from n",
          values: [channel, payload],
        }),
      );
      const now = Date.now();
      if (now - lastPrune > PRUNE_EVERY_MS) {
        lastPrune = now;
        pool.query(`delete from store_notifications where at < now() - interval '${NOTIFICATION_RETENTION}'`).catch(() => {});
      }
    },
    stats() {
      return { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount };
    },
    health() {
      return { listening: handlers.size === 0 || listener !== undefined };
    },
    onConnection(handler) {
      observers.add(handler);
      return () => observers.delete(handler);
    },
    async close() {
      closed = true;
      clearTimeout(retryTimer);
      const client = listener;
      listener = undefined;
      await client?.end().catch(() => {});
      await pool.end();
    },
  };
}

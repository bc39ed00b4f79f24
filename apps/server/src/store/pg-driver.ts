import pg from 'pg';
import { HostSelector, parseHostList } from './pg-hosts.ts';
import { StoreUnavailableError, type Db, type QueryOptions, type QueryResult, type Transaction } from './db.ts';
import { ConnectionStates, PgListener, NOTIFICATION_RETENTION, PRUNE_EVERY_MS } from './pg-connections.ts';

export { isUnavailable } from './pg-connections.ts';

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

/** A connection that cannot be made within this is a failure (503), never a request that hangs. */
const CONNECT_TIMEOUT_MS = 5_000;

/** Where new connections go: the connection string, and with a host list the primary's selector (pg-hosts.ts). */
interface Target {
  connectionString: string;
  selector: HostSelector | undefined;
  hostOptions: { stream?: HostSelector['stream'] };
}

/**
 * A host list (`host1:port,host2:port`, target_session_attrs): each new connection goes to the
 * host that answered as the primary last (pg-hosts.ts).
 */
function targetOf(connectionString: string): Target {
  const hostList = parseHostList(connectionString);
  const selector = hostList ? new HostSelector(hostList) : undefined;
  return { connectionString: hostList?.url ?? connectionString, selector, hostOptions: selector ? { stream: selector.stream } : {} };
}

/** The pool, its first connection made (a database that cannot be reached fails here). */
async function openPool(target: Target, max: number): Promise<pg.Pool> {
  const { connectionString, selector, hostOptions } = target;
  const poolConfig: pg.PoolConfig = { connectionString, max, types, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, keepAlive: true, ...hostOptions };
  // pg-pool waits for an onConnect that returns a promise and drops the connection if it rejects
  // (its types say void): with a host list, a standby is refused there.
  if (selector) Object.assign(poolConfig, { onConnect: (client: pg.ClientBase) => selector.verify(client as never) });
  const pool = new pg.Pool(poolConfig);
  // Idle-client errors (server restart) must not crash the process; the next query reconnects.
  pool.on('error', () => {});
  await pool.query('select 1');
  return pool;
}

export async function openPostgres(options: PgDriverOptions): Promise<Db> {
  const target = targetOf(options.connectionString);
  const pool = await openPool(target, options.max ?? 10);
  const states = new ConnectionStates();
  const viaPool = <T>(call: () => Promise<T>) => states.viaPool(call);
  const listener = new PgListener(
    () => new pg.Client({ connectionString: target.connectionString, types, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, keepAlive: true, ...target.hostOptions }),
    target.selector,
    states,
    { minMs: options.retryMinMs ?? 100, maxMs: options.retryMaxMs ?? 5_000 },
  );
  const notifier = new Notifier(pool, viaPool);
  return {
    kind: 'postgres',
    query: (sql, params, queryOptions) => viaPool(() => runQuery(pool, sql, params, queryOptions)),
    async exec(sql) {
      await viaPool(() => pool.query(sql));
    },
    transaction: (fn) => poolTransaction(pool, viaPool, fn),
    listen: (channel, handler) => listener.listen(channel, handler),
    notify: (channel, payload) => notifier.notify(channel, payload),
    notified: () => notifier.prune(),
    stats() {
      return { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount };
    },
    health: () => ({ listening: listener.listening }),
    onConnection: (handler) => states.observe(handler),
    async close() {
      await listener.close();
      await pool.end();
    },
  };
}

/** One statement on a pool or a checked-out client, prepared once per connection when named. */
async function runQuery<T>(client: pg.Pool | pg.PoolClient, sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<T>> {
  const values = params as unknown[] | undefined;
  const res = options?.name ? await client.query({ name: options.name, text: sql, values }) : await client.query(sql, values);
  return { rows: res.rows as T[], rowCount: res.rowCount ?? 0 };
}

/** BEGIN, `fn`, COMMIT on one checked-out client; a connection that broke is destroyed, not handed on. */
async function poolTransaction<R>(pool: pg.Pool, viaPool: <T>(call: () => Promise<T>) => Promise<T>, fn: (tx: Transaction) => Promise<R>): Promise<R> {
  const client = await viaPool(() => pool.connect());
  let broken: Error | undefined;
  // A checked-out client has no listener of the pool's: a connection that dies under it
  // (PostgreSQL crashed, the network cut) emits 'error', which unheard would end the process.
  // Heard, it marks the connection broken; the statement waiting on it fails on its own.
  const onError = (err: Error) => {
    broken ??= new StoreUnavailableError({ cause: err });
  };
  client.on('error', onError);
  const run = async <T>(call: () => Promise<T>): Promise<T> => {
    try {
      return await viaPool(call);
    } catch (err) {
      if (err instanceof StoreUnavailableError) broken = err;
      throw err;
    }
  };
  const tx: Transaction = {
    query: (sql, params, options) => run(() => runQuery(client, sql, params, options)),
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
    client.off('error', onError);
    client.release(broken);
  }
}

/** NOTIFY with the payload stored for catch-up (migration 0012), and the stored ones pruned now and then. */
class Notifier {
  private lastPrune = 0;

  constructor(
    private readonly pool: pg.Pool,
    private readonly viaPool: <T>(call: () => Promise<T>) => Promise<T>,
  ) {}

  async notify(channel: string, payload: string): Promise<void> {
    // Stored, then notified with its id, in one statement (one round trip, one commit). The
    // commit does not wait for its WAL flush (synchronous_commit off for this transaction
    // only): waiting made a notification cost 4-5 ms instead of 0.3-1.5 ms here, and every
    // POST /ips batch awaits one; a row lost to a PostgreSQL crash is a catch-up for a replica
    // that was not listening at that very moment, while the change it announces is durable.
    // Prepared once per connection (named): planning it took PostgreSQL longer than running it.
    await this.viaPool(() =>
      this.pool.query({
        name: 'rampart_notify',
        text: "with s as (select set_config('synchronous_commit', 'off', true)), n as (insert into store_notifications (channel, payload) select $1, $2 from s returning id) select pg_notify($1, n.id || ' ' || $2) from n",
        values: [channel, payload],
      }),
    );
    this.prune();
  }

  /** Deletes the stored notifications past their retention, at most once every PRUNE_EVERY_MS. */
  prune(): void {
    const now = Date.now();
    if (now - this.lastPrune > PRUNE_EVERY_MS) {
      this.lastPrune = now;
      this.pool.query(`delete from store_notifications where at < now() - interval '${NOTIFICATION_RETENTION}'`).catch(() => {});
    }
  }
}

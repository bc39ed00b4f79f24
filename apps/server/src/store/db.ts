/**
 * The one database interface both drivers implement. Every SQL statement in the
 * server goes through `Queryable.query` with positional parameters ($1, $2, ...):
 * nothing is ever interpolated into SQL text.
 */
export interface QueryResult<T> {
  rows: T[];
  rowCount: number;
}

export interface QueryOptions {
  /**
   * Names the statement so PostgreSQL parses and plans it once per connection (hot look-ups,
   * the report batch). One name always goes with one SQL text (PGlite throws otherwise).
   */
  name?: string;
}

export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<T>>;
}

export interface Transaction extends Queryable {
  /** Runs a script of several statements (migrations only; no parameters). */
  exec(sql: string): Promise<void>;
}

export type NotificationHandler = (payload: string) => void;

/**
 * A store connection role: `pool` serves queries and transactions; `listener` is the one
 * session that holds LISTEN (PostgreSQL only).
 */
export type ConnectionRole = 'pool' | 'listener';

/**
 * A change of a connection role's state. `lost` once when it goes down, `retry_failed` for every
 * reconnection attempt that failed (with the delay before the next), `restored` once when it is
 * back (with how long it was down and, for the listener, what it caught up on). Drivers report;
 * the app logs and counts.
 */
export type ConnectionEvent =
  | { role: ConnectionRole; state: 'lost'; err?: unknown }
  | { role: ConnectionRole; state: 'retry_failed'; attempt: number; nextDelayMs: number; err?: unknown }
  /**
   * `replayed` (listener): notifications published while it was down, delivered on its return;
   * `gap`: some were published too long ago to be replayed (the subscriber must resynchronize).
   */
  | { role: ConnectionRole; state: 'restored'; downMs: number; replayed?: number; gap?: boolean };

export interface StoreHealth {
  /** Whether live events can arrive: false while PostgreSQL's LISTEN session is down. */
  listening: boolean;
}

/** The database cannot be reached (down, restarting, refusing connections); worth retrying. */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
  constructor(options?: { cause?: unknown }) {
    super('the database is not reachable', options);
  }
}

export interface Db extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /** Runs a script of several statements (migrations only; no parameters). */
  exec(sql: string): Promise<void>;
  /** Runs `fn` in one transaction; rolls back when it throws. */
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>;
  /** Subscribes to a notification channel (LISTEN on PostgreSQL, in-process on PGlite). */
  listen(channel: string, handler: NotificationHandler): Promise<() => Promise<void>>;
  notify(channel: string, payload: string): Promise<void>;
  /** A statement of the caller stored and sent a notification itself (PostgreSQL): the stored ones are pruned now and then, as after notify. */
  notified?(): void;
  /** Pool figures for metrics. */
  stats(): { total: number; idle: number; waiting: number; /** fsync(2) calls of the embedded store on disk. */ syncs?: number };
  health(): StoreHealth;
  /** Subscribes to connection state changes (logs, metrics); returns the unsubscribe. */
  onConnection(handler: (event: ConnectionEvent) => void): () => void;
  close(): Promise<void>;
}

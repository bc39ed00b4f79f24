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
   * Names the statement so PostgreSQL parses and plans it once per connection (hot look-ups).
   * One name always goes with one SQL text. PGlite ignores it.
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

export interface Db extends Queryable {
  readonly kind: 'postgres' | 'pglite';
  /** Runs a script of several statements (migrations only; no parameters). */
  exec(sql: string): Promise<void>;
  /** Runs `fn` in one transaction; rolls back when it throws. */
  transaction<T>(fn: (tx: Transaction) => Promise<T>): Promise<T>;
  /** Subscribes to a notification channel (LISTEN on PostgreSQL, in-process on PGlite). */
  listen(channel: string, handler: NotificationHandler): Promise<() => Promise<void>>;
  notify(channel: string, payload: string): Promise<void>;
  /** Pool figures for metrics. */
  stats(): { total: number; idle: number; waiting: number };
  close(): Promise<void>;
}

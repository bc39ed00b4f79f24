import { RecentKeys } from '@rampart/plugin-kit';

/**
 * One request is one attempt, however many rule messages ModSecurity logs for it: each message
 * of a transaction carries the same `[unique_id "…"]` (the audit record's `unique_id`), or, where
 * the line has none, the same request key (`requestKeyOf`), so only the first detection of a
 * transaction counts an attempt, the others count 0. At most `maxIds` are remembered (a
 * request's messages are written together, so an old id is never seen again).
 */
export class SeenTransactions {
  private readonly ids: RecentKeys;

  constructor(maxIds = 10_000) {
    this.ids = new RecentKeys(maxIds);
  }

  /** 1 for the first message of a transaction (or one without an id), 0 for the others. */
  attempts(id: string | undefined): number {
    if (id === undefined || id === '') return 1;
    return this.ids.seen(id) ? 0 : 1;
  }

  get size(): number {
    return this.ids.size;
  }
}

const UNIQUE_ID_RE = /\[unique_id "([^"]*)"\]/;

/** The `[unique_id "…"]` tag of a ModSecurity error-log message. */
export function uniqueIdOf(message: string): string | undefined {
  return UNIQUE_ID_RE.exec(message)?.[1];
}

const URI_RE = /\[uri "([^"]*)"\]/;

/**
 * What identifies the request of an error-log message without `[unique_id]` (ModSecurity 2
 * without mod_unique_id, connectors that leave it out): the worker that served it (Apache's
 * `pid:tid`, nginx's worker pid and connection number `*N`, which serve one request at a time),
 * the client, the second it was logged in, and the request (nginx's request line, else the
 * `[uri "…"]` tag). Undefined when the worker or the request is unknown: then each message
 * counts, as before. Two identical requests on one keep-alive connection within one second count
 * once.
 */
export function requestKeyOf(message: string, worker: string | undefined, client: string, ts: number, request?: string): string | undefined {
  if (worker === undefined) return undefined;
  const what = request ?? URI_RE.exec(message)?.[1];
  if (what === undefined) return undefined;
  return `${worker} ${client} ${Number.isFinite(ts) ? Math.floor(ts) : ''} ${what}`;
}

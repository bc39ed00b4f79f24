import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { PGlite, parse as pgParse, protocol } from '@electric-sql/pglite';
import type { Db, NotificationHandler, QueryOptions, QueryResult, Transaction } from './db.ts';
import { lockDataDir, type LockOwner } from './data-dir-lock.ts';
import { makePrivate, restrictUmask } from './data-dir-permissions.ts';
import { StoreNodeFS, durableStartParams } from './pglite-node-fs.ts';
import { initializeDataDir } from './pglite-initdb.ts';

/**
 * The embedded default store. PGlite holds one connection, so every statement is
 * serialized through one promise chain; a transaction holds the chain until it ends.
 * Notifications stay in-process: one PGlite belongs to exactly one server process.
 */
export interface PgliteOptions {
  /**
   * false starts PGlite as it ships (fsync off, no fsync in its file system): only for
   * bench/pglite-ingest.ts, which measures what durability costs. Never configurable.
   */
  durable?: boolean;
  /** Recorded in the data directory's lock, for the message another process gets. */
  owner?: LockOwner;
}

/**
 * PostgreSQL inside PGlite keeps its shared memory in WebAssembly memory, which never shrinks once
 * touched, and touches all of it at start. shared_buffers 16 MB instead of PostgreSQL's 128 MB
 * (the store is small and the OS caches its files). PGlite runs one backend in single-user mode:
 * the per-backend arrays sized for 100 connections, 16 autovacuum workers and 10 WAL senders
 * were 4 MB more of it (shared_memory_size 24 MB → 20 MB; bench/results/server-footprint-before-after.md).
 */
const MEMORY_START_PARAMS = ['shared_buffers=16MB', 'max_connections=1', 'superuser_reserved_connections=0', 'autovacuum_worker_slots=1', 'max_wal_senders=0', 'max_replication_slots=0'].flatMap(
  (setting) => ['-c', setting],
);

/**
 * V8 compiles PGlite's WebAssembly lazily with its baseline compiler (Liftoff) and recompiles a
 * function with its optimizing one (TurboFan) once it has run "13 MB" of code (V8's tiering
 * budget). PostgreSQL's own start runs that much in hundreds of functions it then rarely runs
 * again: their optimized code and the compiler's memory (malloc arenas of its threads that stay
 * resident) were 55–65 MB of an idle server, and the compile took CPU from the start. A budget
 * 150 times larger leaves the start on baseline code while a function a workload keeps running
 * still tiers up (bench/pglite-ingest.ts: no change in CPU per report). Read when PGlite's module
 * is compiled and instantiated, so it is set right before the first PGlite starts, and only in a
 * process that runs one (a server on PostgreSQL keeps V8's default); it concerns only WebAssembly
 * (in the server, PGlite's and undici's HTTP parser).
 */
const WASM_TIERING_BUDGET = 2_000_000_000;
let tieringBudgetSet = false;
function setWasmTieringBudget(): void {
  if (tieringBudgetSet) return;
  setFlagsFromString(`--wasm-tiering-budget=${WASM_TIERING_BUDGET}`);
  tieringBudgetSet = true;
}

/**
 * PGlite runs each statement synchronously on this thread and settles its promise without a turn
 * of the event loop, and the store's fsync is synchronous too: a transaction of several
 * statements would run from BEGIN to COMMIT while no socket is read. Requests then reach the
 * report batcher one at a time, each after the previous batch ended, and every batch holds one
 * report. One turn of the loop before each statement lets the requests in flight move on (parse,
 * authenticate, queue their report) while a transaction runs, so the next batch takes them all.
 */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/*
 * Named statements (QueryOptions.name): parsed and planned once, then each call is one Bind,
 * Describe, Execute and Sync handed to PostgreSQL in one message. PGlite's own query() parses
 * the text again on every call and passes each protocol message to WebAssembly separately; for
 * the report batch's statements that was most of their time (bench/pglite-ingest.ts).
 */
function namedStatements(pglite: PGlite) {
  const prepared = new Map<string, { sql: string; types: number[] }>();
  const wire = protocol.serialize;
  const oneMessage = (parts: Uint8Array[]) => {
    const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  };
  // As PGlite's query() serializes parameters: by the type PostgreSQL inferred for each.
  const serialize = (v: unknown, type: number | undefined) => {
    if (v === null || v === undefined) return null;
    const serializer = type === undefined ? undefined : pglite.serializers[type];
    if (serializer) return serializer(v) as string;
    return typeof v === 'object' ? JSON.stringify(v) : String(v as string | number | boolean | bigint);
  };
  return (sql: string, params: readonly unknown[], name: string) =>
    pglite.runExclusive(async () => {
      let statement = prepared.get(name);
      if (statement && statement.sql !== sql) throw new Error(`statement name ${name} is already used for another SQL text`);
      if (!statement) {
        const described = await pglite.execProtocolStream(oneMessage([wire.parse({ name, text: sql }), wire.describe({ type: 'S', name }), wire.sync()]), { syncToFs: false });
        statement = { sql, types: pgParse.parseDescribeStatementResults(described) };
        prepared.set(name, statement);
      }
      const { types } = statement;
      const values = params.map((v, i) => serialize(v, types[i]));
      const messages = await pglite.execProtocolStream(oneMessage([wire.bind({ statement: name, values }), wire.describe({ type: 'P' }), wire.execute({}), wire.sync()]), {
        syncToFs: false,
      });
      return pgParse.parseResults(messages, pglite.parsers)[0]!;
    });
}

/** The WAL fsync after a COMMIT failed: the commit is in PostgreSQL's memory but maybe not on disk. */
class WalSyncError extends Error {
  constructor(cause: unknown) {
    super('the WAL fsync after a commit failed', { cause });
  }
}

/**
 * COMMIT with its WAL fsync made off the thread (pglite-node-fs.ts deferWalSyncs): requests are
 * read and queued meanwhile, while PostgreSQL runs nothing until the commit is on disk (the
 * caller holds the serialized chain), so nothing reads a commit before it is durable.
 */
async function durableCommit(pglite: PGlite, fs: StoreNodeFS | undefined): Promise<void> {
  if (!fs) return void (await pglite.exec('commit'));
  fs.deferWalSyncs(true);
  let failed: unknown = null;
  try {
    await pglite.exec('commit');
  } catch (err) {
    failed = err;
  }
  fs.deferWalSyncs(false);
  try {
    await fs.flushDeferred();
  } catch (err) {
    throw new WalSyncError(err);
  }
  if (failed) throw failed;
}

/** Locks the data directory and starts PGlite on it (in memory without one). */
async function startPglite(dataDir: string | undefined, options: PgliteOptions): Promise<{ pglite: PGlite; fs: StoreNodeFS | undefined; unlock: () => void }> {
  if (dataDir) {
    restrictUmask();
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  }
  // One process per data directory (data-dir-lock.ts); taken before PGlite touches a file.
  const unlock = dataDir ? lockDataDir(dataDir, options.owner ?? 'server') : () => {};
  if (dataDir) makePrivate(dataDir);
  // On disk, an acknowledged commit is on disk (pglite-node-fs.ts); in memory (tests) there is nothing to sync.
  const fs = dataDir && options.durable !== false ? new StoreNodeFS(dataDir) : undefined;
  try {
    if (fs && !existsSync(join(dataDir!, 'PG_VERSION'))) await initializeDataDir(dataDir!);
    setWasmTieringBudget();
    const pglite = fs
      ? await PGlite.create({ fs, startParams: [...durableStartParams(PGlite.defaultStartParams), ...MEMORY_START_PARAMS] })
      : dataDir
        ? await PGlite.create(dataDir)
        : await PGlite.create();
    return { pglite, fs, unlock };
  } catch (err) {
    unlock();
    throw err;
  }
}

export async function openPglite(dataDir: string | undefined, options: PgliteOptions = {}): Promise<Db> {
  const { pglite, fs, unlock } = await startPglite(dataDir, options);
  const handlers = new Map<string, Set<NotificationHandler>>();
  let chain: Promise<unknown> = Promise.resolve();
  let waiting = 0;

  /** A WAL fsync that failed after its COMMIT: like PostgreSQL after a PANIC, the store stops. */
  let broken: unknown = null;

  function serialize<T>(work: () => Promise<T>, evenIfBroken = false): Promise<T> {
    waiting += 1;
    const next = chain.then(() => {
      waiting -= 1;
      if (broken && !evenIfBroken) throw new Error('the embedded store stopped after a failed fsync', { cause: broken });
      return work();
    });
    chain = next.catch(() => {});
    return next;
  }

  const namedQuery = namedStatements(pglite);

  const commit = async () => {
    try {
      await durableCommit(pglite, fs);
    } catch (err) {
      if (err instanceof WalSyncError) broken = err.cause;
      throw err;
    }
  };

  const rawQuery = async <T>(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<QueryResult<T>> => {
    await nextTurn();
    const res = options?.name ? await namedQuery(sql, params ?? [], options.name) : await pglite.query<T>(sql, params as unknown[] | undefined);
    // PGlite reports affectedRows 0 for a SELECT; pg counts the rows returned. Agree with pg.
    return { rows: res.rows as T[], rowCount: Math.max(res.affectedRows ?? 0, res.rows.length) };
  };

  return {
    kind: 'pglite',
    query: (sql, params, options) => serialize(() => rawQuery(sql, params, options)),
    exec: (sql) => serialize(async () => void (await pglite.exec(sql))),
    transaction: (fn) =>
      serialize(async () => {
        const tx: Transaction = { query: rawQuery, exec: async (sql) => void (await pglite.exec(sql)) };
        await pglite.exec('begin');
        let result;
        try {
          result = await fn(tx);
        } catch (err) {
          await pglite.exec('rollback').catch(() => {});
          throw err;
        }
        await commit();
        return result;
      }),
    async listen(channel, handler) {
      let set = handlers.get(channel);
      if (!set) handlers.set(channel, (set = new Set()));
      set.add(handler);
      return async () => {
        set.delete(handler);
      };
    },
    async notify(channel, payload) {
      // Deliver after the current tick, as a database notification would arrive.
      setImmediate(() => {
        for (const h of handlers.get(channel) ?? []) h(payload);
      });
    },
    stats: () => ({ total: 1, idle: waiting === 0 ? 1 : 0, waiting, ...(fs ? { syncs: fs.syncs } : {}) }),
    // In-process: notifications cannot be lost and there is no connection to lose.
    health: () => ({ listening: true }),
    onConnection: () => () => {},
    close: () =>
      serialize(async () => {
        try {
          await pglite.close();
        } finally {
          unlock();
        }
      }, true),
  };
}

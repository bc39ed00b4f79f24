/*
 * A private PostgreSQL cluster for one benchmark: initdb into a new temporary directory with the
 * machine's own binaries (/usr/lib/postgresql/<newest>/bin, or PG_BIN), a postmaster listening on
 * a unix socket in that directory and on a free TCP port of 127.0.0.1, run as user postgres when
 * the bench runs as root. Stopped and removed when the bench ends: on stop(), on normal exit, on
 * SIGINT/SIGTERM and on an uncaught error.
 *
 * Durability as a normal server (the same as this machine's packaged PostgreSQL): fsync = on,
 * synchronous_commit = on, full_page_writes = on, wal_sync_method = fdatasync, shared_buffers =
 * 128MB. The data directory lies under os.tmpdir(); the results say its file system (a tmpfs would
 * make every fsync free, which `durableDisk` reports).
 *
 * cpuTicks() sums utime + stime (/proc/<pid>/stat) of exactly this cluster's processes: the
 * postmaster, every process whose parent it is (backends, checkpointer, WAL writer, ...), and the
 * reaped-children counters of the postmaster (cutime + cstime: backends that exited during a run
 * hand their time to it). Another PostgreSQL on the machine, or another bench's cluster, is never
 * counted.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statfsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { procStatFields } from './_cpu.ts';

/** Settings given to the postmaster on its command line (what a packaged server runs with). */
export const PG_CLUSTER_SETTINGS: Record<string, string> = {
  fsync: 'on',
  synchronous_commit: 'on',
  full_page_writes: 'on',
  wal_sync_method: 'fdatasync',
  shared_buffers: '128MB',
  max_connections: '100',
};

export interface PgCluster {
  /** postgres://postgres@127.0.0.1:<port>/postgres (TCP, as the server connects). */
  url: string;
  port: number;
  /** The directory of the data directory and the unix socket. */
  dir: string;
  /** The postmaster's pid. */
  pid: number;
  version: string;
  /** false when the data directory lies on a tmpfs (fsync costs nothing there). */
  durableDisk: boolean;
  /** CPU clock ticks (1/100 s) used so far by this cluster's processes, reaped children included. */
  cpuTicks: () => number;
  /**
   * Waits until the cluster's processes use under 5% of a core over a second (background work of
   * a server that just started, autovacuum after a load), at most `maxSeconds`; returns the
   * seconds waited.
   */
  quiet(maxSeconds?: number): Promise<number>;
  /** One line for a results file: version, settings, where the data lives. */
  describe(): string;
  stop(): Promise<void>;
}

const TMPFS_MAGIC = 0x01021994;

function pgBinDir(): string {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin', 'initdb'))) : [];
  if (versions.length === 0) throw new Error(`no PostgreSQL binaries under ${root} (install postgresql, or set PG_BIN)`);
  versions.sort((a, b) => Number(a) - Number(b));
  return join(root, versions.at(-1)!, 'bin');
}

/** uid and gid of user postgres when we are root (PostgreSQL refuses to run as root); else ours. */
function runAs(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (!line) throw new Error('running as root and there is no user postgres to run the bench cluster as');
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

async function run(cmd: string, args: string[], user: { uid: number; gid: number } | null, log: number): Promise<void> {
  const child = spawn(cmd, args, { stdio: ['ignore', log, log], ...user });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', resolve);
  });
  if (code !== 0) throw new Error(`${cmd} exited with ${code}`);
}

/**
 * CPU ticks of a postmaster and its children (see the file's header). A child reaped while its
 * siblings are listed would be counted neither as a child nor in the postmaster's reaped-children
 * counters (the sum went backwards once): the listing is taken again until those counters did not
 * change during it.
 */
export function clusterTicks(postmaster: number): number {
  const parent = String(postmaster);
  for (;;) {
    const before = procStatFields(postmaster);
    if (!before) return 0;
    let children = 0;
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      const f = procStatFields(pid);
      if (f && f[1] === parent) children += Number(f[11]) + Number(f[12]);
    }
    const after = procStatFields(postmaster);
    if (!after) return 0;
    const reaped = Number(after[13]) + Number(after[14]);
    if (reaped === Number(before[13]) + Number(before[14])) return Number(after[11]) + Number(after[12]) + reaped + children;
  }
}

/** Blocks the thread for `ms` (exit handlers cannot await). */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

export async function startPgCluster(settings: Record<string, string> = {}): Promise<PgCluster> {
  const bin = pgBinDir();
  const user = runAs();
  const dir = mkdtempSync(join(tmpdir(), 'rampart-bench-pg-'));
  const data = join(dir, 'data');
  if (user) chownSync(dir, user.uid, user.gid);
  const log = openSync(join(dir, 'log'), 'a');
  if (user) chownSync(join(dir, 'log'), user.uid, user.gid);
  let postmaster: ChildProcess | null = null;
  let stopped = false;

  // Synchronous: runs from 'exit' too. Fast shutdown (SIGINT), then immediate (SIGQUIT) after 5 s.
  const stopSync = () => {
    if (stopped) return;
    stopped = true;
    const pid = postmaster?.pid;
    if (pid && postmaster?.exitCode === null && postmaster.signalCode === null) {
      try {
        process.kill(pid, 'SIGINT');
        for (let waited = 0; existsSync(`/proc/${pid}`) && procStatFields(pid)?.[0] !== 'Z'; waited += 20) {
          if (waited === 5000) process.kill(pid, 'SIGQUIT');
          if (waited > 10_000) break;
          sleepSync(20);
        }
      } catch {
        // already gone
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const onSignal = (signal: NodeJS.Signals) => {
    stopSync();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('exit', stopSync);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const forget = () => {
    process.off('exit', stopSync);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };

  try {
    // --no-sync: initdb's own final flush only; the running cluster syncs as configured.
    await run(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync'], user, log);
    const port = await freePort();
    const all = { ...PG_CLUSTER_SETTINGS, ...settings, port: String(port), listen_addresses: '127.0.0.1', unix_socket_directories: dir };
    postmaster = spawn(join(bin, 'postgres'), ['-D', data, ...Object.entries(all).flatMap(([k, v]) => ['-c', `${k}=${v}`])], { stdio: ['ignore', log, log], ...user });
    const exited = new Promise<never>((_, reject) => postmaster!.once('exit', (code) => reject(new Error(`the bench cluster's postmaster exited with ${code} (see ${join(dir, 'log')})`))));
    exited.catch(() => undefined);
    const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
    let version = '';
    for (const deadline = Date.now() + 30_000; ; ) {
      const c = new pg.Client({ connectionString: url });
      try {
        await Promise.race([c.connect(), exited]);
        version = (await c.query<{ v: string }>("select current_setting('server_version') as v")).rows[0]!.v;
        await c.end();
        break;
      } catch (err) {
        await c.end().catch(() => undefined);
        if (Date.now() > deadline || postmaster.exitCode !== null) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const pid = postmaster.pid!;
    const durableDisk = statfsSync(dir).type !== TMPFS_MAGIC;
    return {
      url,
      port,
      dir,
      pid,
      version,
      durableDisk,
      cpuTicks: () => clusterTicks(pid),
      async quiet(maxSeconds = 600) {
        const t0 = performance.now();
        let last = clusterTicks(pid);
        for (;;) {
          await new Promise((r) => setTimeout(r, 1000));
          const now = clusterTicks(pid);
          const waited = (performance.now() - t0) / 1000;
          if (now - last < 5 || waited >= maxSeconds) return waited;
          last = now;
        }
      },
      describe: () =>
        `private PostgreSQL ${version} cluster (${bin}, initdb into ${durableDisk ? 'a temporary directory on disk' : 'a tmpfs: fsync costs nothing there'}; ${Object.entries({ ...PG_CLUSTER_SETTINGS, ...settings })
          .map(([k, v]) => `${k} = ${v}`)
          .join(', ')})`,
      async stop() {
        stopSync();
        forget();
      },
    };
  } catch (err) {
    stopSync();
    forget();
    throw err;
  }
}

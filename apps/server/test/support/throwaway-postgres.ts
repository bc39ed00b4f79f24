import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, chownSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * A PostgreSQL cluster of the test's own (initdb in a temp dir, its own port and socket
 * directory), for tests that stop and start PostgreSQL: the machine's shared cluster is never
 * touched. PostgreSQL refuses to run as root, so as root the binaries run as the `postgres` user
 * (runuser). `fsync=off`: a throwaway cluster needs no durability, and the tests run faster.
 */
/** POSTGRES_BIN, else the newest /usr/lib/postgresql/<version>/bin that has initdb (Debian's layout). */
function postgresBin(): string {
  if (process.env.POSTGRES_BIN) return process.env.POSTGRES_BIN;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => /^\d+$/.test(v) && existsSync(join(root, v, 'bin', 'initdb'))) : [];
  versions.sort((x, y) => Number(y) - Number(x));
  return join(root, versions[0] ?? '15', 'bin');
}
export const POSTGRES_BIN = postgresBin();
export const throwawayPostgresAvailable = existsSync(join(POSTGRES_BIN, 'initdb')) && existsSync(join(POSTGRES_BIN, 'pg_ctl'));
if (!throwawayPostgresAvailable && process.env.CI) throw new Error(`CI must provide PostgreSQL binaries in ${POSTGRES_BIN} (POSTGRES_BIN): the restart tests may not skip there`);

export interface ThrowawayPostgres {
  url: string;
  port: number;
  start(): Promise<void>;
  /** Fast shutdown: open sessions are terminated, as in `pg_ctl restart`. */
  stop(): Promise<void>;
  /** Immediate shutdown (no checkpoint, sessions cut): a crash as far as clients can tell. */
  crash(): Promise<void>;
  destroy(): Promise<void>;
}

/** A streaming standby of a throwaway cluster (pg_basebackup -R), which can be promoted. */
export interface ThrowawayStandby extends ThrowawayPostgres {
  promote(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function clusterDir(): Promise<{ dir: string; root: boolean; pg: (tool: string, args: string[]) => Promise<unknown> }> {
  const root = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'rampart-pg-'));
  if (root) chownSync(dir, Number((await run('id', ['-u', 'postgres'])).stdout), Number((await run('id', ['-g', 'postgres'])).stdout));
  const pg = (tool: string, args: string[]) => (root ? run('runuser', ['-u', 'postgres', '--', join(POSTGRES_BIN, tool), ...args]) : run(join(POSTGRES_BIN, tool), args));
  return { dir, root, pg };
}

function cluster(dir: string, port: number, pg: (tool: string, args: string[]) => Promise<unknown>): ThrowawayPostgres {
  const pgdata = join(dir, 'data');
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
  const c: ThrowawayPostgres = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    start: async () => void (await pg('pg_ctl', ['start', '-w', '-D', pgdata, '-o', options, '-l', join(dir, 'log')])),
    stop: async () => void (await pg('pg_ctl', ['stop', '-w', '-m', 'fast', '-D', pgdata])),
    crash: async () => void (await pg('pg_ctl', ['stop', '-w', '-m', 'immediate', '-D', pgdata])),
    async destroy() {
      await c.stop().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return c;
}

export async function startThrowawayPostgres(): Promise<ThrowawayPostgres> {
  const { dir, pg } = await clusterDir();
  const port = await freePort();
  await pg('initdb', ['-D', join(dir, 'data'), '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
  const c = cluster(dir, port, pg);
  await c.start();
  return c;
}

/** A standby of `primary` streaming its WAL (replication connections are trusted on loopback by initdb's --auth=trust). */
export async function startThrowawayStandby(primary: ThrowawayPostgres): Promise<ThrowawayStandby> {
  const { dir, pg } = await clusterDir();
  const port = await freePort();
  await pg('pg_basebackup', ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', join(dir, 'data'), '-R', '-X', 'stream', '--no-sync']);
  const c = cluster(dir, port, pg);
  await c.start();
  return { ...c, promote: async () => void (await pg('pg_ctl', ['promote', '-w', '-D', join(dir, 'data')])) };
}

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
  start(): Promise<void>;
  /** Fast shutdown: open sessions are terminated, as in `pg_ctl restart`. */
  stop(): Promise<void>;
  destroy(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export async function startThrowawayPostgres(): Promise<ThrowawayPostgres> {
  const root = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'rampart-pg-'));
  if (root) chownSync(dir, Number((await run('id', ['-u', 'postgres'])).stdout), Number((await run('id', ['-g', 'postgres'])).stdout));
  const pgdata = join(dir, 'data');
  const port = await freePort();
  const pg = (tool: string, args: string[]) => (root ? run('runuser', ['-u', 'postgres', '--', join(POSTGRES_BIN, tool), ...args]) : run(join(POSTGRES_BIN, tool), args));
  await pg('initdb', ['-D', pgdata, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
  const cluster: ThrowawayPostgres = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start: async () => void (await pg('pg_ctl', ['start', '-w', '-D', pgdata, '-o', options, '-l', join(dir, 'log')])),
    stop: async () => void (await pg('pg_ctl', ['stop', '-w', '-m', 'fast', '-D', pgdata])),
    async destroy() {
      await cluster.stop().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await cluster.start();
  return cluster;
}

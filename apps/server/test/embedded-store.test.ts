import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.ts';
import { DataDirLockedError, dataDirHolder, openStore } from '../src/store/index.ts';
import { embeddedEnv, exited, serverDir, startServerProcess } from './support/server-process.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

/*
 * The embedded store (PGlite) on disk: what it promises about durability, exclusive use of its
 * data directory and file permissions, proven on real files and real processes.
 */

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rampart-embedded-'));
  dirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('embedded store durability', { timeout: 180_000 }, () => {
  it('runs with fsync on and syncs the WAL to disk on every commit', async () => {
    const store = await openStore({ dataDir: join(tempDir(), 'data') });
    try {
      expect((await sqlOf(store).query<{ fsync: string }>('show fsync')).rows[0]!.fsync).toBe('on');
      expect((await sqlOf(store).query<{ synchronous_commit: string }>('show synchronous_commit')).rows[0]!.synchronous_commit).toBe('on');
      // Emscripten's fdatasync never reaches the file system: the WAL must be synced with fsync().
      expect((await sqlOf(store).query<{ wal_sync_method: string }>('show wal_sync_method')).rows[0]!.wal_sync_method).toBe('fsync');
      const before = sqlOf(store).stats().syncs!;
      for (let i = 0; i < 3; i += 1) await store.orgs.create({ gid: `RMP-GID-DURABLE${i}`, name: `Durable ${i}`, credits: 1, trust: 0.5 });
      // Each acknowledged commit made at least one fsync(2) of a real file descriptor.
      expect(sqlOf(store).stats().syncs! - before).toBeGreaterThanOrEqual(3);
    } finally {
      await store.close();
    }
  });
  // The crash half (SIGKILL right after acknowledgements, on both stores): test/faults/server-kill.test.ts.

  it('keeps its shared memory small: 16 MB of buffers, arrays sized for its one backend', async () => {
    const store = await openStore({ dataDir: join(tempDir(), 'data') });
    try {
      const show = async (name: string) => (await sqlOf(store).query<{ v: string }>(`select current_setting($1) as v`, [name])).rows[0]!.v;
      // PostgreSQL touches all of it at start, in WebAssembly memory that never shrinks.
      expect(await show('shared_buffers')).toBe('16MB');
      expect(await show('max_connections')).toBe('1');
      expect(await show('shared_memory_size')).toBe('20MB');
    } finally {
      await store.close();
    }
  });
});

/** `npx rampart …` as an operator runs it, from the repository root. */
function cli(dataDir: string, ...args: string[]) {
  return spawnSync(process.execPath, [join(serverDir, 'bin/rampart.js'), ...args], { cwd: join(serverDir, '../..'), env: embeddedEnv(dataDir), encoding: 'utf8' });
}

describe('one process per data directory', { timeout: 180_000 }, () => {
  it('refuses the CLI while the server runs, saying how to do it instead, and the server is unharmed', async () => {
    const dataDir = join(tempDir(), 'data');
    const server = await startServerProcess(dataDir, { expectDemo: true });
    try {
      expect(dataDirHolder(dataDir)).toEqual({ pid: server.child.pid, owner: 'server' });
      const r = cli(dataDir, 'key', 'create', '--username', 'admin@demo.rampart.local');
      expect(r.status).toBe(3);
      expect(r.stdout).toBe('');
      expect(r.stderr).toContain(`${dataDir} is in use by the Rampart server (pid ${server.child.pid})`);
      expect(r.stderr).toContain('stop the server first');
      expect(r.stderr).toContain('POST /api/v1/keys');
      // What the CLI could not do, the API does.
      const created = await fetch(`${server.base}/keys`, { method: 'POST', headers: { authorization: server.demoKey!, 'content-type': 'application/json' }, body: JSON.stringify({ label: 'instead of the CLI' }) });
      expect(created.status).toBe(201);
      const key = ((await created.json()) as { key: string }).key;
      expect((await fetch(`${server.base}/me`, { headers: { authorization: key } })).status).toBe(200);
    } finally {
      server.child.kill('SIGTERM');
      expect(await exited(server.child)).toBe(0);
    }
    // A clean stop releases the lock: the CLI now works on the same directory.
    expect(dataDirHolder(dataDir)).toBeNull();
    const r = cli(dataDir, 'key', 'create', '--username', 'admin@demo.rampart.local');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it('refuses to start the server while the rampart command holds the directory', async () => {
    const dataDir = join(tempDir(), 'data');
    // The CLI's own way in: openStore with owner 'cli', held for as long as a command runs.
    const store = await openStore({ dataDir, owner: 'cli' });
    try {
      await expect(openStore({ dataDir, owner: 'cli' })).rejects.toBeInstanceOf(DataDirLockedError);
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: serverDir, env: embeddedEnv(dataDir, { PORT: '0' }), stdio: ['ignore', 'pipe', 'pipe'] });
      let err = '';
      child.stderr.on('data', (b: Buffer) => (err += b.toString()));
      expect(await exited(child)).toBe(3);
      expect(err).toContain(`rampart server failed to start: ${dataDir} is in use by the rampart command (pid ${process.pid})`);
    } finally {
      await store.close();
    }
    expect(dataDirHolder(dataDir)).toBeNull();
  });

  it('takes over a stale lock of the former format (one rampart.lock file) whose process is gone, and removes it', async () => {
    const dataDir = join(tempDir(), 'data');
    mkdirSync(dataDir, { recursive: true });
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    writeFileSync(join(dataDir, 'rampart.lock'), JSON.stringify({ pid: Number(gone.stdout), owner: 'server' }));
    const store = await openStore({ dataDir, owner: 'cli' });
    expect(dataDirHolder(dataDir)).toEqual({ pid: process.pid, owner: 'cli' });
    expect(existsSync(join(dataDir, 'rampart.lock'))).toBe(false);
    await store.close();
    expect(dataDirHolder(dataDir)).toBeNull();
  });

  it('refuses while a process of the former format holds rampart.lock', async () => {
    const dataDir = join(tempDir(), 'data');
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(join(dataDir, 'rampart.lock'), JSON.stringify({ pid: process.pid, owner: 'server' }));
    await expect(openStore({ dataDir, owner: 'cli' })).rejects.toThrow(`${dataDir} is in use by the Rampart server (pid ${process.pid})`);
  });

  it('resolves DATA_DIR from the server package, whatever the working directory (npm start, npm run rampart, npx rampart)', () => {
    expect(loadConfig({}).dataDir).toBe(join(serverDir, 'data'));
    expect(loadConfig({ DATA_DIR: './elsewhere' }).dataDir).toBe(join(serverDir, 'elsewhere'));
    expect(loadConfig({ DATA_DIR: '/var/lib/rampart' }).dataDir).toBe('/var/lib/rampart');
  });
});

/** Every directory and file under `dir` (itself included) with its permission bits, as octal text. */
function modes(dir: string): Map<string, { dir: boolean; mode: string }> {
  const out = new Map<string, { dir: boolean; mode: string }>([[dir, { dir: true, mode: (statSync(dir).mode & 0o777).toString(8) }]]);
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const path = join(entry.parentPath, entry.name);
    if (entry.isDirectory() || entry.isFile()) out.set(path, { dir: entry.isDirectory(), mode: (statSync(path).mode & 0o777).toString(8) });
  }
  return out;
}

describe('private by default', { timeout: 180_000 }, () => {
  it('keeps the data directory 0700 and its files 0600: existing ones fixed at open, new ones created so, whatever the umask', async () => {
    const dataDir = join(tempDir(), 'data');
    const umask = process.umask(0);
    try {
      let store = await openStore({ dataDir });
      await store.close();
      // A store as it was before: world-writable, as PGlite left it under a permissive umask.
      for (const [path, m] of modes(dataDir)) chmodSync(path, m.dir ? 0o777 : 0o666);
      process.umask(0);
      store = await openStore({ dataDir });
      try {
        // New relation files and WAL written after the store opened.
        await sqlOf(store).exec('create table permission_probe (x int); insert into permission_probe values (1);');
        const all = modes(dataDir);
        expect(all.size).toBeGreaterThan(100);
        const locks = [...all].filter(([path]) => path.includes('rampart.lock'));
        expect(locks.length).toBeGreaterThan(0);
        for (const [, m] of locks) expect(m).toEqual({ dir: false, mode: '600' });
        const wrong = [...all].filter(([, m]) => m.mode !== (m.dir ? '700' : '600'));
        expect(wrong).toEqual([]);
      } finally {
        await store.close();
      }
    } finally {
      process.umask(umask);
    }
  });
});

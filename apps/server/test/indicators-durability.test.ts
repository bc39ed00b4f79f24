import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestDatabase, postgresAvailable } from './support/databases.ts';

/*
 * A report is acknowledged only once it is durably stored: the server process is killed with
 * SIGKILL the moment each 200 arrives, restarted on the same store, and every acknowledged report
 * must still be there. Real processes, on the embedded store (DATA_DIR) and on PostgreSQL.
 */

const serverDir = fileURLToPath(new URL('..', import.meta.url));
const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function startServer(env: Record<string, string>): Promise<{ child: ChildProcess; base: string; output: () => string }> {
  const { DATABASE_URL: _ignored, ...rest } = process.env;
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: serverDir, env: { ...rest, PORT: '0', LOG_LEVEL: 'info', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  cleanups.push(() => void child.kill('SIGKILL'));
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
  const deadline = Date.now() + 90_000;
  while (!/control plane listening/.test(out)) {
    if (child.exitCode !== null) throw new Error(`server exited ${child.exitCode}: ${out}`);
    if (Date.now() > deadline) throw new Error(`server did not start: ${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const line = out.split('\n').find((l) => l.includes('control plane listening'))!;
  return { child, base: (JSON.parse(line) as { url: string }).url, output: () => out };
}

async function killNow(child: ChildProcess): Promise<void> {
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await exited;
}

async function demoKey(server: { output: () => string }): Promise<string> {
  const deadline = Date.now() + 30_000;
  let key: string | undefined;
  while (!(key = /Authorization: (rmp_[0-9a-f]{12}_[A-Za-z0-9_-]{43})/.exec(server.output())?.[1]) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  if (!key) throw new Error(`no demo key printed: ${server.output()}`);
  return key;
}

const stores: Array<{ name: string; env: () => Promise<Record<string, string>> }> = [
  {
    name: 'embedded store',
    env: async () => {
      const dir = mkdtempSync(join(tmpdir(), 'rampart-durable-'));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      return { DATA_DIR: dir };
    },
  },
];
if (postgresAvailable) {
  stores.push({
    name: 'PostgreSQL',
    env: async () => {
      const db = await createTestDatabase();
      cleanups.push(() => db.drop());
      return { DATABASE_URL: db.url };
    },
  });
}

describe.each(stores)('acknowledged reports survive a crash on the $name', (store) => {
  it('keeps every report answered 200 when the server is killed right after the answer', { timeout: 240_000 }, async () => {
    const env = await store.env();
    const reports = [
      { url: '/files', body: { sha256: 'AB'.repeat(32), file_type: 'application/pdf', confidence: 0.8 }, check: `/files/${'ab'.repeat(32)}` },
      { url: '/domains', body: { domain: 'Crash.Example.', confidence: 0.8 }, check: '/domains/crash.example' },
      { url: '/urls', body: { url: 'http://crash.example/after', confidence: 0.8 }, check: `/urls/${encodeURIComponent('http://crash.example/after')}` },
    ];
    let server = await startServer(env);
    const key = await demoKey(server);
    for (const report of reports) {
      const res = await fetch(`${server.base}${report.url}`, { method: 'POST', headers: { authorization: key, 'content-type': 'application/json' }, body: JSON.stringify(report.body) });
      expect(res.status).toBe(200);
      await killNow(server.child);
      server = await startServer(env);
    }
    for (const report of reports) {
      const res = await fetch(`${server.base}${report.check}`, { headers: { authorization: key } });
      expect(res.status, report.check).toBe(200);
      expect((await res.json()).total_reports).toBe(1);
    }
    await killNow(server.child);
  });
});

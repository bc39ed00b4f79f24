import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { Ipv4Page, VersionRecord } from '@rampart/contracts';
import { openStore, type Store } from '../src/store/index.ts';

/*
 * The two programs operators run, as real processes: the server (`npm start`) on the embedded
 * store with its first-start demo organization, and the `rampart` CLI.
 */

const serverDir = fileURLToPath(new URL('..', import.meta.url));
const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rampart-proc-'));
  dirs.push(dir);
  return dir;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Environment without the test runner's DATABASE_URL: these processes use the embedded store. */
/** The embedded store of a data directory the CLI left (it holds no lock once it has exited). */
async function withStore<T>(dataDir: string, fn: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore({ dataDir });
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

function env(dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const { DATABASE_URL: _ignored, ...rest } = process.env;
  return { ...rest, DATA_DIR: dataDir, LOG_LEVEL: 'warn', ...extra };
}

interface Started {
  child: ChildProcess;
  output: () => string;
}

async function startServer(dataDir: string): Promise<Started> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: serverDir, env: env(dataDir, { PORT: '0', LOG_LEVEL: 'info' }), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
  const deadline = Date.now() + 60_000;
  while (!/control plane listening/.test(out)) {
    if (child.exitCode !== null) throw new Error(`server exited ${child.exitCode}: ${out}`);
    if (Date.now() > deadline) throw new Error(`server did not start: ${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, output: () => out };
}

async function stop(child: ChildProcess): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  return exited;
}

function listeningUrl(out: string): string {
  const line = out.split('\n').find((l) => l.includes('control plane listening'))!;
  return (JSON.parse(line) as { url: string }).url;
}

describe('npm start on the embedded store', { timeout: 180_000 }, () => {
  it('creates the demo organization once, prints a working curl line, and shuts down cleanly', async () => {
    const dataDir = tempDir();
    const first = await startServer(dataDir);
    const deadline = Date.now() + 10_000;
    while (!/Authorization: rmp_/.test(first.output()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const out = first.output();
    const key = /Authorization: (rmp_[0-9a-f]{12}_[A-Za-z0-9_-]{43})/.exec(out)?.[1];
    expect(key).toBeDefined();
    const base = listeningUrl(out);
    expect(out).toContain(`curl -s ${base}/version`);
    expect(out).toContain(`curl -s -H "Authorization: ${key}" "${base}/ips?ts=0"`);

    const version = await fetch(`${base}/version`);
    expect(version.status).toBe(200);
    VersionRecord.parse(await version.json());
    const page = await fetch(`${base}/ips?ts=0`, { headers: { Authorization: key! } });
    expect(page.status).toBe(200);
    const body = Ipv4Page.parse(await page.json());
    expect(body.body).toEqual([]);
    expect(body.header.user.username).toBe('admin@demo.rampart.local');
    expect(await stop(first.child)).toBe(0);

    // Second start on the same data: no new demo, the same key still works (persisted store).
    const second = await startServer(dataDir);
    expect(second.output()).not.toContain('demo organization');
    const again = await fetch(`${listeningUrl(second.output())}/ips?ts=0`, { headers: { Authorization: key! } });
    expect(again.status).toBe(200);
    expect(await stop(second.child)).toBe(0);
  });
});

function rampart(dataDir: string, ...args: string[]) {
  const r = spawnSync(process.execPath, ['bin/rampart.js', ...args], { cwd: serverDir, env: env(dataDir), encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('rampart CLI', { timeout: 120_000 }, () => {
  const dataDir = tempDir();

  it('has --help on every command', () => {
    for (const cmd of [[], ['org'], ['org', 'create'], ['org', 'grant-coins'], ['org', 'set-trust'], ['user', 'create'], ['key', 'create'], ['key', 'revoke'], ['migrate'], ['openapi']]) {
      const r = rampart(dataDir, ...cmd, '--help');
      expect(r.code, cmd.join(' ')).toBe(0);
      expect(r.stdout).toMatch(/^Usage: rampart/);
    }
  });

  it('creates an organization, a user and a key, grants coins, sets trust and revokes the key', async () => {
    const org = rampart(dataDir, 'org', 'create', '--name', 'CLI Org', '--credits', '50', '--trust', '0.7');
    expect(org.code, org.stderr).toBe(0);
    const created = JSON.parse(org.stdout) as { gid: string; credit_tokens: number; trust: number };
    expect(created).toMatchObject({ credit_tokens: 50, trust: 0.7 });
    expect(created.gid).toMatch(/^RMP-GID-/);

    const grant = rampart(dataDir, 'org', 'grant-coins', created.gid, '25');
    expect(JSON.parse(grant.stdout)).toEqual({ gid: created.gid, credit_tokens: 75, debit_tokens: 0, balance: 75 });
    expect(JSON.parse(rampart(dataDir, 'org', 'set-trust', created.gid, '0.9').stdout)).toEqual({ gid: created.gid, trust: 0.9, previous_trust: 0.7 });

    const user = rampart(dataDir, 'user', 'create', '--org', created.gid, '--username', 'ops@cli.example', '--role', '3');
    expect(user.code, user.stderr).toBe(0);
    expect(JSON.parse(user.stdout)).toMatchObject({ username: 'ops@cli.example', role: { id: 3, name: 'admin' } });

    const key = rampart(dataDir, 'key', 'create', '--username', 'ops@cli.example', '--label', 'ci');
    const issued = JSON.parse(key.stdout) as { key_id: string; key: string };
    expect(issued.key).toMatch(new RegExp(`^rmp_${issued.key_id}_[A-Za-z0-9_-]{43}$`));
    expect(JSON.parse(rampart(dataDir, 'key', 'revoke', issued.key_id).stdout)).toEqual({ key_id: issued.key_id, username: 'ops@cli.example', organization: created.gid, revoked: true });

    // Operator actions from the CLI are in the audit log, as the API's are.
    const audit = await withStore(dataDir, (store) => store.operators.audit({ orgId: null, action: null, beforeId: null, limit: 10 }));
    expect(audit.map((e) => [e.action, e.organization, e.address])).toEqual([
      ['key.revoke', created.gid, 'local (rampart CLI)'],
      ['key.create', created.gid, 'local (rampart CLI)'],
      ['user.create', created.gid, 'local (rampart CLI)'],
      ['organization.update', created.gid, 'local (rampart CLI)'],
      ['organization.grant_coins', created.gid, 'local (rampart CLI)'],
      ['organization.create', created.gid, 'local (rampart CLI)'],
    ]);
    expect(audit[0]!.actor).toMatch(/^cli:/);

    const again = rampart(dataDir, 'key', 'revoke', issued.key_id);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(`rampart: no active key ${issued.key_id}\n`);
  });

  it('refuses bad input with a clear message and a non-zero exit', () => {
    const trust = rampart(dataDir, 'org', 'set-trust', 'RMP-GID-X', '1.5');
    expect(trust.code).not.toBe(0);
    expect(trust.stderr).toContain('expected a number from 0 to 1');
    const unknown = rampart(dataDir, 'org', 'grant-coins', 'RMP-GID-NOPE', '5');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe('rampart: no organization RMP-GID-NOPE\n');
    const noUser = rampart(dataDir, 'key', 'create', '--username', 'nobody@cli.example');
    expect(noUser.code).toBe(1);
    expect(noUser.stderr).toMatch(/^rampart: .*nobody@cli\.example/);
    const missing = rampart(dataDir, 'org', 'create');
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain("required option '--name <name>' not specified");
  });
});

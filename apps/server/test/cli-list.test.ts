import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { formatTable, listAgents, listDecisions, listKeys, listOrgs, listTable, listUsers } from '../src/cli/list-commands.ts';
import { openStore, type Store } from '../src/store/index.ts';
import { sqlOf } from '../src/store/sql-handle.ts';
import { registerAgent } from './support/agents.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';
import { createTestDatabase, driverCases, postgresAvailable } from './support/databases.ts';

/*
 * `rampart org|user|key|agent|decision list`: the rows on both drivers, with every time stamp
 * pinned by SQL so the expected tables are literal; then the real process on an embedded store
 * (table, --json, the plural aliases, an unknown organization).
 */

const T = '2026-01-02T03:04:05.000Z';

async function seed(store: Store, app: FastifyInstance): Promise<{ org: TestOrg; gaid: string; keyIds: string[] }> {
  const org = await seedOrg(store, { name: 'List Acme', credits: 500, trust: 0.7 });
  const { config } = await registerAgent(app, org.keys.admin, { gaid: 'RMP-AGENT-ID-LIST01' });
  for (const [url, body] of [
    ['/ips/45.77.99.9', { decision: 1, ttl: 2000000000 }],
    ['/domains/evil.example.com', { decision: 1 }],
    ['/ips/45.77.10.2', { decision: 0 }],
  ] as const) {
    const res = await app.inject({ method: 'PUT', url: `/api/v1${url}`, headers: { authorization: org.keys.contributor }, payload: body });
    expect(res.statusCode, res.body).toBe(200);
  }
  const sql = sqlOf(store);
  await sql.query('update organizations set created_at = $1', [T]);
  await sql.query('update users set created_at = $1', [T]);
  await sql.query('update api_keys set created_at = $1, last_used_at = null', [T]);
  await sql.query(`update ipv4_decisions set updated_at = $1::timestamptz + (case when decision = 1 then interval '2 seconds' else interval '0 seconds' end)`, [T]);
  await sql.query(`update domain_decisions set updated_at = $1::timestamptz + interval '1 second'`, [T]);
  await sql.query(`update agents set last_checkin_at = $1, last_checkin_via = 'sync', reported_version = 'v0.1.0', hostname = 'edge01'`, [T]);
  const keyIds = (await store.keys.listForOrg(org.org.id)).map((k) => k.key_id);
  await store.keys.revoke(keyIds[0]!);
  await sql.query('update api_keys set revoked_at = $1 where key_id = $2', [T, keyIds[0]]);
  expect(config.gaid).toBe('RMP-AGENT-ID-LIST01');
  return { org, gaid: config.gaid, keyIds };
}

describe.each(driverCases())('rampart list commands on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let s: Awaited<ReturnType<typeof seed>>;
  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    s = await seed(store, app);
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it('lists organizations', async () => {
    const gid = s.org.org.gid;
    expect(formatTable(await listOrgs(store), ['gid', 'name', 'trust', 'delay', 'balance', 'users', 'created_at'])).toBe(
      [
        `GID${' '.repeat(gid.length - 3)}  NAME       TRUST  DELAY  BALANCE  USERS  CREATED_AT`,
        `${gid}  List Acme  0.7    0      500      3      ${T}`,
        '',
      ].join('\n'),
    );
  });

  it('lists users, keys, agents and decisions of one organization', async () => {
    const gid = s.org.org.gid;
    const suffix = gid.slice(-8).toLowerCase();
    const users = await listUsers(store, gid);
    expect(users.map((u) => [u.username, u.role, u.name, u.failed_logins, u.created_at])).toEqual([
      // Roles as {id, name}, the API's code with its name (issue 37).
      [`reader.${suffix}@example.org`, { id: 1, name: 'reader' }, '', 0, T],
      [`contributor.${suffix}@example.org`, { id: 2, name: 'contributor' }, '', 0, T],
      [`admin.${suffix}@example.org`, { id: 3, name: 'admin' }, '', 0, T],
    ]);
    expect(await listKeys(store, gid)).toEqual([
      { key_id: s.keyIds[0], username: `reader.${suffix}@example.org`, label: '', created_at: T, last_used_at: null, revoked_at: T },
      { key_id: s.keyIds[1], username: `contributor.${suffix}@example.org`, label: '', created_at: T, last_used_at: null, revoked_at: null },
      { key_id: s.keyIds[2], username: `admin.${suffix}@example.org`, label: '', created_at: T, last_used_at: null, revoked_at: null },
    ]);
    // Its last check-in is long past: silent since then (contracts agent-state.ts).
    expect(formatTable(await listAgents(store, gid), ['gaid', 'state', 'state_since', 'last_checkin_at', 'via', 'version', 'hostname', 'live_keys'])).toBe(
      [
        'GAID                 STATE   STATE_SINCE               LAST_CHECKIN_AT           VIA   VERSION  HOSTNAME  LIVE_KEYS',
        `RMP-AGENT-ID-LIST01  silent  ${T}  ${T}  sync  v0.1.0   edge01    1`,
        '',
      ].join('\n'),
    );
    const by = `contributor.${suffix}@example.org`;
    const pad = ' '.repeat(by.length - 6);
    expect(listTable('decision', await listDecisions(store, gid, { limit: 1000 }))).toBe(
      [
        `KIND    VALUE             DECISION   TTL                       UPDATED_AT                HELD   SCORE  SET_BY${pad}  REASON`,
        `ipv4    45.77.99.9        block      2033-05-18T03:33:20.000Z  2026-01-02T03:04:07.000Z  false  -      ${by}  -`,
        `domain  evil.example.com  block      -                         2026-01-02T03:04:06.000Z  false  -      ${by}  -`,
        `ipv4    45.77.10.2        whitelist  -                         2026-01-02T03:04:05.000Z  false  -      ${by}  -`,
        '',
      ].join('\n'),
    );
    // Paged internally past a limit smaller than the list, and filtered.
    expect((await listDecisions(store, gid, { limit: 2 })).map((d) => d.value)).toEqual(['45.77.99.9', 'evil.example.com']);
    expect((await listDecisions(store, gid, { kind: 'ipv4', decision: 0, limit: 10 })).map((d) => d.value)).toEqual(['45.77.10.2']);
    expect((await listDecisions(store, gid, { text: 'EVIL', limit: 10 })).map((d) => d.value)).toEqual(['evil.example.com']);
    await expect(listUsers(store, 'RMP-GID-NOPE')).rejects.toMatchObject({ detail: 'no organization RMP-GID-NOPE' });
  });
});

describe('rampart list commands as a process on an embedded store', { timeout: 120_000 }, () => {
  const serverDir = fileURLToPath(new URL('..', import.meta.url));
  const dataDir = mkdtempSync(join(tmpdir(), 'rampart-list-cli-'));
  let gid = '';
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
  const rampart = (...args: string[]) => {
    const { DATABASE_URL: _ignored, ...rest } = process.env;
    const r = spawnSync(process.execPath, ['bin/rampart.js', ...args], { cwd: serverDir, env: { ...rest, DATA_DIR: dataDir, LOG_LEVEL: 'warn' }, encoding: 'utf8' });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  beforeAll(async () => {
    const store = await openStore({ dataDir });
    const app = await testApp(store);
    gid = (await seed(store, app)).org.org.gid;
    await app.close();
    await store.close();
  });

  it('prints a table, JSON with --json, answers to the plural nouns, and names an unknown organization', () => {
    const table = rampart('orgs', 'list');
    expect(table.stderr).toBe('');
    expect(table.stdout).toBe(`GID${' '.repeat(gid.length - 3)}  NAME       TRUST  DELAY  BALANCE  USERS  CREATED_AT\n${gid}  List Acme  0.7    0      500      3      ${T}\n`);
    const json = rampart('agent', 'list', '--org', gid, '--json');
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual([{ gaid: 'RMP-AGENT-ID-LIST01', state: 'silent', state_since: T, last_checkin_at: T, via: 'sync', version: 'v0.1.0', hostname: 'edge01', live_keys: 1 }]);
    const decisions = rampart('decisions', 'list', '--org', gid, '--decision', '0', '--json');
    const by = `contributor.${gid.slice(-8).toLowerCase()}@example.org`;
    expect(JSON.parse(decisions.stdout)).toEqual([{ kind: 'ipv4', value: '45.77.10.2', decision: 0, ttl: null, updated_at: T, held: false, score: null, set_by: by, reason: null }]);
    // Numbers as numbers (delay), roles as {id, name} (issue 37).
    expect(JSON.parse(rampart('orgs', 'list', '--json').stdout)).toEqual([{ gid, name: 'List Acme', trust: 0.7, delay: 0, balance: 500, users: 3, created_at: T }]);
    expect((JSON.parse(rampart('users', 'list', '--org', gid, '--json').stdout) as Array<{ role: unknown }>).map((u) => u.role)).toEqual([
      { id: 1, name: 'reader' },
      { id: 2, name: 'contributor' },
      { id: 3, name: 'admin' },
    ]);
    expect(rampart('users', 'list', '--org', gid).stdout.split('\n')[0]).toBe(`GUID${' '.repeat(39)}USERNAME                          ROLE         NAME  FAILED_LOGINS  CREATED_AT`);
    const unknown = rampart('key', 'list', '--org', 'RMP-GID-NOPE');
    expect(unknown).toEqual({ code: 1, stdout: '', stderr: 'rampart: no organization RMP-GID-NOPE\n' });
    const badKind = rampart('decision', 'list', '--org', gid, '--kind', 'asn');
    expect(badKind.code).toBe(1);
    expect(badKind.stderr.split('\n')[0]).toBe("error: option '--kind <kind>' argument 'asn' is invalid. expected ipv4, domain, url or file");
  });
});

// On PostgreSQL the CLI is one more client of the database the servers share: what it changes
// while a server runs is what that server answers next (auth cache off, as AUTH_CACHE_SECONDS=0).
describe.skipIf(!postgresAvailable)('rampart commands that change state, beside a running server on PostgreSQL', { timeout: 120_000 }, () => {
  const serverDir = fileURLToPath(new URL('..', import.meta.url));
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let store: Store;
  let app: FastifyInstance;
  let org: TestOrg;
  // Asynchronous, so the server in this process keeps answering while the command runs.
  const rampart = (...args: string[]) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const { DATA_DIR: _ignored, ...rest } = process.env;
      const child = spawn(process.execPath, ['bin/rampart.js', ...args], { cwd: serverDir, env: { ...rest, DATABASE_URL: db.url, LOG_LEVEL: 'warn' } });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      child.once('exit', (code) => resolve({ code, stdout, stderr }));
    });
  const me = (key: string) => app.inject({ url: '/api/v1/me', headers: { authorization: key } });
  beforeAll(async () => {
    db = await createTestDatabase();
    store = await openStore({ databaseUrl: db.url });
    app = await testApp(store);
    org = await seedOrg(store, { name: 'Live Acme', credits: 100, trust: 0.5 });
  });
  afterAll(async () => {
    await app?.close();
    await store?.close();
    await db?.drop();
  });

  it('grants coins, sets trust and revokes a key; the running server answers with the change at once', async () => {
    const before = await me(org.keys.reader);
    expect(before.statusCode).toBe(200);
    const grant = await rampart('org', 'grant-coins', org.org.gid, '25');
    expect(grant.code, grant.stderr).toBe(0);
    expect(JSON.parse(grant.stdout)).toEqual({ gid: org.org.gid, credit_tokens: 125, debit_tokens: 0, balance: 125 });
    const trust = await rampart('org', 'set-trust', org.org.gid, '0.8');
    expect(JSON.parse(trust.stdout)).toEqual({ gid: org.org.gid, trust: 0.8, previous_trust: 0.5 });
    expect((await me(org.keys.admin)).json().organization).toMatchObject({ balance: 125, trust: 0.8 });

    const keyId = org.keys.reader.split('_')[1]!;
    const revoked = await rampart('key', 'revoke', keyId);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(JSON.parse(revoked.stdout)).toEqual({ key_id: keyId, username: `reader.${org.org.gid.slice(-8).toLowerCase()}@example.org`, organization: org.org.gid, revoked: true });
    expect((await me(org.keys.reader)).statusCode).toBe(401);
    expect((await me(org.keys.admin)).statusCode).toBe(200);
  });
});

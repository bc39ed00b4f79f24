import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DecisionListResponse, WhyResponse } from '@rampart/contracts';
import { decideFromCli, kindOfValue, ttlSeconds } from '../src/cli/change-commands.ts';
import { listDecisions } from '../src/cli/list-commands.ts';
import { openStore, type Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';

/*
 * `rampart decision add|clear` (issue 37 item 6): through services/decisions.ts as the API's
 * PUTs are, so the server answers with the decision at once, with its reason and `cli:<user>`;
 * each change audited. On both drivers through the function, then as a real process.
 */

describe('reading a value and a ttl', () => {
  it('takes the kind from the value', () => {
    expect(['45.77.1.2', '45.77.0.0/16', 'AB'.repeat(16), 'ab'.repeat(20), 'ab'.repeat(32), 'https://x.example/a', 'evil.example.com', 'ab'.repeat(17)].map(kindOfValue)).toEqual([
      'ipv4',
      'ipv4',
      'file',
      'file',
      'file',
      'url',
      'domain',
      'domain',
    ]);
  });
  it('reads durations and refuses anything else', () => {
    expect(['3600', '90m', '24h', '7d', '1s'].map(ttlSeconds)).toEqual([3600, 5400, 86_400, 604_800, 1]);
    for (const bad of ['0', '-5', '1w', '1.5h', '', '3651d']) expect(() => ttlSeconds(bad), bad).toThrow(/expected a duration/);
  });
});

describe.each(driverCases())('rampart decision add|clear on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { name: 'CLI Decisions Acme' });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });
  const get = async (url: string) => (await app.inject({ url: `/api/v1${url}`, headers: { authorization: acme.keys.reader } })).json() as unknown;

  it('sets a block with ttl and reason, a whitelist, and clears; the API answers each at once; each audited', async () => {
    const now = 1_900_000_000;
    const block = await decideFromCli(store, { org: acme.org.gid, value: '45.77.60.0/24', decision: 1, ttl: 3600, reason: 'scanner' }, now);
    expect(block).toMatchObject({ organization: acme.org.gid, kind: 'ipv4', value: '45.77.60.0/24', decision: 1, ttl: '2030-03-17T18:46:40.000Z', reason: 'scanner' });
    expect(block.set_by).toMatch(/^cli:/);
    const white = await decideFromCli(store, { org: acme.org.gid, value: 'Partner.Example.ORG', decision: 0, reason: 'partner' });
    expect(white).toMatchObject({ kind: 'domain', value: 'partner.example.org', decision: 0, ttl: null });

    const listed = DecisionListResponse.parse(await get('/decisions'));
    expect(listed.items.map((d) => [d.value, d.decision, d.ttl, d.reason, d.set_by])).toEqual([
      ['partner.example.org', 0, null, 'partner', block.set_by],
      ['45.77.60.0/24', 1, now + 3600, 'scanner', block.set_by],
    ]);
    const why = WhyResponse.parse(await get('/why?kind=ipv4&value=45.77.60.9'));
    expect(why.decision).toMatchObject({ decision: 1, on: '45.77.60.0/24', reason: 'scanner', set_by: block.set_by });

    const cleared = await decideFromCli(store, { org: acme.org.gid, value: '45.77.60.0/24', decision: -1 });
    expect(cleared).toMatchObject({ kind: 'ipv4', value: '45.77.60.0/24', decision: -1, reason: null });
    expect(DecisionListResponse.parse(await get('/decisions')).items.map((d) => d.value)).toEqual(['partner.example.org']);
    expect((await listDecisions(store, acme.org.gid, { limit: 10 })).map((r) => [r.value, r.decision, r.ttl, r.reason, r.set_by])).toEqual([['partner.example.org', 0, null, 'partner', block.set_by]]);

    const audit = await store.operators.audit({ orgId: acme.org.id, action: 'decision.', beforeId: null, limit: 10 });
    expect(audit.map((e) => [e.action, e.target, e.detail.reason, e.address])).toEqual([
      ['decision.clear', 'ipv4:45.77.60.0/24', null, 'local (rampart CLI)'],
      ['decision.set', 'domain:partner.example.org', 'partner', 'local (rampart CLI)'],
      ['decision.set', 'ipv4:45.77.60.0/24', 'scanner', 'local (rampart CLI)'],
    ]);
  });

  it('refuses bad input naming what failed, and changes nothing', async () => {
    const refusal = (p: Promise<unknown>) => p.then(() => 'accepted', (err: { detail?: string }) => err.detail);
    expect(await refusal(decideFromCli(store, { org: 'RMP-GID-NOPE', value: '45.77.1.1', decision: 1 }))).toBe('no organization RMP-GID-NOPE');
    expect(await refusal(decideFromCli(store, { org: acme.org.gid, value: '45.77.1.1/33', kind: 'ipv4', decision: 1 }))).toBe('value: not an IPv4 address or CIDR network');
    expect(await refusal(decideFromCli(store, { org: acme.org.gid, value: 'xyz', kind: 'file', decision: 1 }))).toBe('value: not an MD5, SHA1 or SHA256 digest in hex');
    expect(await refusal(decideFromCli(store, { org: acme.org.gid, value: 'bad.example.com', decision: 1, ttl: 60 }))).toBe('--ttl applies only to a block of an IPv4 address or network');
    expect(await refusal(decideFromCli(store, { org: acme.org.gid, value: '8.0.0.0/4', decision: 1 }))).toMatch(/^value: \/4 is wider than \/8/);
    expect((await store.operators.audit({ orgId: acme.org.id, action: 'decision.', beforeId: null, limit: 10 })).length).toBe(3);
  });
});

describe('rampart decision as a process on an embedded store', { timeout: 120_000 }, () => {
  const serverDir = fileURLToPath(new URL('..', import.meta.url));
  const dataDir = mkdtempSync(join(tmpdir(), 'rampart-decision-cli-'));
  let gid = '';
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
  const rampart = (...args: string[]) => {
    const { DATABASE_URL: _ignored, ...rest } = process.env;
    const r = spawnSync(process.execPath, ['bin/rampart.js', ...args], { cwd: serverDir, env: { ...rest, DATA_DIR: dataDir, LOG_LEVEL: 'warn' }, encoding: 'utf8' });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  beforeAll(async () => {
    const store = await openStore({ dataDir });
    gid = (await seedOrg(store, { name: 'Process Acme' })).org.gid;
    await store.close();
  });

  it('prints each change as JSON, lists it with its reason, and refuses bad options', () => {
    const added = rampart('decision', 'add', '45.77.70.1', '--org', gid, '--ttl', '2h', '--reason', 'ssh brute force');
    expect(added.code, added.stderr).toBe(0);
    const out = JSON.parse(added.stdout) as { ttl: string; set_by: string };
    expect(out).toMatchObject({ organization: gid, kind: 'ipv4', value: '45.77.70.1', decision: 1, reason: 'ssh brute force' });
    expect(Date.parse(out.ttl) / 1000 - Date.now() / 1000).toBeGreaterThan(7200 - 120);
    const list = rampart('decisions', 'list', '--org', gid, '--json');
    expect(JSON.parse(list.stdout)).toEqual([expect.objectContaining({ value: '45.77.70.1', decision: 1, ttl: out.ttl, reason: 'ssh brute force', set_by: out.set_by })]);
    const cleared = rampart('decision', 'clear', '45.77.70.1', '--org', gid);
    expect(cleared.code, cleared.stderr).toBe(0);
    expect(JSON.parse(cleared.stdout)).toMatchObject({ value: '45.77.70.1', decision: -1 });
    expect(JSON.parse(rampart('decision', 'list', '--org', gid, '--json').stdout)).toEqual([]);

    const badTtl = rampart('decision', 'add', '45.77.70.1', '--org', gid, '--ttl', 'soon');
    expect(badTtl.code).toBe(1);
    expect(badTtl.stderr.split('\n')[0]).toBe("error: option '--ttl <duration>' argument 'soon' is invalid. expected a duration such as 3600, 90m, 24h or 7d (1 second to 10 years)");
    const long = rampart('decision', 'add', '45.77.70.1', '--org', gid, '--reason', 'x'.repeat(501));
    expect(long.stderr.split('\n')[0]).toBe(`error: option '--reason <text>' argument '${'x'.repeat(501)}' is invalid. at most 500 characters`);
    expect(rampart('decision', 'add', 'not_a value', '--org', gid, '--kind', 'domain')).toMatchObject({ code: 1, stdout: '' });
  });
});

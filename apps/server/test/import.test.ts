import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sharedGate, sharedPath } from '@rampart/plugin-kit/testing';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../src/store/index.ts';
import { sqlOf } from '../src/store/sql-handle.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';

const STIX = 'oracles/stix2.1/examples';
const stixReady = !sharedGate('import of STIX 2.1 examples', STIX);
const MISP = readFileSync(fileURLToPath(new URL('./fixtures/import/misp-event.json', import.meta.url)), 'utf8');
const stixFile = (name: string) => readFileSync(sharedPath(`${STIX}/${name}`), 'utf8');

describe.each(stixReady ? driverCases() : [])('POST /import on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  const post = (payload: object, key = acme.keys.contributor) => app.inject({ method: 'POST', url: '/api/v1/import', headers: { authorization: key }, payload });

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { credits: 100_000 });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  const refusedRow = (row: number, kind: string | null, value: string, code: string, message: string) => ({ row, kind, value, canonical: null, confidence: 1, status: 'refused', reason: { code, message } });
  const row = (n: number, kind: string, value: string, canonical: string, status = 'accepted', confidence = 1) => ({ row: n, kind, value, canonical, confidence, status });
  const audits = async () => (await sqlOf(store).query<{ n: number }>(`select count(*)::int as n from audit_log where action = 'import' and org_id = $1`, [acme.org.id])).rows[0]!.n;

  it('previews the STIX 2.1 APT1 report exactly, reporting nothing', async () => {
    const res = await post({ format: 'stix21', content: stixFile('threat-reports/apt1.json'), dry_run: true });
    expect(res.statusCode).toBe(200);
    const wide = (v: string) => refusedRow(0, 'ipv4', v, 'network_too_wide', '/15 is wider than /16, the widest network a report may name');
    const x509 = (n: number, pattern: string) => refusedRow(n, null, pattern, 'unsupported_type', 'x509-certificate is not an indicator kind Rampart holds');
    expect(res.json()).toEqual({
      dry_run: true,
      format: 'stix21',
      content_sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      counts: { rows: 12, accepted: 6, imported: 0, duplicate: 0, refused: 6 },
      rows: [
        { ...wide('223.166.0.0/15'), row: 1 },
        { ...wide('58.246.0.0/15'), row: 2 },
        { ...wide('112.64.0.0/15'), row: 3 },
        { ...wide('139.226.0.0/15'), row: 4 },
        row(5, 'domain', 'hugesoft.org', 'hugesoft.org'),
        row(6, 'domain', 'arrowservice.net', 'arrowservice.net'),
        row(7, 'domain', 'msnhome.org', 'msnhome.org'),
        row(8, 'file', '001dd76872d80801692ff942308c64e6', '001DD76872D80801692FF942308C64E6'),
        row(9, 'file', '002325a0a67fded0381b5648d7fe9b8e', '002325A0A67FDED0381B5648D7FE9B8E'),
        row(10, 'file', '00dbb9e1c09dbdafb360f3163ba5a3de', '00DBB9E1C09DBDAFB360F3163BA5A3DE'),
        x509(11, "[x509-certificate:issuer = 'CN=WEBMAIL' AND x509-certificate:serial_number = '4c:0b:1d:19:74:86:a7:66:b4:1a:bf:40:27:21:76:28']"),
        x509(12, "[x509-certificate:issuer = 'CN=LM-68AB71FBD8F5' AND x509-certificate:serial_number = '0e:97:88:1c:6c:a1:37:96:42:03:bc:45:42:24:75:6c']"),
      ],
    });
    expect((await app.inject({ url: '/api/v1/domains/hugesoft.org', headers: { authorization: acme.keys.reader } })).statusCode).toBe(404);
    expect(await audits()).toBe(0);
  });

  it('imports a STIX 2.1 bundle: the good rows land beside the refused one, and a repeat reports nothing twice', async () => {
    const content = stixFile('indicators-for-C2-with-COA.json');
    const sha = 'EF537F25C895BFA782526529A9B63D97AA631564D5D789C2B765448C8635FB6C';
    const first = (await post({ format: 'stix21', content, dry_run: false })).json();
    expect(first.counts).toEqual({ rows: 2, accepted: 0, imported: 1, duplicate: 0, refused: 1 });
    expect(first.rows).toEqual([
      refusedRow(1, 'ipv4', '10.0.0.0', 'non_public_address', '10.0.0.0 lies in 10.0.0.0/8 (private), not a public address'),
      row(2, 'file', sha.toLowerCase(), sha, 'imported'),
    ]);
    const again = (await post({ format: 'stix21', content, dry_run: false })).json();
    expect(again.counts).toEqual({ rows: 2, accepted: 0, imported: 0, duplicate: 1, refused: 1 });
    const reports = await sqlOf(store).query<{ events: number }>(`select r.events from file_reports r join file_indicators f on f.id = r.indicator_id where f.sha256 = decode($1, 'hex') and r.org_id = $2`, [sha, acme.org.id]);
    expect(reports.rows).toEqual([{ events: 1 }]);
    expect(await audits()).toBe(2);
  });

  it('imports a MISP event: to_ids attributes of held kinds land, the rest are refused with reasons', async () => {
    const preview = (await post({ format: 'misp', content: MISP, dry_run: true, source: 'example-cert' })).json();
    const expected = [
      row(1, 'ipv4', '45.33.32.156', '45.33.32.156'),
      refusedRow(2, 'ipv4', '192.168.1.10', 'non_public_address', '192.168.1.10 lies in 192.168.0.0/16 (private), not a public address'),
      row(3, 'domain', 'Evil-Update.NET', 'evil-update.net'),
      row(4, 'domain', 'cdn.evil-update.net', 'cdn.evil-update.net'),
      row(5, 'url', 'http://evil-update.net/payload.exe', 'http://evil-update.net/payload.exe'),
      row(6, 'file', '44D88612FEA8A8F36DE82E1278ABB02F', '44D88612FEA8A8F36DE82E1278ABB02F'),
      row(7, 'file', '275a021bbfb6489e54d471899f7db9d1663fc695ec2fe2a2c4538aabf651fd0f', '275A021BBFB6489E54D471899F7DB9D1663FC695EC2FE2A2C4538AABF651FD0F'),
      refusedRow(8, null, 'loader v2', 'unsupported_type', 'MISP type text is not imported'),
      refusedRow(9, 'domain', 'windowsupdate.com', 'not_for_detection', 'to_ids is false'),
      refusedRow(10, 'file', 'not-a-digest', 'malformed', 'not-a-digest is not an MD5, SHA-1 or SHA-256 digest'),
    ];
    expect(preview.counts).toEqual({ rows: 10, accepted: 6, imported: 0, duplicate: 0, refused: 4 });
    expect(preview.rows).toEqual(expected);
    const imported = (await post({ format: 'misp', content: MISP, dry_run: false, source: 'example-cert' })).json();
    expect(imported.counts).toEqual({ rows: 10, accepted: 0, imported: 6, duplicate: 0, refused: 4 });
    expect(imported.rows).toEqual(expected.map((r) => (r.status === 'accepted' ? { ...r, status: 'imported' } : r)));
    const get = (url: string) => app.inject({ url: `/api/v1${url}`, headers: { authorization: acme.keys.reader } });
    for (const url of ['/ips/45.33.32.156', '/domains/evil-update.net', '/domains/cdn.evil-update.net', `/urls/${encodeURIComponent('http://evil-update.net/payload.exe')}`, '/files/44D88612FEA8A8F36DE82E1278ABB02F']) {
      expect([url, (await get(url)).statusCode]).toEqual([url, 200]);
    }
    expect((await get('/domains/windowsupdate.com')).statusCode).toBe(404);
    const ipv4Reports = () => sqlOf(store).query<{ events: number; sources: string[] }>(`select events, sources from ipv4_reports where org_id = $1`, [acme.org.id]);
    expect((await ipv4Reports()).rows).toEqual([{ events: 1, sources: ['example-cert'] }]);
    const repeat = (await post({ format: 'misp', content: MISP, dry_run: false, source: 'example-cert' })).json();
    expect(repeat.counts).toEqual({ rows: 10, accepted: 0, imported: 0, duplicate: 6, refused: 4 });
    expect((await ipv4Reports()).rows).toEqual([{ events: 1, sources: ['example-cert'] }]);
  });

  it('reads a CSV with its own sources and confidences, refusing bad rows by name', async () => {
    const content = ['value,kind,confidence,source', '203.0.113.9,ipv4,0.5,honeypot', '185.220.101.7/32,ipv4,0.5,honeypot', '8.8.0.0/8,ipv4,0.9,x', 'phish.example.org,domain,,', '"a,b",ipv4,1,x', 'x.org,email,1,x', 'y.org,domain,2,x', '1.2.3', ''].join('\n');
    const expected = [
      { ...refusedRow(1, 'ipv4', '203.0.113.9', 'non_public_address', '203.0.113.9 lies in 203.0.113.0/24 (documentation), not a public address'), confidence: 0.5 },
      row(2, 'ipv4', '185.220.101.7/32', '185.220.101.7', 'imported', 0.5),
      { ...refusedRow(3, 'ipv4', '8.8.0.0/8', 'network_too_wide', '/8 is wider than /16, the widest network a report may name'), confidence: 0.9 },
      row(4, 'domain', 'phish.example.org', 'phish.example.org', 'imported'),
      refusedRow(5, 'ipv4', 'a,b', 'malformed', 'a,b is not an IPv4 address or network'),
      refusedRow(6, null, 'x.org', 'unsupported_type', 'kind email is not one of ipv4, domain, url, file'),
      { ...refusedRow(7, 'domain', 'y.org', 'malformed', 'confidence 2 is not a number from 0 to 1'), confidence: 2 },
      { ...refusedRow(8, null, '1.2.3', 'malformed', 'a row has 4 fields: value,kind,confidence,source'), confidence: null },
    ];
    const res = (await post({ format: 'csv', content, dry_run: false })).json();
    expect(res.counts).toEqual({ rows: 8, accepted: 0, imported: 2, duplicate: 0, refused: 6 });
    expect(res.rows).toEqual(expected);
    const sources = await sqlOf(store).query(`select r.sources, r.confidence from ipv4_reports r join ipv4_indicators i on i.id = r.indicator_id where i.network = '185.220.101.7/32' and r.org_id = $1`, [acme.org.id]);
    expect(sources.rows).toEqual([{ sources: ['honeypot'], confidence: 0.5 }]);
    const bad = await post({ format: 'csv', content: 'ip,kind\n1.2.3.4,ipv4', dry_run: true });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors).toEqual([{ path: 'body.content', message: 'a CSV import starts with the header value,kind,confidence,source' }]);
  });

  it('is for contributors and admins only, and names a bad field', async () => {
    expect((await post({ format: 'csv', content: 'value,kind,confidence,source\n', dry_run: true }, acme.keys.reader)).statusCode).toBe(403);
    expect((await post({ format: 'csv', content: 'value,kind,confidence,source\n', dry_run: true }, acme.keys.admin)).statusCode).toBe(200);
    const res = await post({ format: 'xml', content: 'x', dry_run: true });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors[0].path).toBe('body.format');
    expect((await post({ format: 'misp', content: '{', dry_run: true })).json().errors[0].path).toBe('body.content');
  });

  it('is bounded by the body limit', async () => {
    const small = await testApp(store, { bodyLimitBytes: 1024 });
    try {
      const content = `value,kind,confidence,source\n${'45.77.113.7,ipv4,1,x\n'.repeat(60)}`;
      const res = await small.inject({ method: 'POST', url: '/api/v1/import', headers: { authorization: acme.keys.contributor }, payload: { format: 'csv', content, dry_run: true } });
      expect(res.statusCode).toBe(413);
    } finally {
      await small.close();
    }
  });
});

describe('rampart import as a process on an embedded store', { timeout: 120_000 }, () => {
  const serverDir = fileURLToPath(new URL('..', import.meta.url));
  const dataDir = mkdtempSync(join(tmpdir(), 'rampart-import-cli-'));
  const file = join(dataDir, 'event.json');
  let gid = '';
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
  const rampart = (...args: string[]) => {
    const { DATABASE_URL: _ignored, ...rest } = process.env;
    const r = spawnSync(process.execPath, ['bin/rampart.js', ...args], { cwd: serverDir, env: { ...rest, DATA_DIR: dataDir, LOG_LEVEL: 'warn' }, encoding: 'utf8' });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  beforeAll(async () => {
    writeFileSync(file, MISP);
    const store = await openStore({ dataDir });
    gid = (await seedOrg(store, { name: 'Import Acme' })).org.gid;
    await store.close();
  });

  it('previews, imports, and imports nothing twice, audited as the CLI', async () => {
    const preview = rampart('import', file, '--org', gid, '--dry-run');
    expect(preview.stderr).toBe('');
    expect(JSON.parse(preview.stdout)).toMatchObject({ organization: gid, dry_run: true, format: 'misp', counts: { rows: 10, accepted: 6, imported: 0, duplicate: 0, refused: 4 } });
    const first = JSON.parse(rampart('import', file, '--org', gid, '--source', 'example-cert').stdout);
    expect(first.counts).toEqual({ rows: 10, accepted: 0, imported: 6, duplicate: 0, refused: 4 });
    expect(first.rows.filter((r: { status: string }) => r.status === 'imported').map((r: { canonical: string }) => r.canonical)).toEqual([
      '45.33.32.156',
      'evil-update.net',
      'cdn.evil-update.net',
      'http://evil-update.net/payload.exe',
      '44D88612FEA8A8F36DE82E1278ABB02F',
      '275A021BBFB6489E54D471899F7DB9D1663FC695EC2FE2A2C4538AABF651FD0F',
    ]);
    const again = JSON.parse(rampart('import', file, '--org', gid, '--format', 'misp').stdout);
    // Another source is the same content: the rows are keyed by the content, not by its source.
    expect(again.counts).toEqual({ rows: 10, accepted: 0, imported: 0, duplicate: 6, refused: 4 });
    const bad = rampart('import', file, '--org', gid, '--format', 'xml');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('expected csv, stix21, misp');
    const store = await openStore({ dataDir });
    try {
      const audits = await sqlOf(store).query<{ actor: string; detail: Record<string, unknown> }>(`select actor, detail from audit_log where action = 'import' order by id`);
      expect(audits.rows.map((r) => [r.actor.startsWith('cli:'), r.detail.imported, r.detail.duplicate])).toEqual([
        [true, 6, 0],
        [true, 0, 6],
      ]);
      const ipv4 = await sqlOf(store).query(`select events, sources from ipv4_reports`);
      expect(ipv4.rows).toEqual([{ events: 1, sources: ['example-cert'] }]);
    } finally {
      await store.close();
    }
  });
});

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RampartClient } from '@rampart/client';
import type { AgentSummary } from '@rampart/contracts';
import type { DryRunFile } from '@rampart/enforcer-dry-run';
import { secondsUntilBelow } from '@rampart/scoring';
import { seedOrg, sqlOf } from '@rampart/server/testing';
import { agentHealth, readJson, startConfiguredAgent, startControlPlane, tempDir, waitFor, type AgentProcess, type ControlPlane } from './support.ts';

/*
 * Domains, URLs and file digests from the server's decision to the enforcers' files: server +
 * agent (a real process) + database. The agent's dry_run and csv enforcers take every kind; the
 * server's scores, a whitelist and a blacklist decision (pushed over the sync channel), a score
 * decaying below the threshold (local decay, no server round trip) and the never-block list all
 * show in the files, exactly.
 */

const THRESHOLD = 50;
const MD5 = '0cc175b9c0f1b6a831c399e269772661';
const SHA1 = '86f7e437faa5a7fce15d1ddcb9eaeaea377667b8';
const SHA256 = 'ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb';
const LONE_SHA256 = '3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d';

describe('agent end to end: domains, URLs and file digests', () => {
  let cp: ControlPlane;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let agent: AgentProcess | undefined;
  let admin: RampartClient;
  const gaid = 'RMP-AGENT-ID-kinds1';

  beforeAll(async () => {
    cp = await startControlPlane();
    dir = await tempDir('rampart-kinds-');
    const org = await seedOrg(cp.store, { credits: 1_000_000, trust: 1 });
    admin = new RampartClient({ baseUrl: cp.url, apiKey: org.keys.admin });
    process.env.RAMPART_E2E_ADMIN = org.keys.admin;
  });
  afterAll(async () => {
    if (agent) await agent.kill9();
    await cp?.close();
    await dir?.remove();
  });

  const post = (path: string, body: unknown) => admin.transport.request('POST', path, { body });
  const put = (path: string, decision: number) => admin.transport.request('PUT', path, { body: { decision } });
  /** Sets an indicator's s0 and time zero as if the server had scored it so (the decay clock starts at `ts`). */
  const setScore = async (kind: 'domain' | 'url' | 'file', where: string, value: string, score: number, ts?: number) => {
    const table = { domain: 'domain_indicators', url: 'url_indicators', file: 'file_indicators' }[kind];
    const res = await sqlOf(cp.store).query(`update ${table} set score = $1${ts === undefined ? '' : ', ts = $3'} where ${where} = $2`, ts === undefined ? [score, value] : [score, value, ts]);
    expect(res.rowCount).toBe(1);
  };

  it(`server decisions on domains, URLs and digests reach dry_run and csv files (${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'})`, async () => {
    // What the server holds before the agent starts. Scores are set outright so the files can be
    // asserted exactly; `fading.example` is anchored so that it decays below the threshold ~45 s
    // after the agent starts.
    for (const domain of ['evil-one.example', 'Bücher-Evil.Example.', 'fading.example', 'www.safe.example', 'weak.example']) await post('/domains', { domain, confidence: 1 });
    for (const url of ['http://evil.example/a,b?x=1', 'HTTPS://Evil.Example:443/login#top', 'http://weak.example/low']) await post('/urls', { url, confidence: 1 });
    await post('/files', { file_type: 'application/x-executable', md5: MD5, sha1: SHA1, sha256: SHA256, file_name: 'a.out' });
    await post('/files', { file_type: 'application/x-executable', sha256: LONE_SHA256, file_name: 'b.out' });
    await setScore('domain', 'value', 'evil-one.example', 900);
    await setScore('domain', 'value', 'xn--bcher-evil-9db.example', 700);
    await setScore('domain', 'value', 'www.safe.example', 950);
    await setScore('domain', 'value', 'weak.example', 10);
    const now = Math.floor(Date.now() / 1000);
    await setScore('domain', 'value', 'fading.example', 60, now - Math.floor(secondsUntilBelow(60, THRESHOLD)) + 45);
    const fadesAtMs = (now + 45) * 1000;
    await setScore('url', 'value', 'http://evil.example/a,b?x=1', 800);
    await setScore('url', 'value', 'https://evil.example/login', 650);
    await setScore('url', 'value', 'http://weak.example/low', 10);
    await setScore('file', "encode(sha256, 'hex')", SHA256, 500);
    await setScore('file', "encode(sha256, 'hex')", LONE_SHA256, 400);

    const path = (name: string) => join(dir.path, name);
    const started = await startConfiguredAgent({
      cp,
      dir: dir.path,
      gaid,
      adminKey: process.env.RAMPART_E2E_ADMIN!,
      threshold: THRESHOLD,
      ips: {
        dry_run: {
          active: true,
          path: path('dry-run.json'),
          kinds: { domain: { path: path('dry-run-domains.json') }, url: { path: path('dry-run-urls.json') }, file: { path: path('dry-run-files.json') } },
        },
        csv: {
          active: true,
          csv_logs: path('ipv4.csv'),
          options: { kinds: { domain: { path: path('domains.csv') }, url: { path: path('urls.csv') }, file: { path: path('digests.csv') } } },
        },
      },
      local: { allow_domains: ['safe.example'] },
    });
    agent = started.agent;
    const { health, metricsPort } = started;
    expect((health.enforcers as { label: string; state: string }[]).map((e) => e.label)).toEqual([
      'csv',
      'csv/domain',
      'csv/file',
      'csv/url',
      'dry_run',
      'dry_run/domain',
      'dry_run/file',
      'dry_run/url',
    ]);

    const enforced = async (name: string) => (await readJson<DryRunFile>(path(name)))?.enforced;
      const settle = (what: string, name: string, want: string[], timeoutMs = 30_000) =>
      waitFor(what, async () => JSON.stringify(await enforced(name)) === JSON.stringify(want) && true, timeoutMs);
    // Each enforcer instance applies on its own queue: a csv file may land after its dry_run twin.
    const csvIs = async (name: string, want: string) => {
      await waitFor(`${name} as expected`, async () => (await readFile(path(name), 'utf8').catch(() => '')) === want, 30_000).catch(() => undefined);
      expect(await readFile(path(name), 'utf8')).toBe(want);
    };
    const domains = ['evil-one.example', 'fading.example', 'xn--bcher-evil-9db.example'];
    const digests = [MD5.toUpperCase(), LONE_SHA256.toUpperCase(), SHA1.toUpperCase(), SHA256.toUpperCase()];
    await settle('domains enforced', 'dry-run-domains.json', domains);
    await settle('URLs enforced', 'dry-run-urls.json', ['http://evil.example/a,b?x=1', 'https://evil.example/login']);
    await settle('digests enforced', 'dry-run-files.json', digests);
    // Every instance reports under its own name: GET /agents shows what each one enforces.
    const listed = await waitFor('every kind in GET /agents', async () => {
      const res = await admin.transport.request('GET', '/agents');
      const a = (JSON.parse(res.text) as AgentSummary[]).find((x) => x.gaid === gaid);
      return a && ['dry_run/domain', 'dry_run/url', 'dry_run/file', 'csv/domain', 'csv/url', 'csv/file'].every((p) => a.enforced[p]?.state === 'ok') && a;
    });
    expect([listed.enforced['dry_run/domain']!.enforced, listed.enforced['dry_run/url']!.enforced, listed.enforced['dry_run/file']!.enforced]).toEqual([3, 2, 4]);
    const file = (await readJson<DryRunFile>(path('dry-run-domains.json')))!;
    expect(file.kind).toBe('domain');
    // `www.safe.example` (950) is a sub-domain of an allowed name: never blocked.
    await csvIs('domains.csv', 'domain,score\nevil-one.example,900\nfading.example,50\nxn--bcher-evil-9db.example,700\n');
    await csvIs('urls.csv', 'url,score\n"http://evil.example/a,b?x=1",800\nhttps://evil.example/login,650\n');
    await csvIs(
      'digests.csv',
      `digest,score\n${MD5.toUpperCase()},500\n${LONE_SHA256.toUpperCase()},400\n${SHA1.toUpperCase()},500\n${SHA256.toUpperCase()},500\n`,
    );

    // A whitelist lifts a block; a blacklist blocks what the score does not (both pushed).
    await put('/domains/evil-one.example', 0);
    await put(`/urls/${encodeURIComponent('http://weak.example/low')}`, 1);
    await put(`/files/${SHA1}`, 0);
    await settle('whitelisted domain lifted', 'dry-run-domains.json', ['fading.example', 'xn--bcher-evil-9db.example']);
    await settle('blacklisted URL blocked', 'dry-run-urls.json', ['http://evil.example/a,b?x=1', 'http://weak.example/low', 'https://evil.example/login']);
    // The whitelist names one digest; the whole file (all three digests) is lifted.
    await settle('whitelisted file lifted', 'dry-run-files.json', [LONE_SHA256.toUpperCase()]);
    await csvIs('urls.csv', 'url,score\n"http://evil.example/a,b?x=1",800\nhttp://weak.example/low,1001\nhttps://evil.example/login,650\n');
    await csvIs('digests.csv', `digest,score\n${LONE_SHA256.toUpperCase()},400\n`);

    // `fading.example` decays below the threshold on the agent's own clock.
    // (It falls ~45 s after it was scored, however fast the steps above ran: wait that long and 30 s more.)
    await settle('decayed domain removed', 'dry-run-domains.json', ['xn--bcher-evil-9db.example'], Math.max(0, fadesAtMs - Date.now()) + 30_000);
    await csvIs('domains.csv', 'domain,score\nxn--bcher-evil-9db.example,700\n');

    // The cursors are on disk, one file per kind; /healthz reports each kind.
    const after = (await agentHealth(metricsPort))!;
    expect(Object.keys(after.kinds as object).sort()).toEqual(['domain', 'file', 'url']);
    expect((after.kinds as Record<string, { enforced: number }>).domain!.enforced).toBe(1);
    expect(await agent.terminate()).toBe(0);
    agent = undefined;
    for (const kind of ['domain', 'url', 'file']) {
      const state = await readJson<{ kind: string; cursor: number }>(path(`state/feed-state-${kind}.json`));
      expect(state?.kind).toBe(kind);
      expect(state!.cursor).toBeGreaterThan(0);
    }
  }, 180_000);
});

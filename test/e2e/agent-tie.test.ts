import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RampartClient } from '@rampart/client';
import type { AgentSummary } from '@rampart/contracts';
import { DxlClient, TieFiles } from '@rampart/enforcer-opendxl-tie';
import { makePki, removePki, startBroker, startTieStandIn, type Broker, type TestPki, type TieStandIn } from '@rampart/enforcer-opendxl-tie/testing';
import { systemGate } from '@rampart/plugin-kit/testing';
import { seedOrg, sqlOf } from '@rampart/server/testing';
import { startConfiguredAgent, startControlPlane, tempDir, waitFor, type AgentProcess, type ControlPlane } from './support.ts';

/*
 * From a digest decision on the server to a file reputation in TIE: server + agent (a real
 * process, `ips.endpoint_d`, opendxl-tie) + a private mosquitto that speaks only TLS and admits
 * clients by certificate + the stand-in TIE service on it (the plugin's test fixtures). A file
 * two members reported, scored under the threshold, is blacklisted by its SHA-256: all three of
 * its digests become KNOWN_MALICIOUS (1) in TIE within the sync push; a whitelist decision makes
 * them KNOWN_TRUSTED (99), and clearing it sets them back to NOT_SET (0). `fileslist_file` lists
 * exactly the enforced digests at each step.
 */

const skip = systemGate('agent + OpenDXL TIE over a real MQTT broker', { commands: ['mosquitto', 'openssl'] });

const THRESHOLD = 50;
// The file decided on: its MD5, SHA-1 and SHA-256 ("a").
const MD5 = '0cc175b9c0f1b6a831c399e269772661';
const SHA1 = '86f7e437faa5a7fce15d1ddcb9eaeaea377667b8';
const SHA256 = 'ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb';
// Scored above the threshold: enforced from the first sync, untouched by the decisions ("b").
const SCORED = '3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d';
// Scored under the threshold, never decided on: never in TIE ("c").
const WEAK = '2e7d2c03a9507ae265ecf5b5356885a53393a2029d241394997265a1a25aefc6';
const up = (digests: string[]) => digests.map((d) => d.toUpperCase()).sort();
const LIST_HEADER = '# File digests the Rampart agent set to a malicious TIE reputation; every change overwrites this file.\n';
const listText = (digests: string[]) => LIST_HEADER + up(digests).map((d) => `${d}\n`).join('');

describe.skipIf(skip)('agent end to end: endpoint_d digest decisions to TIE reputations', () => {
  let cp: ControlPlane;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let pki: TestPki | undefined;
  let broker: Broker | undefined;
  let tie: TieStandIn | undefined;
  let probe: DxlClient | undefined;
  let agent: AgentProcess | undefined;
  let admin: RampartClient;
  let member: RampartClient;
  const gaid = 'RMP-AGENT-ID-tie1';

  beforeAll(async () => {
    cp = await startControlPlane();
    dir = await tempDir('rampart-tie-e2e-');
    pki = await makePki();
    broker = await startBroker(pki);
    tie = await startTieStandIn(pki, broker.port);
    const org = await seedOrg(cp.store, { credits: 1_000_000, trust: 1 });
    const other = await seedOrg(cp.store, { credits: 1_000_000, trust: 1 });
    admin = new RampartClient({ baseUrl: cp.url, apiKey: org.keys.admin });
    member = new RampartClient({ baseUrl: cp.url, apiKey: other.keys.contributor });
    process.env.RAMPART_E2E_ADMIN = org.keys.admin;
    // Another client on the fabric, asking TIE what an endpoint would be told.
    const [ca, cert, key] = await Promise.all([readFile(pki.caFile, 'utf8'), readFile(pki.agent.cert, 'utf8'), readFile(pki.agent.key, 'utf8')]);
    probe = new DxlClient({ host: '127.0.0.1', port: broker.port, ca, cert, key, checkHostname: false, connectTimeoutMs: 10_000, requestTimeoutMs: 10_000 });
  }, 60_000);
  afterAll(async () => {
    if (agent) await agent.kill9();
    await probe?.close();
    await tie?.stop();
    await broker?.stop();
    await removePki(pki);
    await cp?.close();
    await dir?.remove();
  });

  const put = (path: string, decision: number) => admin.transport.request('PUT', path, { body: { decision } });
  const setScore = async (sha256: string, score: number) => {
    const res = await sqlOf(cp.store).query(`update file_indicators set score = $1 where encode(sha256, 'hex') = $2`, [score, sha256]);
    expect(res.rowCount).toBe(1);
  };
  /** The enterprise trust level TIE answers a get for each digest with. */
  const trustLevels = async (digests: string[]) => {
    const files = new TieFiles(probe!);
    const out: Record<string, number> = {};
    for (const d of up(digests)) out[d] = await files.enterpriseTrustLevel(d);
    return out;
  };

  it(`a blacklist decision on a SHA-256 makes the file KNOWN_MALICIOUS in TIE, a whitelist sets it back (${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'})`, async () => {
    // Reported by two members of the alliance; the scores are then set outright so that only the
    // decisions move the file decided on.
    await admin.transport.request('POST', '/files', { body: { file_type: 'application/x-executable', md5: MD5, sha1: SHA1, sha256: SHA256, file_name: 'a.exe' } });
    await member.transport.request('POST', '/files', { body: { file_type: 'application/x-executable', md5: MD5, sha1: SHA1, sha256: SHA256, file_name: 'a.exe' } });
    await admin.transport.request('POST', '/files', { body: { file_type: 'application/x-executable', sha256: SCORED, file_name: 'b.exe' } });
    await member.transport.request('POST', '/files', { body: { file_type: 'application/x-executable', sha256: WEAK, file_name: 'c.exe' } });
    await setScore(SHA256, 10);
    await setScore(SCORED, 900);
    await setScore(WEAK, 10);

    const path = (name: string) => join(dir.path, name);
    const listFile = path('tie-files.txt');
    const started = await startConfiguredAgent({
      cp,
      dir: dir.path,
      gaid,
      adminKey: process.env.RAMPART_E2E_ADMIN!,
      threshold: THRESHOLD,
      ips: {
        endpoint_d: {
          active: true,
          api: `ssl://127.0.0.1:${broker!.port}`,
          fileslist_file: listFile,
          broker_ca_bundle: pki!.caFile,
          cert_file: pki!.agent.cert,
          private_key: pki!.agent.key,
          options: { connect_timeout_seconds: 10, request_timeout_seconds: 10 },
        },
      },
    });
    agent = started.agent;
    const { health } = started;
    expect((health.enforcers as { label: string }[]).map((e) => e.label)).toEqual(['endpoint_d/file']);

    const listed = () => readFile(listFile, 'utf8').catch(() => '');
    const held = () => [...tie!.store.keys()].sort();
    const settle = (what: string, want: string[]) =>
      waitFor(what, async () => JSON.stringify(held()) === JSON.stringify(up(want)) && (await listed()) === listText(want), 30_000);

    // The first sync: only the digest scored above the threshold.
    await settle('the scored digest in TIE and the list file', [SCORED]);
    expect(tie!.at(1)).toEqual(up([SCORED]));

    // The blacklist names the SHA-256; the whole file (MD5, SHA-1, SHA-256) is pushed and set.
    await put(`/files/${SHA256}`, 1);
    await settle('the blacklisted file in TIE and the list file', [MD5, SHA1, SHA256, SCORED]);
    expect(tie!.at(1)).toEqual(up([MD5, SHA1, SHA256, SCORED]));
    expect(tie!.store.get(SHA256.toUpperCase())).toEqual({ trustLevel: 1, filename: '', comment: 'Rampart shared threat intelligence' });
    expect(await trustLevels([MD5, SHA1, SHA256, SCORED, WEAK])).toEqual({
      [MD5.toUpperCase()]: 1,
      [SHA1.toUpperCase()]: 1,
      [SHA256.toUpperCase()]: 1,
      [SCORED.toUpperCase()]: 1,
      [WEAK.toUpperCase()]: 0,
    });
    expect(await listed()).toBe(listText([MD5, SHA1, SHA256, SCORED]));
    const agents = await waitFor('GET /agents counts four digests for endpoint_d/file', async () => {
      const res = await admin.transport.request('GET', '/agents');
      const a = (JSON.parse(res.text) as AgentSummary[]).find((x) => x.gaid === gaid);
      return a?.enforced['endpoint_d/file']?.enforced === 4 && a;
    });
    expect(agents.enforced['endpoint_d/file']!.state).toBe('ok');

    // The whitelist decision: each of the file's digests becomes KNOWN_TRUSTED (99), straight from
    // KNOWN_MALICIOUS; the scored one stays.
    await put(`/files/${SHA256}`, 0);
    await waitFor('the whitelisted file KNOWN_TRUSTED in TIE and out of the list file', async () => JSON.stringify(tie!.at(99)) === JSON.stringify(up([MD5, SHA1, SHA256])) && (await listed()) === listText([SCORED]), 30_000);
    expect(tie!.at(1)).toEqual(up([SCORED]));
    expect(await trustLevels([MD5, SHA1, SHA256, SCORED])).toEqual({
      [MD5.toUpperCase()]: 99,
      [SHA1.toUpperCase()]: 99,
      [SHA256.toUpperCase()]: 99,
      [SCORED.toUpperCase()]: 1,
    });
    expect([...new Set(tie!.sets.map((s) => s.trustLevel))].sort((a, b) => a - b)).toEqual([1, 99]);
    expect(await readFile(`${listFile}.trusted`, 'utf8')).toContain(up([MD5, SHA1, SHA256]).join('\n'));

    // The decision cleared: the file is set back to NOT_SET, asked for on exactly its digests.
    await put(`/files/${SHA256}`, -1);
    await settle('the cleared file out of TIE', [SCORED]);
    expect([...new Set(tie!.sets.filter((s) => s.trustLevel === 0).map((s) => s.digest))].sort()).toEqual(up([MD5, SHA1, SHA256]));
    expect(await listed()).toBe(listText([SCORED]));
    expect(await agent.terminate()).toBe(0);
    agent = undefined;
  }, 180_000);
});

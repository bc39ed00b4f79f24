import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enforcerKinds } from '@rampart/plugin-kit';
import { kindConformance, systemGate, silentLogger as silent } from '@rampart/plugin-kit/testing';
import { DxlClient, DxlError, OpenDxlTieConfig, openDxlTieEnforcer, TIE_GET_FILE_REPUTATION, TieFiles } from '../src/index.ts';
import { makePki, removePki, startBroker, type Broker, type TestPki } from './tls-broker.ts';
import { startTieStandIn, type TieStandIn } from './tie-stand-in.ts';

const skip = systemGate('OpenDXL TIE over a real MQTT broker', { commands: ['mosquitto', 'openssl'] });

const MD5 = 'D41D8CD98F00B204E9800998ECF8427E';
const SHA1 = 'DA39A3EE5E6B4B0D3255BFEF95601890AFD80709';
const SHA256 = 'E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855';
const entry = (value: string, score = 900) => ({ value, score });

describe('enforcer-opendxl-tie config', () => {
  it('parses the README sample config; defaults; names the failing field', async () => {
    const readme = await readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    const sample = /## Sample config[\s\S]*?```json\n([\s\S]*?)```/.exec(readme)?.[1];
    const parsed = OpenDxlTieConfig.parse(JSON.parse(sample!));
    expect(parsed.api).toBe('dxl-broker.example.org:8883');
    expect(parsed.fileslist_file).toBe('/var/lib/rampart/tie-files.txt');
    expect(parsed.options).toEqual({
      block_trust_level: 'known_malicious',
      release_trust_level: 'not_set',
      whitelist_trust_level: 'known_trusted',
      filename: '',
      comment: 'Rampart shared threat intelligence',
      max_entries: 10_000,
      in_flight: 16,
      read_back: 'tie',
      broker_identity: 'ca',
      connect_timeout_seconds: 30,
      request_timeout_seconds: 30,
    });
    expect(enforcerKinds(openDxlTieEnforcer, parsed)).toEqual(['file']);
    const full = { active: true, api: 'b:8883', fileslist_file: '/tmp/f', broker_ca_bundle: '/ca', cert_file: '/c', private_key: '/k' };
    expect(OpenDxlTieConfig.parse(full).options.in_flight).toBe(16);
    const issues = (input: unknown) => OpenDxlTieConfig.safeParse(input).error?.issues.map((i) => i.path.join('.'));
    expect(issues({ active: true })).toEqual(['api', 'fileslist_file', 'broker_ca_bundle', 'cert_file', 'private_key']);
    expect(issues({ ...full, api: 'http://b/x' })).toEqual(['api']);
    expect(issues({ ...full, options: { block_trust_level: 'known_trusted' } })).toEqual(['options.block_trust_level']);
    expect(issues({ ...full, options: { in_flight: 0 } })).toEqual(['options.in_flight']);
    expect(issues({ ...full, options: { batch: 3 } })).toEqual(['options']);
    expect(issues({ active: false })).toBeUndefined();
  });

  it('refuses a kind other than file', async () => {
    const cfg = OpenDxlTieConfig.parse({ active: true, api: 'b', fileslist_file: '/tmp/f', broker_ca_bundle: '/ca', cert_file: '/c', private_key: '/k' });
    await expect(openDxlTieEnforcer.create(cfg, { log: silent, kind: 'domain' })).rejects.toThrow("opendxl-tie: enforces file digests only, not 'domain'");
  });
});

let pki: TestPki | undefined;
let broker: Broker | undefined;
let tie: TieStandIn | undefined;
let work: string | undefined;

async function fixture(): Promise<{ pki: TestPki; broker: Broker; tie: TieStandIn; work: string }> {
  pki ??= await makePki();
  broker ??= await startBroker(pki);
  tie ??= await startTieStandIn(pki, broker.port);
  work ??= await mkdtemp(join(tmpdir(), 'rampart-tie-'));
  return { pki, broker, tie, work };
}

afterAll(async () => {
  await tie?.stop();
  await broker?.stop();
  await removePki(pki);
  if (work) await rm(work, { recursive: true, force: true });
});

let serial = 0;
async function configFor(options: Record<string, unknown> = {}, fields: Record<string, unknown> = {}): Promise<OpenDxlTieConfig> {
  const f = await fixture();
  return OpenDxlTieConfig.parse({
    active: true,
    api: `ssl://127.0.0.1:${f.broker.port}`,
    fileslist_file: join(f.work, `files-${++serial}.txt`),
    broker_ca_bundle: f.pki.caFile,
    cert_file: f.pki.agent.cert,
    private_key: f.pki.agent.keyPem,
    ...fields,
    options: { request_timeout_seconds: 10, connect_timeout_seconds: 10, ...options },
  });
}

if (!skip) {
  kindConformance(
    'opendxl-tie',
    'file',
    async ({ capacity }) => {
      const f = await fixture();
      f.tie.store.clear();
      const cfg = await configFor(capacity ? { max_entries: capacity } : {});
      return {
        enforcer: await openDxlTieEnforcer.create(cfg, { log: silent, kind: 'file' }),
        disturb: async () => f.tie.store.clear(),
        reopen: () => openDxlTieEnforcer.create(cfg, { log: silent, kind: 'file' }),
      };
    },
    { timeoutMs: 60_000 },
  );
}

describe.skipIf(skip)('enforcer-opendxl-tie against a real mosquitto over TLS and a stand-in TIE', () => {
  beforeAll(async () => {
    await fixture();
  }, 60_000);

  it('sets md5, sha1 and sha256 digests known malicious, writes the list file, sets removed ones back to NOT_SET', async () => {
    const { tie } = await fixture();
    tie.store.clear();
    const cfg = await configFor({ filename: 'sample.exe', comment: 'from rampart' });
    const enforcer = await openDxlTieEnforcer.create(cfg, { log: silent, kind: 'file' });
    try {
      expect(await enforcer.healthcheck()).toEqual({ ok: true });
      expect(await enforcer.sync([entry(SHA256), entry(MD5.toLowerCase()), entry(SHA1)])).toEqual({ enforced: 3, cut: 0 });
      expect(tie.at(1)).toEqual([MD5, SHA1, SHA256].sort());
      expect(tie.store.get(MD5)).toEqual({ trustLevel: 1, filename: 'sample.exe', comment: 'from rampart' });
      expect(await readFile(cfg.fileslist_file, 'utf8')).toBe(`# File digests the Rampart agent set to a malicious TIE reputation; every change overwrites this file.\n${[MD5, SHA1, SHA256].sort().join('\n')}\n`);
      expect(await enforcer.list()).toEqual([MD5, SHA1, SHA256].sort());

      const sets = tie.counts.set;
      expect(await enforcer.apply({ add: [], remove: [SHA1] })).toEqual({ enforced: 2, cut: 0 });
      expect(tie.counts.set - sets).toBe(1);
      expect(tie.store.has(SHA1)).toBe(false);
      expect(await enforcer.list()).toEqual([MD5, SHA256].sort());
      expect(await readFile(cfg.fileslist_file, 'utf8')).toContain(`${MD5}\n${SHA256}\n`);

      await enforcer.withdraw();
      expect(tie.store.size).toBe(0);
      expect(await enforcer.list()).toEqual([]);
    } finally {
      await enforcer.close();
    }
  });

  it('whitelisted digests (allow) become known trusted at the next sync, set back when the whitelist drops them or on withdraw', async () => {
    const { tie } = await fixture();
    tie.store.clear();
    const cfg = await configFor();
    const enforcer = await openDxlTieEnforcer.create(cfg, { log: silent, kind: 'file' });
    try {
      enforcer.allow!([SHA1.toLowerCase(), 'not a digest', SHA256]);
      // A digest both blocked and whitelisted is not (the agent never sends one; blocked wins here).
      await enforcer.sync([entry(SHA256)]);
      expect(tie.at(1)).toEqual([SHA256]);
      expect(tie.at(99)).toEqual([SHA1]);
      expect(await readFile(`${cfg.fileslist_file}.trusted`, 'utf8')).toBe(`# File digests the Rampart agent set to a trusted TIE reputation; every change overwrites this file.\n${SHA1}\n`);
      expect(await enforcer.list()).toEqual([SHA256]);
      enforcer.allow!([MD5]);
      await enforcer.sync([entry(SHA256)]);
      expect(tie.at(99)).toEqual([MD5]);
      expect(tie.store.has(SHA1)).toBe(false);
      await enforcer.withdraw();
      expect(tie.store.size).toBe(0);
      expect(await readFile(`${cfg.fileslist_file}.trusted`, 'utf8')).not.toMatch(/^[0-9A-F]{32}/m);
    } finally {
      await enforcer.close();
    }
  });

  it('with whitelist_trust_level none, whitelists are not sent', async () => {
    const { tie } = await fixture();
    tie.store.clear();
    const enforcer = await openDxlTieEnforcer.create(await configFor({ whitelist_trust_level: 'none' }), { log: silent, kind: 'file' });
    try {
      enforcer.allow!([SHA1]);
      await enforcer.sync([entry(SHA256)]);
      expect([...tie.store.keys()]).toEqual([SHA256]);
    } finally {
      await enforcer.withdraw();
      await enforcer.close();
    }
  });

  it('a removed digest can be set back to UNKNOWN, and enforced ones to another malicious level', async () => {
    const { tie } = await fixture();
    tie.store.clear();
    const cfg = await configFor({ block_trust_level: 'most_likely_malicious', release_trust_level: 'unknown' });
    const enforcer = await openDxlTieEnforcer.create(cfg, { log: silent, kind: 'file' });
    try {
      await enforcer.sync([entry(SHA256), entry(MD5)]);
      expect(tie.at(15)).toEqual([MD5, SHA256].sort());
      await enforcer.apply({ add: [], remove: [MD5] });
      expect(tie.at(15)).toEqual([SHA256]);
      expect(tie.at(50)).toEqual([MD5]);
      expect(await enforcer.list()).toEqual([SHA256]);
    } finally {
      await enforcer.withdraw();
      await enforcer.close();
    }
  });

  it('a restarted agent finds what it set through the list file, and releases what left the list meanwhile', async () => {
    const { tie } = await fixture();
    tie.store.clear();
    const cfg = await configFor();
    const first = await openDxlTieEnforcer.create(cfg, { log: silent, kind: 'file' });
    await first.sync([entry(MD5), entry(SHA1)]);
    await first.close();
    const again = await openDxlTieEnforcer.create(cfg, { log: silent, kind: 'file' });
    try {
      expect(await again.list()).toEqual([MD5, SHA1]);
      expect(await again.sync([entry(SHA256)])).toEqual({ enforced: 1, cut: 0 });
      expect(tie.at(1)).toEqual([SHA256]);
      expect(await again.list()).toEqual([SHA256]);
    } finally {
      await again.withdraw();
      await again.close();
    }
  });

  it('a set TIE refuses fails the call; the list file still names every digest the change touched; the next change repairs', async () => {
    const { tie } = await fixture();
    tie.store.clear();
    const cfg = await configFor({ in_flight: 1 });
    const enforcer = await openDxlTieEnforcer.create(cfg, { log: silent, kind: 'file' });
    try {
      await enforcer.sync([entry(MD5)]);
      tie.refuse.add(SHA1);
      await expect(enforcer.apply({ add: [entry(SHA1)], remove: [MD5] })).rejects.toThrow(/DXL error response 0: refused by the test/);
      expect(await readFile(cfg.fileslist_file, 'utf8')).toContain(`${MD5}\n${SHA1}\n`);
      tie.refuse.clear();
      expect(await enforcer.apply({ add: [entry(SHA256)], remove: [] })).toEqual({ enforced: 2, cut: 0 });
      expect(tie.at(1)).toEqual([SHA1, SHA256]);
      expect(await enforcer.list()).toEqual([SHA1, SHA256]);
    } finally {
      await enforcer.withdraw();
      await enforcer.close();
    }
  });

  it('the broker refuses a client without a certificate, or with one another CA signed', async () => {
    const { pki, broker } = await fixture();
    const ca = await readFile(pki.caFile, 'utf8');
    const base = { host: '127.0.0.1', port: broker.port, ca, checkHostname: false, connectTimeoutMs: 10_000, requestTimeoutMs: 10_000 };
    const anonymous = new DxlClient(base);
    await expect(anonymous.connect()).rejects.toMatchObject({ code: 'DXL_CONNECT_FAILED' });
    await anonymous.close();
    const stranger = new DxlClient({ ...base, cert: await readFile(pki.stranger.cert, 'utf8'), key: await readFile(pki.stranger.key, 'utf8') });
    await expect(stranger.connect()).rejects.toMatchObject({ code: 'DXL_CONNECT_FAILED' });
    await stranger.close();

    const cfg = await configFor({}, { cert_file: pki.stranger.cert, private_key: pki.stranger.key });
    const enforcer = await openDxlTieEnforcer.create(cfg, { log: silent, kind: 'file' });
    try {
      const health = await enforcer.healthcheck();
      expect(health.ok).toBe(false);
      expect(health.detail).toMatch(/^cannot connect to the DXL broker 127\.0\.0\.1:\d+: /);
      await expect(enforcer.sync([entry(MD5)])).rejects.toBeInstanceOf(DxlError);
    } finally {
      await enforcer.close();
    }
  });

  it("the broker's certificate must chain to the CA bundle; with broker_identity ca_and_hostname it must also name the host", async () => {
    const { pki, broker } = await fixture();
    const client = await readFile(pki.agent.cert, 'utf8');
    const key = pki.agent.keyPem;
    const base = { port: broker.port, cert: client, key, connectTimeoutMs: 10_000, requestTimeoutMs: 10_000 };
    const wrongCa = new DxlClient({ ...base, host: '127.0.0.1', ca: await readFile(join(pki.dir, 'other-ca.pem'), 'utf8'), checkHostname: false });
    await expect(wrongCa.connect()).rejects.toMatchObject({ code: 'DXL_CONNECT_FAILED' });
    await wrongCa.close();
    const ca = await readFile(pki.caFile, 'utf8');
    const named = new DxlClient({ ...base, host: 'localhost', ca, checkHostname: true });
    await named.connect();
    expect(named.connected).toBe(true);
    await named.close();
  });

  it('a request nobody answers times out; an aborted request rejects with the reason', async () => {
    const { pki, broker } = await fixture();
    const dxl = new DxlClient({
      host: '127.0.0.1',
      port: broker.port,
      ca: await readFile(pki.caFile, 'utf8'),
      cert: await readFile(pki.agent.cert, 'utf8'),
      key: pki.agent.keyPem,
      checkHostname: false,
      connectTimeoutMs: 10_000,
      requestTimeoutMs: 200,
    });
    try {
      await expect(dxl.request('/mcafee/service/nobody', Buffer.from('{}'))).rejects.toMatchObject({ code: 'DXL_TIMEOUT' });
      const controller = new AbortController();
      const pending = new TieFiles(dxl).enterpriseTrustLevel(MD5, controller.signal);
      controller.abort(new Error('stop'));
      await expect(pending).rejects.toThrow('stop');
      expect(await new TieFiles(dxl).enterpriseTrustLevel(MD5)).toBe(0);
      expect(dxl.replyTopic).toBe(`/mcafee/client/${dxl.clientId}`);
      expect(TIE_GET_FILE_REPUTATION).toBe('/mcafee/service/tie/file/reputation');
    } finally {
      await dxl.close();
    }
  });

  it('with read_back list_file, reads the list file and asks TIE nothing; a change made in TIE goes unseen', async () => {
    const { tie } = await fixture();
    tie.store.clear();
    const cfg = await configFor({ read_back: 'list_file' });
    const enforcer = await openDxlTieEnforcer.create(cfg, { log: silent, kind: 'file' });
    try {
      await enforcer.sync([entry(MD5), entry(SHA256)]);
      const gets = tie.counts.get;
      tie.store.delete(MD5);
      expect(await enforcer.list()).toEqual([MD5, SHA256]);
      expect(await enforcer.reconcile!()).toMatchObject({ drifted: false });
      expect(tie.counts.get).toBe(gets);
    } finally {
      await enforcer.withdraw();
      await enforcer.close();
    }
  });

  it('a client closed while it connects ends that connection; a later call connects again', async () => {
    const { pki, broker } = await fixture();
    const dxl = new DxlClient({ host: '127.0.0.1', port: broker.port, ca: await readFile(pki.caFile, 'utf8'), cert: await readFile(pki.agent.cert, 'utf8'), key: pki.agent.keyPem, checkHostname: false, connectTimeoutMs: 10_000, requestTimeoutMs: 10_000 });
    const first = dxl.connect();
    await dxl.close();
    await expect(first).rejects.toMatchObject({ code: 'DXL_DISCONNECTED' });
    expect(dxl.connected).toBe(false);
    await dxl.connect();
    expect(dxl.connected).toBe(true);
    await dxl.close();
    expect(dxl.connected).toBe(false);
  });

  it('reads the private key from a file path as well as PEM text', async () => {
    const { pki, tie } = await fixture();
    tie.store.clear();
    const cfg = await configFor({}, { private_key: pki.agent.key });
    const enforcer = await openDxlTieEnforcer.create(cfg, { log: silent, kind: 'file' });
    try {
      await enforcer.sync([entry(SHA256)]);
      expect(tie.at(1)).toEqual([SHA256]);
    } finally {
      await enforcer.withdraw();
      await enforcer.close();
    }
  });
});

describe('list file written before the broker is reachable', () => {
  it('keeps digests of a foreign list file as candidates (parsed leniently)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rampart-tie-list-'));
    try {
      await writeFile(join(dir, 'f.txt'), `# comment\n${MD5.toLowerCase()}\n\nnot-a-digest\n${SHA1} # note\n${MD5}\n`);
      const { parseDigestList } = await import('../src/index.ts');
      expect(parseDigestList(await readFile(join(dir, 'f.txt'), 'utf8'))).toEqual([MD5, SHA1]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

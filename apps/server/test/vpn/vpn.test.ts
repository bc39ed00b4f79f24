import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { VpnLicense, VpnLicenseDetail } from '@rampart/contracts';
import { testConfig, type AppConfig } from '../../src/config.ts';
import { generateWireGuardKeyPair, VpnKeyBox } from '../../src/services/vpn/keys.ts';
import { vpnPool } from '../../src/services/vpn/pool.ts';
import type { Store } from '../../src/store/index.ts';
import { driverCases } from '../support/databases.ts';
import { seedOrg, testApp, type TestOrg } from '../support/app.ts';
import { sqlOf } from '../../src/store/sql-handle.ts';

const SERVER = generateWireGuardKeyPair();
const base = testConfig().tools;
const vpnTools = (pool: string, extra: Partial<AppConfig['tools']['vpn']> = {}): Partial<AppConfig> => ({
  tools: { ...base, vpn: { ...base.vpn, pool, endpoint: 'vpn.example.org:51820', serverPublicKey: SERVER.publicKey, dns: ['10.99.0.1'], ...extra } },
});

// The WireGuard checks are tests of their own, counted as skipped where wireguard-tools is missing;
// under CI, which installs it, its absence fails the file instead.
const noWg = spawnSync('wg', ['--version']).status !== 0;
if (noWg && process.env.CI) throw new Error('CI must install wireguard-tools (wg): the VPN key and config checks may not skip there');

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function wg(args: string[], input?: string): string {
  const run = spawnSync(args[0] === 'quick' ? 'wg-quick' : 'wg', args[0] === 'quick' ? args.slice(1) : args, { input, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`wg ${args.join(' ')} failed: ${run.stderr}`);
  return run.stdout;
}

describe('VPN building blocks', () => {
  it('generates distinct WireGuard key pairs in base64', () => {
    const pair = generateWireGuardKeyPair();
    expect(pair.privateKey).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(pair.publicKey).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(pair.privateKey).not.toBe(generateWireGuardKeyPair().privateKey);
  });

  it.skipIf(noWg)('derives, in wg itself, the same public key from a generated private key', () => {
    const pair = generateWireGuardKeyPair();
    expect(wg(['pubkey'], `${pair.privateKey}\n`).trim()).toBe(pair.publicKey);
  });

  it('allocates pool addresses after the server address and before broadcast', () => {
    const pool = vpnPool('10.99.0.5/29');
    expect(pool.cidr).toBe('10.99.0.0/29');
    expect(pool.serverAddress).toBe('10.99.0.1');
    expect(pool.capacity).toBe(5);
    expect([...pool.candidates()]).toEqual(['10.99.0.2', '10.99.0.3', '10.99.0.4', '10.99.0.5', '10.99.0.6']);
  });

  it('seals private keys bound to their license id', () => {
    const box = new VpnKeyBox('a-secret-of-sixteen');
    const sealed = box.seal('PRIVATE', 'RMP-VID-LICA');
    expect(sealed).toMatch(/^v1:/);
    expect(sealed).not.toContain('PRIVATE');
    expect(box.open(sealed, 'RMP-VID-LICA')).toBe('PRIVATE');
    expect(box.open(sealed, 'RMP-VID-LICB')).toBeNull();
    expect(new VpnKeyBox('another-secret-sixteen').open(sealed, 'RMP-VID-LICA')).toBeNull();
    expect(box.open('', 'RMP-VID-LICA')).toBeNull();
  });
});

describe.each(driverCases())('secure VPN on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  let other: TestOrg;
  const call = (method: 'GET' | 'POST' | 'DELETE', url: string, key: string, payload?: unknown, on = app) =>
    on.inject({ method, url: `/api/v1${url}`, headers: { authorization: key }, ...(payload === undefined ? {} : { payload: payload as object }) });
  const create = async (org: TestOrg, account_name: string, notes?: string, on = app) => {
    const res = await call('POST', '/vpn', org.keys.admin, notes === undefined ? { account_name } : { account_name, notes }, on);
    expect(res.statusCode, res.body).toBe(200);
    return String(res.headers.location).replace('/api/v1/vpn/', '');
  };

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store, vpnTools('10.99.0.0/29'));
    acme = await seedOrg(store, { credits: 1000, name: `Acme VPN ${driver.name}` });
    other = await seedOrg(store, { credits: 1000, name: `Other VPN ${driver.name}` });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });
  // Every test starts with the whole pool free, whatever an earlier one left behind.
  afterEach(async () => {
    await sqlOf(store).query("update vpn_licenses set deactivated_at = now(), private_key_enc = '' where deactivated_at is null");
  });

  it('creates a license for an admin only, charging the vpn price, with no body and a Location', async () => {
    for (const role of ['reader', 'contributor'] as const) {
      expect((await call('POST', '/vpn', acme.keys[role], { account_name: 'x' })).statusCode).toBe(403);
    }
    const res = await call('POST', '/vpn', acme.keys.admin, { account_name: 'laptop-ada', notes: 'travel laptop' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('');
    expect(res.headers['x-coins-cost']).toBe('10');
    expect(res.headers.location).toMatch(/^\/api\/v1\/vpn\/RMP-VID-LIC[0-9A-F]{32}$/);
    const vid = String(res.headers.location).slice('/api/v1/vpn/'.length);

    const list = await call('GET', '/vpn', acme.keys.reader);
    expect(list.statusCode).toBe(200);
    const [record] = VpnLicense.array().parse(list.json());
    const admin = (await store.users.byUsername(`admin.${acme.org.gid.slice(-8).toLowerCase()}@example.org`))!;
    const org = (await store.orgs.byGid(acme.org.gid))!;
    expect(list.json()).toEqual([
      {
        vid,
        account_name: 'laptop-ada',
        notes: 'travel laptop',
        ts: record!.ts,
        user: {
          guid: admin.guid, name: '', surname: '', username: admin.username, role: 3, unsuccessful_login: 0,
          member_of: { gid: org.gid, name: org.name, trust: 0.5, delay: '0', credit_tokens: 1000, debit_tokens: org.debit_tokens, is_public: 0 },
        },
        mgid: acme.org.gid,
        exist: true,
      },
    ]);
    expect(org.debit_tokens).toBe(10);
    expect(Math.abs(record!.ts - Date.now() / 1000)).toBeLessThan(120);
    await call('DELETE', `/vpn/${vid}`, acme.keys.admin);
  });

  it('gives admins a complete wg-quick config whose keys and syntax WireGuard accepts, and masks the key for others', async () => {
    const vid = await create(acme, 'phone-bob');
    const res = await call('GET', `/vpn/${vid}`, acme.keys.admin);
    expect(res.statusCode).toBe(200);
    const detail = VpnLicenseDetail.parse(res.json());
    const inst = detail.installation!;
    const raw = await sqlOf(store).query<{ private_key_enc: string; address: string }>('select private_key_enc, host(address) as address from vpn_licenses where vid = $1', [vid]);
    const privateKey = /PrivateKey = (\S+)/.exec(inst.config)![1]!;
    expect(inst).toEqual({
      interface: 'rampart',
      address: raw.rows[0]!.address,
      endpoint: 'vpn.example.org:51820',
      public_key: inst.public_key,
      server_public_key: SERVER.publicKey,
      private_key_shown: true,
      config: [
        '[Interface]', `PrivateKey = ${privateKey}`, `Address = ${inst.address}/32`, 'DNS = 10.99.0.1', '',
        '[Peer]', `PublicKey = ${SERVER.publicKey}`, 'Endpoint = vpn.example.org:51820', 'AllowedIPs = 0.0.0.0/0, ::/0', 'PersistentKeepalive = 25', '',
      ].join('\n'),
      commands: [
        'sudo apt-get install wireguard-tools   # Debian/Ubuntu; other systems: https://www.wireguard.com/install/',
        'sudo install -m 600 /dev/null /etc/wireguard/rampart.conf   # then paste the config into /etc/wireguard/rampart.conf',
        'sudo wg-quick up rampart',
        'sudo systemctl enable wg-quick@rampart   # reconnect at boot',
        'sudo wg show rampart   # a recent handshake means the tunnel is up',
        'sudo wg-quick down rampart   # to disconnect',
      ],
      server_peer: `wg set <server-interface> peer ${inst.public_key} allowed-ips ${inst.address}/32`,
    });
    expect(['10.99.0.2', '10.99.0.3', '10.99.0.4', '10.99.0.5', '10.99.0.6']).toContain(inst.address);
    // At rest the key is encrypted, never in the clear.
    expect(raw.rows[0]!.private_key_enc).toMatch(/^v1:/);
    expect(raw.rows[0]!.private_key_enc).not.toContain(privateKey);


    const asReader = VpnLicenseDetail.parse((await call('GET', `/vpn/${vid}`, acme.keys.reader)).json());
    expect(asReader.installation!.private_key_shown).toBe(false);
    expect(asReader.installation!.config).toContain('PrivateKey = ********\n');
    expect(asReader.installation!.config).not.toContain(privateKey);
    await call('DELETE', `/vpn/${vid}`, acme.keys.admin);
  });

  it.skipIf(noWg)('gives a config that wg-quick parses into exactly the keys and the peer', async () => {
    const vid = await create(acme, 'wg-check');
    const inst = VpnLicenseDetail.parse((await call('GET', `/vpn/${vid}`, acme.keys.admin)).json()).installation!;
    const privateKey = /PrivateKey = (\S+)/.exec(inst.config)![1]!;
    expect(wg(['pubkey'], `${privateKey}\n`).trim()).toBe(inst.public_key);
    const dir = mkdtempSync(join(tmpdir(), 'rampart-wg-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'rampart.conf'), inst.config, { mode: 0o600 });
    // wg-quick parses the file and hands the WireGuard part on: exactly the keys and the peer.
    expect(wg(['quick', 'strip', join(dir, 'rampart.conf')]).trimEnd()).toBe(
      `[Interface]\nPrivateKey = ${privateKey}\n\n[Peer]\nPublicKey = ${SERVER.publicKey}\nEndpoint = vpn.example.org:51820\nAllowedIPs = 0.0.0.0/0, ::/0\nPersistentKeepalive = 25`,
    );
    await call('DELETE', `/vpn/${vid}`, acme.keys.admin);
  });

  it("hides other organizations' licenses (404) and lets only admins deactivate", async () => {
    const vid = await create(acme, 'desk-carol');
    expect((await call('GET', `/vpn/${vid}`, other.keys.admin)).statusCode).toBe(404);
    expect((await call('DELETE', `/vpn/${vid}`, other.keys.admin)).statusCode).toBe(404);
    expect((await call('GET', '/vpn', other.keys.admin)).json()).toEqual([]);
    expect((await call('DELETE', `/vpn/${vid}`, acme.keys.contributor)).statusCode).toBe(403);
    expect((await call('GET', `/vpn/${vid}`, acme.keys.reader)).json().exist).toBe(true);
    await call('DELETE', `/vpn/${vid}`, acme.keys.admin);
  });

  it('deactivates: record kept with exist false, unlisted, key erased, address back to the pool', async () => {
    const first = await create(acme, 'a');
    const firstAddress = VpnLicenseDetail.parse((await call('GET', `/vpn/${first}`, acme.keys.admin)).json()).installation!.address;
    const del = await call('DELETE', `/vpn/${first}`, acme.keys.admin);
    expect(del.statusCode).toBe(200);
    expect(del.body).toBe('');
    const after = await call('GET', `/vpn/${first}`, acme.keys.admin);
    expect(after.statusCode).toBe(200);
    expect(after.json()).toMatchObject({ vid: first, account_name: 'a', exist: false, installation: null });
    expect((await call('GET', '/vpn', acme.keys.admin)).json().map((l: { vid: string }) => l.vid)).not.toContain(first);
    const raw = await sqlOf(store).query<{ private_key_enc: string }>('select private_key_enc from vpn_licenses where vid = $1', [first]);
    expect(raw.rows[0]!.private_key_enc).toBe('');
    const again = await call('DELETE', `/vpn/${first}`, acme.keys.admin);
    expect(again.statusCode).toBe(404);
    expect(again.json().detail).toBe(`VPN license ${first} is already deactivated`);
    // The lowest free address is handed out again.
    const second = await create(acme, 'b');
    expect(VpnLicenseDetail.parse((await call('GET', `/vpn/${second}`, acme.keys.admin)).json()).installation!.address).toBe(firstAddress);
    await call('DELETE', `/vpn/${second}`, acme.keys.admin);
  });

  it('answers 409 when the pool is exhausted, and charges nothing for it', async () => {
    const vids: string[] = [];
    for (let i = 0; i < 5; i++) vids.push(await create(i % 2 ? other : acme, `dev-${i}`));
    const res = await call('POST', '/vpn', acme.keys.admin, { account_name: 'one-too-many' });
    expect(res.statusCode).toBe(409);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json().detail).toBe('the VPN address pool 10.99.0.0/29 is exhausted (5 client addresses, all in use): deactivate a license or widen VPN_POOL');
    expect(res.headers['x-coins-cost']).toBe('0');
    for (const [i, vid] of vids.entries()) await call('DELETE', `/vpn/${vid}`, (i % 2 ? other : acme).keys.admin);
  });

  it('validates bodies and ids with 400 naming the field', async () => {
    const missing = await call('POST', '/vpn', acme.keys.admin, { notes: 'x' });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().errors.map((e: { path: string }) => e.path)).toEqual(['body.account_name']);
    expect((await call('POST', '/vpn', acme.keys.admin, { account_name: '   ' })).json().errors[0].path).toBe('body.account_name');
    expect((await call('POST', '/vpn', acme.keys.admin, { account_name: 'x'.repeat(257) })).statusCode).toBe(400);
    const badId = await call('GET', '/vpn/RMP-GID-NOTALICENSE', acme.keys.admin);
    expect(badId.statusCode).toBe(400);
    expect(badId.json().errors[0].path).toBe('params.vid');
    expect((await call('GET', '/vpn/RMP-VID-LIC00000000000000000000000000000000', acme.keys.admin)).statusCode).toBe(404);
  });

  it('refuses to create licenses on a server without VPN_ENDPOINT / VPN_SERVER_PUBLIC_KEY (409)', async () => {
    const bare = await testApp(store);
    try {
      const res = await call('POST', '/vpn', acme.keys.admin, { account_name: 'x' }, bare);
      expect(res.statusCode).toBe(409);
      expect(res.json().detail).toBe('the secure VPN is not configured on this server: the operator must set VPN_ENDPOINT and VPN_SERVER_PUBLIC_KEY');
      expect((await call('GET', '/vpn', acme.keys.admin, undefined, bare)).statusCode).toBe(200);
    } finally {
      await bare.close();
    }
  });

  it('never gives two concurrent creates the same address, across two server instances', async () => {
    const pool = vpnPool('10.98.0.0/28');
    const one = await testApp(store, vpnTools(pool.cidr));
    const two = await testApp(store, vpnTools(pool.cidr));
    try {
      const attempts = 20;
      const results = await Promise.all(
        Array.from({ length: attempts }, (_, i) => call('POST', '/vpn', acme.keys.admin, { account_name: `race-${i}` }, i % 2 ? one : two)),
      );
      const codes = results.map((r) => r.statusCode).sort();
      expect(codes).toEqual([...Array(pool.capacity).fill(200), ...Array(attempts - pool.capacity).fill(409)]);
      const rows = await sqlOf(store).query<{ address: string }>(
        "select host(address) as address from vpn_licenses where deactivated_at is null and address <<= '10.98.0.0/28'::inet order by address",
      );
      expect(rows.rows.map((r) => r.address).sort()).toEqual([...pool.candidates()].sort());
    } finally {
      await one.close();
      await two.close();
    }
  });
});

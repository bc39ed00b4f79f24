import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { engineStats, enforcerKinds } from '@rampart/plugin-kit';
import { kindConformance, silentLogger as silent } from '@rampart/plugin-kit/testing';
import { canonicalOf, InfobloxRpzConfig, infobloxRpzEnforcer, ownerMarker, parseWhitelist } from '../src/index.ts';
import { startWapiStandIn, type WapiStandIn } from './wapi-stand-in.ts';

const ZONE = 'rpz.example.org';
const entry = (value: string, score = 900) => ({ value, score });

function config(api: WapiStandIn, extra: Record<string, unknown> = {}) {
  return InfobloxRpzConfig.parse({
    active: true,
    api: api.api,
    username: 'rampart-api',
    password: 'pw-1',
    policy: ZONE,
    ...extra,
    options: { dialect: 'infoblox', tls_fingerprint_sha256: api.fingerprint256, ...(extra.options as object) },
  });
}
const open = (api: WapiStandIn, extra: Record<string, unknown> = {}) => infobloxRpzEnforcer.create(config(api, extra), { log: silent, kind: 'domain' });
const requestsSince = (api: WapiStandIn, start: number) =>
  api.calls
    .slice(start)
    .filter((c) => c.path === 'request')
    .map((c) => (c.body as { method: string; object: string; data?: { name: string } }[]).map((i) => (i.method === 'POST' ? `+${i.data!.name}` : `-${i.object.split(':').at(-1)!.split('/')[0]}`)));

describe('enforcer-infoblox-rpz config', () => {
  it('parses the README sample config; names what is missing or wrong', async () => {
    const readme = await readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    const sample = /## Sample config[\s\S]*?```json\n([\s\S]*?)```/.exec(readme)?.[1];
    const parsed = InfobloxRpzConfig.parse(JSON.parse(sample!));
    expect(parsed.api).toBe('https://gm.example.org/wapi/v2.12');
    expect(parsed.options).toEqual({
      dialect: 'infoblox',
      ca_file: '/etc/rampart/infoblox-ca.pem',
      tls_fingerprint_sha256: '',
      batch_size: 500,
      page_size: 1000,
      max_entries: 100_000,
      passthru: ['intranet.example.org'],
      timeout_seconds: 120,
    });
    expect(enforcerKinds(infobloxRpzEnforcer, parsed)).toEqual(['domain']);
    const issues = (input: unknown) =>
      InfobloxRpzConfig.safeParse(input)
        .error?.issues.map((i) => `${i.path.join('.')}: ${i.message}`)
        .sort();
    expect(issues({ active: true, api: 'http://gm/wapi/v2.12', action: 'drop', group: 'a b', options: { passthru: ['exa mple'] } })).toEqual([
      'action: nxdomain (or empty), nodata or a walled-garden domain name; NIOS has no drop rule for names',
      'api: the WAPI base URL, https://<grid master>/wapi/v<version>',
      'group: letters, digits, _ . - (at most 64): it marks the records this agent owns',
      'options.passthru.0: not a domain name',
      'password: required when active',
      'policy: the name of the response policy zone (zone_rp), such as rpz.example.org',
      'username: required when active',
    ]);
    expect(issues({ active: true, api: 'https://gm/api', username: 'u', password: 'p', policy: 'rpz' })).toEqual(['api: the WAPI base URL, https://<grid master>/wapi/v<version>']);
    expect(issues({ active: true, options: { tls_fingerprint_sha256: 'AB:CD' } })).toContain('options.tls_fingerprint_sha256: a SHA-256 fingerprint: 32 hex bytes, colons optional');
    expect(issues({ active: true, options: { dialect: 'bind' } })).toContainEqual(expect.stringMatching(/^options\.dialect: /));
    expect(InfobloxRpzConfig.parse({ active: false, options: { tls_fingerprint_sha256: 'ab'.repeat(32) } }).options.tls_fingerprint_sha256).toBe(Array(32).fill('AB').join(':'));
  });

  it('maps the action to the canonical of a record:rpz:cname, and the group to the owner marker', () => {
    expect(['', 'NXDOMAIN', 'nodata', 'drop', 'Garden.Example.', 'no way'].map(canonicalOf)).toEqual(['', '', '*', undefined, 'garden.example', undefined]);
    expect([ownerMarker(''), ownerMarker('dmz')]).toEqual(['rampart', 'rampart:dmz']);
    expect(parseWhitelist('# allowed\nIntranet.Example.org.\n\nexa mple\nb.example # partner\n')).toEqual(['b.example', 'intranet.example.org']);
  });

  it('refuses a kind other than domain', async () => {
    const cfg = InfobloxRpzConfig.parse({ active: false });
    await expect(infobloxRpzEnforcer.create(cfg, { log: silent, kind: 'url' })).rejects.toThrow("infoblox-rpz: enforces domains only, not 'url'");
  });
});

describe('enforcer-infoblox-rpz against a WAPI stand-in', () => {
  let api: WapiStandIn;
  beforeAll(async () => {
    api = await startWapiStandIn({ user: 'rampart-api', password: 'pw-1', zones: [ZONE, 'internal/rpz.internal'] });
  });
  afterAll(() => api.stop());
  beforeEach(() => {
    api.records.clear();
    api.add({ name: `partner.example.${ZONE}`, canonical: 'partner.example', view: 'default', zone: ZONE, comment: 'operator' });
  });

  it('writes each name and its wildcard with the owner marker; then sends only diffs; leaves other records alone', async () => {
    const e = await open(api);
    try {
      expect(await e.healthcheck()).toEqual({ ok: true });
      expect(await e.sync([entry('bad.example'), entry('Evil.Example.')])).toEqual({ enforced: 2, cut: 0 });
      expect(api.rules(ZONE)).toEqual([
        `*.bad.example.${ZONE} → "" (rampart)`,
        `*.evil.example.${ZONE} → "" (rampart)`,
        `bad.example.${ZONE} → "" (rampart)`,
        `evil.example.${ZONE} → "" (rampart)`,
        `partner.example.${ZONE} → "partner.example" (operator)`,
      ]);
      expect(await e.list()).toEqual(['bad.example', 'evil.example']);
      const start = api.calls.length;
      await e.apply({ add: [entry('new.example')], remove: ['bad.example'] });
      expect(requestsSince(api, start)).toEqual([[`-bad.example.${ZONE}`, `-*.bad.example.${ZONE}`, `+new.example.${ZONE}`, `+*.new.example.${ZONE}`]]);
      expect(api.calls.slice(start).filter((c) => c.method === 'GET')).toEqual([]);
      expect(await e.list()).toEqual(['evil.example', 'new.example']);
      // A sync computes its diff from a read; it never empties the zone first.
      const again = api.calls.length;
      await e.sync([entry('evil.example'), entry('other.example')]);
      expect(requestsSince(api, again)).toEqual([[`-new.example.${ZONE}`, `-*.new.example.${ZONE}`, `+other.example.${ZONE}`, `+*.other.example.${ZONE}`]]);
      const same = api.calls.length;
      await e.sync([entry('evil.example'), entry('other.example')]);
      expect(requestsSince(api, same)).toEqual([]);
      await e.withdraw();
      expect(api.rules(ZONE)).toEqual([`partner.example.${ZONE} → "partner.example" (operator)`]);
    } finally {
      await e.close();
    }
  });

  it('reads the zone page by page, following next_page_id, in the configured view', async () => {
    const e = await open(api, { view: 'internal', policy: 'rpz.internal', options: { page_size: 3, batch_size: 4 } });
    try {
      const names = Array.from({ length: 5 }, (_, i) => entry(`host-${i}.example`));
      const first = api.calls.length;
      await e.sync(names);
      expect(api.rules('rpz.internal', 'internal')).toHaveLength(10);
      expect(api.rules(ZONE)).toHaveLength(1);
      const start = api.calls.length;
      expect(await e.list()).toEqual(names.map((n) => n.value));
      const reads = api.calls.slice(start).map((c) => c.query);
      expect(reads).toHaveLength(4);
      expect(reads[0]).toEqual({ zone: 'rpz.internal', view: 'internal', _paging: '1', _max_results: '3', _return_as_object: '1', _return_fields: 'name,canonical,comment' });
      expect(reads.slice(1).every((q) => Object.keys(q).join() === '_page_id')).toBe(true);
      // 10 creates at 4 objects a request call.
      expect(api.calls.slice(first, start).filter((c) => c.path === 'request').map((c) => (c.body as unknown[]).length)).toEqual([4, 4, 2]);
    } finally {
      await e.withdraw();
      await e.close();
    }
  });

  it('writes the action: NODATA (*), a walled garden, passthru rules for whitelisted names; owns records by group', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rampart-ib-'));
    const allow = join(dir, 'allow.txt');
    await writeFile(allow, 'ok.example\n');
    const nodata = await open(api, { action: 'nodata', group: 'dmz', domains_file_whitelist: allow, options: { passthru: ['intranet.example'] } });
    const garden = await open(api, { action: 'garden.example.org' });
    try {
      await nodata.sync([entry('bad.example'), entry('ok.example')]);
      await garden.sync([entry('worse.example')]);
      expect(api.rules(ZONE)).toEqual([
        `*.bad.example.${ZONE} → "*" (rampart:dmz)`,
        `*.intranet.example.${ZONE} → "*.intranet.example" (rampart:dmz)`,
        `*.ok.example.${ZONE} → "*.ok.example" (rampart:dmz)`,
        `*.worse.example.${ZONE} → "garden.example.org" (rampart)`,
        `bad.example.${ZONE} → "*" (rampart:dmz)`,
        `intranet.example.${ZONE} → "intranet.example" (rampart:dmz)`,
        `ok.example.${ZONE} → "ok.example" (rampart:dmz)`,
        `partner.example.${ZONE} → "partner.example" (operator)`,
        `worse.example.${ZONE} → "garden.example.org" (rampart)`,
      ]);
      expect(await nodata.list()).toEqual(['bad.example']);
      expect(await garden.list()).toEqual(['worse.example']);
      expect((await nodata.reconcile!()).drifted).toBe(false);
      await nodata.withdraw();
      expect(await garden.list()).toEqual(['worse.example']);
      await garden.withdraw();
      expect(api.rules(ZONE)).toHaveLength(1);
    } finally {
      await nodata.close();
      await garden.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('whitelist decisions (allow) become passthru rules at the next sync, and leave when the whitelist drops them', async () => {
    const e = await open(api);
    try {
      await e.sync([entry('evil.example')]);
      e.allow!(['OK.Evil.Example.', 'not a name']);
      await e.sync([entry('evil.example')]);
      expect(api.rules(ZONE).filter((r) => r.includes('ok.evil'))).toEqual([`*.ok.evil.example.${ZONE} → "*.ok.evil.example" (rampart)`, `ok.evil.example.${ZONE} → "ok.evil.example" (rampart)`]);
      expect(await e.list()).toEqual(['evil.example']);
      e.allow!([]);
      await e.sync([entry('evil.example')]);
      expect(api.rules(ZONE).filter((r) => r.includes('ok.evil'))).toEqual([]);
    } finally {
      await e.withdraw();
      await e.close();
    }
  });

  it('repairs a record deleted behind its back at reconcile, re-creating only that record', async () => {
    const e = await open(api);
    try {
      await e.sync([entry('bad.example'), entry('evil.example')]);
      const gone = [...api.records.values()].find((r) => r.name === `*.evil.example.${ZONE}`)!;
      api.records.delete(gone._ref);
      const start = api.calls.length;
      expect(await e.reconcile!()).toMatchObject({ drifted: true, enforced: 2 });
      expect(requestsSince(api, start)).toEqual([[`+*.evil.example.${ZONE}`]]);
      expect((await e.reconcile!()).drifted).toBe(false);
      // A record removed behind its back and then removed by a diff: the batch fails on the
      // stale reference, and the engine replaces the zone from a fresh read.
      const bad = [...api.records.values()].find((r) => r.name === `bad.example.${ZONE}`)!;
      api.records.delete(bad._ref);
      await e.apply({ add: [], remove: ['bad.example'] });
      expect(await e.list()).toEqual(['evil.example']);
      expect(engineStats(e)).toMatchObject({ fallbacks: 1 });
    } finally {
      await e.withdraw();
      await e.close();
    }
  });

  it("fails a call with WAPI's code and text; a refused request call changes nothing", async () => {
    api.add({ name: `taken.example.${ZONE}`, canonical: 'x.example', view: 'default', zone: ZONE });
    const e = await open(api);
    try {
      await expect(e.sync([entry('bad.example'), entry('taken.example')])).rejects.toMatchObject({
        code: 'INFOBLOX_WAPI_FAILED',
        status: 400,
        wapiCode: 'Client.Ibap.Data.Conflict',
        text: `The record 'taken.example.${ZONE}' already exists.`,
        message: `POST request failed (HTTP 400): Client.Ibap.Data.Conflict: The record 'taken.example.${ZONE}' already exists.`,
      });
      expect(api.rules(ZONE)).toHaveLength(2);
      await e.sync([entry('bad.example')]);
      api.failNextRequest = { at: 1, code: 'Client.Ibap.Data', text: 'Invalid value for canonical' };
      await expect(e.sync([entry('evil.example')])).rejects.toThrow('POST request failed (HTTP 400): Client.Ibap.Data: Invalid value for canonical');
      expect(await e.list()).toEqual(['bad.example']);
    } finally {
      await e.withdraw();
      await e.close();
    }
  });

  it('refuses a wrong password (HTTP 401) and reports a zone that does not exist', async () => {
    const wrong = await open(api, { password: 'nope' });
    expect(await wrong.healthcheck()).toEqual({ ok: false, detail: 'GET zone_rp failed (HTTP 401): Unauthorized: authorization failed: wrong username or password, or no API access' });
    await expect(wrong.sync([entry('bad.example')])).rejects.toMatchObject({ code: 'INFOBLOX_WAPI_FAILED', status: 401 });
    await wrong.close();
    const missing = await open(api, { policy: 'rpz.nowhere' });
    expect(await missing.healthcheck()).toEqual({ ok: false, detail: "response policy zone 'rpz.nowhere' not found in DNS view 'default'" });
    await missing.close();
  });

  it('refuses a server whose certificate does not match the pin before sending anything; accepts the CA file', async () => {
    const calls = api.calls.length;
    const pinned = await open(api, { options: { tls_fingerprint_sha256: 'AB'.repeat(32) } });
    expect(await pinned.healthcheck()).toEqual({ ok: false, detail: `server certificate ${api.fingerprint256} does not match the pinned fingerprint` });
    await expect(pinned.sync([])).rejects.toMatchObject({ code: 'INFOBLOX_TLS_FAILED' });
    expect(api.calls.length).toBe(calls);
    await pinned.close();
    const viaCa = await open(api, { options: { tls_fingerprint_sha256: '', ca_file: api.certPath } });
    expect(await viaCa.healthcheck()).toEqual({ ok: true });
    await viaCa.close();
    // Neither pin nor CA: the system's CAs, which do not know the test certificate.
    const system = await open(api, { options: { tls_fingerprint_sha256: '' } });
    expect((await system.healthcheck()).ok).toBe(false);
    await system.close();
  });
});

kindConformance('infoblox-rpz (WAPI stand-in)', 'domain', async ({ capacity }) => {
  const api = await startWapiStandIn({ user: 'rampart-api', password: 'pw-1', zones: [ZONE] });
  return {
    enforcer: await open(api, { options: capacity ? { max_entries: capacity } : {} }),
    disturb: async () => {
      for (const [ref, r] of api.records) if (r.comment === 'rampart') api.records.delete(ref);
    },
    teardown: () => api.stop(),
  };
});

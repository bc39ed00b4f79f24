import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OrganizationConfig, SECRET_MASK } from '@rampart/contracts';
import type { Store } from '../src/store/index.ts';
import { agentTokenCodec, agentTokenSecret } from '../src/services/agents/tokens.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';
import { registerAgent } from './support/agents.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

describe.each(driverCases())('agent keys and settings documents on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  let other: TestOrg;

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { name: 'Acme keys' });
    other = await seedOrg(store, { name: 'Other keys' });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  const get = (url: string, headers: Record<string, string>) => app.inject({ url: `/api/v1${url}`, headers });

  it('lets an agent key call agent routes (feeds, its own settings) and nothing else', async () => {
    const a = await registerAgent(app, acme.keys.admin);
    const b = await registerAgent(app, acme.keys.admin);
    expect(a.header).toBe('Authorization');
    for (const authorization of [a.token, `Bearer ${a.token}`]) {
      expect((await get('/ips?ts=0', { authorization })).statusCode).toBe(200);
    }
    const own = await get(`/agents/${a.gaid}/config`, { authorization: a.token });
    expect(own.statusCode).toBe(200);
    expect(own.json().ips.router_a.router_password).toBe('router-pass');
    expect(own.headers['x-settings-version']).toBe('1');

    expect((await get(`/agents/${b.gaid}/config`, { authorization: a.token })).statusCode).toBe(403);
    for (const url of ['/agents', '/organization/config', `/agents/${a.gaid}/tokens`, `/agents/${a.gaid}/config/history`]) {
      const res = await get(url, { authorization: a.token });
      expect(res.statusCode, url).toBe(403);
    }
    const put = await app.inject({ method: 'PUT', url: `/api/v1/agents/${a.gaid}/config`, headers: { authorization: a.token }, payload: a.config });
    expect(put.statusCode).toBe(403);
    const register = await app.inject({ method: 'POST', url: `/api/v1/agents/${a.gaid}/token`, headers: { authorization: a.token }, payload: {} });
    expect(register.statusCode).toBe(403);
  });

  it('lets an agent look up one address, and records its check-ins under its own gaid whatever the query names', async () => {
    const a = await registerAgent(app, acme.keys.admin);
    const b = await registerAgent(app, acme.keys.admin);
    const lookup = await get('/ips/203.0.113.77', { authorization: a.token });
    expect(lookup.statusCode).toBe(200);
    expect(lookup.json().body).toEqual([]);
    expect((await get(`/ipv4/500?agid=${b.gaid}&plugin=csv`, { authorization: a.token })).statusCode).toBe(200);
    const report = await app.inject({ method: 'POST', url: `/api/v1/ips?gaid=${b.gaid}`, headers: { authorization: a.token }, payload: { ip: '45.77.113.78', confidence: 0.5, source: 'ssh' } });
    expect(report.statusCode).toBeLessThan(300);
    const agents = (await get('/agents', { authorization: acme.keys.admin })).json() as Array<{ gaid: string; last_checkin: number | null; last_checkin_via: string | null }>;
    expect(agents.find((x) => x.gaid === a.gaid)).toMatchObject({ last_checkin_via: 'ipv4' });
    expect(agents.find((x) => x.gaid === b.gaid)).toMatchObject({ last_checkin: null, last_checkin_via: null });
  });

  it('accepts the key only in the header the agent auth_name names', async () => {
    const a = await registerAgent(app, acme.keys.admin, { auth_name: 'X-Rampart-Key' });
    expect(a.header).toBe('X-Rampart-Key');
    expect((await get('/ips?ts=0', { 'x-rampart-key': a.token })).statusCode).toBe(200);
    const wrong = await get('/ips?ts=0', { authorization: a.token });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json().detail).toContain('x-rampart-key');
  });

  it('rate-limits each agent key on its own, not every agent behind one address together', async () => {
    const limited = await testApp(store, { rateLimitPerMinute: 3 });
    try {
      const [a, b] = [await registerAgent(app, acme.keys.admin), await registerAgent(app, acme.keys.admin)];
      const call = (token: string) => limited.inject({ url: '/api/v1/ips?ts=0', headers: { authorization: token } });
      for (let i = 0; i < 3; i++) expect((await call(a.token)).statusCode).toBe(200);
      expect((await call(a.token)).statusCode).toBe(429);
      expect((await call(b.token)).statusCode).toBe(200);
    } finally {
      await limited.close();
    }
  });

  it('refuses forged, expired, revoked and deactivated keys with 401', async () => {
    const a = await registerAgent(app, acme.keys.admin);
    const forged = await agentTokenCodec('x'.repeat(40)).sign({ jti: a.tokenId, gaid: a.gaid, org: acme.org.gid }, null);
    expect((await get('/ips?ts=0', { authorization: forged })).statusCode).toBe(401);
    const codec = agentTokenCodec(await agentTokenSecret(undefined, store));
    const expired = await codec.sign({ jti: a.tokenId, gaid: a.gaid, org: acme.org.gid }, Math.floor(Date.now() / 1000) - 10);
    expect((await get('/ips?ts=0', { authorization: expired })).statusCode).toBe(401);
    const foreign = await codec.sign({ jti: a.tokenId, gaid: a.gaid, org: other.org.gid }, null);
    expect((await get('/ips?ts=0', { authorization: foreign })).statusCode).toBe(401);

    const list = await get(`/agents/${a.gaid}/tokens`, { authorization: acme.keys.admin });
    expect(list.json()).toEqual([{ token_id: a.tokenId, issued_at: expect.any(Number), issued_by: expect.stringMatching(/^admin\./), expires_at: null, revoked: false }]);
    const revoke = await app.inject({ method: 'DELETE', url: `/api/v1/agents/${a.gaid}/tokens/${a.tokenId}`, headers: { authorization: acme.keys.admin } });
    expect(revoke.statusCode).toBe(200);
    const revoked = await get('/ips?ts=0', { authorization: a.token });
    expect(revoked.statusCode).toBe(401);
    expect(revoked.json().detail).toBe('the agent key was revoked or its agent deactivated');
    expect((await app.inject({ method: 'DELETE', url: `/api/v1/agents/${a.gaid}/tokens/${a.tokenId}`, headers: { authorization: acme.keys.admin } })).statusCode).toBe(404);

    const b = await registerAgent(app, acme.keys.admin);
    expect((await get('/ips?ts=0', { authorization: b.token })).statusCode).toBe(200);
    expect((await app.inject({ method: 'DELETE', url: `/api/v1/agents/${b.gaid}`, headers: { authorization: other.keys.admin } })).statusCode).toBe(404);
    expect((await app.inject({ method: 'DELETE', url: `/api/v1/agents/${b.gaid}`, headers: { authorization: acme.keys.admin } })).statusCode).toBe(200);
    expect((await get('/ips?ts=0', { authorization: b.token })).statusCode).toBe(401);
    const reissue = await app.inject({ method: 'POST', url: `/api/v1/agents/${b.gaid}/token`, headers: { authorization: acme.keys.admin }, payload: {} });
    expect(reissue.statusCode).toBe(409);
  });

  it("issues keys only to admins, only for their organization's agents, with an optional expiry", async () => {
    const a = await registerAgent(app, acme.keys.admin);
    const url = `/api/v1/agents/${a.gaid}/token`;
    expect((await app.inject({ method: 'POST', url, headers: { authorization: acme.keys.contributor }, payload: {} })).statusCode).toBe(403);
    expect((await app.inject({ method: 'POST', url, headers: { authorization: other.keys.admin }, payload: {} })).statusCode).toBe(404);
    const bad = await app.inject({ method: 'POST', url, headers: { authorization: acme.keys.admin }, payload: { ttl_days: 0 } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors).toEqual([{ path: 'body.ttl_days', message: expect.any(String) }]);
    const res = await app.inject({ method: 'POST', url, headers: { authorization: acme.keys.admin }, payload: { ttl_days: 30 } });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body).toMatchObject({ gaid: a.gaid, org: acme.org.gid, header: 'Authorization' });
    expect(body.expires_at - Math.floor(Date.now() / 1000)).toBeGreaterThan(30 * 86_400 - 60);
    expect(body.expires_at - Math.floor(Date.now() / 1000)).toBeLessThanOrEqual(30 * 86_400);
    expect((await get('/ips?ts=0', { authorization: body.token })).statusCode).toBe(200);
  });

  it('returns secrets masked to admins and keeps them when the mask is written back', async () => {
    const a = await registerAgent(app, acme.keys.admin, { api_jwt_key: 'jwt-secret' });
    const path = `/api/v1/agents/${a.gaid}/config`;
    const read = await get(`/agents/${a.gaid}/config`, { authorization: acme.keys.admin });
    expect(read.statusCode).toBe(200);
    const doc = read.json();
    expect(doc.running).toBe('yes');
    expect(doc.api_jwt_key).toBe(SECRET_MASK);
    expect(doc.ips.router_a).toEqual({ active: false, router_host: '192.0.2.1', router_user: 'admin', router_password: SECRET_MASK });
    expect(doc.ips.cloud_a.secretAccessKey).toBe(SECRET_MASK);
    expect(read.body).not.toContain('router-pass');

    const changed = { ...doc, score_threshold: 700, running: 'no', ips: { ...doc.ips, cloud_a: { ...doc.ips.cloud_a, secretAccessKey: 'new-aws-secret' } } };
    const put = await app.inject({ method: 'PUT', url: path, headers: { authorization: acme.keys.admin }, payload: changed });
    expect(put.statusCode).toBe(200);
    expect(put.headers['x-settings-version']).toBe('2');
    expect(put.json().ips.cloud_a.secretAccessKey).toBe(SECRET_MASK);

    const unmasked = (await get(`/agents/${a.gaid}/config`, { authorization: a.token })).json();
    expect(unmasked).toMatchObject({ score_threshold: 700, running: 'no', api_jwt_key: 'jwt-secret' });
    expect(unmasked.ips.router_a.router_password).toBe('router-pass');
    expect(unmasked.ips.cloud_a.secretAccessKey).toBe('new-aws-secret');

    const history = await get(`/agents/${a.gaid}/config/history`, { authorization: acme.keys.admin });
    expect(history.json()).toEqual([
      { version: 2, changed_by: expect.stringMatching(/^admin\./), changed_at: expect.stringMatching(/Z$/), changed_fields: ['ips.cloud_a.secretAccessKey', 'running', 'score_threshold'] },
      { version: 1, changed_by: expect.stringMatching(/^admin\./), changed_at: expect.stringMatching(/Z$/), changed_fields: ['(created)'] },
    ]);
    const audit = await sqlOf(store).query<{ row: string }>('select row_to_json(a)::text as row from settings_audit a where org_id = $1', [acme.org.id]);
    expect(audit.rows.length).toBeGreaterThan(0);
    for (const r of audit.rows) expect(r.row).not.toMatch(/new-aws-secret|router-pass|jwt-secret/);
  });

  it('masks a secret nested deep in an integration the contract does not know, keeps it on write-back, and keeps it out of the history', async () => {
    const a = await registerAgent(app, acme.keys.admin);
    const path = `/api/v1/agents/${a.gaid}/config`;
    const admin = { authorization: acme.keys.admin };
    const vault = (password: string) => ({ active: false, layer1: { layer2: { layer3: [{ host: 'v1', password }, { host: 'v2', password: '' }] } } });
    const doc = (await get(`/agents/${a.gaid}/config`, admin)).json();
    const put = await app.inject({ method: 'PUT', url: path, headers: admin, payload: { ...doc, ips: { ...doc.ips, vault_x: vault('deep-pass') } } });
    expect(put.statusCode).toBe(200);
    expect(put.json().ips.vault_x).toEqual(vault(SECRET_MASK));
    const read = await get(`/agents/${a.gaid}/config`, admin);
    expect(read.json().ips.vault_x).toEqual(vault(SECRET_MASK));
    expect(read.body).not.toContain('deep-pass');

    const back = await app.inject({ method: 'PUT', url: path, headers: admin, payload: { ...read.json<Record<string, unknown>>(), score_threshold: 650 } });
    expect(back.statusCode).toBe(200);
    const unmasked = (await get(`/agents/${a.gaid}/config`, { authorization: a.token })).json();
    expect(unmasked.ips.vault_x).toEqual(vault('deep-pass'));
    expect(unmasked.score_threshold).toBe(650);

    const history = (await get(`/agents/${a.gaid}/config/history`, admin)).json();
    expect(history.map((h: { version: number; changed_fields: string[] }) => [h.version, h.changed_fields])).toEqual([
      [3, ['score_threshold']],
      [2, ['ips.vault_x']],
      [1, ['(created)']],
    ]);
    const audit = await sqlOf(store).query<{ row: string }>('select row_to_json(a)::text as row from settings_audit a where org_id = $1', [acme.org.id]);
    for (const r of audit.rows) expect(r.row).not.toContain('deep-pass');
  });

  it("masks plugins' declared secrets, secrets in any case and anything named like a secret under a label the server does not know, and keeps them on write-back", async () => {
    const a = await registerAgent(app, acme.keys.admin);
    const path = `/api/v1/agents/${a.gaid}/config`;
    const admin = { authorization: acme.keys.admin };
    const vendor = (v: (clear: string) => string) => ({
      active: true,
      user: 'svc',
      api_token: v('cf-api-token'),
      private_key_passphrase: v('key-phrase'),
      ssh_password: v('ssh-pass'),
      Password: v('Upper-pass'),
      PASSWORD: v('SHOUT-pass'),
      options: { client_secret: v('client-sec'), headers: { 'X-Api-Key': v('hdr-key') } },
    });
    const doc = (await get(`/agents/${a.gaid}/config`, admin)).json();
    const put = await app.inject({ method: 'PUT', url: path, headers: admin, payload: { ...doc, ips: { ...doc.ips, vendor_x: vendor((c) => c) } } });
    expect(put.statusCode).toBe(200);
    const read = await get(`/agents/${a.gaid}/config`, admin);
    expect(read.json().ips.vendor_x).toEqual(vendor(() => SECRET_MASK));
    for (const clear of ['cf-api-token', 'key-phrase', 'ssh-pass', 'Upper-pass', 'SHOUT-pass', 'client-sec', 'hdr-key']) expect([clear, read.body.includes(clear)]).toEqual([clear, false]);
    const back = await app.inject({ method: 'PUT', url: path, headers: admin, payload: { ...read.json<Record<string, unknown>>(), score_threshold: 640 } });
    expect(back.statusCode).toBe(200);
    const unmasked = (await get(`/agents/${a.gaid}/config`, { authorization: a.token })).json();
    expect(unmasked.ips.vendor_x).toEqual(vendor((c) => c));
  });

  it('refuses an invalid or foreign settings document with 400/404, naming the paths', async () => {
    const a = await registerAgent(app, acme.keys.admin);
    const path = `/api/v1/agents/${a.gaid}/config`;
    const bad = await app.inject({ method: 'PUT', url: path, headers: { authorization: acme.keys.admin }, payload: { ...a.config, running: 'maybe', maximum_rules: -1 } });
    expect(bad.statusCode).toBe(400);
    expect((bad.json().errors as { path: string }[]).map((e) => e.path).sort()).toEqual(['body.maximum_rules', 'body.running']);
    const moved = await app.inject({ method: 'PUT', url: path, headers: { authorization: acme.keys.admin }, payload: { ...a.config, gaid: 'RMP-AGENT-ID-ELSEWHERE' } });
    expect(moved.statusCode).toBe(400);
    expect(moved.json().errors).toEqual([{ path: 'body.gaid', message: `must be ${a.gaid}, the agent of this path` }]);
    const foreign = await app.inject({ method: 'PUT', url: path, headers: { authorization: other.keys.admin }, payload: a.config });
    expect(foreign.statusCode).toBe(404);
    expect((await get(`/agents/${a.gaid}/config`, { authorization: other.keys.admin })).statusCode).toBe(404);
    expect((await get(`/agents/${a.gaid}/config`, { authorization: acme.keys.contributor })).statusCode).toBe(403);
  });

  it('serves the organization document with defaults, replaces it, versions and audits each change', async () => {
    const org = await seedOrg(store, { name: 'Org settings' });
    const first = await get('/organization/config', { authorization: org.keys.admin });
    expect(first.statusCode).toBe(200);
    expect(first.headers['x-settings-version']).toBe('0');
    expect(first.json()).toEqual(OrganizationConfig.parse({}));
    expect(first.json().live.critical_score).toEqual([150, 1000]);

    const doc = { ...first.json(), reserved_ips: ['203.0.113.0/24'], blocking_roule: { score: 80, tags: ['ssh'] } };
    const put = await app.inject({ method: 'PUT', url: '/api/v1/organization/config', headers: { authorization: org.keys.admin }, payload: doc });
    expect(put.statusCode).toBe(200);
    expect(put.headers['x-settings-version']).toBe('1');
    expect((await get('/organization/config', { authorization: org.keys.admin })).json()).toEqual(doc);
    // Others never see it: their own document is still the defaults.
    expect((await get('/organization/config', { authorization: other.keys.admin })).json().reserved_ips).toEqual([]);

    const partial = await app.inject({ method: 'PUT', url: '/api/v1/organization/config', headers: { authorization: org.keys.admin }, payload: { reserved_ips: [] } });
    expect(partial.json()).toEqual(OrganizationConfig.parse({}));
    const history = (await get('/organization/config/history', { authorization: org.keys.admin })).json();
    expect(history.map((h: { version: number; changed_fields: string[] }) => [h.version, h.changed_fields])).toEqual([
      [2, ['blocking_roule', 'reserved_ips']],
      [1, ['blocking_roule', 'reserved_ips']],
    ]);

    const bad = await app.inject({
      method: 'PUT',
      url: '/api/v1/organization/config',
      headers: { authorization: org.keys.admin },
      payload: { reserved_ips: ['300.1.1.1'], live: { low_score: [90, 10] }, blocking_roule: { tags: ['x'] } },
    });
    expect(bad.statusCode).toBe(400);
    expect((bad.json().errors as { path: string }[]).map((e) => e.path).sort()).toEqual(['body.blocking_roule.score', 'body.live.low_score', 'body.reserved_ips.0']);
    expect((await get('/organization/config', { authorization: org.keys.contributor })).statusCode).toBe(403);
  });

  it('records no version and no history entry for a save that changes nothing', async () => {
    const org = await seedOrg(store, { name: 'Org no-op' });
    const put = (payload: Record<string, unknown>) => app.inject({ method: 'PUT', url: '/api/v1/organization/config', headers: { authorization: org.keys.admin }, payload });
    const doc = { ...OrganizationConfig.parse({}), reserved_ips: ['198.51.100.0/24'] };
    expect((await put(doc)).headers['x-settings-version']).toBe('1');
    const again = await put(doc);
    expect(again.statusCode).toBe(200);
    expect(again.headers['x-settings-version']).toBe('1');
    expect(again.json()).toEqual(doc);
    const history = (await get('/organization/config/history', { authorization: org.keys.admin })).json();
    expect(history.map((h: { version: number; changed_fields: string[] }) => [h.version, h.changed_fields])).toEqual([[1, ['reserved_ips']]]);
    // Defaults saved over never-saved defaults: nothing either.
    const fresh = await seedOrg(store, { name: 'Org no-op defaults' });
    const defaults = await app.inject({ method: 'PUT', url: '/api/v1/organization/config', headers: { authorization: fresh.keys.admin }, payload: {} });
    expect(defaults.headers['x-settings-version']).toBe('0');
    expect((await get('/organization/config/history', { authorization: fresh.keys.admin })).json()).toEqual([]);
  });

  it('refuses overlapping score bands with a 400 naming the band (touching bands are fine)', async () => {
    const org = await seedOrg(store, { name: 'Org bands' });
    const put = (live: Record<string, unknown>) => app.inject({ method: 'PUT', url: '/api/v1/organization/config', headers: { authorization: org.keys.admin }, payload: { live } });
    const bad = await put({ low_score: [1, 60], medium_score: [50, 120], high_score: [120, 150], critical_score: [140, 1000] });
    expect(bad.statusCode).toBe(400);
    expect(bad.headers['content-type']).toContain('application/problem+json');
    expect(bad.json().errors).toEqual([
      { path: 'body.live.medium_score', message: 'overlaps low_score [1, 60]: medium_score must start at 60 or above' },
      { path: 'body.live.critical_score', message: 'overlaps high_score [120, 150]: critical_score must start at 150 or above' },
    ]);
    expect((await get('/organization/config', { authorization: org.keys.admin })).headers['x-settings-version']).toBe('0');
    const ok = await put({ low_score: [1, 50], medium_score: [50, 120], high_score: [130, 150], critical_score: [150, 1000] });
    expect(ok.statusCode).toBe(200);
    expect(ok.json().live.high_score).toEqual([130, 150]);
  });
});

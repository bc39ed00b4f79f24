import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import { ROLE } from '@rampart/contracts';
import { createApiKey, createUser, openStore, type Store, seedOrg, testApp, type TestOrg } from '@rampart/server/testing';
import { ClientApiError, RampartClient } from '@rampart/client';

// The client against the real control plane (PGlite store): contracts on both sides agree.
describe('against the Rampart server', () => {
  let store: Store;
  let app: FastifyInstance;
  let base: string;
  let key: string;
  let acme: TestOrg;
  let operatorKey: string;

  beforeAll(async () => {
    store = await openStore({});
    app = await testApp(store);
    await app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/api/v1`;
    key = (await seedOrg(store)).keys.reader;
    acme = await seedOrg(store, { name: 'Client Acme', credits: 1000 });
    const username = `operator.${acme.org.gid.slice(-8).toLowerCase()}@example.org`;
    await createUser(store, { orgGid: acme.org.gid, username, role: ROLE.operator });
    operatorKey = (await createApiKey(store, { username })).key;
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it('reads /version and an /ips page, with the key bare or as Bearer', async () => {
    const bare = new RampartClient({ baseUrl: base, apiKey: key });
    expect((await bare.version()).application).toBeTypeOf('string');
    const page = await bare.ipsPage({ ts: 0, page_size: 10 });
    expect(page.header).toMatchObject({ type: 'IPv4', version: 2, ts: '0', next_ts: 0, page_size: 10 });
    const bearer = new RampartClient({ baseUrl: base, apiKey: key, authScheme: 'bearer' });
    expect((await bearer.ipsPage({ ts: 0 })).body).toEqual([]);
  });

  it('maps the server problem for an unknown key and a bad query to typed errors', async () => {
    const wrong = new RampartClient({ baseUrl: base, apiKey: 'rmp_nope_nope', retries: 0 });
    await expect(wrong.ipsPage()).rejects.toMatchObject({ status: 401, code: 'unauthorized' });
    const client = new RampartClient({ baseUrl: base, apiKey: key, retries: 0 });
    const err = await client.ipsPage({ page_size: 0 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ClientApiError);
    expect((err as ClientApiError).code).toBe('validation_failed');
    expect((err as ClientApiError).errors?.map((e) => e.path)).toContain('querystring.page_size');
  });

  it('reports, reads back and decides through every typed call the console and agents use', async () => {
    const contributor = new RampartClient({ baseUrl: base, apiKey: acme.keys.contributor, retries: 0 });
    const admin = new RampartClient({ baseUrl: base, apiKey: acme.keys.admin, retries: 0 });
    await contributor.reportIp({ ip: '45.77.10.1', confidence: 0.9, source: 'ssh_log' }, { idempotencyKey: 'client-test-1' });
    await contributor.reportIp({ ip: '45.77.10.2', confidence: 0.8, source: 'ssh_log' });

    const looked = await contributor.ipLookup('45.77.10.1', { full: 'yes' });
    expect(looked.body.map((r) => r.ip)).toEqual(['45.77.10.1']);
    const fed: string[] = [];
    // The feed serves changes once they are settled (a moment behind now): only its walk is checked here.
    for await (const page of contributor.ipsFeed(0)) fed.push(...page.body.map((r) => r.ip));
    expect(fed.every((ip) => ip === '45.77.10.1' || ip === '45.77.10.2')).toBe(true);
    const listed: string[] = [];
    for await (const page of contributor.ipv4List(1)) listed.push(...page.items);
    expect(listed.sort()).toEqual(['45.77.10.1', '45.77.10.2']);

    const indicators: string[] = [];
    for await (const item of admin.indicators({ kind: 'ipv4', page_size: 1 })) indicators.push(item.value);
    expect(indicators.sort()).toEqual(['45.77.10.1', '45.77.10.2']);
    expect(await admin.decisionsPage()).toMatchObject({ items: [], next_page: null });
    const decided: unknown[] = [];
    for await (const d of admin.decisions()) decided.push(d);
    expect(decided).toEqual([]);
    const why = await admin.why('ipv4', '45.77.10.1');
    expect(why).toMatchObject({ kind: 'ipv4', value: '45.77.10.1' });
    expect((await admin.organizationConfig()).reserved_ips).toBeDefined();

    const domains: unknown[] = [];
    for await (const page of contributor.domainsFeed(0)) domains.push(...page.body);
    for await (const page of contributor.urlsFeed(0)) domains.push(...page.body);
    for await (const page of contributor.filesFeed(0)) domains.push(...page.body);
    expect(domains).toEqual([]);
    const names: string[] = [];
    for await (const page of contributor.scoreList('domain', 50, { protocol: 'HTTPS' })) names.push(...page.items);
    expect(names).toEqual([]);
  });

  it('registers an agent, issues its key, reads its settings and takes its feedback', async () => {
    const admin = new RampartClient({ baseUrl: base, apiKey: acme.keys.admin, retries: 0 });
    const gaid = 'RMP-AGENT-ID-CLIENT01';
    const registered = await admin.registerAgent({ gaid, ts: Date.now(), score_threshold: 500, start_from: 0, version: 'v1.0.0', proxy: 'LOCAL', sync_time: 5, maximum_rules: 1000 });
    expect(registered).toBeTruthy();
    const issued = await admin.issueAgentToken(gaid, { ttl_days: 1 });
    expect(issued).toMatchObject({ gaid, expires_at: expect.any(Number) });
    expect((await admin.agentSettings(gaid)).score_threshold).toBe(500);
    const agent = new RampartClient({ baseUrl: base, apiKey: issued.token, authName: issued.header, retries: 0 });
    expect(agent.syncUrl()).toBe(`${base.replace(/^http/, 'ws')}/agents/sync`);
    await agent.agentFeedback({ agid: gaid, plugin: 'csv', code: 0, blacklist: 3 });
  });

  it('lets an operator create an organization, change it, grant coins and read users, keys and the audit log', async () => {
    const operator = new RampartClient({ baseUrl: base, apiKey: operatorKey, retries: 0 });
    const created = await operator.createOrganization({ name: 'Client New CERT', trust: 0.5, delay: 30, credits: 10 });
    expect(created).toMatchObject({ name: 'Client New CERT', trust: 0.5, delay: 30 });
    expect(await operator.updateOrganization(created.gid, { trust: 0.7 })).toMatchObject({ trust: 0.7 });
    expect((await operator.grantCoins(created.gid, { amount: 5, note: 'client test' })).gid).toBe(created.gid);
    expect((await operator.operatorOrganizations()).items.map((o) => o.name)).toContain('Client New CERT');
    expect(await operator.organizationUsers(created.gid)).toEqual([]);
    expect(await operator.organizationKeys(created.gid)).toEqual([]);
    const audit = await operator.auditPage({ page_size: 10 });
    expect(audit.items.length).toBeGreaterThanOrEqual(3);
  });
});

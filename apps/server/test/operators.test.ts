import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditListResponse, MeResponse, OperatorOrganization, OperatorOrgListResponse, ROLE } from '@rampart/contracts';
import type { Store } from '../src/store/index.ts';
import { createApiKey, createUser } from '../src/services/operators/admin.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';

describe.each(driverCases())('operators and the audit log on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let alliance: TestOrg;
  let member: TestOrg;
  let operatorKey: string;

  const call = (method: 'GET' | 'POST' | 'PATCH', url: string, key: string, payload?: object) =>
    app.inject({ method, url: `/api/v1${url}`, headers: { authorization: key }, ...(payload ? { payload } : {}) });
  const ok = async (method: 'GET' | 'POST' | 'PATCH', url: string, key: string, payload?: object, status = 200) => {
    const res = await call(method, url, key, payload);
    expect(res.statusCode, `${method} ${url} ${res.body}`).toBe(status);
    return res.json() as unknown;
  };
  const failing = async (method: 'GET' | 'POST' | 'PATCH', url: string, key: string, payload: object | undefined, status: number) => {
    const res = await call(method, url, key, payload);
    expect(res.statusCode, `${method} ${url} ${res.body}`).toBe(status);
    return res.json() as { errors?: Array<{ path: string }> };
  };

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    alliance = await seedOrg(store, { name: 'Alliance Ops' });
    member = await seedOrg(store, { name: 'Member Org', credits: 10 });
    const username = `operator.${alliance.org.gid.slice(-8).toLowerCase()}@example.org`;
    await createUser(store, { orgGid: alliance.org.gid, username, role: ROLE.operator });
    operatorKey = (await createApiKey(store, { username })).key;
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it('creates an organization, refusing a taken name and bad fields by name', async () => {
    const created = OperatorOrganization.parse(await ok('POST', '/operator/organizations', operatorKey, { name: 'New CERT', trust: 0.7, delay: 60, credits: 500 }, 201));
    expect(created).toMatchObject({ name: 'New CERT', trust: 0.7, delay: 60, credit_tokens: 500, debit_tokens: 0, balance: 500, users: 0 });
    expect(created.gid).toMatch(/^RMP-GID-/);
    expect((await failing('POST', '/operator/organizations', operatorKey, { name: 'New CERT' }, 409)).errors?.map((e) => e.path)).toEqual(['body.name']);
    for (const [body, path] of [
      [{ name: 'x', trust: 1.5 }, 'body.trust'],
      [{ name: 'x', delay: -1 }, 'body.delay'],
      [{ name: 'x', credits: 0.5 }, 'body.credits'],
      [{ name: '' }, 'body.name'],
      [{ name: 'x', owner: 'me' }, 'body'],
    ] as const) {
      expect((await failing('POST', '/operator/organizations', operatorKey, body, 400)).errors?.map((e) => e.path), JSON.stringify(body)).toContain(path);
    }
  });

  it('grants coins and sets trust and delay, which the organization then sees', async () => {
    const granted = OperatorOrganization.parse(await ok('POST', `/operator/organizations/${member.org.gid}/coins`, operatorKey, { amount: 250, note: 'pilot' }));
    expect(granted).toMatchObject({ credit_tokens: 260, balance: 260 });
    const changed = OperatorOrganization.parse(await ok('PATCH', `/operator/organizations/${member.org.gid}`, operatorKey, { trust: 0.95, delay: 30 }));
    expect(changed).toMatchObject({ trust: 0.95, delay: 30 });
    const me = MeResponse.parse(await ok('GET', '/me', member.keys.reader));
    expect(me.organization).toMatchObject({ trust: 0.95, credit_tokens: 260, balance: 260 });
    expect(me.user.member_of.delay).toBe('30');
    expect((await failing('POST', `/operator/organizations/${member.org.gid}/coins`, operatorKey, { amount: 0 }, 400)).errors?.map((e) => e.path)).toEqual(['body.amount']);
    expect((await failing('PATCH', `/operator/organizations/${member.org.gid}`, operatorKey, {}, 400)).errors?.map((e) => e.path)).toEqual(['body']);
    await failing('POST', '/operator/organizations/RMP-GID-NOSUCHORG/coins', operatorKey, { amount: 1 }, 404);
    expect((await failing('PATCH', '/operator/organizations/not-a-gid', operatorKey, { trust: 0.1 }, 400)).errors?.map((e) => e.path)).toEqual(['params.gid']);
  });

  it('lists organizations page by page, and their users and keys', async () => {
    const seen: string[] = [];
    let page: string | null = null;
    do {
      const res: OperatorOrgListResponse = OperatorOrgListResponse.parse(await ok('GET', `/operator/organizations?page_size=1${page ? `&page=${encodeURIComponent(page)}` : ''}`, operatorKey));
      expect(res.items.length).toBeLessThanOrEqual(1);
      seen.push(...res.items.map((o) => o.name));
      page = res.next_page;
    } while (page);
    expect(seen).toEqual(expect.arrayContaining(['Alliance Ops', 'Member Org', 'New CERT']));
    expect(new Set(seen).size).toBe(seen.length);
    const filtered = OperatorOrgListResponse.parse(await ok('GET', '/operator/organizations?q=member', operatorKey));
    expect(filtered.items.map((o) => [o.name, o.users])).toEqual([['Member Org', 3]]);
    expect((await failing('GET', '/operator/organizations?page_size=501', operatorKey, undefined, 400)).errors?.map((e) => e.path)).toEqual(['querystring.page_size']);

    const users = (await ok('GET', `/operator/organizations/${member.org.gid}/users`, operatorKey)) as Array<{ username: string; role: number }>;
    expect(users.map((u) => u.role)).toEqual([1, 2, 3]);
    const keys = (await ok('GET', `/operator/organizations/${member.org.gid}/keys`, operatorKey)) as Array<Record<string, unknown>>;
    expect(keys).toHaveLength(3);
    for (const k of keys) expect(Object.keys(k).sort()).toEqual(['created_at', 'key_id', 'label', 'last_used_at', 'revoked_at', 'username']);
    await failing('GET', '/operator/organizations/RMP-GID-NOSUCHORG/users', operatorKey, undefined, 404);
  });

  it('refuses every operator route to an organization admin', async () => {
    await failing('GET', '/operator/organizations', member.keys.admin, undefined, 403);
    await failing('POST', '/operator/organizations', member.keys.admin, { name: 'Rogue' }, 403);
    await failing('POST', `/operator/organizations/${member.org.gid}/coins`, member.keys.admin, { amount: 1000 }, 403);
    await failing('PATCH', `/operator/organizations/${member.org.gid}`, member.keys.admin, { trust: 1 }, 403);
    await failing('GET', `/operator/organizations/${alliance.org.gid}/keys`, member.keys.admin, undefined, 403);
    expect(MeResponse.parse(await ok('GET', '/me', member.keys.reader)).organization.trust).toBe(0.95);
  });

  it('audits every operator action and key change: admins see their organization only', async () => {
    await ok('POST', '/keys', member.keys.admin, { label: 'siem' }, 201);
    await ok('POST', '/keys', alliance.keys.admin, { label: 'elsewhere' }, 201);
    const all = AuditListResponse.parse(await ok('GET', '/audit', operatorKey));
    const actions = all.items.map((e) => [e.action, e.organization]);
    expect(actions).toEqual(
      expect.arrayContaining([
        ['organization.grant_coins', member.org.gid],
        ['organization.update', member.org.gid],
        ['key.create', member.org.gid],
        ['key.create', alliance.org.gid],
      ]),
    );
    const update = all.items.find((e) => e.action === 'organization.update')!;
    expect(update).toMatchObject({ actor: expect.stringMatching(/^operator\./), actor_organization: alliance.org.gid, target: member.org.gid, detail: { trust: { from: 0.5, to: 0.95 }, delay: { from: '0', to: '30' } } });
    expect(update.address).toBe('127.0.0.1');
    expect(all.items.find((e) => e.action === 'organization.grant_coins')!.detail).toEqual({ amount: 250, note: 'pilot', credit_tokens: 260 });

    const mine = AuditListResponse.parse(await ok('GET', '/audit', member.keys.admin));
    expect(new Set(mine.items.map((e) => e.organization))).toEqual(new Set([member.org.gid]));
    expect(mine.items.map((e) => e.action)).toEqual(['key.create', 'organization.update', 'organization.grant_coins']);
    expect((await failing('GET', `/audit?organization=${alliance.org.gid}`, member.keys.admin, undefined, 403)).errors?.map((e) => e.path)).toEqual(['querystring.organization']);
    await failing('GET', '/audit', member.keys.contributor, undefined, 403);
    const filtered = AuditListResponse.parse(await ok('GET', `/audit?organization=${member.org.gid}&action=key.create`, operatorKey));
    expect(filtered.items.map((e) => [e.action, e.organization])).toEqual([['key.create', member.org.gid]]);
    // Pages: one at a time, newest first, each entry once; a cursor is bound to its viewer.
    const first = AuditListResponse.parse(await ok('GET', '/audit?page_size=1', member.keys.admin));
    const second = AuditListResponse.parse(await ok('GET', `/audit?page_size=1&page=${encodeURIComponent(first.next_page!)}`, member.keys.admin));
    expect([...first.items, ...second.items].map((e) => e.action)).toEqual(['key.create', 'organization.update']);
    await failing('GET', `/audit?page_size=1&page=${encodeURIComponent(first.next_page!)}`, operatorKey, undefined, 400);
  });
});

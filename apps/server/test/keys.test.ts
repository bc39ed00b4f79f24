import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyInfo, MeResponse } from '@rampart/contracts';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';

describe.each(driverCases())('API keys and /me on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  let other: TestOrg;

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { credits: 40, name: 'Keys Acme' });
    other = await seedOrg(store, { credits: 10, name: 'Keys Other' });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  const as = (key: string) => ({ authorization: key });

  it('GET /me names the caller, its organization and the live balance', async () => {
    const res = await app.inject({ method: 'GET', url: '/api/v1/me', headers: as(acme.keys.reader) });
    expect(res.statusCode).toBe(200);
    const me = MeResponse.parse(res.json());
    expect(me.user.role).toBe(1);
    expect(me.user.member_of.gid).toBe(acme.org.gid);
    expect(me.organization).toEqual({ gid: acme.org.gid, name: 'Keys Acme', trust: 0.5, credit_tokens: 40, debit_tokens: 0, balance: 40 });
    expect(me.via).toBe('user');
    // A priced request moves the balance /me reports (a look-up: an empty feed poll is free).
    const lookup = await app.inject({ method: 'GET', url: '/api/v1/ips/203.0.113.1', headers: as(acme.keys.reader) });
    expect(lookup.statusCode).toBe(200);
    expect(lookup.headers['x-coins-cost']).toBe('1');
    const after = MeResponse.parse((await app.inject({ method: 'GET', url: '/api/v1/me', headers: as(acme.keys.reader) })).json());
    expect(after.organization.balance).toBe(39);
  });

  it('issues a key once, lists keys without secrets, and revokes', async () => {
    const username = `contributor.${acme.org.gid.slice(-8).toLowerCase()}@example.org`;
    const created = await app.inject({ method: 'POST', url: '/api/v1/keys', headers: as(acme.keys.admin), payload: { username, label: 'siem' } });
    expect(created.statusCode).toBe(201);
    const { key, key_id } = created.json() as { key: string; key_id: string };
    expect(key).toMatch(new RegExp(`^rmp_${key_id}_`));
    expect((await app.inject({ method: 'GET', url: '/api/v1/me', headers: as(key) })).json().user.username).toBe(username);

    const list = await app.inject({ method: 'GET', url: '/api/v1/keys', headers: as(acme.keys.admin) });
    expect(list.statusCode).toBe(200);
    expect(list.body).not.toContain(key.slice(18));
    const listed = (list.json() as unknown[]).map((k) => ApiKeyInfo.parse(k));
    expect(listed.map((k) => k.key_id)).toContain(key_id);
    expect(listed.find((k) => k.key_id === key_id)).toMatchObject({ username, label: 'siem', revoked_at: null });
    expect(listed.every((k) => k.username.endsWith('@example.org'))).toBe(true);

    const revoked = await app.inject({ method: 'DELETE', url: `/api/v1/keys/${key_id}`, headers: as(acme.keys.admin) });
    expect(revoked.statusCode).toBe(200);
    expect(revoked.json()).toEqual({ key_id, revoked: true });
    expect((await app.inject({ method: 'GET', url: '/api/v1/me', headers: as(key) })).statusCode).toBe(401);
    const relisted = (await app.inject({ method: 'GET', url: '/api/v1/keys', headers: as(acme.keys.admin) })).json() as ApiKeyInfo[];
    expect(relisted.find((k) => k.key_id === key_id)!.revoked_at).not.toBeNull();
  });

  it('keeps organizations apart and follows the role rules', async () => {
    const otherKeys = (await app.inject({ method: 'GET', url: '/api/v1/keys', headers: as(other.keys.admin) })).json() as ApiKeyInfo[];
    const foreign = otherKeys[0]!.key_id;
    const del = await app.inject({ method: 'DELETE', url: `/api/v1/keys/${foreign}`, headers: as(acme.keys.admin) });
    expect(del.statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: '/api/v1/me', headers: as(other.keys.admin) })).statusCode).toBe(200);

    const otherUser = `reader.${other.org.gid.slice(-8).toLowerCase()}@example.org`;
    const cross = await app.inject({ method: 'POST', url: '/api/v1/keys', headers: as(acme.keys.admin), payload: { username: otherUser } });
    expect(cross.statusCode).toBe(404);
    expect(cross.json().errors).toEqual([{ path: 'body.username', message: 'unknown user' }]);

    for (const key of [acme.keys.reader, acme.keys.contributor]) {
      expect((await app.inject({ method: 'GET', url: '/api/v1/keys', headers: as(key) })).statusCode).toBe(403);
      expect((await app.inject({ method: 'POST', url: '/api/v1/keys', headers: as(key), payload: {} })).statusCode).toBe(403);
    }
  });

  it('names the failing field of a bad request', async () => {
    const badId = await app.inject({ method: 'DELETE', url: '/api/v1/keys/XYZ', headers: as(acme.keys.admin) });
    expect(badId.statusCode).toBe(400);
    expect(badId.json().errors[0].path).toBe('params.key_id');
    const badBody = await app.inject({ method: 'POST', url: '/api/v1/keys', headers: as(acme.keys.admin), payload: { username: 'not-an-email', extra: 1 } });
    expect(badBody.statusCode).toBe(400);
    expect((badBody.json().errors as Array<{ path: string }>).map((e) => e.path).sort()).toEqual(['body', 'body.username']);
  });
});

import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { agentConfig } from './support/agents.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';
import { sqlOf } from '../src/store/sql-handle.ts';

describe.each(driverCases())('feed polls with ?gaid= are check-ins on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  let other: TestOrg;

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { credits: 100_000 });
    other = await seedOrg(store, { credits: 100_000 });
    for (const [org, gaid] of [[acme, 'RMP-AGENT-ID-FEED1'], [acme, 'RMP-AGENT-ID-FEED2'], [other, 'RMP-AGENT-ID-FOREIGN']] as const) {
      const res = await app.inject({ method: 'POST', url: '/api/v1/agents', headers: { authorization: org.keys.admin }, payload: agentConfig({ gaid }) });
      expect(res.statusCode, res.body).toBe(201);
    }
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  const get = (key: string, url: string) => app.inject({ url: `/api/v1${url}`, headers: { authorization: key } });
  const checkin = async (gaid: string) =>
    (await sqlOf(store).query<{ via: string | null; at: string | null }>(`select last_checkin_via as via, last_checkin_at::text as at from agents where gaid = $1`, [gaid])).rows[0];

  it('GET /ips?gaid= with a member key checks the agent in via feed', async () => {
    expect(await checkin('RMP-AGENT-ID-FEED1')).toEqual({ via: null, at: null });
    const res = await get(acme.keys.reader, '/ips?gaid=RMP-AGENT-ID-FEED1');
    expect(res.statusCode).toBe(200);
    const row = await checkin('RMP-AGENT-ID-FEED1');
    expect(row!.via).toBe('feed');
    expect(row!.at).not.toBeNull();
    const list = await get(acme.keys.admin, '/agents');
    expect(list.statusCode, list.body).toBe(200);
    const agent = list.json().find((a: { gaid: string }) => a.gaid === 'RMP-AGENT-ID-FEED1');
    expect(agent.last_checkin_via).toBe('feed');
  });

  it('GET /ipv4/{m}?gaid= with a member key checks the agent in via feed', async () => {
    const res = await get(acme.keys.reader, '/ipv4/100?gaid=RMP-AGENT-ID-FEED2');
    expect(res.statusCode).toBe(200);
    expect((await checkin('RMP-AGENT-ID-FEED2'))!.via).toBe('feed');
  });

  it('an unknown or other-organization gaid is ignored, never an error', async () => {
    expect((await get(acme.keys.reader, '/ips?gaid=RMP-AGENT-ID-NOSUCH')).statusCode).toBe(200);
    expect((await get(acme.keys.reader, '/ips?gaid=RMP-AGENT-ID-FOREIGN')).statusCode).toBe(200);
    expect((await get(acme.keys.reader, '/ipv4/100?gaid=RMP-AGENT-ID-FOREIGN')).statusCode).toBe(200);
    expect(await checkin('RMP-AGENT-ID-FOREIGN')).toEqual({ via: null, at: null });
  });
});

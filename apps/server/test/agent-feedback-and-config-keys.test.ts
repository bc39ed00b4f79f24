import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { agentConfig } from './support/agents.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';

describe.each(driverCases())('agent feedback code null and unknown config keys on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { credits: 100_000 });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  const call = (method: 'GET' | 'POST' | 'PUT', url: string, payload?: unknown) =>
    app.inject({ method, url: `/api/v1${url}`, headers: { authorization: acme.keys.admin }, ...(payload === undefined ? {} : { payload: payload as object }) });

  it('POST /agents/feedback accepts "code": null (killed by a signal) and records it', async () => {
    const config = agentConfig();
    expect((await call('POST', '/agents', config)).statusCode).toBe(201);
    const res = await call('POST', '/agents/feedback', { agid: config.gaid, plugin: 'packet_filter', hostname: 'fw-9', code: null, blacklist: 3 });
    expect(res.statusCode, res.body).toBe(200);
    const agent = (await call('GET', '/agents')).json().find((a: { gaid: string }) => a.gaid === config.gaid);
    expect(agent.last_checkin_via).toBe('feedback');
    expect(agent.enforced.packet_filter).toMatchObject({ code: null, enforced: 3 });
  });

  it('POST /agents keeps unknown top-level keys and returns them when the config is read back', async () => {
    const elk = 'https://elk.example.org/app/dashboards#/view/1';
    const config = agentConfig({ elk_link: elk, custom_block: { a: [1, 2] } });
    const created = await call('POST', '/agents', config);
    expect(created.statusCode, created.body).toBe(201);
    const read = await call('GET', `/agents/${config.gaid}/config`);
    expect(read.statusCode).toBe(200);
    const doc = read.json();
    expect(doc.elk_link).toBe('https://elk.example.org/app/dashboards#/view/1');
    expect(doc.custom_block).toEqual({ a: [1, 2] });
    // Secrets stay masked as before.
    expect(doc.ips.router_a.router_password).toBe('********');
    // Written back (masked) the document keeps both the extra key and the stored secret.
    const put = await call('PUT', `/agents/${config.gaid}/config`, { ...doc, sync_time: 7 });
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json().elk_link).toBe(elk);
    const stored = await store.agents.get(acme.org.id, config.gaid);
    expect((stored!.document as Record<string, unknown>).elk_link).toBe(elk);
    expect(stored!.document.ips?.router_a?.router_password).toBe('router-pass');
  });

  it('still answers 400 for known keys that fail the schema', async () => {
    const res = await call('POST', '/agents', { ...agentConfig(), score_threshold: 1001, elk_link: 'x' });
    expect(res.statusCode).toBe(400);
    expect(res.json().errors.map((e: { path: string }) => e.path)).toEqual(['body.score_threshold']);
  });
});

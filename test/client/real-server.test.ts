import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import { openStore, type Store, seedOrg, testApp } from '@rampart/server/testing';
import { ClientApiError, RampartClient } from '@rampart/client';

// The client against the real control plane (PGlite store): contracts on both sides agree.
describe('against the Rampart server', () => {
  let store: Store;
  let app: FastifyInstance;
  let base: string;
  let key: string;

  beforeAll(async () => {
    store = await openStore({});
    app = await testApp(store);
    await app.listen({ host: '127.0.0.1', port: 0 });
    base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/api/v1`;
    key = (await seedOrg(store)).keys.reader;
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
});

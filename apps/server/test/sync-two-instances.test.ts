import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OrganizationConfig } from '@rampart/contracts';
import { openStore, type Store } from '../src/store/index.ts';
import { createTestDatabase, postgresAvailable } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';
import { registerAgent } from './support/agents.ts';
import { connectSync, type SyncPeer } from './support/sync-client.ts';

/*
 * Two server replicas on one PostgreSQL, each with its own store (pool + LISTEN connection),
 * as two processes would have. A change made through replica B reaches an agent connected to
 * replica A through NOTIFY. PostgreSQL only: PGlite is one process by nature. CI sets
 * DATABASE_URL (support/databases.ts fails there without it), so this never skips in CI.
 */
describe.skipIf(!postgresAvailable)('sync across two server instances on one PostgreSQL', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let storeA: Store;
  let storeB: Store;
  let appA: FastifyInstance;
  let appB: FastifyInstance;
  let baseA: string;
  let org: TestOrg;
  let peer: SyncPeer | undefined;

  beforeAll(async () => {
    db = await createTestDatabase();
    storeA = await openStore({ databaseUrl: db.url });
    storeB = await openStore({ databaseUrl: db.url });
    appA = await testApp(storeA, { instance: 'a' });
    appB = await testApp(storeB, { instance: 'b' });
    baseA = await appA.listen({ host: '127.0.0.1', port: 0 });
    org = await seedOrg(storeB, { name: 'Two instances' });
  });
  afterAll(async () => {
    await peer?.close();
    await appA?.close();
    await appB?.close();
    await storeA?.close();
    await storeB?.close();
    await db?.drop();
  });

  it('delivers settings made through instance B to an agent connected to instance A', async () => {
    // Registered and keyed through B: A verifies the key with the signing secret both share.
    const agent = await registerAgent(appB, org.keys.admin);
    peer = await connectSync(baseA, { authorization: agent.token });
    expect((await peer.next('hello')).gaid).toBe(agent.gaid);

    const doc = (await appB.inject({ url: `/api/v1/agents/${agent.gaid}/config`, headers: { authorization: org.keys.admin } })).json();
    const put = await appB.inject({
      method: 'PUT',
      url: `/api/v1/agents/${agent.gaid}/config`,
      headers: { authorization: org.keys.admin },
      payload: { ...doc, score_threshold: 321 },
    });
    expect(put.statusCode).toBe(200);
    const changed = await peer.next('settings_changed', (m) => m.subject === 'agent');
    expect(changed).toMatchObject({ version: 2, settings: { gaid: agent.gaid, score_threshold: 321 } });

    const orgPut = await appB.inject({
      method: 'PUT',
      url: '/api/v1/organization/config',
      headers: { authorization: org.keys.admin },
      payload: { ...OrganizationConfig.parse({}), reserved_ips: ['198.51.100.7'] },
    });
    expect(orgPut.statusCode).toBe(200);
    const orgChanged = await peer.next('settings_changed', (m) => m.subject === 'organization');
    expect(orgChanged).toMatchObject({ version: 1, organization: { reserved_ips: ['198.51.100.7'] } });

    // Revocation through B closes the live connection held by A.
    await appB.inject({ method: 'DELETE', url: `/api/v1/agents/${agent.gaid}/tokens/${agent.tokenId}`, headers: { authorization: org.keys.admin } });
    const closed = await new Promise<number>((resolve) => (peer!.closed ? resolve(peer!.closed.code) : peer!.ws.once('close', (code) => resolve(code))));
    expect(closed).toBe(4401);
  });

  it('drops the settings instance A cached once they change through instance B (look-ups follow the new reserved_ips)', async () => {
    const report = await appB.inject({ method: 'POST', url: '/api/v1/ips', headers: { authorization: org.keys.contributor }, payload: { ip: '45.77.204.77', confidence: 0.9, source: 'test' } });
    expect(report.statusCode).toBeLessThan(300);
    const lookupOnA = async () => (await appA.inject({ url: '/api/v1/ips/45.77.204.77', headers: { authorization: org.keys.reader } })).json().body[0]?.decision;
    // A report B took is in A's look-ups once its second has settled (A's mirror catches up at
    // most once a second: the feed's freshness, README "GET /ips/{ip} from the IPv4 mirror").
    const seenBy = Date.now() + 30_000;
    while ((await lookupOnA()) === undefined && Date.now() < seenBy) await new Promise((r) => setTimeout(r, 25));
    // A reads (and caches) the settings as they are: nothing reserved, the record follows its score.
    expect(await lookupOnA()).toBeNull();
    expect((await appB.inject({ url: '/api/v1/ips/45.77.204.77', headers: { authorization: org.keys.reader } })).json().body[0].decision).toBeNull();
    const doc = (await appB.inject({ url: '/api/v1/organization/config', headers: { authorization: org.keys.admin } })).json();
    // What A does when B's notification arrives: it forgets the organization's cached document.
    // Waited on as an event, not a clock: the cache would otherwise keep the old one for 5 s.
    const settings = storeA.settings;
    const forget = settings.forget.bind(settings);
    const forgotten = new Promise<number | undefined>((resolve) => {
      settings.forget = (orgId?: number) => {
        forget(orgId);
        if (orgId === org.org.id) resolve(orgId);
      };
    });
    const put = await appB.inject({ method: 'PUT', url: '/api/v1/organization/config', headers: { authorization: org.keys.admin }, payload: { ...doc, reserved_ips: ['45.77.204.0/24'] } });
    expect(put.statusCode).toBe(200);
    await forgotten;
    settings.forget = forget;
    // Once forgotten, A's next look-up reads the new document: the address is reserved.
    expect(await lookupOnA()).toBe(0);
    // Through B itself the change is seen at once.
    expect((await appB.inject({ url: '/api/v1/ips/45.77.204.77', headers: { authorization: org.keys.reader } })).json().body[0].decision).toBe(0);
  });
});

import type { FastifyInstance } from 'fastify';
import { ROLE } from '@rampart/contracts';
import { buildApp } from '../../src/app.ts';
import { testConfig, type AppConfig } from '../../src/config.ts';
import { createApiKey, createOrganization, createUser } from '../../src/services/operators/admin.ts';
import { createEnrichment } from '../../src/services/enrichment/enrichment.ts';
import { Ipv4Mirror } from '../../src/services/ipv4/mirror/index.ts';
import type { Organization, Store } from '../../src/store/index.ts';

export interface TestOrg {
  org: Organization;
  /** API keys by role name. */
  keys: { reader: string; contributor: string; admin: string };
}

let counter = 0;

/** An organization with one user (and key) per role. */
export async function seedOrg(store: Store, opts: { credits?: number; trust?: number; name?: string } = {}): Promise<TestOrg> {
  counter += 1;
  const name = opts.name ?? `Org ${counter} ${Math.floor(performance.now())}`;
  const org = await createOrganization(store, { name, credits: opts.credits ?? 1000, trust: opts.trust ?? 0.5 });
  const keys = {} as TestOrg['keys'];
  for (const role of ['reader', 'contributor', 'admin'] as const) {
    const username = `${role}.${org.gid.slice(-8).toLowerCase()}@example.org`;
    await createUser(store, { orgGid: org.gid, username, role: ROLE[role] });
    keys[role] = (await createApiKey(store, { username })).key;
  }
  return { org, keys };
}

export async function testApp(store: Store, overrides: Partial<AppConfig> = {}): Promise<FastifyInstance> {
  const app = await buildApp({ config: testConfig({ authCacheSeconds: 0, ...overrides }), store });
  await app.ready();
  return app;
}

/**
 * An app that answers the IPv4 lists from a started in-process mirror, for tests that compare it
 * with an app on the same store that reads SQL (`buildApp` with `ipv4Mirror: null`).
 */
export async function startMirrorApp(store: Store, config: AppConfig): Promise<{ app: FastifyInstance; mirror: Ipv4Mirror }> {
  const mirror = new Ipv4Mirror(store.ipv4Mirror, createEnrichment());
  const app = await buildApp({ config, store, ipv4Mirror: mirror });
  await app.ready();
  await mirror.start();
  return { app, mirror };
}

import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sharedGate, sharedPath } from '@rampart/plugin-kit/testing';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../src/store/index.ts';
import { driverCases } from './support/databases.ts';
import { seedOrg, testApp, type TestOrg } from './support/app.ts';

const STIX = 'oracles/stix2.1/examples';
const stixReady = !sharedGate('import of STIX 2.1 examples', STIX);
const MISP = readFileSync(fileURLToPath(new URL('./fixtures/import/misp-event.json', import.meta.url)), 'utf8');
const stixFile = (name: string) => readFileSync(sharedPath(`${STIX}/${name}`), 'utf8');

describe.each(stixReady ? driverCases() : [])('POST /import on $name', (driver) => {
  let store: Store;
  let app: FastifyInstance;
  let acme: TestOrg;
  const post = (payload: object, key = acme.keys.contributor) => app.inject({ method: 'POST', url: '/api/v1/import', headers: { authorization: key }, payload });

  beforeAll(async () => {
    store = await driver.open();
    app = await testApp(store);
    acme = await seedOrg(store, { credits: 100_000 });
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it('dumps', async () => {
    for (const [format, content] of [['stix21', stixFile('threat-reports/apt1.json')], ['stix21', stixFile('indicators-for-C2-with-COA.json')], ['misp', MISP]] as const) {
      const res = await post({ format, content, dry_run: true });
      console.log(res.statusCode, JSON.stringify(res.json(), null, 0));
    }
  });
});

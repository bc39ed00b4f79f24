import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { openStore, type Store } from '../src/store/index.ts';
import { testApp } from './support/app.ts';

/** Every method and path of spec section 4 (OpenAPI path syntax, under /api/v1). */
const SPEC_SECTION_4 = [
  'GET /version',
  'GET /file_types',
  'GET /info/{ipv4}',
  'GET /info/domain/{domain_name}',
  'GET /info/cdn/list',
  'GET /stix2/{stix2id}',
  'GET /flat/{min_score}',
  'GET /ipv4/{min_score}',
  'GET /ips',
  'POST /ips',
  'GET /ips/{ipv4}',
  'GET /files/{digest}',
  'PUT /files/{digest}',
  'GET /files/score/{min_score}',
  'GET /files',
  'POST /files',
  'GET /domains/{domain_name}',
  'PUT /domains/{domain_name}',
  'GET /domains/score/{min_score}',
  'GET /domains',
  'POST /domains',
  'GET /urls/{url}',
  'PUT /urls/{url}',
  'GET /urls/score/{min_score}',
  'GET /urls',
  'POST /urls',
  'GET /vpn',
  'POST /vpn',
  'GET /vpn/{vid}',
  'DELETE /vpn/{vid}',
  'POST /agents',
];

const committedPath = fileURLToPath(new URL('../openapi.json', import.meta.url));

describe('OpenAPI document', () => {
  let store: Store;
  let app: FastifyInstance;
  let doc: { paths: Record<string, Record<string, unknown>> };

  beforeAll(async () => {
    store = await openStore({});
    app = await testApp(store);
    doc = JSON.parse(JSON.stringify(app.swagger())) as typeof doc;
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it('is served at /api/v1/openapi.json and equals the generated one', async () => {
    const res = await app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(doc);
  });

  it('covers every path of spec section 4', () => {
    const served = new Set(Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`)));
    const missing = SPEC_SECTION_4.map((p) => p.replace(' /', ' /api/v1/')).filter((p) => !served.has(p));
    expect(missing).toEqual([]);
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    const api = await SwaggerParser.validate(structuredClone(doc) as never);
    expect((api as { openapi: string }).openapi).toBe('3.1.0');
  });

  it('matches the committed apps/server/openapi.json (regenerate with `npm run openapi`)', () => {
    const committed = JSON.parse(readFileSync(committedPath, 'utf8')) as unknown;
    expect(doc).toEqual(committed);
  });
});

describe('documentation page', () => {
  it('is served without a key', async () => {
    const store = await openStore({});
    const app = await testApp(store);
    try {
      const page = await app.inject({ method: 'GET', url: '/api/v1/docs/' });
      expect(page.statusCode).toBe(200);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      const spec = await app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
      expect(spec.statusCode).toBe(200);
      expect(spec.json()).toMatchObject({ openapi: '3.1.0' });
    } finally {
      await app.close();
      await store.close();
    }
  });
});

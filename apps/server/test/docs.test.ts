import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { ServerConfig } from '../src/config.ts';
import { TOOLS_ENV } from '../src/config-tools.ts';
import { openStore, type Store } from '../src/store/index.ts';
import { seedOrg, testApp } from './support/app.ts';

/*
 * The documentation names what exists: every environment variable a table in docs/ documents is
 * one the server reads, every variable it reads is documented, and every route the README or
 * docs/ names (`GET /ips/{ip}`, …) is a route of the app.
 */
const root = fileURLToPath(new URL('../../../', import.meta.url));
const docs = ['README.md', ...readdirSync(`${root}docs`).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)].map((path) => ({ path, text: readFileSync(`${root}${path}`, 'utf8') }));

/** Names in the first cell of a table row: `| \`NAME\` |`, or several: `| \`A\` / \`B\` |`. */
function tableVariables(text: string): string[] {
  return [...text.matchAll(/^\| (`[A-Z][A-Z0-9_]+`(?: \/ `[A-Z][A-Z0-9_]+`)*) \|/gm)].flatMap((m) => [...m[1]!.matchAll(/`([A-Z0-9_]+)`/g)].map((n) => n[1]!));
}

/** Variables the server's data files name as `env:NAME` (URLs an operator supplies). */
const dataFileVariables = [...readFileSync(`${root}apps/server/resources/cdn-ranges.json`, 'utf8').matchAll(/env:([A-Z][A-Z0-9_]+)/g)].map((m) => m[1]!);

describe('documented environment variables', () => {
  const read = [...new Set([...Object.keys(ServerConfig.shape), ...Object.keys(TOOLS_ENV)])];
  const tables = ['docs/configuration.md', 'docs/vpn.md'].map((p) => docs.find((d) => d.path === p)!);
  const documented = tables.flatMap((d) => tableVariables(d.text));

  it('exist: each variable in a configuration table is read by the server', () => {
    expect(documented.filter((name) => !read.includes(name) && !dataFileVariables.includes(name))).toEqual([]);
  });

  it('are complete: each variable the server reads has its row', () => {
    expect(read.filter((name) => !documented.includes(name))).toEqual([]);
  });
});

/** `METHOD /path` in backticks, as the documents write routes; alternatives (`a|b`) and elisions (`…`) are expanded or left out. */
function documentedRoutes(): { method: string; path: string; where: string }[] {
  const out: { method: string; path: string; where: string }[] = [];
  for (const { path: where, text } of docs) {
    for (const m of text.matchAll(/`(GET|POST|PUT|PATCH|DELETE) (\/[^`\s]*)/g)) {
      const raw = m[2]!.split('?')[0]!;
      if (raw.includes('…')) continue;
      // `/files|/domains|/urls`, `/files|domains|urls/{id}`: one route per alternative.
      const alternatives = raw.includes('|') ? expand(raw) : [raw];
      for (const alt of alternatives) out.push({ method: m[1]!, path: alt, where });
    }
  }
  return out;
}

function expand(raw: string): string[] {
  const parts = raw.split('|');
  if (parts.every((p) => p.startsWith('/') && p.length > 1)) return parts;
  const match = /^\/?([a-z_|/]+?)(\/\{.*)?$/.exec(raw);
  if (!match) return [];
  const heads = match[1]!.split('|').map((h) => h.replace(/^\//, ''));
  return heads.map((h) => `/${h}${match[2] ?? ''}`);
}

/** A URL the route's pattern matches: every `{param}` a plain segment. */
function concrete(path: string): string {
  const withParams = path.replace(/\{[^}]+\}/g, 'x1');
  const outside = ['/healthz', '/readyz', '/metrics', '/taxii2'];
  if (withParams.startsWith('/api/v1') || outside.some((p) => withParams.startsWith(p))) return withParams;
  return `/api/v1${withParams}`;
}

describe('documented routes', () => {
  let store: Store;
  let app: FastifyInstance;
  let key: string;
  beforeAll(async () => {
    store = await openStore({});
    app = await testApp(store);
    key = (await seedOrg(store)).keys.admin;
  });
  afterAll(async () => {
    await app.close();
    await store.close();
  });

  it('exist: each `METHOD /path` the README and docs/ name is routed', async () => {
    const routes = documentedRoutes();
    expect(routes.length).toBeGreaterThan(40);
    const unrouted: string[] = [];
    for (const r of routes) {
      const url = concrete(r.path);
      const res = await app.inject({ method: r.method as 'GET', url, headers: { authorization: key } });
      if (res.statusCode === 404 && /route_not_found|"not found"/i.test(res.body)) unrouted.push(`${r.method} ${r.path} (${r.where})`);
    }
    expect(unrouted).toEqual([]);
  });
});

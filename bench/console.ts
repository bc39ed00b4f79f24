/*
 * Web console load time on loopback, in a real headless Chromium, against the same server
 * serving a minimal static page (the baseline: what the browser and the server cost alone).
 *   cold: first navigation to /console/ until the sign-in form is visible (in-memory build done);
 *   signed-in: from submitting the key until the overview's figures are drawn.
 * Writes bench/results/console.md. Run: npx tsx bench/console.ts
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { buildApp } from '../apps/server/src/app.ts';
import { testConfig } from '../apps/server/src/config.ts';
import { openStore } from '../apps/server/src/store/index.ts';
import { seedOrg } from '../apps/server/test/support/app.ts';

const RUNS = 10;
const store = await openStore({});
const app = await buildApp({ config: testConfig({ authCacheSeconds: 5 }), store });
app.get('/bench-static', { config: { rampart: { auth: 'public' } } }, async (_req, reply) => reply.type('text/html').send('<!doctype html><title>x</title><form><input aria-label="API key"></form>'));
await app.listen({ host: '127.0.0.1', port: 0 });
const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
const org = await seedOrg(store, { credits: 1_000_000, name: 'Bench' });
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] });

await (await fetch(`${base}/console/`)).text(); // build once, as the first visitor would
const js = await (await fetch(`${base}/console/app.js`)).arrayBuffer();

async function median(label: string, fn: () => Promise<number>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) times.push(await fn());
  times.sort((a, b) => a - b);
  const m = times[Math.floor(times.length / 2)]!;
  process.stdout.write(`${label}: median ${m.toFixed(0)} ms (min ${times[0]!.toFixed(0)}, max ${times.at(-1)!.toFixed(0)})\n`);
  return m;
}

const page = async () => (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
const staticMs = await median('static page', async () => {
  const p = await page();
  const t = performance.now();
  await p.goto(`${base}/bench-static`);
  await p.getByLabel('API key').waitFor();
  const ms = performance.now() - t;
  await p.context().close();
  return ms;
});
const coldMs = await median('console sign-in form', async () => {
  const p = await page();
  const t = performance.now();
  await p.goto(`${base}/console/`);
  await p.getByLabel('API key').waitFor();
  const ms = performance.now() - t;
  await p.context().close();
  return ms;
});
const signedMs = await median('sign-in to overview drawn', async () => {
  const p = await page();
  await p.goto(`${base}/console/`);
  await p.getByLabel('API key').fill(org.keys.admin);
  const t = performance.now();
  await p.getByRole('button', { name: 'Sign in' }).click();
  await p.getByRole('heading', { name: 'IPv4 indicators by band' }).waitFor();
  const ms = performance.now() - t;
  await p.context().close();
  return ms;
});
await browser.close();
await app.close();
await store.close();

const out = `## Web console (bench/console.ts)

Headless Chromium on loopback, embedded store, median of ${RUNS} fresh browser contexts (no cache).
app.js is ${(js.byteLength / 1024).toFixed(0)} KiB (minified, uncompressed).

| measure | median | ratio to a static page |
|---|---|---|
| static page (baseline) | ${staticMs.toFixed(0)} ms | 1.0 |
| console: sign-in form visible | ${coldMs.toFixed(0)} ms | ${(coldMs / staticMs).toFixed(1)} |
| console: sign-in to overview drawn | ${signedMs.toFixed(0)} ms | ${(signedMs / staticMs).toFixed(1)} |

Target: the console loads in under 1 s on loopback.
`;
const dir = join(dirname(fileURLToPath(import.meta.url)), 'results');
mkdirSync(dir, { recursive: true });
writeFileSync(join(dir, 'console.md'), out);
process.stdout.write(out);

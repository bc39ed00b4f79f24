import { mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { chromium, type Browser, type Page } from 'playwright-core';
import { buildApp, testConfig, openStore, type Store, createTestDatabase } from '@rampart/server/testing';

type ServerConfig = ReturnType<typeof testConfig>;

/** Where Debian's Chromium is; the suites skip (counted) where it is absent. */
export const CHROMIUM = '/usr/bin/chromium';

/** Screenshots of the console e2e suites. */
export const SHOTS = process.env.CONSOLE_SHOTS ?? 'test-results/console';

export interface ConsoleHarness {
  store: Store;
  app: FastifyInstance;
  /** `http://127.0.0.1:<port>` */
  base: string;
  browser: Browser;
  /** Errors every page opened by `signedIn` logged (console errors and uncaught exceptions), in order. */
  consoleErrors: string[];
  /** One API call with a key; the status and the parsed body. */
  api(method: string, path: string, key: string, body?: unknown): Promise<{ status: number; json: unknown }>;
  /** A new browser context signed in with `key`. `bypassCSP` lets a test inject a script (axe-core). */
  signedIn(key: string, width: number, options?: { colorScheme?: 'light' | 'dark'; bypassCSP?: boolean }): Promise<Page>;
  close(): Promise<void>;
}

/**
 * A real server (PostgreSQL when DATABASE_URL is set, as in CI; else the embedded store) listening
 * on a free port, and a headless Chromium, for console end-to-end suites.
 */
export async function startConsoleHarness(options: { config?: (base: ServerConfig) => ServerConfig } = {}): Promise<ConsoleHarness> {
  mkdirSync(SHOTS, { recursive: true });
  let drop: (() => Promise<void>) | undefined;
  let store: Store;
  if (process.env.DATABASE_URL) {
    const db = await createTestDatabase();
    drop = () => db.drop();
    store = await openStore({ databaseUrl: db.url });
  } else {
    store = await openStore({});
  }
  const config = testConfig({ authCacheSeconds: 0 });
  const app = await buildApp({ config: options.config ? options.config(config) : config, store });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const consoleErrors: string[] = [];
  return {
    store,
    app,
    base,
    browser,
    consoleErrors,
    async api(method, path, key, body) {
      const res = await fetch(`${base}/api/v1${path}`, { method, headers: { authorization: key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      const text = await res.text();
      return { status: res.status, json: text ? (JSON.parse(text) as unknown) : undefined };
    },
    async signedIn(key, width, options = {}) {
      // One time zone, so the dates the console writes can be asserted exactly.
      const context = await browser.newContext({ viewport: { width, height: width <= 400 ? 844 : 900 }, timezoneId: 'UTC', colorScheme: options.colorScheme ?? 'light', bypassCSP: options.bypassCSP ?? false });
      const page = await context.newPage();
      page.on('console', (m) => m.type() === 'error' && consoleErrors.push(m.text()));
      page.on('pageerror', (e) => consoleErrors.push(e.message));
      await page.goto(`${base}/console/`);
      await page.getByLabel('API key').fill(key);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('navigation', { name: 'Main' }).waitFor();
      return page;
    },
    async close() {
      await browser.close();
      await app.close();
      await store.close();
      await drop?.();
    },
  };
}

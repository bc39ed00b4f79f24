import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSquid, systemGate, waitFor, type SquidInstance, silentLogger as silent } from '@rampart/plugin-kit/testing';
import { SquidConfig, squidEnforcer } from './index.ts';

const skip = systemGate('Squid proxy', { commands: ['squid'] });

describe.skipIf(skip)('enforcer-squid against a real Squid in front of a local origin', () => {
  let origin: Server;
  let squid: SquidInstance;
  let base: string;
  const served: string[] = [];

  beforeAll(async () => {
    origin = createServer((req, res) => {
      served.push(`${req.headers.host}${req.url}`);
      res.end('origin');
    });
    await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
    const port = (origin.address() as AddressInfo).port;
    squid = await startSquid({ 'shop.rampart-test.example': '127.0.0.1', 'www.evil-shop.example': '127.0.0.1', 'evil-shop.example': '127.0.0.1', 'good-shop.example': '127.0.0.1' });
    base = `http://shop.rampart-test.example:${port}`;
  }, 60_000);
  afterAll(async () => {
    await squid?.stop();
    await new Promise((resolve) => origin?.close(resolve));
  });

  it('a listed URL full of regex metacharacters gets 403 and blocks only itself; a whitelist lifts it', async () => {
    const cfg = SquidConfig.parse({ active: true, urls_file: squid.urlsFile, options: { domains_file: squid.domainsFile, reload_command: squid.reloadCommand } });
    const urls = await squidEnforcer.create(cfg, { log: silent, kind: 'url' });
    const listed = `${base}/a.b/c(d)*e+f$?q=[1]|{2}^$x*`;
    // Each would match if the listed URL were read as a regular expression, or unanchored.
    const lookalikes = [
      `${base}/aXb/c(d)*e+f$?q=[1]|{2}^$x*`,
      `${base}/a.b/cd)*e+f$?q=[1]|{2}^$x*`,
      `${base}/a.b/c(d)*e+f$?q=[1]|{2}^$x*&more`,
      `${base}/prefix${'/a.b/c(d)*e+f$?q=[1]|{2}^$x*'}`,
      `${base}/a.b/c(d)*eee+f$?q=[1]|{2}^$x*`,
    ];
    expect(await squid.get(listed)).toBe(200);
    expect(await urls.sync([{ value: listed, score: 800 }])).toEqual({ enforced: 1, cut: 0 });
    await waitFor(async () => (await squid.get(listed)) === 403, 'Squid to deny the listed URL after the reconfigure', 20_000);
    // Squid matches its own absolute form of the request: scheme and host in lower case.
    expect(await squid.get(listed.replace('http://shop.rampart-test', 'HTTP://SHOP.Rampart-Test'))).toBe(403);
    served.length = 0;
    for (const url of lookalikes) expect([url, await squid.get(url)]).toEqual([url, 200]);
    expect(await squid.get(`${base}/unlisted`)).toBe(200);
    expect(served).toEqual([...lookalikes, `${base}/unlisted`].map((u) => u.replace('http://', '')));

    // Whitelisted on the server: the agent's next diff removes it.
    expect(await urls.apply({ add: [], remove: [listed] })).toMatchObject({ enforced: 0 });
    await waitFor(async () => (await squid.get(listed)) === 200, 'Squid to pass the whitelisted URL after the reconfigure', 20_000);
    await urls.close();
  }, 90_000);

  it('a listed domain blocks itself and its sub-domains with 403; others pass; withdraw lifts it', async () => {
    const cfg = SquidConfig.parse({ active: true, urls_file: squid.urlsFile, options: { domains_file: squid.domainsFile, reload_command: squid.reloadCommand } });
    const domains = await squidEnforcer.create(cfg, { log: silent, kind: 'domain' });
    const port = new URL(base).port;
    const at = (host: string) => `http://${host}:${port}/page`;
    expect(await squid.get(at('evil-shop.example'))).toBe(200);
    // A parent and its sub-domain both listed: Squid warns and keeps running with the wider entry.
    expect(await domains.sync([{ value: 'Evil-Shop.Example', score: 900 }, { value: 'www.evil-shop.example', score: 700 }])).toEqual({ enforced: 2, cut: 0 });
    await waitFor(async () => (await squid.get(at('evil-shop.example'))) === 403, 'Squid to deny the listed domain', 20_000);
    expect(await squid.get(at('www.evil-shop.example'))).toBe(403);
    expect(await squid.get(at('good-shop.example'))).toBe(200);
    await domains.withdraw();
    await waitFor(async () => (await squid.get(at('evil-shop.example'))) === 200, 'Squid to pass the domain after the withdraw', 20_000);
    expect(await squid.get(at('www.evil-shop.example'))).toBe(200);
    await domains.close();
  }, 90_000);
});

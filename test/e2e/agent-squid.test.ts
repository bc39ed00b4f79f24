import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RampartClient } from '@rampart/client';
import { startSquid, systemGate, type SquidInstance } from '@rampart/plugin-kit/testing';
import { seedOrg } from '@rampart/server/testing';
import { startConfiguredAgent, startControlPlane, tempDir, waitFor, type AgentProcess, type ControlPlane } from './support.ts';

/*
 * URLs and domains from the server's decision to a real Squid's answer: server + agent (a real
 * process, `ips.proxy_f`, Squid dialect) + a private Squid in front of a local origin. A
 * blacklist decision on a URL full of regular-expression metacharacters makes Squid answer 403
 * for it (and only it), a whitelist lifts it; a blacklisted domain is denied with its sub-domains.
 */

const skip = systemGate('Squid proxy e2e', { commands: ['squid'] });

describe.skipIf(skip)('agent end to end: URL and domain decisions to Squid 403', () => {
  let cp: ControlPlane;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let squid: SquidInstance;
  let origin: Server;
  let agent: AgentProcess | undefined;
  let admin: RampartClient;
  const gaid = 'RMP-AGENT-ID-squid1';

  beforeAll(async () => {
    cp = await startControlPlane();
    dir = await tempDir('rampart-squid-e2e-');
    const org = await seedOrg(cp.store, { credits: 1_000_000, trust: 1 });
    admin = new RampartClient({ baseUrl: cp.url, apiKey: org.keys.admin });
    process.env.RAMPART_E2E_ADMIN = org.keys.admin;
    origin = createServer((_req, res) => res.end('origin'));
    await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve));
    squid = await startSquid({ 'shop.rampart-e2e.example': '127.0.0.1', 'evil-e2e.example': '127.0.0.1', 'www.evil-e2e.example': '127.0.0.1' });
  }, 60_000);
  afterAll(async () => {
    if (agent) await agent.kill9();
    await squid?.stop();
    await new Promise((resolve) => origin?.close(resolve));
    await cp?.close();
    await dir?.remove();
  });

  const post = (path: string, body: unknown) => admin.transport.request('POST', path, { body });
  const put = (path: string, decision: number) => admin.transport.request('PUT', path, { body: { decision } });

  it(`a URL decision on the server reaches Squid as 403, a whitelist lifts it (${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'})`, async () => {
    const port = (origin.address() as AddressInfo).port;
    const listed = `http://shop.rampart-e2e.example:${port}/a.b/c(d)*e+f?q=[1]|{2}^$x*`;
    const lookalike = `http://shop.rampart-e2e.example:${port}/aXb/c(d)*e+f?q=[1]|{2}^$x*`;
    const at = (host: string) => `http://${host}:${port}/page`;
    expect(await squid.get(listed)).toBe(200);
    expect(await squid.get(at('www.evil-e2e.example'))).toBe(200);

    const started = await startConfiguredAgent({
      cp,
      dir: dir.path,
      gaid,
      adminKey: process.env.RAMPART_E2E_ADMIN!,
      ips: {
        proxy_f: { active: true, urls_file: squid.urlsFile, options: { domains_file: squid.domainsFile, reload_command: squid.reloadCommand } },
      },
    });
    agent = started.agent;
    const { health } = started;
    expect((health.enforcers as { label: string }[]).map((e) => e.label)).toEqual(['proxy_f/domain', 'proxy_f/url']);

    // Reported, then blacklisted by the administrator: pushed to the agent, written, reconfigured.
    await post('/urls', { url: listed, confidence: 1 });
    await post('/domains', { domain: 'evil-e2e.example', confidence: 1 });
    await put(`/urls/${encodeURIComponent(listed)}`, 1);
    await put('/domains/evil-e2e.example', 1);
    await waitFor('Squid denies the blacklisted URL', async () => (await squid.get(listed)) === 403, 30_000);
    await waitFor('Squid denies the blacklisted domain', async () => (await squid.get(at('evil-e2e.example'))) === 403, 30_000);
    expect(await squid.get(at('www.evil-e2e.example'))).toBe(403);
    expect(await squid.get(lookalike)).toBe(200);
    expect(await squid.get(at('shop.rampart-e2e.example'))).toBe(200);

    // The whitelist decision lifts both blocks.
    await put(`/urls/${encodeURIComponent(listed)}`, 0);
    await put('/domains/evil-e2e.example', 0);
    await waitFor('Squid passes the whitelisted URL', async () => (await squid.get(listed)) === 200, 30_000);
    await waitFor('Squid passes the whitelisted domain', async () => (await squid.get(at('www.evil-e2e.example'))) === 200, 30_000);
    expect(await agent.terminate()).toBe(0);
    agent = undefined;
  }, 180_000);
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RampartClient } from '@rampart/client';
import { startNamed, systemGate, type NamedInstance } from '@rampart/plugin-kit/testing';
import { seedOrg, sqlOf } from '@rampart/server/testing';
import { startConfiguredAgent, startControlPlane, tempDir, waitFor, type AgentProcess, type ControlPlane } from './support.ts';

/*
 * From a domain decision on the server to NXDOMAIN at a real `named`: server + agent (a real
 * process) + database + a private BIND 9 whose response policy zone the agent's dns_e enforcer
 * (bind-rpz) writes and reloads with rndc. A score above the threshold blocks a name and its
 * sub-domains; a whitelist decision lifts it; a blacklist decision blocks a name nobody scored; a
 * whitelisted name under a blocked one resolves (rpz-passthru).
 */

const gate = systemGate('agent + BIND response policy zone', { commands: ['named', 'rndc', 'dig'] });

describe.skipIf(gate)('agent end to end: dns_e at a real named', () => {
  let cp: ControlPlane;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let named: NamedInstance;
  let agent: AgentProcess | undefined;
  let admin: RampartClient;
  const gaid = 'RMP-AGENT-ID-dns1';

  beforeAll(async () => {
    cp = await startControlPlane();
    dir = await tempDir('rampart-dns-');
    named = await startNamed({
      zone: 'corp.example',
      records: ['evil IN A 45.77.2.1', 'www.evil IN A 45.77.2.2', 'good IN A 45.77.2.3', 'localhost IN A 127.0.0.1'],
      rpzZone: 'rpz.rampart',
    });
    const org = await seedOrg(cp.store, { credits: 1_000_000, trust: 1 });
    admin = new RampartClient({ baseUrl: cp.url, apiKey: org.keys.admin });
    process.env.RAMPART_E2E_ADMIN = org.keys.admin;
  });
  afterAll(async () => {
    if (agent) await agent.kill9();
    await named?.stop();
    await cp?.close();
    await dir?.remove();
  });

  const answer = async (name: string) => {
    const { status, answers } = await named.query(name);
    return `${status} ${answers.join(',')}`.trim();
  };
  const until = (name: string, expected: string) => waitFor(`${name} → ${expected}`, async () => (await answer(name)) === expected, 30_000);

  it(`a domain decision on the server reaches named as NXDOMAIN and back (${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'})`, async () => {
    for (const domain of ['evil.corp.example', 'good.corp.example']) await admin.transport.request('POST', '/domains', { body: { domain, confidence: 1 } });
    for (const [domain, score] of [['evil.corp.example', 900], ['good.corp.example', 10]] as const) {
      const res = await sqlOf(cp.store).query('update domain_indicators set score = $1 where value = $2', [score, domain]);
      expect(res.rowCount).toBe(1);
    }
    expect(await answer('evil.corp.example')).toBe('NOERROR 45.77.2.1');

    const started = await startConfiguredAgent({
      cp,
      dir: dir.path,
      gaid,
      adminKey: process.env.RAMPART_E2E_ADMIN!,
      ips: {
        dns_e: { active: true, domains_file: named.rpzFile, options: { zone: 'rpz.rampart', reload_command: named.reloadCommand } },
      },
    });
    agent = started.agent;
    const { health } = started;
    expect((health.enforcers as { label: string }[]).map((e) => e.label)).toEqual(['dns_e/domain']);

    await until('evil.corp.example', 'NXDOMAIN');
    expect(await answer('www.evil.corp.example')).toBe('NXDOMAIN');
    expect(await answer('good.corp.example')).toBe('NOERROR 45.77.2.3');

    // A whitelist lifts the block, a blacklist blocks a name no score does (both pushed).
    await admin.transport.request('PUT', '/domains/evil.corp.example', { body: { decision: 0 } });
    await admin.transport.request('PUT', '/domains/good.corp.example', { body: { decision: 1 } });
    await until('good.corp.example', 'NXDOMAIN');
    await until('evil.corp.example', 'NOERROR 45.77.2.1');
    expect(await answer('www.evil.corp.example')).toBe('NOERROR 45.77.2.2');

    // A whitelisted name under a blocked one resolves: the agent writes it as rpz-passthru.
    await admin.transport.request('PUT', '/domains/www.evil.corp.example', { body: { decision: 0 } });
    await admin.transport.request('PUT', '/domains/evil.corp.example', { body: { decision: 1 } });
    await until('evil.corp.example', 'NXDOMAIN');
    await until('www.evil.corp.example', 'NOERROR 45.77.2.2');

    expect(await agent.terminate()).toBe(0);
    agent = undefined;
  }, 120_000);
});

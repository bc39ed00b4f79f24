import { appendFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RampartClient } from '@rampart/client';
import type { AgentSummary } from '@rampart/contracts';
import type { DryRunFile } from '@rampart/enforcer-dry-run';
import { seedOrg } from '@rampart/server/testing';
import {
  agentHealth,
  failedPassword,
  freePort,
  readJson,
  runAgentCommand,
  spawnAgent,
  startControlPlane,
  tempDir,
  waitFor,
  writeAgentConfig,
  type AgentProcess,
  type ControlPlane,
} from './support.ts';

/*
 * Server + agent + database + a log file being written: a brute force appears in auth.log, the
 * agent reports it, the server scores and lists it, and it reaches the agent's dry-run enforcer.
 * Then the server's pushes (a decision, running = no) reach the agent without a restart.
 */
describe('agent end to end', () => {
  let cp: ControlPlane;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let agent: AgentProcess | undefined;
  let admin: RampartClient;
  const gaid = 'RMP-AGENT-ID-e2e1';
  const attacker = '45.61.1.7';

  beforeAll(async () => {
    cp = await startControlPlane();
    dir = await tempDir('rampart-e2e-');
    const org = await seedOrg(cp.store, { credits: 1_000_000, trust: 1 });
    admin = new RampartClient({ baseUrl: cp.url, apiKey: org.keys.admin });
    process.env.RAMPART_E2E_ADMIN = org.keys.admin;
  });
  afterAll(async () => {
    if (agent) await agent.kill9();
    await cp?.close();
    await dir?.remove();
  });

  it(`a brute force in auth.log is reported, scored, listed and enforced (${process.env.DATABASE_URL ? 'PostgreSQL' : 'PGlite'})`, async () => {
    const authLog = join(dir.path, 'auth.log');
    const dryRunPath = join(dir.path, 'dry-run.json');
    const configPath = join(dir.path, 'agent.json');
    const metricsPort = await freePort();
    await writeFile(authLog, '');
    await writeAgentConfig(configPath, { controlPlaneUrl: cp.url, gaid, stateDir: join(dir.path, 'state'), authLog, dryRunPath, metricsPort });

    const validated = await runAgentCommand(['validate-config', configPath], {});
    expect(validated).toMatchObject({ code: 0 });
    const registered = await runAgentCommand(['register', '-c', configPath], { RAMPART_ADMIN_KEY: process.env.RAMPART_E2E_ADMIN! });
    expect(registered.err).toBe('');
    expect(registered.out).toMatch(new RegExp(`registered ${gaid}`));
    expect(registered.code).toBe(0);

    agent = spawnAgent(['run', '-c', configPath], {}, join(dir.path, 'agent.log'));
    await waitFor('agent healthy and connected', async () => {
      const h = await agentHealth(metricsPort);
      return h?.healthy === true && h.channel_connected === true && h;
    });

    // Five failures (max_retry 5) from a public address, and some from a private one.
    const lines = [1, 2, 3, 4, 5].map((i) => failedPassword(attacker, 100 + i));
    lines.push(...[1, 2, 3, 4, 5, 6].map((i) => failedPassword('10.20.30.40', 200 + i)));
    await appendFile(authLog, `${lines.join('\n')}\n`);

    const enforced = await waitFor('attacker in the dry-run enforcer', async () => {
      const file = await readJson<DryRunFile>(dryRunPath);
      return file?.enforced.includes(`${attacker}/32`) && file;
    });
    expect(enforced.enforced).toEqual([`${attacker}/32`]);

    const page = await admin.ipLookup(attacker, { full: 'yes' });
    const record = page.body[0]!;
    expect(record.ip).toBe(attacker);
    expect(record.score).toBeGreaterThanOrEqual(50);
    expect(record.info?.events).toBe(1);
    expect(record.info?.sources).toEqual(['ssh_log']);
    const listed: string[] = [];
    for await (const p of admin.ipv4List(50)) listed.push(...p.items);
    expect(listed).toContain(attacker);

    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(metrics).toMatch(/rampart_agent_detections_ignored_total\{reason="special_range"\} 6/);
    expect(metrics).toMatch(/rampart_agent_reports_sent_total 1/);
    expect(metrics).toMatch(/rampart_agent_lines_read_total\{source="ssh_log"\} 11/);
    expect(metrics).toMatch(/rampart_agent_detections_total\{source="ssh_log"\} 11/);
    expect(metrics).toMatch(/rampart_agent_block_set_size 1/);
  });

  it('a whitelist decision on the server removes the address from the enforcer through the sync channel', async () => {
    await admin.reportIp({ ip: attacker, confidence: 0.1, source: 'console', decision: 0 });
    await waitFor('attacker gone from the dry-run enforcer', async () => {
      const file = await readJson<DryRunFile>(join(dir.path, 'dry-run.json'));
      return file && !file.enforced.includes(`${attacker}/32`) && file;
    });
  });

  it('running = no withdraws the rules and running = yes restores them, without a restart', async () => {
    await admin.reportIp({ ip: '45.61.2.9', confidence: 1, source: 'console', decision: 1 });
    const dryRun = join(dir.path, 'dry-run.json');
    await waitFor('blacklisted address enforced', async () => (await readJson<DryRunFile>(dryRun))?.enforced.includes('45.61.2.9/32'));
    const settingsUrl = `${cp.url}/agents/${gaid}/config`;
    const headers = { authorization: process.env.RAMPART_E2E_ADMIN!, 'content-type': 'application/json' };
    const doc = (await (await fetch(settingsUrl, { headers })).json()) as Record<string, unknown>;
    const put = (running: string) => fetch(settingsUrl, { method: 'PUT', headers, body: JSON.stringify({ ...doc, running }) });
    expect((await put('no')).status).toBe(200);
    const withdrawn = await waitFor('rules withdrawn', async () => {
      const file = await readJson<DryRunFile>(dryRun);
      return file?.operations.at(-1)?.op === 'withdraw' && file;
    });
    expect(withdrawn.enforced).toEqual([]);
    expect((await agentHealth((await readJson<{ local: { metrics_port: number } }>(join(dir.path, 'agent.json')))!.local.metrics_port))?.running).toBe('no');
    expect((await put('yes')).status).toBe(200);
    await waitFor('rules back', async () => (await readJson<DryRunFile>(dryRun))?.enforced.includes('45.61.2.9/32'));
  });

  it('SIGHUP reloads the local file: an address added to the allow-list leaves the enforcer', async () => {
    const configPath = join(dir.path, 'agent.json');
    const config = (await readJson<{ local: { allow_list?: string[] } }>(configPath))!;
    config.local.allow_list = ['45.61.2.0/24'];
    await writeFile(configPath, JSON.stringify(config));
    agent!.child.kill('SIGHUP');
    await waitFor('allow-listed address withdrawn', async () => {
      const file = await readJson<DryRunFile>(join(dir.path, 'dry-run.json'));
      return file && !file.enforced.includes('45.61.2.9/32') && file;
    });
  });

  it('an enforcer the agent cannot run (firewall_b, its entry incomplete) makes it unhealthy, 503 naming it, while the others run on; turned off, healthy again', async () => {
    const REFUSAL =
      'ips.firewall_b.feeds: at least one feed name is required when active; ips.firewall_b.password: the feed password (basic auth) is required: an empty one would serve the list to anyone';
    const port = (await readJson<{ local: { metrics_port: number } }>(join(dir.path, 'agent.json')))!.local.metrics_port;
    const healthz = async () => {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      return { status: res.status, body: (await res.json()) as { healthy: boolean; enforcers: { label: string; state: string }[] } };
    };
    const settingsUrl = `${cp.url}/agents/${gaid}/config`;
    const headers = { authorization: process.env.RAMPART_E2E_ADMIN!, 'content-type': 'application/json' };
    const doc = (await (await fetch(settingsUrl, { headers })).json()) as { ips: Record<string, Record<string, unknown>> };
    const put = (fwActive: boolean) =>
      fetch(settingsUrl, { method: 'PUT', headers, body: JSON.stringify({ ...doc, ips: { ...doc.ips, firewall_b: { ...doc.ips.firewall_b, active: fwActive } } }) });

    expect((await put(true)).status).toBe(200);
    const refused = await waitFor('503 from /healthz', async () => {
      const h = await healthz();
      return h.status === 503 && h;
    });
    expect(refused.body.healthy).toBe(false);
    expect(refused.body.enforcers).toEqual([
      expect.objectContaining({ label: 'dry_run', state: 'ok' }),
      // Turned on with no feed and no password: refused (an empty password would serve the list to anyone).
      { label: 'firewall_b', state: 'failed', healthy: false, enforced: 0, cut: 0, error: 'config_invalid', detail: REFUSAL },
    ]);
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metrics).toContain('rampart_agent_enforcer_state{enforcer="firewall_b",state="failed"} 1');
    expect(metrics).toContain('rampart_agent_enforcer_state{enforcer="dry_run",state="ok"} 1');
    // The refusal reaches the control plane: GET /agents shows it, with what the agent can run.
    const agents = async () => ((await (await fetch(`${cp.url}/agents`, { headers })).json()) as AgentSummary[]).find((a) => a.gaid === gaid);
    const listed = await waitFor('the refusal in GET /agents', async () => {
      const a = await agents();
      return a?.status === 'failed' && a;
    });
    expect(listed.enforced.firewall_b).toMatchObject({ state: 'failed', healthy: false, error: REFUSAL });
    expect(listed.capabilities).toMatchObject({ version: 'v0.1.0', kinds: ['ipv4', 'domain', 'url', 'file'], sources: expect.arrayContaining(['ssh_log']) });
    expect(listed.capabilities?.enforcers).toEqual(expect.arrayContaining(['dry_run', 'firewall_b', 'csp']));

    expect((await put(false)).status).toBe(200);
    const back = await waitFor('200 from /healthz', async () => {
      const h = await healthz();
      return h.status === 200 && h;
    });
    expect(back.body.enforcers.map((e) => [e.label, e.state])).toEqual([['dry_run', 'ok']]);
    expect((await agents())?.status).toBe('ok');
  });

  it('stops gracefully on SIGTERM', async () => {
    expect(await agent!.terminate()).toBe(0);
    agent = undefined;
  });
});

import { appendFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RampartClient } from '@rampart/client';
import { seedOrg } from '@rampart/server/testing';
import { agentHealth, failedPassword, freePort, spawnAgent, startControlPlane, tempDir, waitFor, writeAgentConfig, type AgentProcess, type ControlPlane } from '../e2e/support.ts';

/*
 * Reporting never loses a report and never doubles one: the agent is killed with SIGKILL while
 * it reports, the server is stopped while detections keep coming (and the agent is killed again
 * meanwhile), then everything comes back. Every detection must end up on the server exactly once,
 * and the spool drains within the stated bound (120 s after the server is back: a correctness
 * bound, not a benchmark; the figure measured is printed).
 */
describe('agent reporting across kill -9 and a server outage', () => {
  let cp: ControlPlane;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let agent: AgentProcess | undefined;
  let reader: RampartClient;
  let key: string;

  beforeAll(async () => {
    cp = await startControlPlane();
    dir = await tempDir('rampart-crash-');
    const org = await seedOrg(cp.store, { credits: 10_000_000, trust: 1 });
    key = org.keys.contributor;
    reader = new RampartClient({ baseUrl: cp.url, apiKey: org.keys.reader });
  });
  afterAll(async () => {
    if (agent) await agent.kill9();
    await cp?.close();
    if (!process.env.KEEP_E2E) await dir?.remove();
  });

  /** Every IPv4 record of the organization's feed with its event count. */
  async function serverEvents(): Promise<Map<string, number>> {
    const events = new Map<string, number>();
    for await (const page of reader.ipsFeed(0, { page_size: 1000, full: 'yes' })) {
      for (const r of page.body) events.set(r.ip, r.info!.events);
    }
    return events;
  }

  it('delivers every detection exactly once', async () => {
    const authLog = join(dir.path, 'auth.log');
    const stateDir = join(dir.path, 'state');
    const configPath = join(dir.path, 'agent.json');
    const metricsPort = await freePort();
    await writeFile(authLog, '');
    // One failed login per address and max_retry 1: one line, one report.
    await writeAgentConfig(configPath, {
      controlPlaneUrl: cp.url,
      gaid: 'RMP-AGENT-ID-crash1',
      stateDir,
      authLog,
      dryRunPath: join(dir.path, 'dry-run.json'),
      metricsPort,
      apiKey: key,
      maxRetry: 1,
      websocket: false,
    });
    const ips = Array.from({ length: 500 }, (_, i) => `45.62.${Math.floor(i / 250)}.${(i % 250) + 1}`);
    const lines = (from: number, to: number) => ips.slice(from, to).map((ip, i) => failedPassword(ip, 1000 + from + i)).join('\n') + '\n';
    const acked = async () => Number((await readFile(join(stateDir, 'spool', 'acked'), 'utf8').catch(() => '0')).trim());
    const start = () => spawnAgent(['run', '-c', configPath], {}, join(dir.path, 'agent.log'));

    // 1. Kill -9 in the middle of a burst of reports.
    agent = start();
    await waitFor('agent healthy', async () => (await agentHealth(metricsPort))?.healthy === true);
    // The tailer starts at the end of the file (no history): make sure it is reading before the
    // burst, or a slow start under load would skip lines written before it looked.
    await appendFile(authLog, 'Nov 23 10:00:00 host cron[1]: warm-up\n');
    await waitFor('the tailer reading', async () => {
      const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((r) => r.text(), () => '');
      return /rampart_agent_lines_read_total\{source="ssh_log"\} [1-9]/.test(metrics);
    });
    await appendFile(authLog, lines(0, 300));
    const ackedAtKill = await waitFor('reporting under way', async () => {
      const n = await acked();
      return n >= 20 && n;
    }, 60_000, 5);
    await agent.kill9();
    expect(ackedAtKill).toBeLessThan(300);

    // 2. Detections while the agent is dead, then the server goes away.
    await appendFile(authLog, lines(300, 400));
    await cp.stop();

    // 3. The agent restarts with the server down: everything is spooled, nothing is lost...
    agent = start();
    await appendFile(authLog, lines(400, 450));
    const spooled = await waitFor('everything spooled while offline', async () => {
      const h = await agentHealth(metricsPort);
      const pending = 450 - (await acked());
      return h && h.spool_depth === pending && pending > 0 && h;
    }, 60_000, 50);
    expect(spooled.spool_depth).toBeGreaterThan(150);
    // ...and it is killed again while offline.
    await agent.kill9();

    // 4. Server back, agent back, more detections; everything arrives once.
    await cp.start();
    const backAt = Date.now();
    agent = start();
    await appendFile(authLog, lines(450, 500));
    const events = await waitFor('all 500 reports on the server', async () => {
      const e = await serverEvents();
      return e.size === 500 && e;
    }, 120_000, 500);
    console.info(`fault figures (agent kill -9 during a server outage, ${cp.driver}): ${String(spooled.spool_depth)} detections spooled offline; all 500 on the server ${Date.now() - backAt} ms after it came back`);
    expect([...events.keys()].sort()).toEqual([...ips].sort());
    const counts = [...events.values()];
    expect(counts.filter((n) => n !== 1)).toEqual([]);
    expect(await agentHealth(metricsPort)).toMatchObject({ spool_depth: 0 });
    expect(await agent.terminate()).toBe(0);
    agent = undefined;
  }, 300_000);
});

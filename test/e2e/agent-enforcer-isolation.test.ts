import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemGate } from '@rampart/plugin-kit/testing';
import { LAB, dropLabs, watchDrops, type DropLab } from './drop-lab.ts';
import { agentHealth, waitFor } from './support.ts';

/*
 * One stalled enforcer holds up no other (issue 17, item 4). The real agent enforces
 * `packet_filter` (nftables, in the firewall namespace) and `csv`, whose reload command hangs for
 * a minute from the first sync on. A blacklist decision on the server must still drop the source
 * within 2 s, and a SIGTERM must stop the agent within its `stop_timeout_seconds` while the csv
 * reload still hangs, killing that reload rather than waiting for it.
 */
const gate = systemGate('agent + packet filter in a network namespace', { commands: ['nft', 'ip'], root: true });

interface HealthEnforcer {
  label: string;
  state: string;
  enforced: number;
  busy?: { operation: string; seconds: number };
}

describe.skipIf(gate)('a stalled enforcer next to nftables in a namespace', () => {
  let lab: DropLab;
  const labs = dropLabs();
  const listed = LAB.listed(0);
  const started = join(tmpdir(), `rampart-stall-${process.pid}-${Date.now()}.pid`);
  const STOP_TIMEOUT_SECONDS = 3;

  const enforcers = async () => ((await agentHealth(lab.metricsPort))?.enforcers ?? []) as HealthEnforcer[];
  const alive = (pid: number) => {
    try {
      process.kill(-pid, 0);
      return true;
    } catch {
      return false;
    }
  };

  beforeAll(async () => {
    lab = await labs.start({
      listed: 1,
      reconcileSeconds: 60,
      csv: true,
      csvReloadCommand: `echo $$ > ${started}; sleep 60`,
      stopTimeoutSeconds: STOP_TIMEOUT_SECONDS,
    });
  }, 90_000);
  afterAll(async () => {
    await labs.closeAll();
  });

  it('a decision drops the source within 2 s while the csv reload hangs, and SIGTERM stops the agent within its deadline', async () => {
    const pid = await waitFor('the csv reload hanging', async () => Number((await readFile(started, 'utf8').catch(() => '')).trim()) || false, 20_000);
    expect((await enforcers()).find((e) => e.label === 'csv')?.busy?.operation).toBe('sync');

    const watcher = watchDrops(lab.client, listed, LAB.fwLan, LAB.port);
    let dropped: number;
    let posted: number;
    try {
      await watcher.passing;
      const t0 = Date.now();
      await lab.contributor.reportIp({ ip: listed, confidence: 1, source: 'console', decision: 1 });
      posted = Date.now() - t0;
      dropped = (await watcher.firstDrop(20_000)) - t0;
    } finally {
      watcher.stop();
    }
    console.log(`[figure] decision → first dropped probe while csv's reload hangs: ${dropped} ms (POST /ips itself: ${posted} ms)`);
    // The agent's part: from the server's answer (the push is sent by then) to the drop.
    expect(dropped - posted).toBeLessThan(2000);
    expect(await lab.enforced()).toEqual([listed]);
    const now = await enforcers();
    expect(now.find((e) => e.label === 'packet_filter')).toMatchObject({ state: 'ok', enforced: 1 });
    expect(now.find((e) => e.label === 'csv')?.busy?.operation).toBe('sync');
    expect(alive(pid)).toBe(true);

    const t1 = Date.now();
    const code = await lab.agent.terminate();
    const stopped = Date.now() - t1;
    console.log(`[figure] SIGTERM → agent exited while an enforcer call hung: ${stopped} ms (stop_timeout_seconds = ${STOP_TIMEOUT_SECONDS})`);
    expect(code).toBe(0);
    expect(stopped).toBeLessThan(STOP_TIMEOUT_SECONDS * 1000);
    await waitFor('the hung reload killed', async () => !alive(pid), 5_000);
    // Rules stay in place after a stop.
    expect(await lab.enforced()).toEqual([listed]);
  }, 60_000);
});

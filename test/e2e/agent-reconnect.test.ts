import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUICK_ATTEMPTS, RECONNECT } from '@rampart/agent';
import { seedOrg } from '@rampart/server/testing';
import { tcpProxy, type TcpProxy } from '../faults/support.ts';
import { agentHealth, startConfiguredAgent, tempDir, waitFor, type AgentProcess, type ControlPlane } from './support.ts';
import { startControlPlane } from './support.ts';

/*
 * Issue 31: the real agent reconnects its sync channel soon after its control plane comes back.
 * Two restarts, each with the control plane down for DOWN_MS while the agent keeps trying:
 * - a graceful one (SIGTERM-like: the server closes the channel with 1001 "going away"), which
 *   puts the agent on its quick schedule;
 * - a crash (the connection cut without a close frame and new ones refused through a TCP proxy,
 *   then the server restarted), where the agent is on its normal, capped schedule.
 * The figure printed is from the control plane listening again to the agent's /healthz saying
 * channel_connected (polled every 20 ms). What is asserted is the schedule the agent logged.
 */

const DOWN_MS = 3_000;
const figures: string[] = [];

interface LogLine {
  msg: string;
  code?: number;
  schedule?: string;
  retryInMs?: number;
}

describe('agent reconnection after a control-plane restart', { timeout: 120_000 }, () => {
  let cp: ControlPlane;
  let proxy: TcpProxy;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let agent: AgentProcess;
  let metricsPort: number;

  beforeAll(async () => {
    cp = await startControlPlane();
    proxy = await tcpProxy(cp.port);
    dir = await tempDir('rampart-reconnect-');
    const org = await seedOrg(cp.store, { credits: 1000 });
    // The agent reaches the control plane through the proxy (so the crash can be cut without a close frame).
    const viaProxy = { ...cp, url: `http://127.0.0.1:${proxy.port}/api/v1` };
    ({ agent, metricsPort } = await startConfiguredAgent({
      cp: viaProxy,
      dir: dir.path,
      gaid: `RMP-AGENT-ID-reconnect${process.pid}`,
      adminKey: org.keys.admin,
      ips: { dry_run: { active: true, path: join(dir.path, 'dry-run.json') } },
      local: { log_level: 'info' },
    }));
  }, 180_000);
  afterAll(async () => {
    await agent?.kill9();
    await proxy?.close();
    await cp?.close();
    if (figures.length) console.info(`agent reconnection (control plane down ${DOWN_MS} ms):\n  ${figures.join('\n  ')}`);
    if (process.env.KEEP_RECONNECT_DIR) console.info(dir?.path);
    else await dir?.remove();
  });

  const logLines = async (): Promise<LogLine[]> =>
    (await readFile(join(dir.path, 'agent.log'), 'utf8'))
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as LogLine);
  const reconnects = async () => (await logLines()).filter((l) => l.msg === 'sync channel closed; reconnecting');
  const connected = async () => (await agentHealth(metricsPort, 500))?.channel_connected === true;

  /** Restarts the control plane with `down` between stop and start; the ms from listening to the agent connected. */
  async function restart(down: () => Promise<void>, up: () => Promise<void>): Promise<string> {
    const started = Date.now();
    await down();
    await waitFor('the agent to see the channel down', async () => !(await connected()), 20_000, 20);
    await new Promise((r) => setTimeout(r, DOWN_MS));
    const upAt = Date.now();
    await up();
    const back = Date.now();
    await waitFor('the agent connected again', connected, 60_000, 20);
    return `connected ${Date.now() - back} ms after the server listened again (down for ${upAt - started} ms, starting took ${back - upAt} ms)`;
  }

  it('after a graceful restart (close 1001): retries on the quick schedule and is back', async () => {
    const before = (await reconnects()).length;
    const ms = await restart(
      () => cp.stop(),
      () => cp.start(),
    );
    figures.push(`graceful restart (1001, quick schedule): ${ms}`);
    const lines = (await reconnects()).slice(before);
    expect(lines[0]).toMatchObject({ code: 1001, schedule: 'quick' });
    expect(lines.length).toBeGreaterThan(3);
    // Every attempt while the server was down stayed on the quick schedule: at most 1 s apart for
    // the first QUICK_ATTEMPTS, then (a restart longer than that, as on a loaded machine) the
    // normal schedule's cap.
    const quick = lines.slice(0, QUICK_ATTEMPTS);
    const after = lines.slice(QUICK_ATTEMPTS);
    expect(lines.filter((l) => l.schedule !== 'quick')).toEqual([]);
    expect(quick.filter((l) => l.retryInMs! > RECONNECT.quick.maxMs)).toEqual([]);
    expect(after.filter((l) => l.retryInMs! > RECONNECT.normal.maxMs)).toEqual([]);
  });

  it('after a crash (no close frame): retries on the normal schedule, capped at 4 s, and is back', async () => {
    const before = (await reconnects()).length;
    const ms = await restart(
      async () => {
        proxy.cut();
        await cp.stop();
      },
      async () => {
        await cp.start();
        proxy.restore();
      },
    );
    figures.push(`crash (1006, normal schedule): ${ms}`);
    const lines = (await reconnects()).slice(before);
    expect(lines[0]).toMatchObject({ code: 1006, schedule: 'normal' });
    expect(lines.length).toBeGreaterThan(1);
    expect(lines.filter((l) => l.schedule !== 'normal' || l.retryInMs! > 4000)).toEqual([]);
  });
});

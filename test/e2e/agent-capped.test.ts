import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedOrg, type TestOrg } from '@rampart/server/testing';
import { startConfiguredAgent, startControlPlane, tempDir, waitFor, type AgentProcess, type ControlPlane } from './support.ts';

/*
 * Issue 30 item 2: a real agent whose settings cap its list (`maximum_rules: 2`) while the server
 * lists 5 for it. The agent's csv enforcer holds the 2 highest entries, reads its file back and
 * says so; the control plane compares that with its own figure for the agent (5 listed, capped
 * to 2) and shows the cut, 3, never a drift.
 */

const LISTED = ['45.61.30.1', '45.61.30.2', '45.61.30.3', '45.61.30.4', '45.61.30.5'];

describe('an agent whose maximum_rules cuts its list', { timeout: 120_000 }, () => {
  let cp: ControlPlane;
  let org: TestOrg;
  let dir: Awaited<ReturnType<typeof tempDir>>;
  let agent: AgentProcess | undefined;
  const gaid = `RMP-AGENT-ID-capped${process.pid}`;

  beforeAll(async () => {
    cp = await startControlPlane();
    org = await seedOrg(cp.store, { credits: 100_000 });
    dir = await tempDir('rampart-capped-');
    for (const ip of LISTED) {
      const res = await fetch(`${cp.url}/ips`, { method: 'POST', headers: { authorization: org.keys.admin, 'content-type': 'application/json' }, body: JSON.stringify({ ip, confidence: 1, source: 'console', decision: 1 }) });
      expect(res.status).toBe(201);
    }
    ({ agent } = await startConfiguredAgent({
      cp,
      dir: dir.path,
      gaid,
      adminKey: org.keys.admin,
      ips: { csv: { active: true, csv_logs: join(dir.path, 'blocklist.csv') } },
      extra: { maximum_rules: 2 },
    }));
  }, 120_000);

  afterAll(async () => {
    await agent?.kill9();
    await cp?.close();
    await dir?.remove();
  });

  it('shows the cut the cap makes, read back from the target, and no drift', async () => {
    type Reported = { held: number | null; expected: number | null; listed: number | null; server_expected: number | null; cut: number | null; drift_since: number | null; drifting: boolean };
    const reported = await waitFor('the read-back reported', async () => {
      const agents = (await (await fetch(`${cp.url}/agents`, { headers: { authorization: org.keys.admin } })).json()) as { gaid: string; enforced: Record<string, Reported> }[];
      const csv = agents.find((a) => a.gaid === gaid)?.enforced.csv;
      return csv?.held === 2 && csv.listed === 5 ? csv : false;
    }, 60_000);
    expect(reported).toMatchObject({ held: 2, expected: 2, listed: 5, server_expected: 2, cut: 3, drift_since: null, drifting: false });
    const rows = (await readFile(join(dir.path, 'blocklist.csv'), 'utf8')).trim().split('\n');
    expect(rows).toHaveLength(3);
    expect(rows[0]).toBe('cidr,score');
  });
});

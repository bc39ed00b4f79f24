import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemGate } from '@rampart/plugin-kit/testing';
import { LAB, startDropLab, type DropLab } from './drop-lab.ts';
import { waitFor } from './support.ts';

/*
 * Issue 17: the packet filter's table renamed in the local file (rampart → rampart2) and the
 * agent sent SIGHUP. The old instance must withdraw the old table before the new one takes the
 * set; before, `rampart` kept dropping 45.61.7.10 whatever the server decided afterwards.
 */
const gate = systemGate('agent + nftables table rename in a network namespace', { commands: ['nft', 'ip'], root: true });

describe.skipIf(gate)('agent: a renamed nft table after SIGHUP', () => {
  let lab: DropLab;
  const listed = LAB.listed(0);
  const tables = async () => (await lab.nft(['list', 'tables'])).split('\n').map((l) => l.trim()).filter(Boolean).sort();
  const members = async (table: string) => {
    const out = JSON.parse(await lab.nft(['-j', 'list', 'set', 'inet', table, 'addrs'])) as { nftables: { set?: { elem?: string[] } }[] };
    return [...(out.nftables.find((o) => o.set)?.set?.elem ?? [])].sort();
  };

  beforeAll(async () => {
    lab = await startDropLab({ backend: 'nftables', listed: 1, reconcileSeconds: 1 });
  }, 60_000);
  afterAll(async () => {
    await lab?.close();
  });

  it('withdraws the old table, enforces in the new one, and a whitelist empties it', async () => {
    await lab.contributor.reportIp({ ip: listed, confidence: 1, source: 'console', decision: 1 });
    await waitFor('address in table rampart', async () => (await members('rampart')).includes(listed), 20_000);

    const configPath = join(lab.dir, 'agent.json');
    const config = JSON.parse(await readFile(configPath, 'utf8')) as { local: { enforcers: { packet_filter: { table: string } } } };
    config.local.enforcers.packet_filter.table = 'rampart2';
    await writeFile(configPath, JSON.stringify(config));
    lab.agent.child.kill('SIGHUP');

    await waitFor('address in table rampart2', async () => (await tables()).includes('table inet rampart2') && (await members('rampart2')).includes(listed), 20_000);
    expect(await tables()).toEqual(['table inet rampart2']);
    expect(await lab.lab.probe(lab.client, listed, LAB.fwLan, LAB.port)).toBe('timeout');

    await lab.contributor.reportIp({ ip: listed, confidence: 0.1, source: 'console', decision: 0 });
    await waitFor('address gone from table rampart2', async () => (await members('rampart2')).length === 0, 20_000);
    expect(await tables()).toEqual(['table inet rampart2']);
    expect(await lab.lab.probeUntil('open', lab.client, listed, LAB.fwLan, LAB.port)).toBe('open');
  });
});

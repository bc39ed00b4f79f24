import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemGate } from '@rampart/plugin-kit/testing';
import { LAB, dropLabs, type DropLab, type PacketFilterBackend } from './drop-lab.ts';
import { waitFor } from './support.ts';

/*
 * Issue 17: the packet filter's table (nftables) or set (ipset) renamed in the local file
 * (rampart → rampart2) and the agent sent SIGHUP. The old instance must withdraw before the new
 * one takes the set; before, `rampart` kept dropping 45.61.7.10 whatever the server decided.
 */
const gate = systemGate('agent + packet filter rename in a network namespace', { commands: ['nft', 'ip', 'ipset', 'iptables'], root: true });

describe.skipIf(gate).each<PacketFilterBackend>(['nftables', 'ipset'])('agent: a renamed packet_filter target after SIGHUP (%s)', (backend) => {
  let lab: DropLab;
  const labs = dropLabs();
  const listed = LAB.listed(0);
  /** Names of the tables (nftables) or sets (ipset) in the firewall namespace. */
  const targets = async () => {
    if (backend === 'ipset') return (await lab.lab.exec(lab.fw, ['ipset', 'list', '-n'])).stdout.split('\n').filter(Boolean).sort();
    return (await lab.nft(['list', 'tables'])).split('\n').map((l) => l.trim().replace(/^table inet /, '')).filter(Boolean).sort();
  };
  const members = async (name: string) => {
    if (backend === 'ipset') {
      const out = (await lab.lab.exec(lab.fw, ['ipset', 'list', name])).stdout;
      return out.slice(out.indexOf('Members:') + 'Members:'.length).split('\n').map((l) => l.trim()).filter(Boolean).sort();
    }
    const out = JSON.parse(await lab.nft(['-j', 'list', 'set', 'inet', name, 'addrs'])) as { nftables: { set?: { elem?: string[] } }[] };
    return [...(out.nftables.find((o) => o.set)?.set?.elem ?? [])].sort();
  };

  beforeAll(async () => {
    lab = await labs.start({ backend, listed: 1, reconcileSeconds: 1 });
  }, 60_000);
  afterAll(async () => {
    await labs.closeAll();
  });

  it('withdraws the old target, enforces in the new one, and a whitelist empties it', async () => {
    await lab.contributor.reportIp({ ip: listed, confidence: 1, source: 'console', decision: 1 });
    await waitFor('address in rampart', async () => (await members('rampart')).includes(listed), 20_000);

    const configPath = join(lab.dir, 'agent.json');
    const config = JSON.parse(await readFile(configPath, 'utf8')) as { local: { enforcers: { packet_filter: Record<string, string> } } };
    config.local.enforcers.packet_filter[backend === 'ipset' ? 'set' : 'table'] = 'rampart2';
    await writeFile(configPath, JSON.stringify(config));
    lab.agent.child.kill('SIGHUP');

    await waitFor('address in rampart2', async () => (await targets()).includes('rampart2') && (await members('rampart2')).includes(listed), 20_000);
    expect(await targets()).toEqual(['rampart2']);
    expect(await lab.lab.probe(lab.client, listed, LAB.fwLan, LAB.port)).toBe('timeout');

    await lab.contributor.reportIp({ ip: listed, confidence: 0.1, source: 'console', decision: 0 });
    await waitFor('address gone from rampart2', async () => (await members('rampart2')).length === 0, 20_000);
    expect(await targets()).toEqual(['rampart2']);
    expect(await lab.lab.probeUntil('open', lab.client, listed, LAB.fwLan, LAB.port)).toBe('open');
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Enforcer } from '@rampart/plugin-kit';
import { firewallTopology, TOPOLOGY, type FirewallTopology } from '@rampart/plugin-kit/testing';
import { ipsetEnforcer, parseSave } from '../src/index.ts';
import { silent, skipWithoutIpset } from './support.ts';

const { listed: LISTED, unlisted: UNLISTED, fwAddress, port } = TOPOLOGY;
const RULE = '-m set --match-set rampart src -m comment --comment rampart -j DROP';

describe.skipIf(skipWithoutIpset('ipset traffic'))('ipset enforcer drops traffic in a namespace', () => {
  let net: FirewallTopology;
  let dir: string;
  let enforcer: Enforcer;
  const iptablesS = async (chain: string) => (await net.lab.exec(net.fw, ['iptables', '-w', '5', '-S', chain])).stdout;

  beforeAll(async () => {
    net = await firewallTopology();
    // What Docker sets up: a DOCKER-USER chain jumped to first from FORWARD.
    await net.lab.exec(net.fw, ['iptables', '-w', '5', '-N', 'DOCKER-USER']);
    await net.lab.exec(net.fw, ['iptables', '-w', '5', '-A', 'DOCKER-USER', '-j', 'RETURN']);
    await net.lab.exec(net.fw, ['iptables', '-w', '5', '-I', 'FORWARD', '1', '-j', 'DOCKER-USER']);
    dir = await mkdtemp(join(tmpdir(), 'rampart-ipset-'));
    const config = ipsetEnforcer.configSchema.parse({
      active: true,
      acl: join(dir, 'rampart.ipset'),
      reload_command: `echo reloaded >> ${join(dir, 'reloads')}`,
      options: { backend: 'ipset', netns: net.fw },
    });
    enforcer = await ipsetEnforcer.create(config, { log: silent });
  });

  afterAll(async () => {
    await enforcer?.withdraw().catch(() => undefined);
    await net?.lab.destroy();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('passes everything before any rule', async () => {
    expect(await net.reachability([LISTED, UNLISTED])).toEqual(net.expectOpen([LISTED, UNLISTED]));
  });

  it('puts the drop rule first in INPUT, FORWARD and DOCKER-USER and sizes the set', async () => {
    expect(await enforcer.sync([{ value: `${LISTED}/32`, score: 800 }, { value: '192.0.2.0/24', score: 500 }])).toEqual({ enforced: 2, cut: 0 });
    for (const chain of ['INPUT', 'FORWARD', 'DOCKER-USER']) {
      expect((await iptablesS(chain)).split('\n')[1]).toBe(`-A ${chain} ${RULE}`);
    }
    const header = (await net.lab.exec(net.fw, ['ipset', 'list', '-t', 'rampart'])).stdout;
    expect(header).toMatch(/Header: family inet hashsize 1024 maxelem 1048576/);
    expect(header).toMatch(/Number of entries: 2/);
  });

  it('drops a listed source on input and forward, passes an unlisted one', async () => {
    expect(await net.reachability([UNLISTED])).toEqual(net.expectOpen([UNLISTED]));
  });

  it('after a diff, the newly listed source is dropped and the removed one passes', async () => {
    await enforcer.apply({ add: [{ value: `${UNLISTED}/32`, score: 900 }], remove: [`${LISTED}/32`] });
    expect(await net.reachability([LISTED])).toEqual(net.expectOpen([LISTED]));
    await enforcer.apply({ add: [{ value: `${LISTED}/32`, score: 800 }], remove: [`${UNLISTED}/32`] });
    expect(await net.reachability([UNLISTED])).toEqual(net.expectOpen([UNLISTED]));
  });

  it('after `nft flush ruleset` (iptables-nft rules gone, set kept) reconcile re-adds the rules', async () => {
    await net.lab.exec(net.fw, ['nft', 'flush', 'ruleset']);
    expect(await enforcer.list()).toEqual([]);
    expect(await net.lab.probeUntil('open', net.client, LISTED, fwAddress, port)).toBe('open');
    expect(await enforcer.reconcile!()).toEqual({ enforced: 2, cut: 0, drifted: true });
    expect(await enforcer.list()).toEqual(['192.0.2.0/24', `${LISTED}/32`]);
    // DOCKER-USER went with the flush; without Docker to re-create it, only INPUT and FORWARD get the rule.
    expect((await iptablesS('INPUT')).split('\n')[1]).toBe(`-A INPUT ${RULE}`);
    expect(await net.reachability([UNLISTED])).toEqual(net.expectOpen([UNLISTED]));
    expect(await enforcer.reconcile!()).toEqual({ enforced: 2, cut: 0, drifted: false });
  });

  it('a destroyed set is re-created by reconcile', async () => {
    await net.lab.exec(net.fw, ['sh', '-c', 'iptables -w 5 -F INPUT && iptables -w 5 -F FORWARD && ipset destroy rampart']);
    expect(await enforcer.reconcile!()).toEqual({ enforced: 2, cut: 0, drifted: true });
    expect(await net.reachability([UNLISTED])).toEqual(net.expectOpen([UNLISTED]));
  });

  it('writes an acl file that `ipset restore` loads, and ran the reload command per change', async () => {
    const acl = join(dir, 'rampart.ipset');
    expect(await readFile(acl, 'utf8')).toBe(
      '# rampart block list (generated; do not edit)\ncreate rampart hash:net family inet hashsize 1024 maxelem 1048576 -exist\nflush rampart\nadd rampart 192.0.2.0/24\nadd rampart 198.51.100.10/32\n',
    );
    // A host booting from the file alone (a fresh namespace) gets the same set.
    const fresh = await net.lab.namespace('boot');
    await net.lab.exec(fresh, ['sh', '-c', `ipset restore -exist < ${acl}`]);
    expect(parseSave((await net.lab.exec(fresh, ['ipset', 'save', 'rampart'])).stdout, 'rampart').sort()).toEqual(['192.0.2.0/24', '198.51.100.10']);
    // sync, two diffs, two re-asserts.
    expect((await readFile(join(dir, 'reloads'), 'utf8')).trim().split('\n')).toHaveLength(5);
  });

  it('withdraw removes rules and set, and traffic passes again', async () => {
    await enforcer.withdraw();
    expect(await iptablesS('INPUT')).not.toContain('match-set');
    expect((await net.lab.exec(net.fw, ['ipset', 'list', '-n'])).stdout).toBe('');
    expect(await net.reachability([LISTED, UNLISTED])).toEqual(net.expectOpen([LISTED, UNLISTED]));
  });
});

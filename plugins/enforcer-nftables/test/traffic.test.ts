import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Enforcer } from '@rampart/plugin-kit';
import { firewallTopology, TOPOLOGY, type FirewallTopology } from '@rampart/plugin-kit/testing';
import { nftablesEnforcer } from '../src/index.ts';
import { silent, skipWithoutNft } from './support.ts';

const { listed: LISTED, unlisted: UNLISTED, fwAddress, port } = TOPOLOGY;

describe.skipIf(skipWithoutNft('nftables traffic'))('nftables enforcer drops traffic in a namespace', () => {
  let net: FirewallTopology;
  let dir: string;
  let enforcer: Enforcer;

  beforeAll(async () => {
    net = await firewallTopology();
    dir = await mkdtemp(join(tmpdir(), 'rampart-nft-'));
    const acl = join(dir, 'rampart.nft');
    const config = nftablesEnforcer.configSchema.parse({
      active: true,
      acl,
      // What a distribution's firewall reload does, confined to the test's namespace (check only).
      reload_command: `ip netns exec ${net.fw} nft -c -f ${acl} && echo reloaded >> ${join(dir, 'reloads')}`,
      options: { netns: net.fw },
    });
    enforcer = await nftablesEnforcer.create(config, { log: silent });
  });

  afterAll(async () => {
    await enforcer?.withdraw().catch(() => undefined);
    await net?.lab.destroy();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('passes everything before any rule', async () => {
    expect(await net.reachability([LISTED, UNLISTED])).toEqual(net.expectOpen([LISTED, UNLISTED]));
  });

  it('drops a listed source on input and forward, passes an unlisted one', async () => {
    expect(await enforcer.sync([{ value: `${LISTED}/32`, score: 800 }, { value: '192.0.2.0/24', score: 500 }])).toEqual({ enforced: 2, cut: 0 });
    expect(await net.reachability([UNLISTED])).toEqual(net.expectOpen([UNLISTED]));
  });

  it('after a diff, the newly listed source is dropped and the removed one passes', async () => {
    await enforcer.apply({ add: [{ value: `${UNLISTED}/32`, score: 900 }], remove: [`${LISTED}/32`] });
    expect(await net.reachability([LISTED])).toEqual(net.expectOpen([LISTED]));
  });

  it('a network entry drops every address inside it', async () => {
    await enforcer.apply({ add: [{ value: '198.51.100.0/28', score: 300 }], remove: [`${UNLISTED}/32`] });
    // .10 is inside 198.51.100.0/28, .20 is not.
    expect(await net.reachability([UNLISTED])).toEqual(net.expectOpen([UNLISTED]));
    await enforcer.apply({ add: [{ value: `${LISTED}/32`, score: 800 }], remove: ['198.51.100.0/28'] });
  });

  it('after `nft flush ruleset` traffic passes until reconcile re-asserts the list', async () => {
    await net.lab.exec(net.fw, ['nft', 'flush', 'ruleset']);
    expect(await enforcer.list()).toEqual([]);
    expect(await net.lab.probeUntil('open', net.client, LISTED, fwAddress, port)).toBe('open');
    expect(await enforcer.reconcile!()).toEqual({ enforced: 2, cut: 0, drifted: true });
    expect(await enforcer.list()).toEqual(['192.0.2.0/24', `${LISTED}/32`]);
    expect(await net.reachability([UNLISTED])).toEqual(net.expectOpen([UNLISTED]));
    expect(await enforcer.reconcile!()).toEqual({ enforced: 2, cut: 0, drifted: false });
  });

  it('keeps the acl file loadable: a firewall reload from it alone restores the list', async () => {
    const reloads = (await readFile(join(dir, 'reloads'), 'utf8')).trim().split('\n');
    // sync, three applied diffs, the re-assert: each wrote the file and ran the command.
    expect(reloads).toHaveLength(5);
    await net.lab.exec(net.fw, ['nft', 'flush', 'ruleset']);
    await net.lab.exec(net.fw, ['nft', '-f', join(dir, 'rampart.nft')]);
    expect(await enforcer.list()).toEqual(['192.0.2.0/24', `${LISTED}/32`]);
    expect(await net.lab.probe(net.client, LISTED, fwAddress, port)).toBe('timeout');
  });

  it('withdraw removes the table, and traffic passes again', async () => {
    await enforcer.withdraw();
    expect((await net.lab.exec(net.fw, ['nft', 'list', 'tables'])).stdout).toBe('');
    expect(await net.reachability([LISTED, UNLISTED])).toEqual(net.expectOpen([LISTED, UNLISTED]));
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Enforcer } from '@rampart/plugin-kit';
import { NetnsLab } from '@rampart/plugin-kit/testing';
import { nftablesEnforcer } from '../src/index.ts';
import { silent, skipWithoutNft } from './support.ts';

/*
 * client (198.51.100.10 and .20) ── fw (198.51.100.1 | 203.0.113.1, forwarding) ── server (203.0.113.2)
 * Input hook: client → fw:8080. Forward hook: client → server:8080 through fw.
 */
const LISTED = '198.51.100.10';
const UNLISTED = '198.51.100.20';
const PORT = 8080;

describe.skipIf(skipWithoutNft('nftables traffic'))('nftables enforcer drops traffic in a namespace', () => {
  const lab = new NetnsLab();
  let client: string;
  let fw: string;
  let server: string;
  let dir: string;
  let enforcer: Enforcer;

  beforeAll(async () => {
    [client, fw, server] = [await lab.namespace('cli'), await lab.namespace('fw'), await lab.namespace('srv')];
    await lab.link({ ns: client, dev: 'eth0', addresses: [`${LISTED}/24`, `${UNLISTED}/24`] }, { ns: fw, dev: 'lan', addresses: ['198.51.100.1/24'] });
    await lab.link({ ns: fw, dev: 'wan', addresses: ['203.0.113.1/24'] }, { ns: server, dev: 'eth0', addresses: ['203.0.113.2/24'] });
    await lab.exec(client, ['ip', 'route', 'add', 'default', 'via', '198.51.100.1']);
    await lab.exec(server, ['ip', 'route', 'add', 'default', 'via', '203.0.113.1']);
    await lab.exec(fw, ['sysctl', '-qw', 'net.ipv4.ip_forward=1']);
    await lab.listen(fw, PORT);
    await lab.listen(server, PORT);
    dir = await mkdtemp(join(tmpdir(), 'rampart-nft-'));
    const acl = join(dir, 'rampart.nft');
    const config = nftablesEnforcer.configSchema.parse({
      active: true,
      acl,
      // What a distribution's firewall reload does, confined to the test's namespace.
      reload_command: `ip netns exec ${fw} nft -c -f ${acl} && echo reloaded >> ${join(dir, 'reloads')}`,
      options: { netns: fw },
    });
    enforcer = await nftablesEnforcer.create(config, { log: silent });
  });

  afterAll(async () => {
    await enforcer?.withdraw().catch(() => undefined);
    await lab.destroy();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** [input from LISTED, input from UNLISTED, forward from LISTED, forward from UNLISTED] */
  async function reachability(expectOpen: string[]) {
    const results: Record<string, string> = {};
    for (const [label, source, host] of [
      ['in-listed', LISTED, '198.51.100.1'],
      ['in-unlisted', UNLISTED, '198.51.100.1'],
      ['fwd-listed', LISTED, '203.0.113.2'],
      ['fwd-unlisted', UNLISTED, '203.0.113.2'],
    ] as const) {
      results[label] = expectOpen.includes(source)
        ? await lab.probeUntil('open', client, source, host, PORT)
        : await lab.probe(client, source, host, PORT);
    }
    return results;
  }

  it('passes everything before any rule', async () => {
    expect(await reachability([LISTED, UNLISTED])).toEqual({ 'in-listed': 'open', 'in-unlisted': 'open', 'fwd-listed': 'open', 'fwd-unlisted': 'open' });
  });

  it('drops a listed source on input and forward, passes an unlisted one', async () => {
    expect(await enforcer.sync([{ cidr: `${LISTED}/32`, score: 800 }, { cidr: '192.0.2.0/24', score: 500 }])).toEqual({ enforced: 2, cut: 0 });
    expect(await reachability([UNLISTED])).toEqual({ 'in-listed': 'timeout', 'in-unlisted': 'open', 'fwd-listed': 'timeout', 'fwd-unlisted': 'open' });
  });

  it('after a diff, the newly listed source is dropped and the removed one passes', async () => {
    await enforcer.apply({ add: [{ cidr: `${UNLISTED}/32`, score: 900 }], remove: [`${LISTED}/32`] });
    expect(await reachability([LISTED])).toEqual({ 'in-listed': 'open', 'in-unlisted': 'timeout', 'fwd-listed': 'open', 'fwd-unlisted': 'timeout' });
  });

  it('a network entry drops every address inside it', async () => {
    await enforcer.apply({ add: [{ cidr: '198.51.100.0/28', score: 300 }], remove: [`${UNLISTED}/32`] });
    // .10 is inside 198.51.100.0/28, .20 is not.
    expect(await reachability([UNLISTED])).toEqual({ 'in-listed': 'timeout', 'in-unlisted': 'open', 'fwd-listed': 'timeout', 'fwd-unlisted': 'open' });
    await enforcer.apply({ add: [{ cidr: `${LISTED}/32`, score: 800 }], remove: ['198.51.100.0/28'] });
  });

  it('after `nft flush ruleset` traffic passes until reconcile re-asserts the list', async () => {
    await lab.exec(fw, ['nft', 'flush', 'ruleset']);
    expect(await enforcer.list()).toEqual([]);
    expect(await lab.probeUntil('open', client, LISTED, '198.51.100.1', PORT)).toBe('open');
    expect(await enforcer.reconcile!()).toEqual({ enforced: 2, cut: 0, drifted: true });
    expect(await enforcer.list()).toEqual(['192.0.2.0/24', `${LISTED}/32`]);
    expect(await reachability([UNLISTED])).toEqual({ 'in-listed': 'timeout', 'in-unlisted': 'open', 'fwd-listed': 'timeout', 'fwd-unlisted': 'open' });
    expect(await enforcer.reconcile!()).toEqual({ enforced: 2, cut: 0, drifted: false });
  });

  it('keeps the acl file loadable: a firewall reload from it alone restores the list', async () => {
    const reloads = (await readFile(join(dir, 'reloads'), 'utf8')).trim().split('\n');
    expect(reloads.length).toBeGreaterThanOrEqual(5);
    await lab.exec(fw, ['nft', 'flush', 'ruleset']);
    await lab.exec(fw, ['nft', '-f', join(dir, 'rampart.nft')]);
    expect(await enforcer.list()).toEqual(['192.0.2.0/24', `${LISTED}/32`]);
    expect(await lab.probe(client, LISTED, '198.51.100.1', PORT)).toBe('timeout');
  });

  it('withdraw removes the table, and traffic passes again', async () => {
    await enforcer.withdraw();
    expect(await lab.exec(fw, ['nft', 'list', 'tables']).then((r) => r.stdout)).toBe('');
    expect(await reachability([LISTED, UNLISTED])).toEqual({ 'in-listed': 'open', 'in-unlisted': 'open', 'fwd-listed': 'open', 'fwd-unlisted': 'open' });
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Enforcer } from '@rampart/plugin-kit';
import { NetnsLab } from '@rampart/plugin-kit/testing';
import { nftablesBridgeEnforcer } from '../src/index.ts';
import { silent, skipWithoutNft } from './support.ts';

/*
 * client (198.51.100.10 and .20) ── br0 in `bridge` ── server (198.51.100.2): one L2 segment,
 * so only the bridge family sees the traffic (the inet forward hook never does).
 */
const LISTED = '198.51.100.10';
const UNLISTED = '198.51.100.20';
const SERVER = '198.51.100.2';
const PORT = 8080;

describe.skipIf(skipWithoutNft('nftables bridge traffic'))('nftables bridge enforcer drops bridged traffic', () => {
  const lab = new NetnsLab();
  let client: string;
  let bridge: string;
  let enforcer: Enforcer;

  async function reachability(open: string[]) {
    const out: Record<string, string> = {};
    for (const source of [LISTED, UNLISTED]) {
      out[source] = open.includes(source) ? await lab.probeUntil('open', client, source, SERVER, PORT) : await lab.probe(client, source, SERVER, PORT);
    }
    return out;
  }
  const expectOpen = (open: string[]) => Object.fromEntries([LISTED, UNLISTED].map((s) => [s, open.includes(s) ? 'open' : 'timeout']));

  beforeAll(async () => {
    client = await lab.namespace('cli');
    bridge = await lab.namespace('br');
    const server = await lab.namespace('srv');
    await lab.exec(bridge, ['ip', 'link', 'add', 'br0', 'type', 'bridge']);
    await lab.exec(bridge, ['ip', 'link', 'set', 'br0', 'up']);
    await lab.link({ ns: client, dev: 'eth0', addresses: [`${LISTED}/24`, `${UNLISTED}/24`] }, { ns: bridge, dev: 'p1' });
    await lab.link({ ns: server, dev: 'eth0', addresses: [`${SERVER}/24`] }, { ns: bridge, dev: 'p2' });
    await lab.exec(bridge, ['ip', 'link', 'set', 'p1', 'master', 'br0']);
    await lab.exec(bridge, ['ip', 'link', 'set', 'p2', 'master', 'br0']);
    await lab.listen(server, PORT);
    enforcer = await nftablesBridgeEnforcer.create(nftablesBridgeEnforcer.configSchema.parse({ active: true, options: { netns: bridge } }), { log: silent });
  });

  afterAll(async () => {
    await enforcer?.withdraw().catch(() => undefined);
    await lab.destroy();
  });

  it('passes everything before any rule', async () => {
    expect(await reachability([LISTED, UNLISTED])).toEqual(expectOpen([LISTED, UNLISTED]));
  });

  it('drops a listed source crossing the bridge, passes an unlisted one', async () => {
    expect(await enforcer.sync([{ value: `${LISTED}/32`, score: 800 }])).toEqual({ enforced: 1, cut: 0 });
    expect((await lab.exec(bridge, ['nft', 'list', 'tables'])).stdout).toBe('table bridge rampart\n');
    expect(await reachability([UNLISTED])).toEqual(expectOpen([UNLISTED]));
  });

  it('after a diff, the newly listed network is dropped and the removed address passes', async () => {
    await enforcer.apply({ add: [{ value: '198.51.100.16/28', score: 500 }], remove: [`${LISTED}/32`] });
    expect(await reachability([LISTED])).toEqual(expectOpen([LISTED]));
  });

  it('after `nft flush ruleset` reconcile re-asserts the list', async () => {
    await lab.exec(bridge, ['nft', 'flush', 'ruleset']);
    expect(await enforcer.list()).toEqual([]);
    expect(await lab.probeUntil('open', client, UNLISTED, SERVER, PORT)).toBe('open');
    expect(await enforcer.reconcile!()).toEqual({ enforced: 1, cut: 0, drifted: true });
    expect(await enforcer.list()).toEqual(['198.51.100.16/28']);
    expect(await reachability([LISTED])).toEqual(expectOpen([LISTED]));
  });

  it('withdraw removes the table, and traffic passes again', async () => {
    await enforcer.withdraw();
    expect((await lab.exec(bridge, ['nft', 'list', 'tables'])).stdout).toBe('');
    expect(await reachability([LISTED, UNLISTED])).toEqual(expectOpen([LISTED, UNLISTED]));
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ed25519KeyPair, enforcerConformance, waitFor, silentLogger as silent } from '@rampart/plugin-kit/testing';
import { MikrotikConfig, mikrotikEnforcer, parseAddressList, parseDropRules } from '../src/index.ts';
import { startRouterStandIn, type RouterStandIn } from './routeros-stand-in.ts';

const sorted = (a: string[]) => [...a].sort();

function config(router: RouterStandIn, extra: Record<string, unknown> = {}) {
  return MikrotikConfig.parse({
    active: true,
    router_host: '127.0.0.1',
    router_user: 'rampart',
    router_password: 'pw-1',
    ...extra,
    options: { port: router.port, host_key_sha256: router.hostKeySha256, batch_size: 3, ...(extra.options as object) },
  });
}

describe('enforcer-mikrotik config and parsing', () => {
  it('parses the README sample config and names what is missing', async () => {
    const readme = await readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    const sample = /## Sample config[\s\S]*?```json\n([\s\S]*?)```/.exec(readme)?.[1];
    const parsed = MikrotikConfig.parse(JSON.parse(sample!));
    expect(parsed.router_host).toBe('192.0.2.1');
    expect(parsed.options.chains).toEqual(['input', 'forward']);
    const bad = MikrotikConfig.safeParse({ active: true, options: { host_key_sha256: 'md5:xx' } });
    expect(bad.error!.issues.map((i) => i.path.join('.')).sort()).toEqual([
      'options.host_key_sha256',
      'router_host',
      'router_password',
      'router_user',
    ]);
  });

  it('parses RouterOS terse output', () => {
    expect(parseAddressList(' 0   list=x address=203.0.113.7 creation-time=nov/23/2026 10:00:00 dynamic=no\n 1   list=x address=10.0.0.0/8\n')).toEqual([
      '10.0.0.0/8',
      '203.0.113.7/32',
    ]);
    expect(parseDropRules(' 0    chain=input action=drop src-address-list=rampart-a log=no log-prefix="" comment=rampart-drop\n')).toEqual([
      { chain: 'input', list: 'rampart-a' },
    ]);
  });
});

describe('enforcer-mikrotik against an SSH RouterOS stand-in', () => {
  let router: RouterStandIn;
  let keyDir: string;
  const key = ed25519KeyPair();
  beforeAll(async () => {
    router = await startRouterStandIn({ user: 'rampart', password: 'pw-1', publicKey: key.public });
    keyDir = await mkdtemp(join(tmpdir(), 'rampart-mikrotik-'));
    await writeFile(join(keyDir, 'id_ed25519'), key.private, { mode: 0o600 });
  });
  afterAll(async () => {
    await router.stop();
    await rm(keyDir, { recursive: true, force: true });
  });

  it('fills a new list and repoints the drop rules on a full replace; diffs as add/remove', async () => {
    router.state.rules.push({ id: 1, chain: 'input', action: 'accept', srcList: '', comment: 'established' });
    const e = await mikrotikEnforcer.create(config(router), { log: silent });
    expect(await e.healthcheck()).toEqual({ ok: true });
    await e.sync([{ value: '203.0.113.7/32', score: 9 }, { value: '198.51.100.0/24', score: 5 }]);
    // Drop rules created above the operator's rule, pointing at list a.
    expect(router.state.rules.map((r) => `${r.chain}:${r.action}:${r.srcList}`)).toEqual([
      'forward:drop:rampart-a',
      'input:drop:rampart-a',
      'input:accept:',
    ]);
    expect(sorted(router.enforced())).toEqual(['198.51.100.0/24', '203.0.113.7/32']);

    await e.sync([{ value: '192.0.2.1/32', score: 1 }]);
    expect(router.state.rules.filter((r) => r.action === 'drop').map((r) => r.srcList)).toEqual(['rampart-b', 'rampart-b']);
    expect(router.state.lists.has('rampart-a')).toBe(false);
    expect(router.enforced()).toEqual(['192.0.2.1/32']);

    const before = router.state.execs.length;
    const diff = { add: [{ value: '192.0.2.2/32', score: 3 }, { value: '10.0.0.0/8', score: 4 }], remove: ['192.0.2.1/32'] };
    await e.apply(diff);
    const sent = router.state.execs.slice(before);
    expect(sent.at(-1)).toBe(
      [
        '/ip firewall address-list remove [find list="rampart-b" address="192.0.2.1"]',
        '/ip firewall address-list add list=rampart-b address=10.0.0.0/8 comment="rampart"',
        '/ip firewall address-list add list=rampart-b address=192.0.2.2 comment="rampart"',
      ].join('\n'),
    );
    const afterFirst = router.state.execs.length;
    await e.apply(diff);
    // The second apply changes nothing of the enforced set: nothing is sent at all.
    expect(router.state.execs.slice(afterFirst)).toEqual([]);
    expect(await e.list()).toEqual(['10.0.0.0/8', '192.0.2.2/32']);

    router.state.lists.delete('rampart-b');
    expect(await e.reconcile!()).toMatchObject({ drifted: true, enforced: 2 });
    expect(sorted(router.enforced())).toEqual(['10.0.0.0/8', '192.0.2.2/32']);

    await e.withdraw();
    expect(router.state.rules.map((r) => r.comment)).toEqual(['established']);
    expect(await e.list()).toEqual([]);
    await e.close();
    await e.close();
    router.state.rules = [];
  });

  it('with the default batch size, keeps every exec under the size an SSH server must accept', async () => {
    // 500 `add` lines are ~40 KB: over RFC 4253's 35,000-byte packet, which ssh2's server refuses.
    const e = await mikrotikEnforcer.create(config(router, { options: { batch_size: 500 } }), { log: silent });
    const entries = Array.from({ length: 1000 }, (_, i) => ({ value: `198.18.${i >> 8}.${i & 255}/32`, score: 100 + (i % 50) }));
    const before = router.state.execs.length;
    expect(await e.sync(entries)).toMatchObject({ enforced: 1000 });
    expect(router.enforced()).toHaveLength(1000);
    expect(router.state.execs.slice(before).every((x) => Buffer.byteLength(x) <= 32_000)).toBe(true);
    await e.withdraw();
    await e.close();
    router.state.rules = [];
  });

  it('repairs incomplete drop rules without emptying the list they enforce', async () => {
    router.state.rules = [{ id: 7, chain: 'input', action: 'drop', srcList: 'rampart-a', comment: 'rampart-drop' }];
    router.state.lists.set('rampart-a', new Set(['192.0.2.50/32']));
    const e = await mikrotikEnforcer.create(config(router), { log: silent });
    expect(await e.list()).toEqual([]); // incomplete rules: nothing counts as enforced
    const start = router.state.execs.length;
    await e.sync([{ value: '192.0.2.50/32', score: 2 }, { value: '192.0.2.51/32', score: 1 }]);
    const sent = router.state.execs.slice(start).join('\n').split('\n');
    const repoint = sent.indexOf('/ip firewall filter set [find comment="rampart-drop"] src-address-list=rampart-b');
    const clearA = sent.indexOf('/ip firewall address-list remove [find list="rampart-a"]');
    expect(repoint).toBeGreaterThan(-1);
    expect(clearA).toBeGreaterThan(repoint);
    expect(router.state.rules.map((r) => `${r.chain}:${r.srcList}`).sort()).toEqual(['forward:rampart-b', 'input:rampart-b']);
    expect(sorted(router.enforced())).toEqual(['192.0.2.50/32', '192.0.2.51/32']);
    await e.withdraw();
    await e.close();
    router.state.rules = [];
  });

  it('reconnects after the router drops the connection', async () => {
    const e = await mikrotikEnforcer.create(config(router), { log: silent });
    await e.sync([{ value: '192.0.2.60/32', score: 1 }]);
    router.disconnectAll();
    await waitFor(async () => (await e.healthcheck()).ok, 'the enforcer to reconnect');
    await e.apply({ add: [{ value: '192.0.2.61/32', score: 1 }], remove: [] });
    expect(await e.list()).toEqual(['192.0.2.60/32', '192.0.2.61/32']);
    await e.withdraw();
    await e.close();
  });

  it('logs in with a private key', async () => {
    const e = await mikrotikEnforcer.create(
      config(router, { router_password: '', options: { private_key_path: join(keyDir, 'id_ed25519') } }),
      { log: silent },
    );
    expect(await e.healthcheck()).toEqual({ ok: true });
    await e.close();
  });

  it('refuses a router whose host key does not match the pin, and a wrong password', async () => {
    const wrongPin = await mikrotikEnforcer.create(
      config(router, { options: { host_key_sha256: `SHA256:${'A'.repeat(43)}` } }),
      { log: silent },
    );
    const health = await wrongPin.healthcheck();
    expect(health.ok).toBe(false);
    expect(health.detail).toBe(`host key ${router.hostKeySha256} does not match the pinned key`);
    await expect(wrongPin.sync([])).rejects.toMatchObject({ code: 'SSH_FAILED' });
    await wrongPin.close();
    const wrongPassword = await mikrotikEnforcer.create(config(router, { router_password: 'nope' }), { log: silent });
    expect((await wrongPassword.healthcheck()).ok).toBe(false);
    await wrongPassword.close();
  });

  it('fails the call when RouterOS reports an error in its output', async () => {
    const e = await mikrotikEnforcer.create(config(router), { log: silent });
    router.state.readOnly = true;
    try {
      await expect(e.sync([{ value: '192.0.2.9/32', score: 1 }])).rejects.toMatchObject({
        code: 'ROUTEROS_COMMAND_FAILED',
        detail: 'failure: not enough permissions (9)',
      });
    } finally {
      router.state.readOnly = false;
    }
    expect(router.enforced()).toEqual([]);
    await e.close();
  });
});

// The stand-in keeps real state across SSH sessions; each test gets its own router.
enforcerConformance('mikrotik (SSH RouterOS stand-in)', async ({ capacity }) => {
  const router = await startRouterStandIn({ user: 'rampart', password: 'pw-1' });
  const open = () => mikrotikEnforcer.create(config(router, { options: capacity ? { max_entries: capacity, batch_size: 200 } : { batch_size: 200 } }), { log: silent });
  const enforcer = await open();
  return {
    enforcer,
    reopen: open,
    disturb: async () => {
      router.state.lists.clear();
    },
    teardown: async () => {
      await enforcer.close();
      await router.stop();
    },
  };
});

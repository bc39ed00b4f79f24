import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { engineStats } from '@rampart/plugin-kit';
import { ed25519KeyPair, enforcerConformance, waitFor, recordingLogger } from '@rampart/plugin-kit/testing';
import {
  ASA_ERROR,
  CiscoAsaConfig,
  IOS_ERROR,
  CiscoIosConfig,
  ciscoAsaEnforcer,
  ciscoIosEnforcer,
  groupDenies,
  groupMember,
  parseAccessList,
  parseObjectGroup,
  parseShuns,
  standardDenies,
  standardSource,
} from '../src/index.ts';
import { startIosStandIn, type IosStandIn } from './ios-stand-in.ts';
import { startAsaStandIn, type AsaStandIn } from './asa-stand-in.ts';

const fixture = (name: string) => readFile(fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url)), 'utf8');

/** A logger that keeps its lines (plugin-kit's recordingLogger), and those lines. */
function recorder() {
  const log = recordingLogger();
  return { log, lines: log.lines };
}
const silent = recorder().log;

function iosConfig(router: { port: number; hostKeySha256: string }, options: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  return CiscoIosConfig.parse({
    active: true,
    router_host: '127.0.0.1',
    router_user: 'rampart',
    router_password: 'pw-1',
    ...extra,
    options: { port: router.port, host_key_sha256: router.hostKeySha256, ...options },
  });
}

function asaConfig(asa: { port: number; hostKeySha256: string }, options: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  return CiscoAsaConfig.parse({
    active: true,
    address: `127.0.0.1:${asa.port}`,
    user: 'rampart',
    password: 'pw-2',
    command: '',
    ...extra,
    options: { host_key_sha256: asa.hostKeySha256, ...options },
  });
}

describe('enforcer-cisco config', () => {
  it('parses the README sample configs', async () => {
    const readme = await readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    const section = readme.split('## Sample config')[1]!.split('\n## ')[0]!;
    const blocks = [...section.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]!));
    expect(blocks).toHaveLength(2);
    const ios = CiscoIosConfig.parse(blocks[0]);
    expect(ios.options).toMatchObject({ dialect: 'ios', mode: 'object-group', acl: 'RAMPART-IN', max_entries: 5000 });
    const asa = CiscoAsaConfig.parse(blocks[1]);
    expect(asa).toMatchObject({ command: 'shun {ip}', options: { max_entries: 200 } });
  });

  it('names each missing or bad field', () => {
    const ios = CiscoIosConfig.safeParse({ active: true, options: { host_key_sha256: 'md5:x', mode: 'numbered', standard_acl: 150, acl: '1 bad' } });
    expect(ios.error!.issues.map((i) => i.path.join('.')).sort()).toEqual(['options.acl', 'options.host_key_sha256', 'options.mode', 'options.standard_acl']);
    const iosMissing = CiscoIosConfig.safeParse({ active: true });
    expect(iosMissing.error!.issues.map((i) => i.path.join('.')).sort()).toEqual(['options.host_key_sha256', 'router_host', 'router_password', 'router_user']);
    const asa = CiscoAsaConfig.safeParse({ active: true, address: 'fw:99999', command: 'shun {ip} {ip}' });
    expect(asa.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`).sort()).toEqual([
      'address: not a host or host:port: \'fw:99999\'',
      'command: the shun command template holds {ip} exactly once',
      "options.host_key_sha256: the firewall's host key must be pinned",
      'password: a password or options.private_key_path is required',
      'user: required when active',
    ]);
    expect(CiscoAsaConfig.safeParse({ active: false, command: 'clear configure all' }).error!.issues[0]!.path).toEqual(['command']);
    expect(CiscoAsaConfig.safeParse({ active: false, address: 'a,b' }).success).toBe(true);
    expect(CiscoAsaConfig.safeParse({ active: true, address: 'a,b', user: 'u', password: 'p', options: { host_key_sha256: `SHA256:${'A'.repeat(43)}` } }).error!.issues).toMatchObject([
      { path: ['address'], message: 'one host or host:port' },
    ]);
  });
});

describe('enforcer-cisco parsers on recorded output', () => {
  it('reads show object-group name', async () => {
    expect(parseObjectGroup(await fixture('ios-show-object-group.txt'))).toEqual(['10.0.0.0/8', '192.0.2.1/32', '198.51.100.0/24', '203.0.113.7/32']);
    expect(parseObjectGroup('')).toEqual([]);
  });

  it('reads show ip access-lists, extended and standard', async () => {
    const ext = parseAccessList(await fixture('ios-show-ip-access-lists-extended.txt'));
    expect(ext.map((e) => e.seq)).toEqual([5, 10, 20, 1000]);
    expect(ext[1]).toEqual({ seq: 10, text: 'deny ip object-group RAMPART-a any' });
    expect(groupDenies(ext, ['RAMPART-a', 'RAMPART-b'])).toEqual([{ seq: 10, group: 'RAMPART-a' }]);
    const std = parseAccessList(await fixture('ios-show-ip-access-lists-standard.txt'));
    expect(standardDenies(std)).toEqual([
      { seq: 20, cidr: '192.0.2.7/32' },
      { seq: 10, cidr: '198.51.100.0/24' },
      { seq: 30, cidr: '10.0.0.0/8' },
      { seq: 40, cidr: '172.16.4.0/22' },
    ]);
  });

  it('reads show shun, ASA and PIX formats', async () => {
    expect(parseShuns(await fixture('asa-show-shun.txt'))).toEqual(['10.1.1.27/32', '10.1.1.28/32', '209.165.200.225/32']);
    expect(parseShuns(await fixture('pix-show-shun.txt'))).toEqual(['192.168.1.10/32']);
  });

  it('tells a refusal from a syslog line', () => {
    const refused = ["% Invalid input detected at '^' marker.", '% Incomplete command.', '  % Ambiguous command:  "sh"'];
    const notRefused = ['%SYS-5-CONFIG_I: Configured from console by rampart on vty0 (192.0.2.9)', 'Building configuration...', ' host 192.0.2.1'];
    expect(refused.filter((l) => IOS_ERROR.test(l))).toEqual(refused);
    expect(notRefused.filter((l) => IOS_ERROR.test(l))).toEqual([]);
    expect(ASA_ERROR.test('ERROR: Shun for 192.0.2.1 already exists')).toBe(true);
  });

  it('writes members and wildcards', () => {
    expect(groupMember('203.0.113.7/32')).toBe('host 203.0.113.7');
    expect(groupMember('172.16.4.0/22')).toBe('172.16.4.0 255.255.252.0');
    expect(groupMember('0.0.0.0/0')).toBe('0.0.0.0 0.0.0.0');
    expect(standardSource('172.16.4.0/22')).toBe('172.16.4.0 0.0.3.255');
    expect(standardSource('192.0.2.7/32')).toBe('192.0.2.7 0.0.0.0');
  });
});

describe('enforcer-cisco IOS against an SSH IOS stand-in', () => {
  let router: IosStandIn;
  beforeAll(async () => {
    router = await startIosStandIn({ user: 'rampart', password: 'pw-1' });
  });
  afterAll(() => router.stop());

  it('swaps object groups on a full replace, edits the active group on a diff, writes memory', async () => {
    // The operator's ACL: a permit after the deny entry's sequence numbers.
    router.state.acls.set('RAMPART-IN', { standard: false, entries: new Map([[1000, 'permit ip any any']]) });
    const e = await ciscoIosEnforcer.create(iosConfig(router, { write_memory: true }), { log: silent });
    expect(await e.healthcheck()).toEqual({ ok: true });
    await e.sync([{ value: '203.0.113.7/32', score: 9 }, { value: '198.51.100.0/24', score: 5 }]);
    expect([...router.state.acls.get('RAMPART-IN')!.entries]).toEqual([
      [1000, 'permit ip any any'],
      [10, 'deny ip object-group RAMPART-a any'],
    ]);
    expect(router.blocked()).toEqual(['198.51.100.0 255.255.255.0', 'host 203.0.113.7']);
    expect(router.state.saves).toBe(1);

    const typedBefore = router.state.typed.length;
    await e.sync([{ value: '192.0.2.1/32', score: 1 }]);
    // The new deny entry goes in next to the old one before the old one and its group go.
    expect(router.state.typed.slice(typedBefore)).toEqual([
      'object-group network RAMPART-b',
      'host 192.0.2.1',
      'exit',
      'ip access-list extended RAMPART-IN',
      '11 deny ip object-group RAMPART-b any',
      'no 10',
      'exit',
      'no object-group network RAMPART-a',
    ]);
    expect(router.state.groups.has('RAMPART-a')).toBe(false);
    expect(router.blocked()).toEqual(['host 192.0.2.1']);

    const before = router.state.typed.length;
    await e.apply({ add: [{ value: '10.0.0.0/8', score: 4 }], remove: ['192.0.2.1/32'] });
    expect(router.state.typed.slice(before)).toEqual(['object-group network RAMPART-b', 'no host 192.0.2.1', '10.0.0.0 255.0.0.0', 'exit']);
    expect(engineStats(e)).toMatchObject({ batches: 1, fallbacks: 0 });
    expect(await e.list()).toEqual(['10.0.0.0/8']);
    expect(router.state.saves).toBe(3);

    // Someone empties the group: the reconcile finds it and swaps back to a full group a.
    router.state.groups.set('RAMPART-b', []);
    expect(await e.reconcile!()).toMatchObject({ drifted: true, enforced: 1 });
    expect(router.blocked()).toEqual(['10.0.0.0 255.0.0.0']);
    expect([...router.state.acls.get('RAMPART-IN')!.entries.values()]).toEqual(['permit ip any any', 'deny ip object-group RAMPART-a any']);

    // An empty list is no deny entry and no group; the next diff finds no group and replaces.
    await e.sync([]);
    expect([...router.state.acls.get('RAMPART-IN')!.entries.values()]).toEqual(['permit ip any any']);
    expect([...router.state.groups.keys()]).toEqual([]);
    await e.apply({ add: [{ value: '192.0.2.3/32', score: 1 }], remove: [] });
    expect(router.blocked()).toEqual(['host 192.0.2.3']);

    await e.withdraw();
    expect([...router.state.acls.get('RAMPART-IN')!.entries.values()]).toEqual(['permit ip any any']);
    expect([...router.state.groups.keys()]).toEqual([]);
    expect(await e.list()).toEqual([]);
    await e.close();
    await e.close();
  });

  it('fails the operation with the % line IOS prints, and the engine falls back to a replace', async () => {
    const log = recorder();
    const e = await ciscoIosEnforcer.create(iosConfig(router), { log: log.log });
    router.state.refuse = /^host 192\.0\.2\.66$/;
    try {
      await expect(e.sync([{ value: '192.0.2.66/32', score: 1 }])).rejects.toMatchObject({
        code: 'CLI_COMMAND_FAILED',
        command: 'host 192.0.2.66',
        detail: "% Invalid input detected at '^' marker.",
      });
      // Nothing after the refused line was typed: no deny entry points at a half-filled group.
      expect([...(router.state.acls.get('RAMPART-IN')?.entries.values() ?? [])]).toEqual(['permit ip any any']);
      router.state.refuse = undefined;
      await e.sync([{ value: '192.0.2.65/32', score: 1 }]);
      router.state.refuse = /^host 192\.0\.2\.67$/;
      // The batch fails on the refused line; the replace that follows fails the same way.
      await expect(e.apply({ add: [{ value: '192.0.2.67/32', score: 1 }], remove: [] })).rejects.toMatchObject({ code: 'CLI_COMMAND_FAILED' });
      expect(engineStats(e)).toMatchObject({ fallbacks: 1 });
      expect(log.lines.find((l) => l.msg === 'batch failed; replacing the target whole')).toBeDefined();
      expect(await e.list()).toEqual(['192.0.2.65/32']);
    } finally {
      router.state.refuse = undefined;
    }
    await e.withdraw();
    await e.close();
  });

  it('standard mode: a numbered ACL of deny entries and a final permit any, edited by sequence number', async () => {
    const e = await ciscoIosEnforcer.create(iosConfig(router, { mode: 'standard', standard_acl: 12 }), { log: silent });
    await e.sync([{ value: '192.0.2.7/32', score: 3 }, { value: '172.16.4.0/22', score: 2 }]);
    expect([...router.state.acls.get('12')!.entries].sort(([a], [b]) => a - b)).toEqual([
      [1, 'deny   172.16.4.0, wildcard bits 0.0.3.255'],
      [2, 'deny   192.0.2.7'],
      [2147483647, 'permit any'],
    ]);
    await e.apply({ add: [{ value: '192.0.2.8/32', score: 1 }], remove: ['172.16.4.0/22'] });
    expect(await e.list()).toEqual(['192.0.2.7/32', '192.0.2.8/32']);
    // Added before the removal, at the first free sequence number.
    expect(router.state.acls.get('12')!.entries.get(3)).toBe('deny   192.0.2.8');
    expect(router.state.acls.get('12')!.entries.has(1)).toBe(false);
    router.state.acls.get('12')!.entries.set(50, 'deny   192.0.2.7');
    expect(await e.reconcile!()).toMatchObject({ drifted: true });
    expect(await e.list()).toEqual(['192.0.2.7/32', '192.0.2.8/32']);
    await e.withdraw();
    expect(router.state.acls.has('12')).toBe(false);
    await e.close();
  });

  it('refuses a host key that does not match the pin, and an account that lands in user EXEC', async () => {
    const wrongPin = await ciscoIosEnforcer.create(iosConfig(router, { host_key_sha256: `SHA256:${'A'.repeat(43)}` }), { log: silent });
    expect(await wrongPin.healthcheck()).toEqual({ ok: false, detail: `host key ${router.hostKeySha256} does not match the pinned key` });
    await expect(wrongPin.sync([])).rejects.toMatchObject({ code: 'SSH_FAILED' });
    await wrongPin.close();
  });

  it('raises a user EXEC login with enable and the password; a wrong one or a key login without password is refused', async () => {
    const key = ed25519KeyPair();
    const userExec = await startIosStandIn({ user: 'rampart', password: 'pw-1', publicKey: key.public, userExec: { enableSecret: 'pw-1' } });
    const dir = await mkdtemp(join(tmpdir(), 'rampart-cisco-'));
    try {
      const e = await ciscoIosEnforcer.create(iosConfig(userExec), { log: silent });
      expect(await e.healthcheck()).toEqual({ ok: true });
      await e.sync([{ value: '192.0.2.4/32', score: 1 }]);
      expect(userExec.blocked()).toEqual(['host 192.0.2.4']);
      await e.close();
      const other = await startIosStandIn({ user: 'rampart', password: 'pw-1', userExec: { enableSecret: 'another' } });
      const refused = await ciscoIosEnforcer.create(iosConfig(other), { log: silent });
      expect(await refused.healthcheck()).toEqual({ ok: false, detail: 'ssh shell: enable failed: % Access denied' });
      await refused.close();
      await other.stop();
      await writeFile(join(dir, 'id'), key.private, { mode: 0o600 });
      const byKey = await ciscoIosEnforcer.create(iosConfig(userExec, { private_key_path: join(dir, 'id') }, { router_password: '' }), { log: silent });
      expect(await byKey.healthcheck()).toEqual({ ok: false, detail: "ssh shell: 'Router>' is user EXEC; the account must log in to privileged EXEC (#)" });
      await byKey.close();
    } finally {
      await userExec.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('enforcer-cisco ASA shuns against an SSH ASA stand-in', () => {
  let asa: AsaStandIn;
  beforeAll(async () => {
    asa = await startAsaStandIn({ user: 'rampart', password: 'pw-2' });
  });
  afterAll(() => asa.stop());

  it('shuns hosts, refuses networks with a counted warning, and re-applies after a reload', async () => {
    const log = recorder();
    const e = await ciscoAsaEnforcer.create(asaConfig(asa, {}, { command: 'shun {ip} interface outside' }), { log: log.log });
    expect(await e.sync([{ value: '203.0.113.7/32', score: 9 }, { value: '198.51.100.0/24', score: 8 }, { value: '192.0.2.1', score: 1 }])).toEqual({
      enforced: 2,
      cut: 0,
      invalid: 1,
    });
    expect(log.lines.filter((l) => l.level === 'warn').map((l) => [l.msg, l.data])).toEqual([
      ['inputs refused: not of this kind or not held by this target', { invalid: 1 }],
    ]);
    expect([...asa.state.shuns.keys()].sort()).toEqual(['192.0.2.1', '203.0.113.7']);
    const before = asa.received.length;
    await e.apply({ add: [{ value: '192.0.2.2/32', score: 5 }], remove: ['192.0.2.1/32'] });
    expect(asa.received.slice(before)).toEqual(['terminal pager 0', 'no shun 192.0.2.1 interface outside', 'shun 192.0.2.2 interface outside']);
    expect(await e.list()).toEqual(['192.0.2.2/32', '203.0.113.7/32']);

    asa.reload();
    await waitFor(async () => (await e.healthcheck()).ok, 'the enforcer to reconnect after the reload');
    expect(await e.list()).toEqual([]);
    expect(await e.reconcile!()).toMatchObject({ drifted: true, enforced: 2 });
    expect([...asa.state.shuns.keys()].sort()).toEqual(['192.0.2.2', '203.0.113.7']);
    expect(await e.reconcile!()).toMatchObject({ drifted: false });

    await e.withdraw();
    expect(asa.state.shuns.size).toBe(0);
    await e.close();
  });

  it('cuts to the capacity by score, and announces the cut', async () => {
    const log = recorder();
    const e = await ciscoAsaEnforcer.create(asaConfig(asa, { max_entries: 2 }), { log: log.log });
    const desired = [50, 700, 10, 300].map((score, i) => ({ value: `192.0.2.${i + 10}/32`, score }));
    expect(await e.sync(desired)).toEqual({ enforced: 2, cut: 2 });
    expect([...asa.state.shuns.keys()].sort()).toEqual(['192.0.2.11', '192.0.2.13']);
    expect(log.lines.filter((l) => l.msg === 'capacity reached; lowest scores cut').map((l) => l.data)).toEqual([{ cut: 2, capacity: 2 }]);
    await e.withdraw();
    await e.close();
  });

  it('fails with the ERROR line ASA prints; a batch against a changed table falls back to a replace', async () => {
    const e = await ciscoAsaEnforcer.create(asaConfig(asa), { log: silent });
    await e.sync([{ value: '192.0.2.20/32', score: 1 }]);
    // Someone shunned the host already: the batch's `shun` is refused, the replace reads and fixes.
    asa.state.shuns.set('192.0.2.21', 'outside');
    await e.apply({ add: [{ value: '192.0.2.21/32', score: 1 }], remove: [] });
    expect(engineStats(e)).toMatchObject({ fallbacks: 1, failures: 1 });
    expect(await e.list()).toEqual(['192.0.2.20/32', '192.0.2.21/32']);
    asa.state.refuse = /^shun 192\.0\.2\.22$/;
    try {
      await expect(e.sync([{ value: '192.0.2.22/32', score: 1 }])).rejects.toMatchObject({
        code: 'CLI_COMMAND_FAILED',
        detail: "ERROR: % Invalid input detected at '^' marker.",
      });
    } finally {
      asa.state.refuse = undefined;
    }
    await e.withdraw();
    await e.close();
  });

  it('raises an asa> login with enable; a refused password fails the call at the first re-prompt', async () => {
    const userExec = await startAsaStandIn({ user: 'rampart', password: 'pw-2', userExec: { enablePassword: 'pw-2' } });
    const wrong = await startAsaStandIn({ user: 'rampart', password: 'pw-2', userExec: { enablePassword: 'other' } });
    try {
      const e = await ciscoAsaEnforcer.create(asaConfig(userExec), { log: silent });
      await e.sync([{ value: '192.0.2.30/32', score: 1 }]);
      expect([...userExec.state.shuns.keys()]).toEqual(['192.0.2.30']);
      await e.close();
      const refused = await ciscoAsaEnforcer.create(asaConfig(wrong), { log: silent });
      expect(await refused.healthcheck()).toEqual({ ok: false, detail: 'ssh shell: enable failed: Invalid password' });
      await refused.close();
    } finally {
      await userExec.stop();
      await wrong.stop();
    }
  });

  it('refuses a firewall whose host key does not match the pin', async () => {
    const e = await ciscoAsaEnforcer.create(asaConfig(asa, { host_key_sha256: `SHA256:${'B'.repeat(43)}` }), { log: silent });
    expect(await e.healthcheck()).toEqual({ ok: false, detail: `host key ${asa.hostKeySha256} does not match the pinned key` });
    await e.close();
  });
});

// Each conformance test gets its own device; the stand-ins keep state across SSH sessions.
enforcerConformance('cisco-ios object groups (SSH IOS stand-in)', async ({ capacity }) => {
  const router = await startIosStandIn({ user: 'rampart', password: 'pw-1' });
  const open = () => ciscoIosEnforcer.create(iosConfig(router, capacity ? { max_entries: capacity } : {}), { log: silent });
  const enforcer = await open();
  return {
    enforcer,
    reopen: open,
    disturb: async () => {
      for (const members of router.state.groups.values()) members.length = 0;
    },
    teardown: () => router.stop(),
  };
});

enforcerConformance('cisco-ios standard ACL (SSH IOS stand-in)', async ({ capacity }) => {
  const router = await startIosStandIn({ user: 'rampart', password: 'pw-1' });
  const open = () => ciscoIosEnforcer.create(iosConfig(router, { mode: 'standard', ...(capacity ? { max_entries: capacity } : {}) }), { log: silent });
  const enforcer = await open();
  return {
    enforcer,
    reopen: open,
    disturb: async () => {
      router.state.acls.delete('10');
    },
    teardown: () => router.stop(),
  };
});

enforcerConformance(
  'cisco-asa shuns (SSH ASA stand-in)',
  async ({ capacity }) => {
    const asa = await startAsaStandIn({ user: 'rampart', password: 'pw-2' });
    const open = () => ciscoAsaEnforcer.create(asaConfig(asa, capacity ? { max_entries: capacity } : { max_entries: 10_000 }), { log: silent });
    const enforcer = await open();
    return {
      enforcer,
      reopen: open,
      // What a reload does to the shun table (the reload itself is tested above).
      disturb: async () => asa.state.shuns.clear(),
      teardown: () => asa.stop(),
    };
  },
  { hostsOnly: true },
);

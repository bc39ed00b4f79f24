import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { engineStats } from '@rampart/plugin-kit';
import { enforcerConformance, waitFor, silentLogger as silent } from '@rampart/plugin-kit/testing';
import { checkpointSecureXlEnforcer, failureOf, listSections, parseDenyList, SecureXlConfig } from '../src/index.ts';
import { startGatewayStandIn, type GatewayStandIn } from './gateway-stand-in.ts';

const fixture = (name: string) => readFile(fileURLToPath(new URL(`fixtures/${name}`, import.meta.url)), 'utf8');

function config(members: GatewayStandIn[], extra: Record<string, unknown> = {}, options: Record<string, unknown> = {}) {
  const entries = members.map((m) => `127.0.0.1:${m.port}`);
  return SecureXlConfig.parse({
    active: true,
    connections: entries.join(','),
    password: 'expert-pw',
    command: '',
    vsids: '',
    ...extra,
    options: { member_host_keys: Object.fromEntries(entries.map((e, i) => [e, members[i]!.hostKeySha256])), ...options },
  });
}

/** The lines of an exec after its prologue (the profile scripts and the rx helper). */
const body = (exec: string) => {
  const lines = exec.split('\n');
  return lines.slice(lines.findIndex((l) => l.startsWith('rx() {')) + 1);
};
const hosts = (...last: number[]) => last.map((n, i) => ({ value: `198.51.100.${n}/32`, score: 100 - i }));

describe('enforcer-checkpoint-securexl config', () => {
  it('parses the README sample config', async () => {
    const readme = await readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    const sample = /## Sample config[\s\S]*?```json\n([\s\S]*?)```/.exec(readme)?.[1];
    const parsed = SecureXlConfig.parse(JSON.parse(sample!));
    expect(parsed.connections).toBe('192.0.2.11,192.0.2.12');
    expect(parsed.vsids).toBe('1,2');
    expect(parsed.options).toMatchObject({ user: 'admin', full_replace: 'load_file', max_entries: 100_000 });
  });

  it('names every field that is wrong, and lets an inactive entry be', () => {
    const bad = SecureXlConfig.safeParse({
      active: true,
      connections: '192.0.2.11,bad host',
      command: 'fw samp; reboot',
      vsids: '1,x',
      options: { member_host_keys: { '192.0.2.99': `SHA256:${'A'.repeat(43)}` }, temp_dir: 'tmp' },
    });
    expect(bad.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toEqual([
      'options.temp_dir: an absolute path of letters, digits, . _ - and /',
      "connections: not a host or host:port: 'bad host'",
      'password: a password or options.private_key_path is required',
      "command: one of: 'fwaccel dos deny', 'fwaccel dos blacklist', 'g_fwaccel dos deny' (or empty for 'fwaccel dos deny')",
      "vsids: not a VSID (a number): 'x'",
      'options.member_host_keys.192.0.2.99: not an entry of connections',
    ]);
    const unpinned = SecureXlConfig.safeParse({ active: true, connections: '192.0.2.11, 192.0.2.12:2222', password: 'p', vsids: '1,1' });
    expect(unpinned.error!.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toEqual([
      'vsids: VSID 1 is listed twice',
      "options.member_host_keys: the host key of '192.0.2.11' must be pinned (here, or options.host_key_sha256 for every member)",
      "options.member_host_keys: the host key of '192.0.2.12:2222' must be pinned (here, or options.host_key_sha256 for every member)",
    ]);
    expect(SecureXlConfig.safeParse({ active: false, connections: '10.0.0.3', password: 'x', command: 'fw samp', vsids: '0,1,2' }).success).toBe(true);
  });
});

describe('enforcer-checkpoint-securexl output parsing (recorded transcripts)', () => {
  it('reads -s output as the reference prints it', async () => {
    expect(parseDenyList(await fixture('blacklist-s-empty.txt'))).toEqual([]);
    expect(parseDenyList(await fixture('blacklist-s-two.txt'))).toEqual(['2.2.2.2/32', '1.1.1.1/32']);
  });

  it('splits one exec over two virtual systems by its markers', async () => {
    expect(listSections(await fixture('vsx-read-exec.txt'))).toEqual(
      new Map([
        ['1', ['198.51.100.7/32', '203.0.113.9/32']],
        ['2', []],
      ]),
    );
  });

  it('finds the line that says what failed', () => {
    expect(failureOf('Adding 192.0.2.1\nrampart-done\n')).toBeUndefined();
    expect(failureOf('Adding 192.0.2.1\nError: the deny list is full\nrampart-failed 1: fwaccel dos deny -a 192.0.2.2\n')).toBe(
      'Error: the deny list is full (1: fwaccel dos deny -a 192.0.2.2)',
    );
    expect(failureOf('rampart-failed 127: vsenv 3\n')).toBe('exit 127: vsenv 3');
    expect(failureOf('Usage: fwaccel dos deny [-a <ip>]\nrampart-done\n')).toBe('Usage: fwaccel dos deny [-a <ip>]');
    expect(failureOf('CLINFR0329  Invalid command:\'source /etc/profile.d/CP.sh\'.\n')).toBe(
      "the script did not run to its end (is the user's shell bash, Expert mode?): CLINFR0329  Invalid command:'source /etc/profile.d/CP.sh'.",
    );
  });
});

describe('enforcer-checkpoint-securexl against two SSH cluster members with two virtual systems', () => {
  let a: GatewayStandIn;
  let b: GatewayStandIn;
  const auth = { user: 'admin', password: 'expert-pw' };
  beforeAll(async () => {
    [a, b] = await Promise.all([startGatewayStandIn(auth, ['0', '1', '2']), startGatewayStandIn(auth, ['0', '1', '2'])]);
  });
  afterAll(async () => {
    await Promise.all([a.stop(), b.stop()]);
  });
  const everywhere = () => [a.enforced('1'), a.enforced('2'), b.enforced('1'), b.enforced('2')];

  it('gives every member and every VS the same list: a file loaded after a flush, diffs as -d/-a', async () => {
    const e = await checkpointSecureXlEnforcer.create(config([a, b], { vsids: '1, 2' }), { log: silent });
    expect(await e.healthcheck()).toEqual({ ok: true });
    const start = a.state.execs.length;
    expect(await e.sync(hosts(7, 8, 9))).toEqual({ enforced: 3, cut: 0 });
    const want = ['198.51.100.7/32', '198.51.100.8/32', '198.51.100.9/32'];
    expect(everywhere()).toEqual([want, want, want, want]);
    // The list goes to a file first; one exec then flushes and loads it in each VS and removes it.
    const sent = a.state.execs.slice(start);
    expect(sent).toHaveLength(2);
    expect(body(sent[0]!)).toEqual([
      "umask 077; cat > /var/tmp/rampart-securexl-deny.txt <<'RAMPART_EOF'",
      '198.51.100.7',
      '198.51.100.8',
      '198.51.100.9',
      'RAMPART_EOF',
      'echo rampart-done',
    ]);
    expect(body(sent[1]!)).toEqual([
      'vsenv 1 || { echo "rampart-failed $?: vsenv 1"; exit 1; }',
      'rx fwaccel dos deny -F',
      'rx fwaccel dos deny -l /var/tmp/rampart-securexl-deny.txt',
      'vsenv 2 || { echo "rampart-failed $?: vsenv 2"; exit 1; }',
      'rx fwaccel dos deny -F',
      'rx fwaccel dos deny -l /var/tmp/rampart-securexl-deny.txt',
      'rm -f /var/tmp/rampart-securexl-deny.txt',
      'echo rampart-done',
    ]);
    expect(a.state.files.size).toBe(0);

    const before = b.state.execs.length;
    await e.apply({ add: hosts(10), remove: ['198.51.100.8/32'] });
    expect(b.state.execs.slice(before).map(body)).toEqual([
      [
        'vsenv 1 || { echo "rampart-failed $?: vsenv 1"; exit 1; }',
        'rx fwaccel dos deny -d 198.51.100.8',
        'rx fwaccel dos deny -a 198.51.100.10',
        'vsenv 2 || { echo "rampart-failed $?: vsenv 2"; exit 1; }',
        'rx fwaccel dos deny -d 198.51.100.8',
        'rx fwaccel dos deny -a 198.51.100.10',
        'echo rampart-done',
      ],
    ]);
    const after = ['198.51.100.10/32', '198.51.100.7/32', '198.51.100.9/32'];
    expect(everywhere()).toEqual([after, after, after, after]);
    expect(await e.list()).toEqual(['198.51.100.7/32', '198.51.100.9/32', '198.51.100.10/32']);
    expect(await e.reconcile!()).toMatchObject({ drifted: false, enforced: 3 });
    // VS 0 (the VSX host itself) was never touched.
    expect(a.enforced('0')).toEqual([]);
    await e.withdraw();
    expect(everywhere()).toEqual([[], [], [], []]);
    await e.close();
  });

  it('repairs one member that rebooted (its lists lost) at the next reconcile, diffs made meanwhile included', async () => {
    const e = await checkpointSecureXlEnforcer.create(config([a, b], { vsids: '1,2' }), { log: silent });
    await e.sync(hosts(1, 2, 3));
    b.reboot();
    expect(b.enforced('1')).toEqual([]);
    await waitFor(async () => (await e.healthcheck()).ok, 'the enforcer to reconnect to the rebooted member');
    // Still listed: member a holds them. What is enforced where is the reconcile's to check.
    expect(await e.list()).toEqual(['198.51.100.1/32', '198.51.100.2/32', '198.51.100.3/32']);
    await e.apply({ add: hosts(4), remove: [] });
    expect(b.enforced('2')).toEqual(['198.51.100.4/32']);
    expect(await e.reconcile!()).toMatchObject({ drifted: true, enforced: 4 });
    const want = ['198.51.100.1/32', '198.51.100.2/32', '198.51.100.3/32', '198.51.100.4/32'];
    expect(everywhere()).toEqual([want, want, want, want]);
    expect(await e.reconcile!()).toMatchObject({ drifted: false, enforced: 4 });

    // One VS of one member losing one entry is drift too.
    b.state.lists.get('2')!.splice(0, 1);
    expect(await e.reconcile!()).toMatchObject({ drifted: true });
    expect(everywhere()).toEqual([want, want, want, want]);
    expect(engineStats(e)).toMatchObject({ drifts: 2, failures: 0 });
    await e.withdraw();
    await e.close();
  });

  it('refuses networks, counted as invalid, and enforces the hosts', async () => {
    const e = await checkpointSecureXlEnforcer.create(config([a], { vsids: '1' }), { log: silent });
    const result = await e.sync([...hosts(5), { value: '192.0.2.0/24', score: 999 }, { value: '10.0.0.0/8', score: 999 }]);
    expect(result).toEqual({ enforced: 1, cut: 0, invalid: 2 });
    expect(a.enforced('1')).toEqual(['198.51.100.5/32']);
    await e.withdraw();
    await e.close();
  });

  it('counts batch_size over the VSs of an exec', async () => {
    const e = await checkpointSecureXlEnforcer.create(config([a], { vsids: '1,2' }, { batch_size: 3 }), { log: silent });
    await e.sync(hosts(1));
    const start = a.state.execs.length;
    await e.apply({ add: hosts(2, 3), remove: [] });
    // Three lines per exec over two VSs: one entry per exec, sent to both.
    expect(a.state.execs.slice(start).map(body)).toEqual(
      ['198.51.100.2', '198.51.100.3'].map((ip) => [
        'vsenv 1 || { echo "rampart-failed $?: vsenv 1"; exit 1; }',
        `rx fwaccel dos deny -a ${ip}`,
        'vsenv 2 || { echo "rampart-failed $?: vsenv 2"; exit 1; }',
        `rx fwaccel dos deny -a ${ip}`,
        'echo rampart-done',
      ]),
    );
    expect([a.enforced('1'), a.enforced('2')]).toEqual([
      ['198.51.100.1/32', '198.51.100.2/32', '198.51.100.3/32'],
      ['198.51.100.1/32', '198.51.100.2/32', '198.51.100.3/32'],
    ]);
    await e.withdraw();
    await e.close();
  });

  it('fails the call with the line fwaccel printed, and with vsenv failures', async () => {
    a.state.capacity = 2;
    const full = await checkpointSecureXlEnforcer.create(config([a, b], { vsids: '1' }), { log: silent });
    try {
      await expect(full.sync(hosts(1, 2, 3))).rejects.toMatchObject({
        code: 'SECUREXL_COMMAND_FAILED',
        member: `127.0.0.1:${a.port}`,
        detail: 'Error: the deny list is full (1: fwaccel dos deny -l /var/tmp/rampart-securexl-deny.txt)',
      });
      // The other member was still written: every member is tried.
      expect(b.enforced('1')).toEqual(['198.51.100.1/32', '198.51.100.2/32', '198.51.100.3/32']);
    } finally {
      a.state.capacity = Infinity;
    }
    expect(a.state.files.size).toBe(1); // left by the failed load
    await full.withdraw();
    expect(a.state.files.size).toBe(0);
    await full.close();

    const missing = await checkpointSecureXlEnforcer.create(config([a], { vsids: '1,7' }), { log: silent });
    expect(await missing.healthcheck()).toEqual({ ok: false, detail: `gateway 127.0.0.1:${a.port}: Virtual System 7 does not exist (1: vsenv 7)` });
    await missing.close();
  });
});

describe('enforcer-checkpoint-securexl on a plain gateway', () => {
  let gw: GatewayStandIn;
  beforeAll(async () => {
    gw = await startGatewayStandIn({ user: 'admin', password: 'expert-pw' });
  });
  afterAll(() => gw.stop());

  it('flushes and adds in batches when full_replace is flush_and_add', async () => {
    const e = await checkpointSecureXlEnforcer.create(config([gw], {}, { full_replace: 'flush_and_add', batch_size: 2 }), { log: silent });
    const start = gw.state.execs.length;
    await e.sync(hosts(1, 2, 3));
    expect(gw.state.execs.slice(start).map(body)).toEqual([
      ['rx fwaccel dos deny -F', 'rx fwaccel dos deny -a 198.51.100.1', 'rx fwaccel dos deny -a 198.51.100.2', 'echo rampart-done'],
      ['rx fwaccel dos deny -a 198.51.100.3', 'echo rampart-done'],
    ]);
    expect(gw.enforced()).toEqual(['198.51.100.1/32', '198.51.100.2/32', '198.51.100.3/32']);
    await e.sync([]);
    expect(gw.enforced()).toEqual([]);
    await e.close();
  });

  it('speaks the older blacklist form, and names the usage line when the gateway lacks deny', async () => {
    gw.state.version = 'blacklist-only';
    try {
      const old = await checkpointSecureXlEnforcer.create(config([gw], { command: 'fwaccel  dos blacklist' }, { full_replace: 'flush_and_add' }), {
        log: silent,
      });
      await old.sync(hosts(1, 2));
      expect(await old.list()).toEqual(['198.51.100.1/32', '198.51.100.2/32']);
      await old.withdraw();
      await old.close();

      const deny = await checkpointSecureXlEnforcer.create(config([gw]), { log: silent });
      const health = await deny.healthcheck();
      expect(health).toEqual({
        ok: false,
        detail: `gateway 127.0.0.1:${gw.port}: Usage: fwaccel dos blacklist [-a <ip> | -d <ip> | -F | -s] (1: fwaccel dos deny -s)`,
      });
      await deny.close();
    } finally {
      gw.state.version = 'deny';
    }
  });

  it('refuses a member whose host key does not match its pin', async () => {
    const entry = `127.0.0.1:${gw.port}`;
    const e = await checkpointSecureXlEnforcer.create(config([gw], {}, { member_host_keys: { [entry]: `SHA256:${'B'.repeat(43)}` } }), { log: silent });
    expect(await e.healthcheck()).toEqual({ ok: false, detail: `host key ${gw.hostKeySha256} does not match the pinned key` });
    await e.close();
  });
});

// Two members, two virtual systems each: what list() reads back is what all four hold.
enforcerConformance(
  'checkpoint-securexl (two SSH gateway stand-ins, VSX 1 and 2)',
  async ({ capacity }) => {
    const auth = { user: 'admin', password: 'expert-pw' };
    const members = await Promise.all([startGatewayStandIn(auth, ['1', '2']), startGatewayStandIn(auth, ['1', '2'])]);
    const open = () =>
      checkpointSecureXlEnforcer.create(config(members, { vsids: '1,2' }, capacity ? { max_entries: capacity } : {}), { log: silent });
    const enforcer = await open();
    return {
      enforcer,
      reopen: open,
      disturb: async () => {
        for (const m of members) m.state.lists.clear();
      },
      teardown: async () => {
        await enforcer.close();
        await Promise.all(members.map((m) => m.stop()));
      },
    };
  },
  { hostsOnly: true },
);

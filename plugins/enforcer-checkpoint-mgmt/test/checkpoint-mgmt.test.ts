import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { engineStats } from '@rampart/plugin-kit';
import { conformanceAddresses, enforcerConformance, waitFor, silentLogger as silent } from '@rampart/plugin-kit/testing';
import { CheckPointMgmtConfig, checkpointMgmtEnforcer } from '../src/index.ts';
import { WebApiTransport } from '../src/web-api.ts';
import { startMgmtApiStandIn, type MgmtApiStandIn } from './mgmt-api-stand-in.ts';

const GROUP = 'rampart-blocked';

function config(api: MgmtApiStandIn, extra: Record<string, unknown> = {}) {
  return CheckPointMgmtConfig.parse({
    active: true,
    username: 'api-admin',
    password: 'pw-1',
    address: '127.0.0.1',
    group: GROUP,
    policy: 'Standard',
    gateways: 'gw1, gw2',
    ...extra,
    options: { port: api.port, tls_fingerprint_sha256: api.fingerprint256, task_poll_seconds: 0.001, ...(extra.options as object) },
  });
}

const open = (api: MgmtApiStandIn, extra: Record<string, unknown> = {}) => checkpointMgmtEnforcer.create(config(api, extra), { log: silent });
const commandsSince = (api: MgmtApiStandIn, start: number) => api.state.calls.slice(start).map((c) => c.command);

describe('enforcer-checkpoint-mgmt config', () => {
  it('parses the README sample config and names what is missing or wrong', async () => {
    const readme = await readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    const sample = /## Sample config[\s\S]*?```json\n([\s\S]*?)```/.exec(readme)?.[1];
    const parsed = CheckPointMgmtConfig.parse(JSON.parse(sample!));
    expect(parsed.address).toBe('192.0.2.10');
    expect(parsed.options.max_entries).toBe(5000);
    const malformed = CheckPointMgmtConfig.safeParse({ active: true, options: { tls_fingerprint_sha256: 'AB:CD', object_prefix: 'x' } });
    expect(malformed.error!.issues.map((i) => i.path.join('.')).sort()).toEqual(['options.object_prefix', 'options.tls_fingerprint_sha256']);
    const bad = CheckPointMgmtConfig.safeParse({ active: true, address: 'https://mgmt', group: '', gateways: 'gw1', options: { ca_file: '/etc/ca.pem' } });
    expect(bad.error!.issues.map((i) => i.path.join('.')).sort()).toEqual(['address', 'group', 'password', 'policy', 'username']);
    const unpinned = CheckPointMgmtConfig.safeParse({ active: true, address: 'mgmt', username: 'u', password: 'p', group: 'g' });
    expect(unpinned.error!.issues).toEqual([expect.objectContaining({ path: ['options', 'tls_fingerprint_sha256'], message: 'pin the server certificate, or set options.ca_file' })]);
    const hex = CheckPointMgmtConfig.parse({ active: false, options: { tls_fingerprint_sha256: 'ab'.repeat(32) } });
    expect(hex.options.tls_fingerprint_sha256).toBe(Array(32).fill('AB').join(':'));
  });
});

describe('enforcer-checkpoint-mgmt against a Management API stand-in', () => {
  let api: MgmtApiStandIn;
  beforeAll(async () => {
    api = await startMgmtApiStandIn({ user: 'api-admin', password: 'pw-1' });
  });
  afterAll(async () => {
    await api.stop();
  });

  it('creates objects in the group, publishes and installs; then sends only diffs', async () => {
    const e = await open(api);
    expect(await e.healthcheck()).toEqual({ ok: true });
    await e.sync([{ value: '203.0.113.7/32', score: 9 }, { value: '10.0.0.0/8', score: 5 }]);
    expect(api.groupMembers(GROUP)).toEqual(['rampart_10.0.0.0_8', 'rampart_203.0.113.7']);
    expect(api.state.objects.get('rampart_10.0.0.0_8')).toMatchObject({ type: 'network', subnet4: '10.0.0.0', 'mask-length4': 8 });
    expect(api.state.installs).toEqual([{ policy: 'Standard', targets: ['gw1', 'gw2'], members: ['rampart_10.0.0.0_8', 'rampart_203.0.113.7'] }]);
    expect(api.state.sessions.size).toBe(0);

    const start = api.state.calls.length;
    const diff = { add: [{ value: '192.0.2.2/32', score: 3 }], remove: ['203.0.113.7/32'] };
    await e.apply(diff);
    expect(commandsSince(api, start)).toEqual([
      'login',
      'add-host',
      'set-group',
      'set-group',
      'delete-host',
      'publish',
      'show-task',
      'install-policy',
      'show-task',
      'show-task',
      'logout',
    ]);
    const sent = api.state.calls.slice(start);
    expect(sent[1]!.body).toEqual({ name: 'rampart_192.0.2.2', 'ip-address': '192.0.2.2', 'ignore-warnings': true });
    expect(sent[2]!.body).toEqual({ name: GROUP, members: { remove: ['rampart_203.0.113.7'] } });
    expect(sent[3]!.body).toEqual({ name: GROUP, members: { add: ['rampart_192.0.2.2'] } });
    expect(api.state.objects.has('rampart_203.0.113.7')).toBe(false);
    expect(api.enforced()).toEqual(['10.0.0.0/8', '192.0.2.2/32']);

    const again = api.state.calls.length;
    await e.apply(diff);
    expect(api.state.calls.length).toBe(again);
    expect(await e.list()).toEqual(['10.0.0.0/8', '192.0.2.2/32']);
    expect(engineStats(e)).toMatchObject({ replaces: 1, batches: 1, fallbacks: 0, failures: 0 });
    await e.withdraw();
    expect(api.groupMembers(GROUP)).toEqual([]);
    expect([...api.state.objects.keys()]).toEqual([GROUP]);
    await e.close();
    await e.close();
  });

  it('leaves the operator\'s members alone and repairs a changed group by its difference', async () => {
    const op = api.state.objects;
    op.set('partner-net', { uid: 'p1', name: 'partner-net', type: 'network', subnet4: '198.51.100.0', 'mask-length4': 24 });
    op.get(GROUP)!.members = ['partner-net'];
    const e = await open(api);
    await e.sync(conformanceAddresses(3));
    expect(api.groupMembers(GROUP)).toEqual(['partner-net', 'rampart_198.18.0.0', 'rampart_198.18.0.1', 'rampart_198.18.0.2']);
    expect(await e.list()).toEqual(['198.18.0.0/32', '198.18.0.1/32', '198.18.0.2/32']);
    // Someone takes one member out of the group by hand: reconcile puts back only that one.
    op.get(GROUP)!.members = op.get(GROUP)!.members!.filter((m) => m !== 'rampart_198.18.0.1');
    const start = api.state.calls.length;
    expect(await e.reconcile!()).toMatchObject({ drifted: true, enforced: 3 });
    const writes = api.state.calls.slice(start).filter((c) => c.command === 'set-group' || c.command.startsWith('add-') || c.command.startsWith('delete-'));
    expect(writes.map((c) => [c.command, c.body.members ?? c.body.name])).toEqual([['set-group', { add: ['rampart_198.18.0.1'] }]]);
    await e.withdraw();
    expect(api.groupMembers(GROUP)).toEqual(['partner-net']);
    await e.close();
    op.delete('partner-net');
    op.get(GROUP)!.members = [];
  });

  it('refuses a wrong password with the API\'s error', async () => {
    const e = await open(api, { password: 'nope' });
    const health = await e.healthcheck();
    expect(health).toEqual({ ok: false, detail: 'login failed (HTTP 400): err_login_failed: Authentication to server failed.' });
    await expect(e.sync([{ value: '192.0.2.9/32', score: 1 }])).rejects.toMatchObject({ code: 'CHECKPOINT_API_FAILED', status: 400, apiCode: 'err_login_failed' });
    await e.close();
  });

  it('fails the call on a failed install, discards and logs out, and installs again next time', async () => {
    const e = await open(api);
    api.state.installOutcome = 'failed';
    api.state.installMessage = 'Policy verification failed on gw2';
    const start = api.state.calls.length;
    try {
      await expect(e.sync([{ value: '192.0.2.30/32', score: 1 }])).rejects.toMatchObject({
        code: 'CHECKPOINT_TASK_FAILED',
        status: 'failed',
        detail: 'Policy verification failed on gw2',
      });
    } finally {
      api.state.installOutcome = 'succeeded';
    }
    expect(commandsSince(api, start).slice(-3)).toEqual(['show-task', 'discard', 'logout']);
    expect(api.state.sessions.size).toBe(0);
    // Published, not installed: the next call installs although the group already holds it.
    const installs = api.state.installs.length;
    await e.sync([{ value: '192.0.2.30/32', score: 1 }]);
    expect(api.state.installs.length).toBe(installs + 1);
    expect(api.state.installs.at(-1)!.members).toEqual(['rampart_192.0.2.30']);
    await e.withdraw();
    await e.close();
  });

  it('fails on a group locked by another session, leaving no session of its own', async () => {
    const other = new WebApiTransport({ host: '127.0.0.1', port: api.port, trust: { fingerprint256: api.fingerprint256 }, timeoutMs: 5000 });
    const { sid } = (await other.post('login', { user: 'api-admin', password: 'pw-1' }, undefined)) as { sid: string };
    await other.post('add-host', { name: 'jump-host', 'ip-address': '192.0.2.99' }, sid);
    await other.post('set-group', { name: GROUP, members: { add: ['jump-host'] } }, sid);
    const e = await open(api);
    await expect(e.sync([{ value: '192.0.2.40/32', score: 1 }])).rejects.toMatchObject({
      code: 'CHECKPOINT_API_FAILED',
      apiCode: 'err_object_locked',
      detail: `Object ${GROUP} is locked by api-admin in another session`,
    });
    expect([...api.state.sessions.keys()]).toEqual([sid]);
    expect(api.state.calls.at(-2)!.command).toBe('discard');
    await other.post('discard', {}, sid);
    await other.post('logout', {}, sid);
    other.close();
    await e.sync([{ value: '192.0.2.40/32', score: 1 }]);
    expect(api.enforced()).toEqual(['192.0.2.40/32']);
    await e.withdraw();
    await e.close();
  });

  it('cancels a long install when the signal aborts: polling stops, the session is discarded and ended', async () => {
    const e = await open(api, { options: { keepalive_seconds: 0.003 } });
    api.state.installPolls = Infinity;
    const controller = new AbortController();
    const start = api.state.calls.length;
    const polls = () => api.state.calls.slice(start).filter((c) => c.command === 'show-task').length;
    try {
      const call = e.sync([{ value: '192.0.2.50/32', score: 1 }], controller.signal);
      await waitFor(async () => polls() >= 8, 'the install to be polled');
      controller.abort(new Error('test: agent stopping'));
      await expect(call).rejects.toThrow('test: agent stopping');
      await waitFor(async () => api.state.sessions.size === 0, 'the session to end');
    } finally {
      api.state.installPolls = 2;
    }
    const sent = commandsSince(api, start);
    expect(sent.filter((c) => c === 'keepalive').length).toBeGreaterThanOrEqual(2);
    expect(sent.slice(-2)).toEqual(['discard', 'logout']);
    // Published before the install began; the next call installs it.
    await e.sync([{ value: '192.0.2.50/32', score: 1 }]);
    expect(api.state.installs.at(-1)!.members).toEqual(['rampart_192.0.2.50']);
    await e.withdraw();
    await e.close();
  });

  it('fails the call when the session expires mid-task, and starts a new session next time', async () => {
    const e = await open(api);
    api.state.installPolls = 5;
    let polls = 0;
    api.state.onCall = (call) => {
      if (call.command === 'show-task' && ++polls === 3) api.expireSessions();
    };
    try {
      await expect(e.sync([{ value: '192.0.2.70/32', score: 1 }])).rejects.toMatchObject({ code: 'CHECKPOINT_API_FAILED', apiCode: 'generic_err_wrong_session_id' });
    } finally {
      api.state.onCall = undefined;
      api.state.installPolls = 2;
    }
    await e.sync([{ value: '192.0.2.70/32', score: 1 }]);
    expect(api.state.installs.at(-1)!.members).toEqual(['rampart_192.0.2.70']);
    expect(api.state.sessions.size).toBe(0);
    await e.withdraw();
    await e.close();
  });

  it('reads prefixed objects page by page and removes leftovers', { timeout: 30_000 }, async () => {
    // Objects of ours left outside the group (a run interrupted by hand, say).
    for (const { value } of conformanceAddresses(1200)) {
      const ip = value.replace('/32', '');
      api.state.objects.set(`rampart_${ip}`, { uid: ip, name: `rampart_${ip}`, type: 'host', 'ipv4-address': ip });
    }
    const e = await open(api);
    const start = api.state.calls.length;
    await e.sync(conformanceAddresses(2));
    const pages = api.state.calls.slice(start).filter((c) => c.command === 'show-hosts').map((c) => [c.body.limit, c.body.offset]);
    expect(pages).toEqual([
      [500, 0],
      [500, 500],
      [500, 1000],
    ]);
    expect(api.state.calls.slice(start).filter((c) => c.command === 'add-host')).toEqual([]);
    expect(api.count('delete-host')).toBeGreaterThanOrEqual(1198);
    expect([...api.state.objects.keys()].filter((n) => n.startsWith('rampart_')).sort()).toEqual(['rampart_198.18.0.0', 'rampart_198.18.0.1']);
    await e.withdraw();
    await e.close();
  });

  it('refuses a server whose certificate does not match the pin before sending anything; accepts the CA file', async () => {
    const logins = api.count('login');
    const e = await open(api, { options: { tls_fingerprint_sha256: 'AB'.repeat(32) } });
    const health = await e.healthcheck();
    expect(health).toEqual({ ok: false, detail: `server certificate ${api.fingerprint256} does not match the pinned fingerprint` });
    await expect(e.sync([])).rejects.toMatchObject({ code: 'CHECKPOINT_TLS_FAILED' });
    expect(api.count('login')).toBe(logins);
    await e.close();
    const viaCa = await open(api, { options: { tls_fingerprint_sha256: '', ca_file: api.certPath } });
    expect(await viaCa.healthcheck()).toEqual({ ok: true });
    await viaCa.close();
    const wrongName = await open(api, { address: 'localhost.invalid', options: { tls_fingerprint_sha256: '', ca_file: api.certPath } });
    expect((await wrongName.healthcheck()).ok).toBe(false);
    await wrongName.close();
  });
});

describe('enforcer-checkpoint-mgmt on a Multi-Domain Server', () => {
  it('logs in to the configured domain', async () => {
    const mds = await startMgmtApiStandIn({ user: 'api-admin', password: 'pw-1', domains: ['SMC-Edge'] });
    try {
      const wrong = await open(mds, { domain: 'Other' });
      expect(await wrong.healthcheck()).toEqual({ ok: false, detail: 'login failed (HTTP 400): err_login_failed: Login to domain [Other] failed' });
      await wrong.close();
      const e = await open(mds, { domain: 'SMC-Edge' });
      await e.sync([{ value: '192.0.2.60/32', score: 1 }]);
      expect(mds.state.calls[0]!.body).toEqual({ user: 'api-admin', password: 'pw-1', 'session-name': 'rampart-agent', domain: 'Other', 'read-only': true });
      expect(mds.state.calls.find((c) => c.command === 'login' && c.body.domain === 'SMC-Edge')).toBeDefined();
      expect(mds.enforced()).toEqual(['192.0.2.60/32']);
      await e.close();
    } finally {
      await mds.stop();
    }
  });
});

// Each test gets its own management server; the stand-in keeps its database across sessions.
enforcerConformance('checkpoint-mgmt (Management API stand-in)', async ({ capacity }) => {
  const api = await startMgmtApiStandIn({ user: 'api-admin', password: 'pw-1' });
  const make = () => open(api, { options: capacity ? { max_entries: capacity } : {} });
  const enforcer = await make();
  return {
    enforcer,
    reopen: make,
    disturb: async () => {
      api.state.objects.get(GROUP)!.members = [];
    },
    teardown: async () => {
      await enforcer.close();
      await api.stop();
    },
  };
}, { timeoutMs: 30_000 });

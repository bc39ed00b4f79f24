import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Enforcer } from '@rampart/plugin-kit';
import { enforcerConformance, startHaproxy, statusFrom, systemGate, type HaproxyInstance, silentLogger as silent } from '@rampart/plugin-kit/testing';
import { HaproxyConfig, haproxyEnforcer, parseShowAcl, runtimeCommands } from './index.ts';

const skip = systemGate('HAProxy runtime API', { commands: ['haproxy'] });

type Haproxy = HaproxyInstance;

function runtimeEnforcer(h: Haproxy, capacity?: number): Promise<Enforcer> {
  return haproxyEnforcer.create(
    HaproxyConfig.parse({ active: true, lb_logs: h.acl, options: { stats_socket: h.socket, ...(capacity ? { max_entries: capacity } : {}) } }),
    { log: silent },
  );
}

describe('enforcer-haproxy config', () => {
  it('parses the README sample config and names bad fields', async () => {
    const readme = await readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    const sample = /## Sample config[\s\S]*?```json\n([\s\S]*?)```/.exec(readme)?.[1];
    const parsed = HaproxyConfig.parse(JSON.parse(sample!));
    expect(parsed.lb_logs).toBe('/etc/haproxy/rampart-blocklist.acl');
    expect(parsed.options.stats_socket).toBe('/run/haproxy/admin.sock');
    const bad = HaproxyConfig.safeParse({ active: true, lb_logs: 'relative.acl', options: { stats_socket: 'nope' } });
    expect(bad.error!.issues.map((i) => i.path.join('.')).sort()).toEqual(['lb_logs', 'options.stats_socket']);
    expect(HaproxyConfig.parse({ active: true, lb_logs: '/x', options: { stats_socket: '127.0.0.1:9999' } }).options.stats_socket).toBe('127.0.0.1:9999');
  });

  it('parses show acl output', () => {
    expect(parseShowAcl('0x55d0c4f1a2b0 203.0.113.7\n0x55d0c4f1a300 10.0.0.0/8\n')).toEqual(['10.0.0.0/8', '203.0.113.7/32']);
  });

  it('without a socket writes the file and runs lb_reload_command', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rampart-haproxy-file-'));
    try {
      const acl = join(dir, 'list.acl');
      const e = await haproxyEnforcer.create(
        HaproxyConfig.parse({ active: true, lb_logs: acl, lb_reload_command: `cp ${acl} ${dir}/reloaded` }),
        { log: silent },
      );
      await e.sync([{ value: '203.0.113.7/32', score: 1 }, { value: '10.1.0.0/16', score: 2 }]);
      const expected = '# rampart block list for "acl ... src -f"; replaced atomically\n10.1.0.0/16\n203.0.113.7\n';
      expect(await readFile(join(dir, 'reloaded'), 'utf8')).toBe(expected);
      expect(await e.list()).toEqual(['10.1.0.0/16', '203.0.113.7/32']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(skip)('enforcer-haproxy against a real HAProxy', () => {
  let h: Haproxy;
  let e: Enforcer;
  beforeAll(async () => {
    h = await startHaproxy();
    e = await runtimeEnforcer(h);
  });
  afterAll(async () => {
    await e?.close();
    await h?.stop();
  });

  it('denies a listed client with 403 through the runtime API, others get 200', async () => {
    expect(await e.healthcheck()).toEqual({ ok: true });
    expect(await statusFrom(h.port, '127.0.0.2')).toBe(200);
    await e.sync([{ value: '127.0.0.2/32', score: 9 }, { value: '198.51.100.0/24', score: 3 }]);
    // No reload: the runtime API changed HAProxy's memory, and the file matches for restarts.
    expect(await statusFrom(h.port, '127.0.0.2')).toBe(403);
    expect(await statusFrom(h.port, '127.0.0.1')).toBe(200);
    expect(parseShowAcl((await runtimeCommands(h.socket, [`show acl ${h.acl}`]))[0]!)).toEqual(['127.0.0.2/32', '198.51.100.0/24']);
    expect(await readFile(h.acl, 'utf8')).toContain('\n127.0.0.2\n198.51.100.0/24\n');

    await e.apply({ add: [{ value: '127.0.0.0/30', score: 5 }], remove: ['127.0.0.2/32'] });
    await e.apply({ add: [{ value: '127.0.0.0/30', score: 5 }], remove: ['127.0.0.2/32'] });
    expect(await statusFrom(h.port, '127.0.0.1')).toBe(403);
    expect(await statusFrom(h.port, '127.0.0.9')).toBe(200);
    // HAProxy keeps duplicate patterns; the second apply must not have added one.
    const shown = (await runtimeCommands(h.socket, [`show acl ${h.acl}`]))[0]!.split('\n').filter(Boolean);
    expect(shown).toHaveLength(2);

    await runtimeCommands(h.socket, [`clear acl ${h.acl}`]);
    expect(await statusFrom(h.port, '127.0.0.1')).toBe(200);
    expect(await e.reconcile!()).toMatchObject({ drifted: true, enforced: 2 });
    expect(await statusFrom(h.port, '127.0.0.1')).toBe(403);

    await e.withdraw();
    expect(await statusFrom(h.port, '127.0.0.1')).toBe(200);
    expect(await e.list()).toEqual([]);
  });

  it('swaps in a list larger than one connection batch, and diffs across batches', async () => {
    const many = Array.from({ length: 12_000 }, (_, i) => ({ value: `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}/32`, score: i }));
    expect(await e.sync(many)).toEqual({ enforced: 12_000, cut: 0 });
    const shown = (await runtimeCommands(h.socket, [`show acl ${h.acl}`]))[0]!;
    expect(parseShowAcl(shown)).toHaveLength(12_000);
    await e.apply({ add: [], remove: many.slice(0, 6_000).map((m) => m.value) });
    expect(await e.list()).toEqual(many.slice(6_000).map((m) => m.value));
    await e.withdraw();
  });

  it('reports an unknown ACL in healthcheck', async () => {
    const other = await haproxyEnforcer.create(
      HaproxyConfig.parse({ active: true, lb_logs: join(h.dir, 'not-loaded.acl'), options: { stats_socket: h.socket } }),
      { log: silent },
    );
    const health = await other.healthcheck();
    expect(health.ok).toBe(false);
    expect(health.detail).toContain('does not load');
  });
});

describe.skipIf(skip)('haproxy conformance', () => {
  let shared: Promise<Haproxy> | undefined;
  afterAll(async () => (await shared)?.stop());
  enforcerConformance('haproxy (runtime API)', async ({ capacity }) => {
    shared ??= startHaproxy();
    const h = await shared;
    await runtimeCommands(h.socket, [`clear acl ${h.acl}`]);
    await writeFile(h.acl, '');
    return {
      enforcer: await runtimeEnforcer(h, capacity),
      reopen: () => runtimeEnforcer(h, capacity),
      disturb: async () => void (await runtimeCommands(h.socket, [`clear acl ${h.acl}`])),
    };
  });
});

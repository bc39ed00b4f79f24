import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmod, mkdtemp, readFile, rm, writeFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { enforcerConformance, silentLogger as silent } from '@rampart/plugin-kit/testing';
import { PfConfig, defaultPfReloadCommand, pfEnforcer } from './index.ts';


let dir: string;
let bin: string;
const originalPath = process.env.PATH;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rampart pf '));
  bin = join(dir, 'bin');
  await rm(bin, { recursive: true, force: true });
  await import('node:fs/promises').then((fs) => fs.mkdir(bin));
  // A stand-in pfctl that records its argv and the table file as it was when pfctl ran.
  const script = `#!/bin/sh\nprintf '%s\\n' "$@" > "${dir}/pfctl.args"\nwhile [ "$1" != "-f" ]; do shift; done\ncp "$2" "${dir}/pfctl.seen"\necho call >> "${dir}/pfctl.calls"\n`;
  await writeFile(join(bin, 'pfctl'), script);
  await chmod(join(bin, 'pfctl'), 0o755);
  process.env.PATH = `${bin}:${originalPath}`;
});
afterAll(async () => {
  process.env.PATH = originalPath;
  await rm(dir, { recursive: true, force: true });
});

function config(extra: Record<string, unknown> = {}) {
  return PfConfig.parse({ active: true, RMP_ips_txt: join(dir, 'pf table.txt'), ...extra });
}

describe('enforcer-pf', () => {
  it('parses the README sample config', async () => {
    const readme = await readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    const sample = /## Sample config[\s\S]*?```json\n([\s\S]*?)```/.exec(readme)?.[1];
    const parsed = PfConfig.parse(JSON.parse(sample!));
    expect(parsed.RMP_ips_txt).toBe('/etc/pf.rampart.txt');
    expect(parsed.options).toEqual({ table: 'rampart', table_entries_limit: 200000, reload_timeout_seconds: 60 });
  });

  it('rejects an active entry without a file and a bad table name, naming the field', () => {
    const r = PfConfig.safeParse({ active: true, options: { table: 'no-dash' } });
    expect(r.success).toBe(false);
    expect(r.error!.issues.map((i) => i.path.join('.')).sort()).toEqual(['RMP_ips_txt', 'options.table']);
  });

  it('writes the table file atomically and runs the exact default pfctl line through the shell', async () => {
    const cfg = config();
    expect(defaultPfReloadCommand('rampart', cfg.RMP_ips_txt)).toBe(`pfctl -t rampart -T replace -f '${dir}/pf table.txt'`);
    const e = await pfEnforcer.create(cfg, { log: silent });
    await e.sync([
      { value: '203.0.113.7/32', score: 80 },
      { value: '198.51.100.0/24', score: 60 },
    ]);
    const expected = '# rampart block list; replaced atomically, do not edit\n198.51.100.0/24\n203.0.113.7\n';
    expect(await readFile(cfg.RMP_ips_txt, 'utf8')).toBe(expected);
    expect(await readFile(join(dir, 'pfctl.args'), 'utf8')).toBe(`-t\nrampart\n-T\nreplace\n-f\n${dir}/pf table.txt\n`);
    expect(await readFile(join(dir, 'pfctl.seen'), 'utf8')).toBe(expected);
    expect((await readdir(dir)).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    expect(await e.list()).toEqual(['198.51.100.0/24', '203.0.113.7/32']);

    // The same diff twice: one write, one reload.
    const calls = async () => (await readFile(join(dir, 'pfctl.calls'), 'utf8')).split('\n').filter(Boolean).length;
    const before = await calls();
    const diff = { add: [{ value: '192.0.2.1/32', score: 90 }], remove: ['198.51.100.0/24'] };
    await e.apply(diff);
    await e.apply(diff);
    expect(await calls()).toBe(before + 1);
    expect(await e.list()).toEqual(['192.0.2.1/32', '203.0.113.7/32']);
    await e.withdraw();
    expect(await e.list()).toEqual([]);
    await e.close();
    await e.close();
  });

  it('runs a configured command verbatim and fails loudly when it fails', async () => {
    const cfg = config({ pflist_reload_command: `echo custom > '${dir}/custom.out'`, RMP_ips_txt: join(dir, 'custom.txt') });
    const e = await pfEnforcer.create(cfg, { log: silent });
    await e.sync([{ value: '192.0.2.5/32', score: 1 }]);
    expect(await readFile(join(dir, 'custom.out'), 'utf8')).toBe('custom\n');
    const failing = await pfEnforcer.create(config({ pflist_reload_command: 'echo nope >&2; exit 3' }), { log: silent });
    await expect(failing.sync([])).rejects.toMatchObject({ code: 'ENFORCER_COMMAND_FAILED', exitCode: 3, stderr: 'nope\n' });
  });

  it('caps at table_entries_limit keeping the highest scores', async () => {
    const e = await pfEnforcer.create(config({ options: { table_entries_limit: 2 } }), { log: silent });
    const r = await e.sync([
      { value: '192.0.2.1/32', score: 5 },
      { value: '192.0.2.2/32', score: 50 },
      { value: '192.0.2.3/32', score: 40 },
    ]);
    expect(r).toEqual({ enforced: 2, cut: 1 });
    expect(e.capacity).toBe(2);
    expect(await e.list()).toEqual(['192.0.2.2/32', '192.0.2.3/32']);
    // The cut entry comes back once a higher one leaves.
    expect(await e.apply({ add: [], remove: ['192.0.2.2/32'] })).toEqual({ enforced: 2, cut: 0 });
    expect(await e.list()).toEqual(['192.0.2.1/32', '192.0.2.3/32']);
  });

  it('re-asserts the file when someone else changed it', async () => {
    const cfg = config({ RMP_ips_txt: join(dir, 'drift.txt') });
    const e = await pfEnforcer.create(cfg, { log: silent });
    await e.sync([{ value: '192.0.2.7/32', score: 3 }]);
    expect(await e.reconcile!()).toEqual({ enforced: 1, cut: 0, drifted: false });
    await writeFile(cfg.RMP_ips_txt, '');
    expect(await e.list()).toEqual([]);
    expect(await e.reconcile!()).toEqual({ enforced: 1, cut: 0, drifted: true });
    expect(await e.list()).toEqual(['192.0.2.7/32']);
    expect(await readFile(join(dir, 'pfctl.seen'), 'utf8')).toContain('192.0.2.7\n');
  });

  it('reports an unwritable directory in healthcheck', async () => {
    const e = await pfEnforcer.create(config({ RMP_ips_txt: '/nonexistent-dir/pf.txt' }), { log: silent });
    expect((await e.healthcheck()).ok).toBe(false);
    expect((await (await pfEnforcer.create(config(), { log: silent })).healthcheck()).ok).toBe(true);
  });

  it('reports a missing pfctl when the default command would need it', async () => {
    process.env.PATH = '/nonexistent';
    try {
      const e = await pfEnforcer.create(config(), { log: silent });
      expect(await e.healthcheck()).toEqual({ ok: false, detail: 'pfctl not found on PATH (set pflist_reload_command)' });
      const custom = await pfEnforcer.create(config({ pflist_reload_command: 'ssh fw pfctl -t rampart -T replace -f -' }), { log: silent });
      expect(await custom.healthcheck()).toEqual({ ok: true });
    } finally {
      process.env.PATH = `${bin}:${originalPath}`;
    }
  });
});

// The recording pfctl of beforeAll stands in for pf; the target read back is the table file.
enforcerConformance('pf', async ({ capacity }) => {
  const root = await mkdtemp(join(tmpdir(), 'rampart-pf-conf-'));
  const file = join(root, 'rampart.txt');
  const cfg = PfConfig.parse({ active: true, RMP_ips_txt: file, options: capacity ? { table_entries_limit: capacity } : {} });
  return {
    enforcer: await pfEnforcer.create(cfg, { log: silent }),
    reopen: () => pfEnforcer.create(cfg, { log: silent }),
    disturb: () => writeFile(file, ''),
    teardown: () => rm(root, { recursive: true, force: true }),
  };
});

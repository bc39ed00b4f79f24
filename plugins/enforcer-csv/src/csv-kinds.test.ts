import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { enforcerKinds } from '@rampart/plugin-kit';
import { kindConformance, silentLogger as silent } from '@rampart/plugin-kit/testing';
import { CsvConfig, csvEnforcer } from './index.ts';


describe('enforcer-csv: domains, URLs and digests', () => {
  it('turns a kind on with options.kinds.<kind>.path; one file per kind', () => {
    expect(enforcerKinds(csvEnforcer, CsvConfig.parse({ active: true, csv_logs: '/tmp/a.csv' }))).toEqual(['ipv4']);
    const cfg = CsvConfig.parse({ active: true, csv_logs: '/tmp/a.csv', options: { kinds: { url: { path: '/tmp/u.csv' }, file: { path: '/tmp/f.csv' } } } });
    expect(enforcerKinds(csvEnforcer, cfg)).toEqual(['ipv4', 'url', 'file']);
    const clash = CsvConfig.safeParse({ active: true, csv_logs: '/tmp/a.csv', options: { kinds: { domain: { path: '/tmp/a.csv' } } } });
    expect(clash.error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual([['options.kinds', 'each kind needs a file of its own']]);
  });

  it('writes a URL file with RFC 4180 quoting and reads it back; runs the kind reload command', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rampart-csv-kinds-'));
    try {
      const path = join(dir, 'urls.csv');
      const seen = join(dir, 'seen.csv');
      const cfg = CsvConfig.parse({ active: true, csv_logs: join(dir, 'ipv4.csv'), options: { kinds: { url: { path, reload_command: `cp '${path}' '${seen}'` } } } });
      const e = await csvEnforcer.create(cfg, { log: silent, kind: 'url' });
      expect(await e.sync([
        { value: 'HTTP://Evil.Example:80/a,b?x=1#frag', score: 700.25 },
        { value: 'https://evil.example/login', score: 650 },
        { value: 'javascript:alert(1)', score: 999 },
      ])).toEqual({ enforced: 2, cut: 0, invalid: 1 });
      const expected = 'url,score\n"http://evil.example/a,b?x=1",700.25\nhttps://evil.example/login,650\n';
      expect(await readFile(path, 'utf8')).toBe(expected);
      expect(await readFile(seen, 'utf8')).toBe(expected);
      expect(await e.list()).toEqual(['http://evil.example/a,b?x=1', 'https://evil.example/login']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

for (const kind of ['domain', 'url', 'file'] as const) {
  kindConformance('csv', kind, async ({ capacity }) => {
    const root = await mkdtemp(join(tmpdir(), `rampart-csv-${kind}-`));
    const path = join(root, `${kind}.csv`);
    const cfg = CsvConfig.parse({ active: true, csv_logs: join(root, 'ipv4.csv'), options: { kinds: { [kind]: { path } }, ...(capacity ? { max_entries: capacity } : {}) } });
    return {
      enforcer: await csvEnforcer.create(cfg, { log: silent, kind }),
      disturb: () => rm(path),
      teardown: () => rm(root, { recursive: true, force: true }),
    };
  });
}

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { enforcerConformance, silentLogger as silent } from '@rampart/plugin-kit/testing';
import { codecOf } from '@rampart/plugin-kit';
import { CsvConfig, csvEnforcer, csvFormat, namedCsvFormat } from './index.ts';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'rampart-csv-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('enforcer-csv', () => {
  it('parses the README sample config and names a missing path', async () => {
    const readme = await readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    const sample = /## Sample config[\s\S]*?```json\n([\s\S]*?)```/.exec(readme)?.[1];
    const parsed = CsvConfig.parse(JSON.parse(sample!));
    expect(parsed.csv_logs).toBe('/var/lib/rampart/blocklist.csv');
    expect(parsed.options.max_entries).toBe(1_000_000);
    expect(parsed.options.kinds.url).toEqual({ path: '/var/lib/rampart/urls.csv', reload_command: 'curl -fsS -X POST http://127.0.0.1:8080/import-urls' });
    const bad = CsvConfig.safeParse({ active: true, options: { max_entries: 0 } });
    expect(bad.error!.issues.map((i) => i.path.join('.')).sort()).toEqual(['csv_logs', 'options.max_entries']);
  });

  it('writes the CSV, runs the reload command after the file is complete, reads it back', async () => {
    const file = join(dir, 'list.csv');
    const seen = join(dir, 'seen.csv');
    const cfg = CsvConfig.parse({ active: true, csv_logs: file, csv_reload_command: `cp '${file}' '${seen}'` });
    const e = await csvEnforcer.create(cfg, { log: silent });
    expect(await e.sync([
      { value: '203.0.113.7/32', score: 80 },
      { value: '198.51.100.0/24', score: 61.5 },
      { value: '198.51.100.0/24', score: 12 },
      { value: 'not-an-ip', score: 5 },
    ])).toEqual({ enforced: 2, cut: 0, invalid: 1 });
    const expected = 'cidr,score\n198.51.100.0/24,61.5\n203.0.113.7/32,80\n';
    expect(await readFile(file, 'utf8')).toBe(expected);
    expect(await readFile(seen, 'utf8')).toBe(expected);
    expect(await e.list()).toEqual(['198.51.100.0/24', '203.0.113.7/32']);
    await e.apply({ add: [{ value: '192.0.2.0/30', score: 1 }], remove: ['203.0.113.7/32'] });
    expect(await readFile(seen, 'utf8')).toBe('cidr,score\n192.0.2.0/30,1\n198.51.100.0/24,61.5\n');
    await writeFile(file, 'cidr,score\n');
    expect((await e.reconcile!()).drifted).toBe(true);
    expect(await e.list()).toEqual(['192.0.2.0/30', '198.51.100.0/24']);
    await e.withdraw();
    expect(await readFile(file, 'utf8')).toBe('cidr,score\n');
  });
});

describe('csv formats', () => {
  it('reads back what it writes, canonical, dropping what is not an entry of the kind', () => {
    expect(csvFormat.parse('cidr,score\n203.0.113.7/32,12\n10.0.0.0/8,3\nnot-an-address,4\n')).toEqual(['10.0.0.0/8', '203.0.113.7/32']);
    const urls = namedCsvFormat(codecOf('url'));
    const text = urls.render([{ value: 'http://shop.example/a,b', score: 7 }]);
    expect(text).toBe('url,score\n"http://shop.example/a,b",7\n');
    expect(urls.parse(`${text}not a url,3\n`)).toEqual(['http://shop.example/a,b']);
    expect(namedCsvFormat(codecOf('domain')).parse('domain,score\nEvil.Example.,5\nevil.example,6\n')).toEqual(['evil.example']);
  });

  it('refuses a kind whose file is not configured, naming the setting', async () => {
    const cfg = CsvConfig.parse({ active: true, csv_logs: join(dir, 'only-ipv4.csv') });
    await expect(csvEnforcer.create(cfg, { log: silent, kind: 'domain' })).rejects.toThrow("csv: no file configured for kind 'domain' (options.kinds.domain.path)");
  });
});

enforcerConformance('csv', async ({ capacity }) => {
  const root = await mkdtemp(join(tmpdir(), 'rampart-csv-conf-'));
  const file = join(root, 'list.csv');
  const cfg = CsvConfig.parse({
    active: true,
    csv_logs: file,
    csv_reload_command: `cp '${file}' '${root}/imported.csv'`,
    options: capacity ? { max_entries: capacity } : {},
  });
  return {
    enforcer: await csvEnforcer.create(cfg, { log: silent }),
    disturb: () => rm(file),
    // An agent restart: a new instance on the same file.
    reopen: () => csvEnforcer.create(cfg, { log: silent }),
    teardown: () => rm(root, { recursive: true, force: true }),
  };
});

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { enforcerKinds } from '@rampart/plugin-kit';
import { kindConformance, silentLogger as silent } from '@rampart/plugin-kit/testing';
import { SquidConfig, patternUrl, squidEnforcer, urlPattern } from './index.ts';


describe('enforcer-squid', () => {
  it('parses the README sample config; names what is missing or unsupported', async () => {
    const readme = await readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    const sample = /## Sample config[\s\S]*?```json\n([\s\S]*?)```/.exec(readme)?.[1];
    const parsed = SquidConfig.parse(JSON.parse(sample!));
    expect(parsed.urls_file).toBe('/var/lib/rampart/squid/urls.acl');
    expect(parsed.options).toEqual({ domains_file: '/var/lib/rampart/squid/domains.acl', reload_command: 'squid -k reconfigure', reload_timeout_seconds: 60, max_entries: 100_000 });
    expect(enforcerKinds(squidEnforcer, parsed)).toEqual(['url', 'domain']);
    expect(enforcerKinds(squidEnforcer, SquidConfig.parse({ active: true, options: { domains_file: '/tmp/d.acl' } }))).toEqual(['domain']);
    const issues = (input: unknown) => SquidConfig.safeParse(input).error?.issues.map((i) => [i.path.join('.'), i.message]);
    expect(issues({ active: true })).toEqual([['urls_file', 'urls_file or options.domains_file is required when active']]);
    expect(issues({ active: true, urls_file: '/tmp/a', api: 'https://proxy.example/api' })).toEqual([
      ['api', 'the vendor API dialect is not supported; leave api empty for the Squid dialect'],
    ]);
    expect(issues({ active: true, urls_file: '/tmp/a', options: { domains_file: '/tmp/a' } })).toEqual([['options.domains_file', 'URLs and domains need a file each']]);
    expect(issues({ active: true, urls_file: '/tmp/a', options: { max_entries: 0, extra: 1 } })?.map(([p]) => p).sort()).toEqual(['options', 'options.max_entries']);
    expect(SquidConfig.safeParse({ active: false }).success).toBe(true);
  });

  it('escapes every regex metacharacter and anchors the pattern; reads it back', () => {
    const url = 'http://shop.example/a.b/c(d)*e+f$?q=[1]|{2}^$x\\y';
    expect(urlPattern(url)).toBe('^http://shop\\.example/a\\.b/c\\(d\\)\\*e\\+f\\$\\?q=\\[1\\]\\|\\{2\\}\\^\\$x\\\\y$');
    expect(patternUrl(urlPattern(url))).toBe(url);
    // A line the enforcer did not write (an unescaped metacharacter, no anchors) is not read back.
    expect(patternUrl('^http://shop.example/$')).toBeUndefined();
    expect(patternUrl('http://shop\\.example/')).toBeUndefined();
  });

  it('writes the url_regex and dstdomain files, runs the reload command, reads them back', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rampart-squid-files-'));
    try {
      const urls = join(dir, 'urls.acl');
      const domains = join(dir, 'domains.acl');
      const log = join(dir, 'reloads');
      const cfg = SquidConfig.parse({ active: true, urls_file: urls, options: { domains_file: domains, reload_command: `echo reload >> '${log}'` } });
      const u = await squidEnforcer.create(cfg, { log: silent, kind: 'url' });
      expect(await u.sync([
        { value: 'HTTP://Shop.Example:80/a.b?q=(1)|x*#frag', score: 700 },
        { value: 'https://evil.example/login', score: 650 },
        { value: 'javascript:alert(1)', score: 999 },
      ])).toEqual({ enforced: 2, cut: 0, invalid: 1 });
      const header = '# Written by the Rampart agent; every change is overwritten.\n';
      expect(await readFile(urls, 'utf8')).toBe(`${header}^http://shop\\.example/a\\.b\\?q=\\(1\\)\\|x\\*$\n^https://evil\\.example/login$\n`);
      expect(await u.list()).toEqual(['http://shop.example/a.b?q=(1)|x*', 'https://evil.example/login']);
      const d = await squidEnforcer.create(cfg, { log: silent, kind: 'domain' });
      expect(await d.sync([{ value: 'Evil.Example.', score: 900 }, { value: 'bücher.example', score: 640 }])).toEqual({ enforced: 2, cut: 0 });
      expect(await readFile(domains, 'utf8')).toBe(`${header}.evil.example\n.xn--bcher-kva.example\n`);
      await writeFile(domains, `${header}.evil.example\n`);
      expect((await d.reconcile!()).drifted).toBe(true);
      expect(await d.list()).toEqual(['evil.example', 'xn--bcher-kva.example']);
      expect(await readFile(log, 'utf8')).toBe('reload\nreload\nreload\n');
      await expect(squidEnforcer.create(cfg, { log: silent, kind: 'file' })).rejects.toThrow("squid: enforces URLs and domains, not 'file'");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

for (const kind of ['url', 'domain'] as const) {
  kindConformance('squid', kind, async ({ capacity }) => {
    const root = await mkdtemp(join(tmpdir(), `rampart-squid-${kind}-`));
    const urls = join(root, 'urls.acl');
    const domains = join(root, 'domains.acl');
    const cfg = SquidConfig.parse({ active: true, urls_file: urls, options: { domains_file: domains, reload_command: '', ...(capacity ? { max_entries: capacity } : {}) } });
    return {
      enforcer: await squidEnforcer.create(cfg, { log: silent, kind }),
      disturb: () => rm(kind === 'url' ? urls : domains),
      teardown: () => rm(root, { recursive: true, force: true }),
    };
  });
}

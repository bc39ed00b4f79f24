import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { enforcerKinds } from '@rampart/plugin-kit';
import { kindConformance } from '@rampart/plugin-kit/testing';
import { DryRunConfig, dryRunEnforcer } from '../src/index.ts';

const log = pino({ level: 'silent' });
const dirs: string[] = [];
afterEach(async () => {
  while (dirs.length) await rm(dirs.pop()!, { recursive: true, force: true });
});

describe('dry-run enforcer: domains, URLs and digests', () => {
  it('turns a kind on only when its file is configured; one file per kind', async () => {
    expect(enforcerKinds(dryRunEnforcer, DryRunConfig.parse({ active: true, path: '/tmp/a.json' }))).toEqual(['ipv4']);
    const all = DryRunConfig.parse({ active: true, path: '/tmp/a.json', kinds: { domain: { path: '/tmp/d.json' }, url: { path: '/tmp/u.json' }, file: { path: '/tmp/f.json' } } });
    expect(enforcerKinds(dryRunEnforcer, all)).toEqual(['ipv4', 'domain', 'url', 'file']);
    const clash = DryRunConfig.safeParse({ active: true, path: '/tmp/a.json', kinds: { url: { path: '/tmp/a.json' } } });
    expect(clash.error?.issues.map((i) => [i.path.join('.'), i.message])).toEqual([['kinds', 'each kind needs a file of its own']]);
    const unknown = DryRunConfig.safeParse({ active: true, path: '/tmp/a.json', kinds: { ipv6: { path: '/tmp/x.json' } } });
    expect(unknown.success).toBe(false);
    await expect(dryRunEnforcer.create(DryRunConfig.parse({ active: true, path: '/tmp/a.json' }), { log, kind: 'domain' })).rejects.toThrow("no file configured for kind 'domain'");
  });

  it('writes the domain file exactly: canonical, sorted, with the operations', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dry-run-kinds-'));
    dirs.push(dir);
    const path = join(dir, 'domains.json');
    const config = DryRunConfig.parse({ active: true, path: join(dir, 'ipv4.json'), kinds: { domain: { path } } });
    const e = await dryRunEnforcer.create(config, { log, kind: 'domain' });
    expect(await e.sync([{ value: 'Bücher.Example.', score: 700 }, { value: 'evil.example', score: 650 }, { value: 'localhost', score: 999 }])).toEqual({ enforced: 2, cut: 0, invalid: 1 });
    await e.apply({ add: [{ value: 'a.example', score: 900 }], remove: ['EVIL.example'] });
    const file = JSON.parse(await readFile(path, 'utf8'));
    expect(file.kind).toBe('domain');
    expect(file.enforced).toEqual(['a.example', 'xn--bcher-kva.example']);
    expect(file.operations.map((o: { op: string; added?: string[]; removed?: string[] }) => [o.op, o.added, o.removed])).toEqual([
      ['sync', undefined, undefined],
      ['apply', ['a.example'], ['evil.example']],
    ]);
    // A restarted instance owns what its file holds.
    const again = await dryRunEnforcer.create(config, { log, kind: 'domain' });
    expect(await again.list()).toEqual(['a.example', 'xn--bcher-kva.example']);
  });
});

for (const kind of ['domain', 'url', 'file'] as const) {
  kindConformance('dry-run', kind, async ({ capacity }) => {
    const dir = await mkdtemp(join(tmpdir(), `dry-run-${kind}-`));
    const path = join(dir, `${kind}.json`);
    const config = DryRunConfig.parse({ active: true, path: join(dir, 'ipv4.json'), kinds: { [kind]: { path } }, ...(capacity === undefined ? {} : { capacity }) });
    const enforcer = await dryRunEnforcer.create(config, { log, kind });
    return { enforcer, teardown: () => rm(dir, { recursive: true, force: true }) };
  });
}

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { enforcerConformance } from '@rampart/plugin-kit/testing';
import { DryRunConfig, dryRunEnforcer, readDryRunFile } from '../src/index.ts';

const dirs: string[] = [];
afterEach(async () => {
  while (dirs.length) await rm(dirs.pop()!, { recursive: true, force: true });
});

async function make(extra: Record<string, unknown> = {}) {
  const dir = await mkdtemp(join(tmpdir(), 'dry-run-'));
  dirs.push(dir);
  const path = join(dir, 'dry-run.json');
  const config = DryRunConfig.parse({ active: true, path, ...extra });
  return { path, enforcer: await dryRunEnforcer.create(config, { log: pino({ level: 'silent' }) }) };
}

describe('dry-run enforcer', () => {
  it('records sync, apply and withdraw in its file, canonical and sorted, and reads them back', async () => {
    const { path, enforcer } = await make();
    const r1 = await enforcer.sync([
      { value: '203.0.113.7', score: 300 },
      { value: '198.51.100.9/24', score: 200 },
      { value: '10.0.0.1/32', score: 150 },
      { value: 'not-an-ip', score: 1 },
    ]);
    expect(r1).toEqual({ enforced: 3, cut: 0, invalid: 1 });
    expect(await enforcer.list()).toEqual(['10.0.0.1/32', '198.51.100.0/24', '203.0.113.7/32']);

    const r2 = await enforcer.apply({ add: [{ value: '192.0.2.1/32', score: 500 }, { value: '203.0.113.7/32', score: 310 }], remove: ['10.0.0.1', '192.0.2.99'] });
    expect(r2).toEqual({ enforced: 3, cut: 0 });
    const file = await readDryRunFile(path);
    expect(file?.enforced).toEqual(['192.0.2.1/32', '198.51.100.0/24', '203.0.113.7/32']);
    expect(file?.operations.map((o) => [o.op, o.enforced, o.added, o.removed])).toEqual([
      ['sync', 3, undefined, undefined],
      ['apply', 3, ['192.0.2.1/32'], ['10.0.0.1/32']],
    ]);

    // Applying the same diff again changes nothing.
    await enforcer.apply({ add: [{ value: '192.0.2.1/32', score: 500 }, { value: '203.0.113.7/32', score: 310 }], remove: ['10.0.0.1', '192.0.2.99'] });
    expect((await readDryRunFile(path))?.operations.at(-1)).toMatchObject({ added: [], removed: [], enforced: 3 });

    await enforcer.withdraw();
    expect(await enforcer.list()).toEqual([]);
  });

  it('cuts the lowest scores when its pretend capacity is reached', async () => {
    const { enforcer } = await make({ capacity: 2 });
    const r = await enforcer.sync([
      { value: '203.0.113.1/32', score: 10 },
      { value: '203.0.113.2/32', score: 30 },
      { value: '203.0.113.3/32', score: 20 },
    ]);
    expect(r).toEqual({ enforced: 2, cut: 1 });
    expect(await enforcer.list()).toEqual(['203.0.113.2/32', '203.0.113.3/32']);
  });

  it('a new instance starts from what the file holds (a restarted agent still owns its rules)', async () => {
    const { path, enforcer } = await make();
    await enforcer.sync([{ value: '203.0.113.1/32', score: 10 }]);
    const again = await dryRunEnforcer.create(DryRunConfig.parse({ active: true, path }), { log: pino({ level: 'silent' }) });
    await again.apply({ add: [{ value: '203.0.113.2/32', score: 5 }], remove: [] });
    expect(await again.list()).toEqual(['203.0.113.1/32', '203.0.113.2/32']);
  });
});

// The enforcer that once took 010.0.0.1 for 10.0.0.1 while nft refused it: the same suite as
// every other enforcer, against its file.
enforcerConformance('dry-run', async ({ capacity }) => {
  const dir = await mkdtemp(join(tmpdir(), 'dry-run-conformance-'));
  const config = DryRunConfig.parse({ active: true, path: join(dir, 'dry-run.json'), ...(capacity === undefined ? {} : { capacity }) });
  const enforcer = await dryRunEnforcer.create(config, { log: pino({ level: 'silent' }) });
  return { enforcer, teardown: () => rm(dir, { recursive: true, force: true }) };
});

describe('README', () => {
  it('its sample configuration parses', async () => {
    const { readFile } = await import('node:fs/promises');
    const text = await readFile(new URL('../README.md', import.meta.url), 'utf8');
    const sample = JSON.parse(/```json\n([\s\S]*?)```/.exec(text)![1]!) as { dry_run: unknown };
    expect(DryRunConfig.parse(sample.dry_run)).toEqual({
      active: true,
      path: '/var/lib/rampart-agent/dry-run.json',
      capacity: 100000,
      history_limit: 100,
      kinds: {
        domain: { path: '/var/lib/rampart-agent/dry-run-domains.json' },
        url: { path: '/var/lib/rampart-agent/dry-run-urls.json' },
        file: { path: '/var/lib/rampart-agent/dry-run-files.json' },
      },
    });
  });
});

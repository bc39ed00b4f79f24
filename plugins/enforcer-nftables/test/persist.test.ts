import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NetnsLab, recordingLogger } from '@rampart/plugin-kit/testing';
import { nftablesEnforcer } from '../src/index.ts';
import { skipWithoutNft } from './support.ts';

describe.skipIf(skipWithoutNft('nftables acl and reload'))('nftables acl file, reload command and cut logging', () => {
  const lab = new NetnsLab();
  let ns: string;
  let dir: string;
  const log = recordingLogger();

  beforeAll(async () => {
    ns = await lab.namespace('acl');
    dir = await mkdtemp(join(tmpdir(), 'rampart-nft-acl-'));
  });
  afterAll(async () => {
    await lab.destroy();
    await rm(dir, { recursive: true, force: true });
  });

  it('a failing reload_command fails the call with its exit code, after the kernel and file were updated', async () => {
    const acl = join(dir, 'a.nft');
    const enforcer = await nftablesEnforcer.create(
      nftablesEnforcer.configSchema.parse({ active: true, acl, reload_command: 'echo no >&2; exit 3', options: { netns: ns } }),
      { log },
    );
    await expect(enforcer.sync([{ value: '192.0.2.1', score: 1 }])).rejects.toMatchObject({ code: 'ENFORCER_COMMAND_FAILED', exitCode: 3 });
    expect(await enforcer.list()).toEqual(['192.0.2.1/32']);
    expect(await readFile(acl, 'utf8')).toContain('elements = { 192.0.2.1 }');
    await enforcer.withdraw().catch(() => undefined);
  });

  it('withdraw leaves an acl file that only deletes the table', async () => {
    const acl = join(dir, 'b.nft');
    const enforcer = await nftablesEnforcer.create(nftablesEnforcer.configSchema.parse({ active: true, acl, options: { netns: ns } }), { log });
    await enforcer.sync([{ value: '192.0.2.1', score: 1 }]);
    await enforcer.withdraw();
    expect(await readFile(acl, 'utf8')).toBe('table inet rampart {}\ndelete table inet rampart\n');
  });

  it('logs the cut once when the capacity binds, and counts it', async () => {
    log.lines.length = 0;
    const enforcer = await nftablesEnforcer.create(nftablesEnforcer.configSchema.parse({ active: true, options: { netns: ns, capacity: 2 } }), { log });
    const entries = [1, 2, 3, 4].map((i) => ({ value: `192.0.2.${i}`, score: i }));
    expect(await enforcer.sync(entries)).toEqual({ enforced: 2, cut: 2 });
    expect(await enforcer.apply({ add: [{ value: '192.0.2.9', score: 0 }], remove: [] })).toEqual({ enforced: 2, cut: 3 });
    expect(await enforcer.apply({ add: [{ value: '192.0.2.9', score: 0 }], remove: [] })).toEqual({ enforced: 2, cut: 3 });
    expect(log.lines.filter((w) => w.level === 'warn' && w.msg === 'capacity reached; lowest scores cut').map((w) => w.data)).toEqual([
      { cut: 2, capacity: 2 },
      { cut: 3, capacity: 2 },
    ]);
    expect(await enforcer.list()).toEqual(['192.0.2.3/32', '192.0.2.4/32']);
    await enforcer.withdraw();
  });
});

import { describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { BRIDGE_DEFAULTS, BridgeConfig } from './config.ts';

describe('nftables bridge config', () => {
  it('parses the README sample config, whose options are the defaults', async () => {
    const readme = await readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    const sample = /## Sample config[\s\S]*?```json\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(BridgeConfig.parse(JSON.parse(sample!))).toEqual({ active: true, options: BRIDGE_DEFAULTS });
  });

  it('names every failing field and keeps the spec entry strict', () => {
    const r = BridgeConfig.safeParse({ active: true, acl: '/x', options: { hooks: ['output'], table: '1x', capacity: -1 } });
    expect(r.error!.issues.map((i) => i.path.join('.')).sort()).toEqual(['', 'options.capacity', 'options.hooks.0', 'options.table']);
    expect(BridgeConfig.safeParse({ active: true, options: { hooks: ['forward', 'forward'] } }).error!.issues[0]!.path).toEqual(['options', 'hooks']);
  });
});

import { describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { NFT_DEFAULTS, NftablesConfig } from './config.ts';

describe('nftables config', () => {
  it('parses the README sample config, whose options are the defaults', async () => {
    const readme = await readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    const sample = /## Sample config[\s\S]*?```json\n([\s\S]*?)```/.exec(readme)?.[1];
    const parsed = NftablesConfig.parse(JSON.parse(sample!));
    expect(parsed).toEqual({ active: true, acl: '/etc/nftables.d/rampart.nft', reload_command: '', options: NFT_DEFAULTS });
    expect(NftablesConfig.parse({ active: true }).options).toEqual(NFT_DEFAULTS);
  });

  it('names every failing field', () => {
    const r = NftablesConfig.safeParse({
      active: true,
      options: { backend: 'ipset', table: 'bad name; flush ruleset', priority: 1000, capacity: 0, netns: '../x', extra: 1 },
    });
    expect(r.success).toBe(false);
    expect(r.error!.issues.map((i) => i.path.join('.')).sort()).toEqual([
      'options',
      'options.backend',
      'options.capacity',
      'options.netns',
      'options.priority',
      'options.table',
    ]);
  });
});

import { describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { IPSET_DEFAULTS, IpsetConfig } from './config.ts';
import { diffBatches, fullReplaceScript, hashsizeFor, parseRuleState, parseSave, saveScript } from './script.ts';

describe('ipset config', () => {
  it('parses the README sample config, whose options are the defaults', async () => {
    const readme = await readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    const sample = /## Sample config[\s\S]*?```json\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(IpsetConfig.parse(JSON.parse(sample!))).toEqual({ active: true, acl: '/etc/rampart/ipset.rules', reload_command: '', options: IPSET_DEFAULTS });
  });

  it('names every failing field', () => {
    const r = IpsetConfig.safeParse({ active: true, options: { backend: 'nftables', set: 'a b', chains: ['IN PUT'], iptables: 'ip6tables', capacity: 0 } });
    expect(r.error!.issues.map((i) => i.path.join('.')).sort()).toEqual(['options.backend', 'options.capacity', 'options.chains.0', 'options.iptables', 'options.set']);
  });
});

describe('ipset scripts', () => {
  const layout = { set: 'rampart', capacity: 5000 };

  it('fills a twin and swaps it in', () => {
    expect(fullReplaceScript(layout, ['203.0.113.7/32', '198.51.100.0/24'], true)).toBe(
      'create rampart hash:net family inet hashsize 1024 maxelem 5000\n' +
        'create rampart-new hash:net family inet hashsize 1024 maxelem 5000\n' +
        'add rampart-new 203.0.113.7/32\nadd rampart-new 198.51.100.0/24\nswap rampart-new rampart\ndestroy rampart-new\n',
    );
    expect(fullReplaceScript(layout, [], false).startsWith('create rampart-new ')).toBe(true);
  });

  it('sizes the hash for the list', () => {
    expect([0, 4096, 4097, 100_000, 1_000_000].map(hashsizeFor)).toEqual([1024, 1024, 2048, 32768, 262144]);
  });

  it('batches diffs with -exist, deletions first', () => {
    expect(diffBatches(layout, ['192.0.2.1/32', '10.0.0.0/8'], ['192.0.2.9/32'], 2)).toEqual([
      'del rampart 192.0.2.9/32 -exist\nadd rampart 192.0.2.1/32 -exist\n',
      'add rampart 10.0.0.0/8 -exist\n',
    ]);
  });

  it('saves and parses back', () => {
    const text = saveScript(layout, ['198.51.100.0/24', '203.0.113.7/32']);
    expect(parseSave(text, 'rampart')).toEqual(['198.51.100.0/24', '203.0.113.7/32']);
    expect(saveScript(layout, [])).toBe('# rampart block list (generated; do not edit)\ncreate rampart hash:net family inet hashsize 1024 maxelem 5000 -exist\nflush rampart\n');
    expect(parseSave('create rampart hash:net\nadd rampart 10.0.0.0/8 timeout 5\nadd other 1.2.3.4\n', 'rampart')).toEqual(['10.0.0.0/8']);
  });
});

describe('iptables-save parsing', () => {
  it('finds the rule per chain, skipping absent non-built-in chains', () => {
    const rule = '-m set --match-set rampart src -m comment --comment rampart -j DROP';
    const saved = `*filter\n:INPUT ACCEPT [0:0]\n:FORWARD DROP [0:0]\n:DOCKER-USER - [0:0]\n-A INPUT ${rule}\n-A DOCKER-USER -j RETURN\nCOMMIT\n`;
    expect(parseRuleState(saved, ['INPUT', 'FORWARD', 'DOCKER-USER'], rule)).toEqual([
      { chain: 'INPUT', present: true },
      { chain: 'FORWARD', present: false },
      { chain: 'DOCKER-USER', present: false },
    ]);
    expect(parseRuleState('', ['INPUT', 'FORWARD', 'DOCKER-USER'], rule)).toEqual([
      { chain: 'INPUT', present: false },
      { chain: 'FORWARD', present: false },
    ]);
  });
});

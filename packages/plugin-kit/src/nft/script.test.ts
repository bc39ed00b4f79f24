import { describe, expect, it } from 'vitest';
import { elementBatches, fullReplaceScript, outermostNets, withdrawScript } from './script.ts';
import { parseTable } from './read-back.ts';

const layout = { family: 'inet' as const, table: 'rampart', hooks: ['input', 'forward'], priority: -10, capacity: 5000 };

describe('nft scripts', () => {
  it('declares, deletes and re-creates the table in one script', () => {
    expect(fullReplaceScript(layout, ['203.0.113.7/32', '192.0.2.1/32'], ['198.51.100.0/24'])).toBe(
      [
        '# rampart block list (generated; replaced whole on every change, do not edit)',
        'table inet rampart {}',
        'delete table inet rampart',
        'table inet rampart {',
        '  set addrs {',
        '    type ipv4_addr;',
        '    size 5000;',
        '    elements = { 203.0.113.7, 192.0.2.1 }',
        '  }',
        '  set nets {',
        '    type ipv4_addr;',
        '    flags interval;',
        '    size 5000;',
        '    elements = { 198.51.100.0/24 }',
        '  }',
        '  chain input {',
        '    type filter hook input priority -10; policy accept;',
        '    ip saddr @addrs counter drop',
        '    ip saddr @nets counter drop',
        '  }',
        '  chain forward {',
        '    type filter hook forward priority -10; policy accept;',
        '    ip saddr @addrs counter drop',
        '    ip saddr @nets counter drop',
        '  }',
        '}',
        '',
      ].join('\n'),
    );
    expect(fullReplaceScript(layout, [], [])).not.toContain('elements');
    expect(withdrawScript(layout)).toBe('table inet rampart {}\ndelete table inet rampart\n');
    const bridge = fullReplaceScript({ ...layout, family: 'bridge', hooks: ['forward'] }, ['192.0.2.1/32'], []);
    expect(bridge).toContain('table bridge rampart {}\ndelete table bridge rampart\ntable bridge rampart {\n');
    expect(bridge).toContain('chain forward {');
    expect(bridge).not.toContain('chain input');
  });

  it('batches element changes, deletions first, at most batchSize per transaction', () => {
    const batches = elementBatches(
      layout,
      { addAddrs: ['192.0.2.1/32', '192.0.2.2/32'], delAddrs: ['192.0.2.9/32'], addNets: ['10.0.0.0/8'], delNets: ['10.1.0.0/16'] },
      3,
    );
    expect(batches).toEqual([
      'delete element inet rampart nets { 10.1.0.0/16 }\ndelete element inet rampart addrs { 192.0.2.9 }\nadd element inet rampart addrs { 192.0.2.1 }\n',
      'add element inet rampart addrs { 192.0.2.2 }\nadd element inet rampart nets { 10.0.0.0/8 }\n',
    ]);
    expect(elementBatches(layout, { addAddrs: [], delAddrs: [], addNets: [], delNets: [] }, 3)).toEqual([]);
  });

  it('keeps only the outermost of nested networks', () => {
    expect(outermostNets(['10.1.0.0/16', '10.0.0.0/8', '10.200.3.0/24', '11.0.0.0/8', '192.0.2.0/25', '192.0.2.128/25'])).toEqual([
      '10.0.0.0/8',
      '11.0.0.0/8',
      '192.0.2.0/25',
      '192.0.2.128/25',
    ]);
  });
});

describe('nft JSON read-back', () => {
  const rule = (chain: string, set: string) => ({
    rule: { family: 'inet', table: 'rampart', chain, expr: [{ match: { op: '==', left: { payload: { protocol: 'ip', field: 'saddr' } }, right: `@${set}` } }, { counter: { packets: 0, bytes: 0 } }, { drop: null }] },
  });
  const table = (rules: object[], prio = -10) =>
    JSON.stringify({
      nftables: [
        { metainfo: { version: '1.0.6' } },
        { table: { family: 'inet', name: 'rampart' } },
        { set: { name: 'addrs', type: 'ipv4_addr', elem: ['203.0.113.7', { elem: { val: '192.0.2.1', counter: {} } }] } },
        { set: { name: 'nets', type: 'ipv4_addr', flags: ['interval'], elem: [{ prefix: { addr: '198.51.100.0', len: 24 } }, { range: ['10.0.0.0', '10.0.1.255'] }, '192.0.2.200'] } },
        { chain: { name: 'input', type: 'filter', hook: 'input', prio } },
        { chain: { name: 'forward', type: 'filter', hook: 'forward', prio } },
        ...rules,
      ],
    });
  const all = [rule('input', 'addrs'), rule('input', 'nets'), rule('forward', 'addrs'), rule('forward', 'nets')];

  it('reads every element form back as canonical CIDRs', () => {
    expect(parseTable(table(all), -10, ['input', 'forward'])).toEqual({
      addrs: ['203.0.113.7/32', '192.0.2.1/32'],
      nets: ['198.51.100.0/24', '10.0.0.0/23', '192.0.2.200/32'],
      wired: true,
    });
  });

  it('is not wired when a drop rule or the expected priority is missing', () => {
    expect(parseTable(table(all.slice(0, 3)), -10, ['input', 'forward']).wired).toBe(false);
    expect(parseTable(table(all, 0), -10, ['input', 'forward']).wired).toBe(false);
    expect(parseTable(table(all), -10, ['input', 'forward', 'prerouting']).wired).toBe(false);
  });
});

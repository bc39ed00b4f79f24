import { describe, expect, it } from 'vitest';
import { canonicalCidr, cidrToListForm, keepTop, parseCidrLines, sortCidrs } from './block-list.ts';

describe('block list helpers', () => {
  it('canonicalises IPv4 addresses and networks', () => {
    expect(canonicalCidr('203.0.113.7')).toBe('203.0.113.7/32');
    expect(canonicalCidr('198.51.100.9/24')).toBe('198.51.100.0/24');
    // Blanks around an entry are refused like every other spelling outside the grammar.
    expect(canonicalCidr(' 198.51.100.9/24 ')).toBeUndefined();
    expect(canonicalCidr('0.0.0.0/0')).toBe('0.0.0.0/0');
    expect(canonicalCidr('256.1.1.1')).toBeUndefined();
    expect(canonicalCidr('1.2.3.4/33')).toBeUndefined();
    expect(canonicalCidr('::1')).toBeUndefined();
    expect(cidrToListForm('203.0.113.7/32')).toBe('203.0.113.7');
    expect(cidrToListForm('198.51.100.0/24')).toBe('198.51.100.0/24');
  });

  it('sorts numerically and parses list files', () => {
    expect(sortCidrs(['10.0.0.1/32', '9.255.0.0/16', '10.0.0.0/8', '10.0.0.1/32'])).toEqual([
      '9.255.0.0/16',
      '10.0.0.0/8',
      '10.0.0.1/32',
    ]);
    expect(parseCidrLines('# head\n203.0.113.7\n\n198.51.100.3/24 # net\nbogus\n')).toEqual([
      '198.51.100.0/24',
      '203.0.113.7/32',
    ]);
  });

  it('keeps the highest scores within capacity and counts the cut', () => {
    const { kept, cut } = keepTop(
      [
        { value: '192.0.2.1/32', score: 10 },
        { value: '192.0.2.2/32', score: 90 },
        { value: '192.0.2.3/32', score: 50 },
        { value: '192.0.2.1/32', score: 95 },
      ],
      2,
    );
    expect(kept).toEqual([
      { value: '192.0.2.1/32', score: 95 },
      { value: '192.0.2.2/32', score: 90 },
    ]);
    expect(cut).toBe(1);
  });
});

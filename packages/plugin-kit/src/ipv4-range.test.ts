import { describe, expect, it } from 'vitest';
import { parseIpv4 } from '@rampart/contracts';
import { rangeToCidrs } from './ipv4-range.ts';
import { sortCidrs } from './block-list.ts';
import { ipv4Codec, sortValues } from './engine/codec.ts';

describe('IPv4 ranges', () => {
  it('splits ranges into the fewest CIDRs', () => {
    expect(rangeToCidrs(parseIpv4('10.0.0.0')!.start, parseIpv4('10.0.1.255')!.start)).toEqual(['10.0.0.0/23']);
    expect(rangeToCidrs(parseIpv4('10.0.0.1')!.start, parseIpv4('10.0.0.6')!.start)).toEqual(['10.0.0.1/32', '10.0.0.2/31', '10.0.0.4/31', '10.0.0.6/32']);
    expect(rangeToCidrs(0, 0xffffffff)).toEqual(['0.0.0.0/0']);
  });

  it('the IPv4 codec sorts like sortCidrs', () => {
    const xs = ['9.0.0.0/8', '10.0.0.0/24', '10.0.0.0/8', '192.0.2.1/32', '100.64.0.0/10'];
    expect(sortValues(ipv4Codec, xs)).toEqual(sortCidrs(xs));
  });
});

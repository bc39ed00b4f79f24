import { describe, expect, it } from 'vitest';
import { parseConnections } from './ssh.ts';

describe('parseConnections', () => {
  it('reads hosts, host:port and [v6]:port, comma-separated with spaces', () => {
    expect(parseConnections(' 10.0.0.3, gw-b.example:2222 ,[2001:db8::1]:22,,')).toEqual([
      { host: '10.0.0.3' },
      { host: 'gw-b.example', port: 2222 },
      { host: '2001:db8::1', port: 22 },
    ]);
    expect(parseConnections('')).toEqual([]);
  });

  it('names the entry it cannot read', () => {
    expect(() => parseConnections('10.0.0.3, gw:99999')).toThrow("not a host or host:port: 'gw:99999'");
    expect(() => parseConnections('a b')).toThrow("'a b'");
  });
});

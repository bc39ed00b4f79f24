import { describe, expect, it } from 'vitest';
import { execChunks, parseConnections } from './ssh.ts';

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

describe('execChunks', () => {
  it('cuts by line count and by bytes, and sends a single long line alone', () => {
    expect(execChunks(['a', 'b', 'c'], 2)).toEqual(['a\nb', 'c']);
    expect(execChunks(['aaaa', 'bbbb', 'cccc'], 10, 10)).toEqual(['aaaa\nbbbb', 'cccc']);
    expect(execChunks(['x'.repeat(20), 'y'], 10, 10)).toEqual(['x'.repeat(20), 'y']);
    expect(execChunks([], 5)).toEqual([]);
    const lines = Array.from({ length: 1000 }, (_, i) => `/ip firewall address-list add list=rampart-a address=198.18.${i >> 8}.${i & 255} comment="rampart"`);
    const chunks = execChunks(lines, 500);
    expect(chunks.every((c) => Buffer.byteLength(c) <= 32_000)).toBe(true);
    expect(chunks.join('\n')).toBe(lines.join('\n'));
  });
});

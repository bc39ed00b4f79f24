import { describe, expect, it } from 'vitest';
import { kindOf } from './indicator-kind.ts';

describe('kindOf', () => {
  it.each([
    ['203.0.113.7', 'ipv4'],
    ['198.51.100.0/24', 'ipv4'],
    ['010.0.0.1', 'ipv4'],
    ['10.0.0.1/08', 'ipv4'],
    ['d41d8cd98f00b204e9800998ecf8427e', 'file'],
    ['https://example.com/a', 'url'],
    ['example.com', 'domain'],
    ['1.2.3.4.example', 'domain'],
  ])('%j is looked up as %s', (text, kind) => {
    expect(kindOf(text)).toBe(kind);
  });
});

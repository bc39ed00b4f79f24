import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { findUnstorableText, walkUnstorable } from './text-guard.ts';

const text = fc.oneof(fc.string(), fc.constantFrom('a\u0000b', '\uD800', 'x\uDC00', '\uD83D\uDE00', 'ok'));
const value = fc.letrec((tie) => ({
  leaf: fc.oneof(text, fc.integer(), fc.boolean(), fc.constant(null)),
  node: fc.oneof({ depthSize: 'small' }, tie('leaf'), fc.array(tie('node'), { maxLength: 4 }), fc.dictionary(text, tie('node'), { maxKeys: 4 })),
})).node;

describe('findUnstorableText', () => {
  it('finds what the walk over every string finds, the same first path', () => {
    fc.assert(fc.property(value, (v) => findUnstorableText(v, 'body') === walkUnstorable(v, 'body')), { numRuns: 2000 });
  });

  it('names the path of parameters and query strings', () => {
    expect(findUnstorableText({ ipv4: '192.0.2.1' }, 'params')).toBeUndefined();
    expect(findUnstorableText({ full: 'yes', q: 'a\u0000' }, 'querystring')).toBe('querystring.q');
    expect(findUnstorableText({ 'k\uD800': 'v' }, 'querystring')).toBe('querystring.k?');
    expect(findUnstorableText(undefined, 'body')).toBeUndefined();
  });
});

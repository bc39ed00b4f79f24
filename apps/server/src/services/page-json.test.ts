import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EVAL_JS, EXEC_PYTHON } from '@rampart/scoring';
import { stringify, writtenOnce } from './page-json.ts';

const user = () => ({ guid: 'RMP-GUID-1', name: 'Ann "A"', surname: '', username: 'ann@example.org', role: 1, unsuccessful_login: 0, member_of: { gid: 'RMP-GID-1', name: 'Acme', trust: 0.3, delay: '0' } });

describe('page envelopes are written byte for byte as JSON.stringify writes them', () => {
  it('look-up and feed pages, with the formulas and a written-once user', () => {
    const once = writtenOnce(user());
    const record = { gid: 'RMP-RULE-GID-1', ip: '192.0.2.1', ts: 1_795_956_493, entry_ts: 1_795_952_893, is_network: false, score: 124, delay: 0, dec: 123.93141492236022, decision: null, ttl: null };
    const pages = [
      { header: { type: 'IPv4', version: 2, ts: '1795956581', page_size: 1, delay: 0, eval: EVAL_JS, exec_python: EXEC_PYTHON, user: once }, body: [record] },
      { header: { type: 'IPv4', version: 2, ts: '1795956581', next_ts: 12, page_size: 0, delay: 60, eval: EVAL_JS, exec_python: EXEC_PYTHON, user: user() }, body: [] },
      { header: {}, body: [] },
      { header: { a: undefined, b: () => 1, c: new Date(0), d: [1, 'x', null], e: 'tab\there', '1': 'first' }, body: { x: 1 } },
      { header: { user: once }, body: undefined },
    ];
    for (let round = 0; round < 2; round++) for (const page of pages) expect(stringify(page)).toBe(JSON.stringify(page));
  });

  it('anything else is JSON.stringify', () => {
    const other = [null, 1, 'text', [1, 2], { body: [], header: {} }, { header: {}, body: [], more: 1 }, { header: [1], body: 2 }, { header: null, body: 1 }, { header: { toJSON: () => 'x' }, body: 1 }];
    for (const x of other) expect(stringify(x)).toBe(JSON.stringify(x));
    fc.assert(fc.property(fc.jsonValue(), fc.jsonValue(), (header, body) => stringify({ header, body }) === JSON.stringify({ header, body })));
    fc.assert(fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.jsonValue(), (header, body) => stringify({ header, body }) === JSON.stringify({ header, body })));
  });

  it('writtenOnce freezes the object and what it holds', () => {
    const once = writtenOnce(user());
    expect(Object.isFrozen(once) && Object.isFrozen(once.member_of)).toBe(true);
    expect(() => {
      (once.member_of as { name: string }).name = 'changed';
    }).toThrow(TypeError);
  });
});

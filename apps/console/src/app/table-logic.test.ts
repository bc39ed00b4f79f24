import { describe, expect, it } from 'vitest';
import { compareValues, componentRows, guessFormat, nextSort, roundComponent, sortRows, totalsLabel } from './table-logic.ts';

describe('table sorting', () => {
  it('orders numbers by value, addresses by address, text naturally, empty cells last', () => {
    expect(compareValues(9, 10)).toBeLessThan(0);
    expect(compareValues('10.0.0.9', '10.0.0.10')).toBeLessThan(0);
    expect(compareValues('9.255.255.255', '10.0.0.0/8')).toBeLessThan(0);
    expect(compareValues('10.0.0.0/8', '10.0.0.0/24')).toBeLessThan(0);
    expect(compareValues('agent-2', 'agent-10')).toBeLessThan(0);
    expect(compareValues('Alive', 'alive')).toBe(0);
    expect(compareValues(null, 1)).toBe(1);
    expect(compareValues('', '')).toBe(0);
  });

  it('sorts a copy, stable, with empty cells last in both directions', () => {
    const rows = [
      { v: '10.0.0.10', s: 3 },
      { v: '10.0.0.9', s: null },
      { v: '10.0.0.2', s: 3 },
      { v: '9.1.1.1', s: 7.5 },
    ];
    expect(sortRows(rows, (r) => r.v, 'ascending').map((r) => r.v)).toEqual(['9.1.1.1', '10.0.0.2', '10.0.0.9', '10.0.0.10']);
    expect(sortRows(rows, (r) => r.s, 'ascending').map((r) => r.v)).toEqual(['10.0.0.10', '10.0.0.2', '9.1.1.1', '10.0.0.9']);
    expect(sortRows(rows, (r) => r.s, 'descending').map((r) => r.v)).toEqual(['9.1.1.1', '10.0.0.10', '10.0.0.2', '10.0.0.9']);
    expect(rows[0]!.v).toBe('10.0.0.10');
  });

  it('cycles a header through ascending, descending and the API order', () => {
    const a = nextSort(undefined, 'Score');
    expect(a).toEqual({ column: 'Score', direction: 'ascending' });
    expect(nextSort(a, 'Score')).toEqual({ column: 'Score', direction: 'descending' });
    expect(nextSort({ column: 'Score', direction: 'descending' }, 'Score')).toBeUndefined();
    expect(nextSort({ column: 'Score', direction: 'descending' }, 'Kind')).toEqual({ column: 'Kind', direction: 'ascending' });
  });
});

describe('table totals', () => {
  it('says the count of the whole list when known, else which rows are shown', () => {
    expect(totalsLabel({ shown: 50, total: 1234 })).toBe('50 of 1,234');
    expect(totalsLabel({ shown: 50, hasNext: true })).toBe('Rows 1–50, more on the next page');
    expect(totalsLabel({ shown: 50, before: 50, hasNext: true })).toBe('Rows 51–100, more on the next page');
    expect(totalsLabel({ shown: 3, before: 1000, hasNext: false })).toBe('Rows 1,001–1,003 of 1,003');
    expect(totalsLabel({ shown: 3 })).toBe('Rows 1–3 of 3');
    expect(totalsLabel({ shown: 0 })).toBe('No rows');
    expect(totalsLabel({ shown: 0, before: 50 })).toBe('No rows after row 50');
  });
});

describe('score components', () => {
  it('are rounded for reading, integers and text unchanged', () => {
    expect(roundComponent(0.4923101)).toBe(0.492);
    expect(roundComponent(0.000123456)).toBe(0.000123);
    expect(roundComponent(4.123456)).toBe(4.12);
    expect(roundComponent(492.31)).toBe(492);
    expect(roundComponent(7)).toBe(7);
    expect(roundComponent('v3.2')).toBe('v3.2');
    expect(roundComponent(null)).toBe(null);
  });

  it('carry their label and meaning, unknown ones their name', () => {
    expect(componentRows({ saturation: 0.49231, weight: 4.7321, extra: 1.23456 })).toEqual([
      { key: 'saturation', label: 'Saturation', value: 0.492, meaning: '1 − exp(−weight / 7): how close the weight is to the maximum score, from 0 to 1' },
      { key: 'weight', label: 'Weight', value: 4.73, meaning: 'Base weight + repeat weight' },
      { key: 'extra', label: 'extra', value: 1.23, meaning: '' },
    ]);
  });
});

describe('import format', () => {
  it('is guessed from the file name and text', () => {
    expect(guessFormat('list.csv', '1.2.3.4,ipv4,1,ssh')).toBe('csv');
    expect(guessFormat('paste', 'value,kind,confidence,source\n')).toBe('csv');
    expect(guessFormat('b.json', ' {"type": "bundle", "id": "bundle--1", "objects": []}')).toBe('stix21');
    expect(guessFormat('e.json', '{"Event": {"Attribute": []}}')).toBe('misp');
    expect(guessFormat('x.json', '{"a": 1}')).toBeUndefined();
    expect(guessFormat('notes.txt', 'hello')).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import { csvField, toCsv } from './csv.ts';

describe('CSV export', () => {
  it('quotes what needs quoting and defuses formulas', () => {
    expect(csvField('45.77.1.1')).toBe('45.77.1.1');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('line\nbreak')).toBe('"line\nbreak"');
    expect(csvField('=HYPERLINK("x")')).toBe(`"'=HYPERLINK(""x"")"`);
    expect(csvField('@SUM(A1)')).toBe("'@SUM(A1)");
    expect(csvField(-1)).toBe('-1');
    expect(csvField(null)).toBe('');
    expect(csvField(['ssh', 'waf'])).toBe('ssh waf');
  });

  it('writes a header and one line per row', () => {
    expect(toCsv<{ v: string; n: number }>([['value', (r) => r.v], ['score', (r) => r.n]], [{ v: 'x', n: 1 }, { v: 'y,z', n: 2 }])).toBe('value,score\r\nx,1\r\n"y,z",2\r\n');
  });
});

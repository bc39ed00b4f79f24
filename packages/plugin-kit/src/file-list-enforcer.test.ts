import { describe, expect, it } from 'vitest';
import { renderListFile } from './file-list-enforcer.ts';

describe('renderListFile', () => {
  it('writes the header, then one line per entry, every line ending in a newline', () => {
    const entries = [
      { value: '192.0.2.1/32', score: 7 },
      { value: '198.51.100.0/24', score: 3.5 },
    ];
    expect(renderListFile('# head', entries, (e) => `${e.value} ${e.score}`)).toBe('# head\n192.0.2.1/32 7\n198.51.100.0/24 3.5\n');
    expect(renderListFile('# head', [], () => 'never')).toBe('# head\n');
  });
});

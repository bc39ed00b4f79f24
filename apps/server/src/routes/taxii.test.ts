import { describe, expect, it } from 'vitest';
import { acceptsTaxii21 } from './taxii.ts';

describe('TAXII media types', () => {
  it('admits TAXII 2.1, its unversioned type and wildcards; nothing else', () => {
    for (const ok of [undefined, '', '*/*', 'application/*', 'application/taxii+json', 'application/taxii+json;version=2.1', 'application/json, application/taxii+json; version=2.1']) expect(acceptsTaxii21(ok), String(ok)).toBe(true);
    for (const bad of ['application/json', 'application/taxii+json;version=2.0', 'text/html', 'application/taxii+json;version=2.1;q=0']) expect(acceptsTaxii21(bad), bad).toBe(false);
  });

});

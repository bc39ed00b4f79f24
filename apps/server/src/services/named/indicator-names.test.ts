import { describe, expect, it } from 'vitest';
import { ApiError } from '@rampart/contracts';
import { normalizeDomain, normalizeUrl } from './indicator-names.ts';

describe('normalizeDomain', () => {
  it.each([
    ['Example.COM', 'example.com'],
    ['example.com.', 'example.com'],
    ['Bücher.Example', 'xn--bcher-kva.example'],
    ['xn--bcher-kva.EXAMPLE.', 'xn--bcher-kva.example'],
    ['faß.de', 'xn--fa-hia.de'],
    ['  padded.example  ', 'padded.example'],
  ])('%s -> %s', (input, expected) => expect(normalizeDomain(input)).toBe(expected));

  it.each(['localhost', '192.0.2.1', 'a..b', '-a.example', 'a_b.example', `${'a'.repeat(64)}.example`, `${'ü'.repeat(60)}.${'ü'.repeat(60)}.${'ü'.repeat(60)}.${'ü'.repeat(60)}.de`, ''])(
    'refuses %s with a 400 naming the field',
    (input) => {
      const error = (() => {
        try {
          normalizeDomain(input, 'params.domain_name');
        } catch (err) {
          return err;
        }
      })() as ApiError;
      expect(error).toBeInstanceOf(ApiError);
      expect(error.status).toBe(400);
      expect(error.errors).toEqual([{ path: 'params.domain_name', message: 'not a valid domain name' }]);
    },
  );
});

describe('normalizeUrl', () => {
  it.each([
    ['HTTP://Example.COM.:80/A/b?Q=1#frag', 'http://example.com/A/b?Q=1'],
    ['https://example.com:443', 'https://example.com/'],
    ['https://example.com:8443/x', 'https://example.com:8443/x'],
    ['ftp://Files.Example:21/pub', 'ftp://files.example/pub'],
    ['http://Bücher.example/ä b', 'http://xn--bcher-kva.example/%C3%A4%20b'],
    ['http://192.0.2.1/x', 'http://192.0.2.1/x'],
  ])('%s -> %s', (input, expected) => expect(normalizeUrl(input)).toBe(expected));

  it.each([
    ['not a url', 'not a valid URL'],
    ['javascript:alert(1)', 'only http, https and ftp URLs are indicators'],
    ['file:///etc/passwd', 'only http, https and ftp URLs are indicators'],
    [`http://example.com/${'ä'.repeat(400)}`, 'longer than 2048 characters once normalized'],
  ])('refuses %s', (input, message) => {
    expect(() => normalizeUrl(input)).toThrow(ApiError);
    try {
      normalizeUrl(input);
    } catch (err) {
      expect((err as ApiError).errors).toEqual([{ path: 'body.url', message }]);
    }
  });
});

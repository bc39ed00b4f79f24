// What the STIX 2.0 bundles (stix.ts) and the STIX 2.1 objects (stix21.ts) share.

export const PLATFORM_NAME = 'Rampart';

export type StixSubject =
  | { kind: 'ipv4'; value: string; isNetwork: boolean }
  | { kind: 'domain'; value: string }
  | { kind: 'url'; value: string }
  | { kind: 'file'; md5: string | null; sha1: string | null; sha256: string | null; fileName: string; fileType: string };

/** A STIX pattern string literal: the grammar allows any character but `'` and `\`, which are escaped. */
export function patternString(value: string): string {
  return `'${value.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
}


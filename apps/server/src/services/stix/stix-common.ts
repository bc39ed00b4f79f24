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


/** STIX hash names of the file digests the platform holds (the same in STIX 2.0 and 2.1). */
export const FILE_HASHES = [
  ['md5', 'MD5'],
  ['sha1', 'SHA-1'],
  ['sha256', 'SHA-256'],
] as const;

/** The pattern of a domain, URL or file digest, the same in STIX 2.0 and 2.1 (they differ on IPv4 networks only). */
export function namedPattern(subject: Exclude<StixSubject, { kind: 'ipv4' }>): string {
  switch (subject.kind) {
    case 'domain':
      return `[domain-name:value = ${patternString(subject.value)}]`;
    case 'url':
      return `[url:value = ${patternString(subject.value)}]`;
    case 'file': {
      const tests = FILE_HASHES.filter(([key]) => subject[key]).map(([key, name]) => `file:hashes.${name === 'MD5' ? name : `'${name}'`} = ${patternString(subject[key]!)}`);
      return `[${tests.join(' OR ')}]`;
    }
  }
}

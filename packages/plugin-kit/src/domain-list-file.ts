import { readFileSync } from 'node:fs';
import { domainCodec } from './kinds.ts';

/**
 * Domain names of a list file an operator keeps (a DNS whitelist): one a line, `#` comments,
 * blank lines and names that are not domains skipped; canonical, unique, in the kind's order.
 */
export function parseDomainList(text: string): string[] {
  const names = new Set<string>();
  for (const raw of text.split('\n')) {
    const name = domainCodec.canonical(raw.replace(/#.*/, '').trim());
    if (name) names.add(name);
  }
  return [...names].sort(domainCodec.compare);
}

/** `parseDomainList` of the file at `path`; an empty path or a missing file is an empty list. */
export function readDomainListFile(path: string): string[] {
  if (!path) return [];
  try {
    return parseDomainList(readFileSync(path, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

import type { IndicatorKind } from './stix21.ts';

/**
 * The reading side of stix21Pattern: a STIX 2.1 indicator pattern naming one observable by a
 * comparison `[<object>:<path> = '<value>']` (several joined by OR name the same file by its
 * digests). Returns what it names, or why it is not one Rampart holds.
 */
export type PatternSubject = { kind: IndicatorKind; value: string } | { problem: 'malformed' | 'unsupported_type'; message: string };

const COMPARISON = /^\s*([a-z0-9-]+):([A-Za-z0-9_.'-]+)\s*=\s*'((?:[^'\\]|\\.)*)'\s*$/;
const HELD_OBJECTS = ['ipv4-addr', 'domain-name', 'url', 'file'];
const FILE_HASH_PATHS: Record<string, true> = { "hashes.'sha-256'": true, 'hashes.sha256': true, "hashes.'sha-1'": true, 'hashes.sha1': true, 'hashes.md5': true };

export function parseStixPattern(pattern: string): PatternSubject {
  const trimmed = pattern.trim();
  if (!trimmed.startsWith('[') || !trimmed.endsWith(']')) return { problem: 'malformed', message: 'a pattern is one observation expression in brackets' };
  const inner = trimmed.slice(1, -1);
  if (/\]\s*(AND|OR|FOLLOWEDBY)\s*\[/.test(inner)) return { problem: 'unsupported_type', message: 'patterns joining several observations are not imported' };
  const terms = inner.split(/\s+OR\s+/);
  const found: Array<{ kind: IndicatorKind; value: string }> = [];
  for (const term of terms) {
    const head = /^\s*([a-z0-9-]+):/.exec(term)?.[1];
    if (head !== undefined && !HELD_OBJECTS.includes(head)) return { problem: 'unsupported_type', message: `${head} is not an indicator kind Rampart holds` };
    if (/\s+AND\s+/.test(term)) return { problem: 'unsupported_type', message: 'patterns combining properties with AND are not imported' };
    const m = COMPARISON.exec(term);
    if (!m) return { problem: 'malformed', message: `cannot read the comparison ${term.trim()}` };
    const [, object, path, raw] = m as unknown as [string, string, string, string];
    const value = raw.replace(/\\(.)/g, '$1');
    if (object === 'ipv4-addr' && path === 'value') found.push({ kind: 'ipv4', value });
    else if (object === 'domain-name' && path === 'value') found.push({ kind: 'domain', value });
    else if (object === 'url' && path === 'value') found.push({ kind: 'url', value });
    else if (object === 'file' && FILE_HASH_PATHS[path.toLowerCase()]) found.push({ kind: 'file', value });
    else return { problem: 'unsupported_type', message: `${object}:${path} is not an indicator kind Rampart holds` };
  }
  // A file named by several digests is one file: its strongest digest names it.
  if (found.length > 1 && found.every((f) => f.kind === 'file')) return found.reduce((a, b) => (b.value.length > a.value.length ? b : a));
  if (found.length !== 1) return { problem: 'unsupported_type', message: 'a pattern naming several observables is not imported' };
  return found[0]!;
}

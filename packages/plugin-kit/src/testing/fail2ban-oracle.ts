import { readFileSync } from 'node:fs';

/** One annotated line of a fail2ban sample log (`# failJSON: {...}` followed by the line). */
export interface OracleEntry {
  lineNo: number;
  line: string;
  match: boolean;
  host?: string;
  time?: string;
  attempts?: number;
  constraint?: string;
  desc?: string;
}

/** Lines between two `# filterOptions:` comments, run with a fresh filter per option set. */
export interface OracleSection {
  /** The option sets as written, e.g. `[{}, {"mode": "aggressive"}]`. */
  options: Record<string, string>[];
  /** Every log line of the section in order, annotated or not (filters keep multi-line state). */
  lines: { lineNo: number; line: string; entry?: OracleEntry }[];
}

/** Reads a fail2ban sample file (`fail2ban/tests/files/logs/<filter>`) into sections. */
export function readFail2banOracle(path: string): OracleSection[] {
  const sections: OracleSection[] = [];
  let current: OracleSection = { options: [{}], lines: [] };
  let pending: OracleEntry | undefined;
  const text = readFileSync(path, 'utf8').split('\n');
  text.forEach((line, i) => {
    if (line.startsWith('# filterOptions:')) {
      if (current.lines.length > 0) sections.push(current);
      const parsed: unknown = JSON.parse(line.slice('# filterOptions:'.length));
      current = { options: (Array.isArray(parsed) ? parsed : [parsed]) as Record<string, string>[], lines: [] };
      return;
    }
    if (line.startsWith('# failJSON:')) {
      pending = { ...(JSON.parse(line.slice('# failJSON:'.length)) as Omit<OracleEntry, 'lineNo' | 'line'>), lineNo: i + 2, line: '' };
      return;
    }
    if (line.startsWith('#') || line.trim() === '') return;
    const entry = pending ? { ...pending, line } : undefined;
    pending = undefined;
    current.lines.push({ lineNo: i + 1, line, ...(entry ? { entry } : {}) });
  });
  if (current.lines.length > 0) sections.push(current);
  return sections;
}

/** Local time of a failJSON `time` (fail2ban's tests run in Europe/Berlin) as epoch seconds. */
export function oracleTime(time: string): number {
  return Date.parse(time) / 1000;
}

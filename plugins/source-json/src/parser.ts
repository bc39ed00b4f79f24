import { canonicalIp } from '@rampart/plugin-kit';
import type { Detection, LineParser } from '@rampart/plugin-kit';
import { field } from './stream.ts';
import type { JsonStream } from './stream.ts';

/** The `json_source` parser: one detection per NDJSON event that names an address. */
export class JsonEventParser implements LineParser {
  private readonly counters = { lines: 0, invalidJson: 0, filteredOut: 0, noAddress: 0, detections: 0 };
  private readonly when: [string, Set<unknown>][];

  constructor(private readonly stream: JsonStream) {
    this.when = Object.entries(stream.when).map(([path, values]) => [path, new Set<unknown>(values)]);
  }

  stats(): Record<string, number> {
    return { ...this.counters };
  }

  push(line: string, readAt: number): Detection[] {
    this.counters.lines++;
    if (line.trim() === '') return [];
    let event: unknown;
    try {
      event = JSON.parse(line);
    } catch {
      this.counters.invalidJson++;
      return [];
    }
    if (!this.when.every(([path, values]) => values.has(field(event, path)))) {
      this.counters.filteredOut++;
      return [];
    }
    const address = field(event, this.stream.address_field);
    const ip = typeof address === 'string' ? canonicalIp(stripPort(address)) : undefined;
    if (ip === undefined) {
      this.counters.noAddress++;
      return [];
    }
    const kindValue = this.stream.kind_field ? field(event, this.stream.kind_field) : undefined;
    const kind = typeof kindValue === 'string' && /^[\w.-]{1,64}$/.test(kindValue) ? kindValue : this.stream.kind;
    const attemptsValue = this.stream.attempts_field ? Number(field(event, this.stream.attempts_field)) : 1;
    const attempts = Number.isSafeInteger(attemptsValue) && attemptsValue >= 1 ? Math.min(attemptsValue, 1_000_000) : 1;
    this.counters.detections++;
    return [{ ts: eventTime(field(event, this.stream.time_field)) ?? readAt, ip, source: 'json_source', kind, attempts }];
  }

  flush(): Detection[] {
    return [];
  }
}

/** Epoch seconds from epoch seconds, epoch milliseconds (> 10^11) or an ISO 8601 string. */
export function eventTime(value: unknown): number | undefined {
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\d+(?:\.\d+)?$/.test(value) ? Number(value) : undefined;
  if (n !== undefined) return Number.isFinite(n) && n > 0 ? (n > 1e11 ? n / 1000 : n) : undefined;
  if (typeof value !== 'string') return undefined;
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? ms / 1000 : undefined;
}

function stripPort(text: string): string {
  const v4 = /^(\d{1,3}(?:\.\d{1,3}){3}):\d{1,5}$/.exec(text);
  if (v4) return v4[1]!;
  const v6 = /^\[([^\]]+)\]:\d{1,5}$/.exec(text);
  return v6 ? v6[1]! : text;
}

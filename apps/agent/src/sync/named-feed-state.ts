import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import type { IndicatorKind } from '@rampart/plugin-kit';
import { writeDurable } from '../runtime/durable-file.ts';
import type { NamedEntry } from './named-block-state.ts';

const Snapshot = z.object({
  version: z.literal(1),
  kind: z.enum(['domain', 'url', 'file']),
  cursor: z.number().min(0),
  listed_at: z.number().min(0),
  // [values, s0, ts, decision, ttl, flags]
  entries: z.array(z.tuple([z.array(z.string()).min(1), z.int(), z.int(), z.union([z.literal(-1), z.literal(0), z.literal(1)]), z.int(), z.int()])),
});

export interface NamedFeedSnapshot {
  /** `ts` cursor of the kind's feed: every record up to it is in `entries`. */
  cursor: number;
  listedAt: number;
  entries: NamedEntry[];
}

/**
 * The cursor of one named kind's feed and the records it covers, saved together in one JSON file
 * (`feed-state-<kind>.json`, replaced atomically), as feed-state.ts does for IPv4 (whose
 * `feed-state.bin` is untouched, so an older agent's state keeps loading). A file that does not
 * parse is ignored: the kind is then pulled again from cursor 0.
 */
export class NamedFeedStateFile {
  readonly path: string;

  constructor(
    stateDir: string,
    readonly kind: Exclude<IndicatorKind, 'ipv4'>,
  ) {
    this.path = join(stateDir, `feed-state-${kind}.json`);
  }

  async load(): Promise<NamedFeedSnapshot | undefined> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch {
      return undefined;
    }
    const parsed = Snapshot.safeParse(raw);
    if (!parsed.success || parsed.data.kind !== this.kind) return undefined;
    return {
      cursor: parsed.data.cursor,
      listedAt: parsed.data.listed_at,
      entries: parsed.data.entries.map(([values, s0, ts, decision, ttl, flags]) => ({ values, s0, ts, decision, ttl, flags })),
    };
  }

  async save(snapshot: { cursor: number; listedAt: number; entries: Iterable<NamedEntry> }): Promise<void> {
    const entries = [...snapshot.entries].map((e) => [e.values, e.s0, e.ts, e.decision, e.ttl, e.flags]);
    await writeDurable(this.path, JSON.stringify({ version: 1, kind: this.kind, cursor: snapshot.cursor, listed_at: snapshot.listedAt, entries }));
  }
}

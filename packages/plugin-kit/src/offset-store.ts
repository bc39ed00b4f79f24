import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { writeFileAtomic } from './atomic-file.ts';

/** Where a tailer stopped in a file: enough to resume after a restart and to notice rotation. */
export interface TailPosition {
  /** Inode of the file the offset belongs to. */
  ino: number;
  /** Bytes consumed: always just after a newline, so no line is read twice or cut. */
  offset: number;
  /** Hex of the file's first bytes, to notice a file replaced or truncated under the same inode. */
  head: string;
}

/** Persists tail positions by key (usually the tailed path). The agent gives a state file. */
export interface OffsetStore {
  load(key: string): Promise<TailPosition | undefined>;
  save(key: string, position: TailPosition): Promise<void>;
}

/**
 * All positions in one JSON file, rewritten atomically (temp file, fsync, rename) on each save;
 * saves are serialised so a slow write never overtakes a newer one.
 */
export function fileOffsetStore(path: string): OffsetStore {
  let cache: Record<string, TailPosition> | undefined;
  let chain: Promise<void> = Promise.resolve();

  async function all(): Promise<Record<string, TailPosition>> {
    if (cache) return cache;
    try {
      const parsed: unknown = JSON.parse(await readFile(path, 'utf8'));
      cache = typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, TailPosition>) : {};
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' && !(err instanceof SyntaxError)) throw err;
      cache = {};
    }
    return cache;
  }

  return {
    async load(key) {
      const p = (await all())[key];
      return p && Number.isSafeInteger(p.ino) && Number.isSafeInteger(p.offset) && typeof p.head === 'string' ? p : undefined;
    },
    save(key, position) {
      const run = chain.then(async () => {
        const positions = await all();
        positions[key] = position;
        await mkdir(dirname(path), { recursive: true });
        await writeFileAtomic(path, JSON.stringify(positions), 0o600);
      });
      chain = run.catch(() => undefined);
      return run;
    },
  };
}

/** An in-memory store, for `parse` runs and tests that need no persistence. */
export function memoryOffsetStore(): OffsetStore {
  const positions = new Map<string, TailPosition>();
  return {
    load: async (key) => positions.get(key),
    save: async (key, position) => void positions.set(key, { ...position }),
  };
}

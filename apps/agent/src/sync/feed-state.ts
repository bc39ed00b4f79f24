import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { RecordTable } from './record-table.ts';
import { writeDurable } from '../runtime/durable-file.ts';

const MAGIC = 0x524d5046; // "RMPF"
const VERSION = 1;
const HEADER = 4 + 4 + 8 + 8;

export interface FeedSnapshot {
  /** `ts` cursor of the /ips feed: every record up to it is in `table`. */
  cursor: number;
  /** Epoch seconds of the last full reconcile. */
  listedAt: number;
  table: RecordTable;
}

/**
 * The feed cursor and the records it covers, saved together in one file (replaced atomically),
 * so a restart resumes the feed where the saved table ends: never a cursor ahead of its records.
 */
export class FeedStateFile {
  readonly path: string;

  constructor(stateDir: string) {
    this.path = join(stateDir, 'feed-state.bin');
  }

  async load(): Promise<FeedSnapshot | undefined> {
    let buf: Buffer;
    try {
      buf = await readFile(this.path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    if (buf.length < HEADER || buf.readUInt32LE(0) !== MAGIC || buf.readUInt32LE(4) !== VERSION) return undefined;
    return { cursor: buf.readDoubleLE(8), listedAt: buf.readDoubleLE(16), table: RecordTable.deserialize(buf.subarray(HEADER)) };
  }

  async save(snapshot: FeedSnapshot): Promise<void> {
    const file = snapshot.table.serialize(HEADER);
    file.writeUInt32LE(MAGIC, 0);
    file.writeUInt32LE(VERSION, 4);
    file.writeDoubleLE(snapshot.cursor, 8);
    file.writeDoubleLE(snapshot.listedAt, 16);
    await writeDurable(this.path, file);
  }
}

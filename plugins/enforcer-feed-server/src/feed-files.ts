import { createHash } from 'node:crypto';
import { open, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { canonicalCidr, cidrToListForm, keepTop, writeFileAtomic, type BlockEntry } from '@rampart/plugin-kit';

/*
 * The served files: one plain list per feed, `<dir>/<feed>.txt`, one address (`203.0.113.7`) or
 * network (`198.51.100.0/24`) a line, LF endings, no comments or header, which every device of
 * this plugin reads the same way (PAN-OS EDL, FortiGate threat feed, Cisco SI feed). An empty
 * list is an empty file, never a missing one.
 */

export interface Feed {
  name: string;
  /** The device's capacity for this feed: the top entries by score are served, the rest cut. */
  capacity: number;
}

export const feedFile = (dir: string, feed: string) => join(dir, `${feed}.txt`);

/** The body of a feed holding `entries` (in list order). */
export function feedBody(entries: readonly BlockEntry[]): string {
  let out = '';
  for (const e of entries) out += `${cidrToListForm(e.value)}\n`;
  return out;
}

/** What a feed of `capacity` serves of the enforced set: the highest scores, in list order. */
export function feedEntries(enforced: readonly BlockEntry[], capacity: number): BlockEntry[] {
  return enforced.length <= capacity ? [...enforced] : keepTop(enforced, capacity).kept;
}

/** The canonical CIDRs of a served body (a line that is not one is skipped). */
export function parseFeed(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const cidr = line ? canonicalCidr(line) : undefined;
    if (cidr) out.push(cidr);
  }
  return out;
}

/** A strong validator of a body: changes with every byte. */
export function etagOf(body: Buffer | string): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 32)}"`;
}

/** The file's body, or undefined when it does not exist. */
export async function readFeed(dir: string, feed: string): Promise<string | undefined> {
  try {
    return await readFile(feedFile(dir, feed), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * Publishes `body` as the feed's new version unless the file already holds it (an unchanged
 * list keeps its ETag and Last-Modified, so devices get 304). Each version's modification time
 * is a whole second later than the one before: Last-Modified has a resolution of one second, and
 * two versions within one second would otherwise answer If-Modified-Since with a wrong 304.
 * Returns whether the file changed.
 */
export async function publishFeed(dir: string, feed: string, body: string, now = Date.now()): Promise<boolean> {
  const path = feedFile(dir, feed);
  const current = await readFeed(dir, feed);
  if (current === body) return false;
  let previous = 0;
  if (current !== undefined) previous = (await stat(path)).mtimeMs;
  const seconds = Math.max(Math.floor(now / 1000), Math.floor(previous / 1000) + 1);
  await writeFileAtomic(path, body, 0o644, new Date(seconds * 1000));
  return true;
}

export interface FeedVersion {
  body: Buffer;
  etag: string;
  /** Whole seconds since the epoch. */
  modifiedSeconds: number;
}

/**
 * Reads one whole version of a feed. The file is replaced by rename, never written in place, so
 * what an open descriptor reads is one version from its first byte to its last, whatever is
 * published meanwhile. The last version read is kept per feed and reused while the file's inode,
 * size and mtime stay the same.
 */
export class FeedReader {
  readonly #cache = new Map<string, { key: string; version: FeedVersion }>();

  constructor(private readonly dir: string) {}

  async read(feed: string): Promise<FeedVersion | undefined> {
    let handle;
    try {
      handle = await open(feedFile(this.dir, feed), 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    try {
      const st = await handle.stat();
      const key = `${st.ino}:${st.size}:${st.mtimeMs}`;
      const cached = this.#cache.get(feed);
      if (cached?.key === key) return cached.version;
      const body = await handle.readFile();
      const version = { body, etag: etagOf(body), modifiedSeconds: Math.floor(st.mtimeMs / 1000) };
      this.#cache.set(feed, { key, version });
      return version;
    } finally {
      await handle.close();
    }
  }
}

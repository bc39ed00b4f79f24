/**
 * Cursor walkers shared by every feed. Both stop on their own at the end of the data and refuse
 * to loop forever on a server that does not advance its cursor.
 */

export interface TsPage<R> {
  header: { next_ts?: number | undefined };
  body: R[];
}

/**
 * Follows `ts` cursors (decisions.md, Compatibility): the next `ts` is `header.next_ts`, or the
 * `ts` of the last record when the header has none; an empty body ends the walk.
 */
export async function* walkTs<R extends { ts: number }, P extends TsPage<R>>(
  fetchPage: (ts: number) => Promise<P>,
  startTs: number,
): AsyncGenerator<P, number> {
  let ts = startTs;
  for (;;) {
    const page = await fetchPage(ts);
    if (page.body.length === 0) return ts;
    const next = page.header.next_ts ?? page.body.at(-1)!.ts;
    if (next <= ts) throw new Error(`feed cursor did not advance past ts=${ts}`);
    yield page;
    ts = next;
  }
}

export interface CursorPage<T> {
  items: T[];
  /** Value of the `next_page` response header; absent on the last page. */
  nextPage: string | undefined;
}

/** Follows `next_page` header cursors until a page comes without one. */
export async function* walkPages<T>(fetchPage: (page: string | undefined) => Promise<CursorPage<T>>): AsyncGenerator<CursorPage<T>> {
  let cursor: string | undefined;
  const seen = new Set<string>();
  for (;;) {
    const page = await fetchPage(cursor);
    yield page;
    if (page.nextPage === undefined) return;
    if (seen.has(page.nextPage)) throw new Error('list cursor repeated itself');
    seen.add(page.nextPage);
    cursor = page.nextPage;
  }
}

/** Splits a plain-text list (`CSV`: one per line; `LIST`: comma-separated) into its entries. */
export function splitList(text: string): string[] {
  return text
    .split(/[\n,]/)
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0);
}

/**
 * Splits a `CSV` list of one field per line (the score lists of domains, URLs and digests) into
 * its entries: a field the server quoted (a URL holding a comma or a quote, RFC 4180) is unquoted.
 */
export function splitCsvLines(text: string): string[] {
  const out: string[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.trim() === '') continue;
    out.push(line.startsWith('"') && line.endsWith('"') && line.length >= 2 ? line.slice(1, -1).replaceAll('""', '"') : line.trim());
  }
  return out;
}

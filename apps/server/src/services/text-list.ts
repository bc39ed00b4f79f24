import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { CursorCodec } from './cursor.ts';
import type { CachedListBody, ListBodyCache } from './list-body-cache.ts';

/** Spec 8: lists beyond 10,000 entries need several paged calls. */
export const LIST_PAGE_LINES = 10_000;
/** Rows per store query while streaming: memory stays bounded by one chunk, whatever the list size. */
export const LIST_CHUNK_ROWS = 2_000;
/**
 * Text is handed to the socket in pieces of about this many characters: short-lived strings
 * that die young, instead of megabyte strings that stay in the old generation until a full GC.
 */
const PIECE_CHARS = 32_768;

/**
 * Where a plain-text list's rows come from. Rows are ordered by a unique key (JSON-serializable,
 * compared by the store) and already filtered by the store, so every row becomes one entry.
 * `after` is exclusive, `upTo` inclusive; null means unbounded on that side.
 */
export interface TextListSource<Row, Key> {
  /** At most `limit` rows with after < key <= upTo, in key order. */
  rows(after: Key | null, upTo: Key | null, limit: number): Promise<Row[]>;
  /**
   * The key of the `n`-th row after `after` (or of the last row when fewer exist; null when
   * none) and whether any row lies beyond it. Reads keys only: the page is never held in memory.
   */
  boundary(after: Key | null, n: number): Promise<{ last: Key | null; more: boolean }>;
  /**
   * A token that changes whenever the entries in (after, upTo] would change (rows entering or
   * leaving, a changed row). Feeds the ETag, so it must not depend on anything else.
   */
  version(after: Key | null, upTo: Key | null): Promise<string>;
  key(row: Row): Key;
  /** Rows per `rows` call this source prefers (one over memory, e.g. a small one): overrides `chunkRows`. */
  chunkRows?: number;
  /**
   * Optional fast path: up to `limit` entries after `after` (<= upTo) already written as they
   * would be by `line` in `format` (`first`: no comma before the first entry). Used instead of
   * `rows` + `line` while present and not null (null: the rest of the list comes from `rows`);
   * it must write exactly the same bytes.
   */
  text?(after: Key | null, upTo: Key | null, limit: number, format: 'lines' | 'comma', first: boolean): Promise<{ text: string | Uint8Array; last: Key | null; count: number } | null>;
  /**
   * Optional fast path for a paged list without a header: the whole page after `after` in one
   * pass, as `boundary`, `version` and `text` would give it (the same bytes), sent as one body.
   * null: the page comes from the other methods.
   */
  page?(after: Key | null, n: number, format: 'lines' | 'comma'): Promise<{ text: Uint8Array; last: Key | null; more: boolean; version: string } | null>;
}

export interface TextListOptions<Row, Key> {
  source: TextListSource<Row, Key>;
  cursors: CursorCodec;
  /** Everything that selects the rows; a cursor only continues a list with equal filters (else 400). */
  filters: Record<string, unknown>;
  /** The `page` query value (a `next_page` header of an earlier call). */
  page?: string | undefined;
  /** false: the whole list in one streamed response, no `next_page` (e.g. `/flat`). */
  paginate: boolean;
  /** `lines`: one entry per line; `comma`: entries separated by commas, no trailing separator. */
  format: 'lines' | 'comma';
  /** A first line sent before the entries of every response (a CSV header). */
  header?: string;
  line(row: Row): string;
  /** What else the bytes depend on (e.g. the request second when a column is a live score). */
  etagSalt?: string;
  pageLines?: number;
  chunkRows?: number;
  /**
   * Keep the rendered body (services/list-body-cache.ts): `key` names what the source's rows
   * depend on (the organization's view, the second, the data's generation); the page, format,
   * header and salt are added here. `current()`: whether that generation is still the newest.
   */
  cache?: { store: ListBodyCache; key: string; current(): boolean };
}

/** True when an `If-None-Match` header names this ETag (or `*`); weak validators compare equal. */
export function etagMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  const bare = (tag: string) => tag.trim().replace(/^W\//, '');
  return ifNoneMatch.split(',').some((tag) => tag.trim() === '*' || bare(tag) === bare(etag));
}

function etagOf(parts: unknown[]): string {
  return `"${createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 27)}"`;
}

/** RFC 4180: quote a field holding a comma, quote or line break. */
export function csvField(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/**
 * One value (a URL) as one entry of a text list, whatever it holds: CR and LF are
 * percent-encoded in every format (a list can never be split into more lines by what it
 * carries); in the comma-separated format commas are too; in CSV a field with a comma or a
 * quote is quoted as RFC 4180 says.
 */
export function listEntry(value: string, format: 'csv' | 'comma'): string {
  const oneLine = value.replaceAll('\r', '%0D').replaceAll('\n', '%0A');
  return format === 'comma' ? oneLine.replaceAll(',', '%2C') : csvField(oneLine);
}

async function* entries<Row, Key>(options: TextListOptions<Row, Key>, after: Key | null, upTo: Key | null): AsyncGenerator<string | Uint8Array> {
  const { source, line, format } = options;
  const chunk = source.chunkRows ?? options.chunkRows ?? LIST_CHUNK_ROWS;
  if (options.header !== undefined) yield `${options.header}\n`;
  // The next chunk is read from the store while this one is formatted and written, so the
  // store and the formatting overlap; at most two chunks are held at once.
  const read = (from: Key | null) => {
    const rows = source.rows(from, upTo, chunk);
    rows.catch(() => {}); // a client that hangs up leaves it unawaited; its failure is not a crash
    return rows;
  };
  let first = true;
  if (source.text) {
    for (;;) {
      const piece = await source.text(after, upTo, chunk, format, first);
      if (piece === null) break; // the rest comes from `rows`
      if (piece.text.length > 0) yield piece.text;
      if (piece.count < chunk || piece.last === null) return;
      after = piece.last;
      first = false;
    }
  }
  let pending = read(after);
  for (;;) {
    const rows = await pending;
    if (rows.length === 0) return;
    const more = rows.length === chunk;
    if (more) pending = read(source.key(rows.at(-1)!));
    let text = '';
    for (const row of rows) {
      if (format === 'lines') text += `${line(row)}\n`;
      else text += first ? line(row) : `,${line(row)}`;
      first = false;
      if (text.length >= PIECE_CHARS) {
        yield text;
        text = '';
      }
    }
    if (text) yield text;
    if (!more) return;
  }
}

/** The page a request answers: its last key, whether more follow, its version, and its bytes when already written. */
interface ResolvedPage<Key> {
  upTo: Key | null;
  more: boolean;
  empty: boolean;
  version: string;
  body: Uint8Array | null;
}

async function resolvePage<Row, Key>(options: TextListOptions<Row, Key>, after: Key | null): Promise<ResolvedPage<Key>> {
  const { source } = options;
  if (!options.paginate) return { upTo: null, more: false, empty: false, version: await source.version(after, null), body: null };
  const n = options.pageLines ?? LIST_PAGE_LINES;
  const whole = options.header === undefined && source.page ? await source.page(after, n, options.format) : null;
  if (whole) return { upTo: whole.last, more: whole.more, empty: whole.last === null, version: whole.last === null ? 'empty' : whole.version, body: whole.text };
  const bound = await source.boundary(after, n);
  const empty = bound.last === null;
  return { upTo: bound.last, more: bound.more, empty, version: empty ? 'empty' : await source.version(after, bound.last), body: null };
}

/** The whole body of a resolved page as one buffer, or null (and the pieces so far) once it outgrows `limit` bytes. */
async function renderWhole<Row, Key>(options: TextListOptions<Row, Key>, after: Key | null, page: ResolvedPage<Key>, limit: number): Promise<{ body: Buffer } | { pieces: Buffer[]; rest: AsyncGenerator<string | Uint8Array> }> {
  if (page.empty) return { body: Buffer.from(options.header !== undefined ? `${options.header}\n` : '') };
  // A copy of exactly its size: the page may be a view of a larger buffer, which the budget would not count.
  if (page.body) return { body: Buffer.from(page.body) };
  const pieces: Buffer[] = [];
  let size = 0;
  const rest = entries(options, after, page.upTo);
  for (;;) {
    const next = await rest.next();
    if (next.done) return { body: Buffer.concat(pieces, size) };
    const piece = typeof next.value === 'string' ? Buffer.from(next.value) : Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength);
    pieces.push(piece);
    size += piece.byteLength;
    if (size > limit) return { pieces, rest };
  }
}

async function* concatPieces(pieces: Buffer[], rest: AsyncGenerator<string | Uint8Array>): AsyncGenerator<string | Uint8Array> {
  yield* pieces;
  pieces.length = 0;
  yield* rest;
}

/**
 * `textListAnswer` through the body cache: a kept body answers at once (the same ETag and
 * next_page: its page's figures are kept with it); otherwise the page is resolved, a 304 answered
 * without rendering, and the body built once for every request waiting on the same key.
 */
async function cachedAnswer<Row, Key>(
  options: TextListOptions<Row, Key>,
  cache: NonNullable<TextListOptions<Row, Key>['cache']>,
  after: Key | null,
  ifNoneMatch: string | undefined,
  onStreamError: (err: unknown) => void,
): Promise<TextListAnswer> {
  const key = JSON.stringify([cache.key, options.filters, after, options.format, options.header ?? null, options.etagSalt ?? null]);
  const answer = (page: Omit<CachedListBody<Key>, 'body'>, body: () => string | Buffer | Readable): TextListAnswer => {
    const nextPage = page.more && page.upTo !== null ? options.cursors.encode(options.filters, page.upTo) : null;
    const etag = etagOf([options.filters, after, page.upTo, options.format, options.header ?? null, options.etagSalt ?? null, page.version]);
    return { etag, nextPage, notModified: etagMatches(ifNoneMatch, etag), body };
  };
  const hit = cache.store.get<Key>(key);
  if (hit) return answer(hit, () => hit.body);
  const page = await resolvePage(options, after);
  const fresh = answer(page, () => '');
  if (fresh.notModified || cache.store.known(key)) return { ...fresh, body: () => streamBody(options, after, page, onStreamError) };
  // A body past the budget is not kept: this request streams it on from where the build stopped.
  const overflow: { value: { pieces: Buffer[]; rest: AsyncGenerator<string | Uint8Array> } | null } = { value: null };
  const made = await cache.store.take<Key>(
    key,
    async () => {
      const r = await renderWhole(options, after, page, cache.store.maxBytes);
      if ('body' in r) return { upTo: page.upTo, more: page.more, empty: page.empty, version: page.version, body: r.body };
      overflow.value = r;
      return null;
    },
    () => cache.current(),
  );
  if (made) return answer(made, () => made.body);
  const rest = overflow.value;
  if (rest === null) return { ...fresh, body: () => streamBody(options, after, page, onStreamError) };
  return {
    ...fresh,
    body: () => {
      const stream = Readable.from(concatPieces(rest.pieces, rest.rest), { highWaterMark: 1 });
      stream.on('error', onStreamError);
      return stream;
    },
  };
}

function streamBody<Row, Key>(options: TextListOptions<Row, Key>, after: Key | null, page: ResolvedPage<Key>, onStreamError: (err: unknown) => void): string | Buffer | Readable {
  if (page.empty) return options.header !== undefined ? `${options.header}\n` : '';
  if (page.body) return Buffer.from(page.body.buffer, page.body.byteOffset, page.body.byteLength);
  // One piece buffered ahead at most: the socket's pace decides how fast the store is read.
  const stream = Readable.from(entries(options, after, page.upTo), { highWaterMark: 1 });
  stream.on('error', onStreamError);
  return stream;
}

/** A list answer before it is sent: its headers, whether the client's copy is current, and its body. */
export interface TextListAnswer {
  etag: string;
  /** The cursor of the next page (absent on the last page). */
  nextPage: string | null;
  /** `If-None-Match` named the ETag: 304, no body. */
  notModified: boolean;
  /** The page written whole, or the entries streamed from the store chunk by chunk (read only when sent). */
  body(): string | Buffer | Readable;
}

/**
 * A plain-text list answer: resolves the page from the cursor, its ETag (a 304 when
 * `If-None-Match` names it) and `next_page` (absent on the last page, also given with a 304 so a
 * client can move on), and the body: the page the source wrote whole, or a stream of the entries.
 * Sending it is the route's (routes/text-list-reply.ts).
 */
export async function textListAnswer<Row, Key>(options: TextListOptions<Row, Key>, ifNoneMatch: string | undefined, onStreamError: (err: unknown) => void): Promise<TextListAnswer> {
  const after = options.page ? options.cursors.decode<Key>(options.page, options.filters) : null;
  if (options.cache) return cachedAnswer(options, options.cache, after, ifNoneMatch, onStreamError);
  const page = await resolvePage(options, after);
  const nextPage = page.more && page.upTo !== null ? options.cursors.encode(options.filters, page.upTo) : null;
  const etag = etagOf([options.filters, after, page.upTo, options.format, options.header ?? null, options.etagSalt ?? null, page.version]);
  return { etag, nextPage, notModified: etagMatches(ifNoneMatch, etag), body: () => streamBody(options, after, page, onStreamError) };
}

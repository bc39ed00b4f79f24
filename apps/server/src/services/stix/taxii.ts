import { createHash } from 'node:crypto';
import { ApiError, STIX_MEDIA_TYPE, TAXII_MAX_LIMIT, type TaxiiCollection, type TaxiiObjectsQuery } from '@rampart/contracts';
import type { Organization, Store } from '../../store/index.ts';
import type { CursorCodec } from '../cursor.ts';
import { isoMillis } from '../envelope.ts';
import { ALLIANCE_IDENTITY, IDENTITY_CREATED_TS, indicatorObject, parseIndicatorId, versionsOf, type IndicatorKind, type IndicatorState, type IndicatorVersion } from './stix21.ts';
import { indicatorSource, orgView, visibleBefore, type OrgView } from './taxii-sources.ts';

// TAXII 2.1 collections over the indicator feeds (OASIS TAXII 2.1, sections 4 and 5). A
// collection lists, in `date_added` order, one entry per object version: the version of an
// indicator's anchor is added at its `ts` (the feed's own order: a change is added when the feed
// delivers it again), the revoked version that ends its validity at that end; the alliance's
// identity at its creation. Paging resumes after a position (date_added second, row id), which
// `next` carries signed; `added_after` starts after a whole second, as the feeds' `ts` does.

export const TAXII_API_ROOT = 'alliance';

function collectionUuid(kind: IndicatorKind): string {
  const h = createHash('sha256').update(`rampart taxii collection\u0000${kind}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x40;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}

export const TAXII_COLLECTIONS: ReadonlyArray<{ kind: IndicatorKind; collection: TaxiiCollection }> = (
  [
    ['ipv4', 'ipv4', 'IPv4 addresses and networks', 'Addresses and CIDR networks reported by the alliance'],
    ['domain', 'domains', 'Domains', 'Domain names reported by the alliance'],
    ['url', 'urls', 'URLs', 'URLs reported by the alliance'],
    ['file', 'files', 'File digests', 'Files (MD5, SHA-1, SHA-256) reported by the alliance'],
  ] as const
).map(([kind, alias, title, description]) => ({
  kind,
  collection: { id: collectionUuid(kind), title, description, alias, can_read: true, can_write: false, media_types: [STIX_MEDIA_TYPE] },
}));

export function collectionKind(id: string): IndicatorKind | undefined {
  return TAXII_COLLECTIONS.find((c) => c.collection.id === id || c.collection.alias === id)?.kind;
}

/** A place in a collection: entries strictly after (t, key) in (date_added, key) order. */
interface Position {
  t: number;
  key: number;
}
const BEFORE_ALL: Position = { t: -1, key: Number.MAX_SAFE_INTEGER };
const IDENTITY_KEY = 0;

function after(a: Position, b: Position): boolean {
  return a.t > b.t || (a.t === b.t && a.key > b.key);
}

/** One object version in a collection. */
export interface Entry {
  position: Position;
  object: Record<string, unknown> & { id: string; modified: string };
}

export interface EntryPage {
  entries: Entry[];
  more: boolean;
  next?: string;
}

type Query = Partial<Pick<TaxiiObjectsQuery, 'added_after' | 'limit' | 'next' | 'match[id]' | 'match[type]' | 'match[version]' | 'match[spec_version]'>>;

/** Which versions `match[version]` keeps of an object's versions (oldest first). Default: the newest. */
function selectVersions<T extends { modified: number }>(versions: T[], selectors: string[] | undefined): T[] {
  const wanted = selectors ?? ['last'];
  return versions.filter((v, i) =>
    wanted.some((s) => (s === 'all' ? true : s === 'first' ? i === 0 : s === 'last' ? i === versions.length - 1 : Date.parse(s) === v.modified * 1000)),
  );
}

function identitySelected(q: Query): boolean {
  const versions = [{ modified: IDENTITY_CREATED_TS }];
  return selectVersions(versions, q['match[version]']).length > 0;
}

function limitOf(q: Query): number {
  return Math.min(q.limit ?? TAXII_MAX_LIMIT, TAXII_MAX_LIMIT);
}

/** The position a request starts after: its `next`, else `added_after` (a whole second), else the start. */
function startOf(q: Query, codec: CursorCodec, filters: Record<string, unknown>): Position {
  if (q.next) {
    try {
      const [t, key] = codec.decode<[number, number]>(q.next, filters);
      if (Number.isSafeInteger(t) && Number.isSafeInteger(key)) return { t, key };
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      throw new ApiError('validation_failed', `next: ${err.detail.replace(/^page: /, '')}`, { errors: [{ path: 'querystring.next', message: 'not a next value this server gave for this request' }] });
    }
    throw new ApiError('validation_failed', 'next: malformed', { errors: [{ path: 'querystring.next', message: 'malformed' }] });
  }
  if (q.added_after) return { t: Math.floor(Date.parse(q.added_after) / 1000), key: Number.MAX_SAFE_INTEGER };
  return BEFORE_ALL;
}

/**
 * What a `next` value is bound to: the collection and the match filters (not the paging: `limit`,
 * and `added_after`, which the position in `next` is already past).
 */
function filtersOf(collection: string, q: Query, object?: string): Record<string, unknown> {
  return { c: collection, o: object ?? null, i: q['match[id]'] ?? null, t: q['match[type]'] ?? null, v: q['match[version]'] ?? null, s: q['match[spec_version]'] ?? null };
}

export interface TaxiiReader {
  store: Store;
  cursors: CursorCodec;
  /** The API base the objects' external references point at (…/api/v1). */
  apiBase: string;
}

function entryOf(state: IndicatorState, version: IndicatorVersion, apiBase: string): Entry {
  return { position: { t: version.modified, key: state.id }, object: indicatorObject(state, version, apiBase) };
}

const IDENTITY_ENTRY: Entry = { position: { t: IDENTITY_CREATED_TS, key: IDENTITY_KEY }, object: ALLIANCE_IDENTITY };

/** Most feed pages one request reads while their rows all fall outside its filters. */
const MAX_ROUNDS = 20;

/**
 * A page of a collection's entries for the organization (`…/objects/` and `…/manifest/`). Reads
 * the feed page after the start and the validity ends in the same span, merges both in
 * (date_added, key) order up to the feed page's last row (beyond it the feed was not read yet).
 */
export async function collectionPage(reader: TaxiiReader, org: Organization, collectionId: string, kind: IndicatorKind, q: Query): Promise<EntryPage> {
  const filters = filtersOf(collectionId, q);
  const limit = limitOf(q);
  let from = startOf(q, reader.cursors, filters);
  const view = await orgView(reader.store, org);
  const source = indicatorSource(reader.store, kind);
  if (!(q['match[spec_version]'] ?? ['2.1']).includes('2.1')) return { entries: [], more: false };
  const types = q['match[type]'];
  const withIndicators = !types || types.includes('indicator');
  const withIdentity = (!types || types.includes('identity')) && identitySelected(q);
  if (q['match[id]']) return pageOfIds(reader, view, kind, q, from, filters);

  const settled = await source.settled();
  const before = visibleBefore(org, settled);
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const candidates: Entry[] = [];
    let horizon: Position | null = null;
    if (withIndicators) {
      const rows = await rowsAfter(source, view, from, limit, settled);
      if (rows.length >= limit) horizon = { t: rows.at(-1)!.ts, key: rows.at(-1)!.id };
      // Validity ends past the feed page's last row belong to a later page: not read now.
      const ending = await source.ending(view, Math.max(-1, from.t - 1), horizon ? Math.min(before, horizon.t + 1) : before);
      for (const state of rows) {
        const versions = versionsOf(state, view.lowestScore, before);
        if (selectVersions(versions, q['match[version]']).includes(versions[0]!)) candidates.push(entryOf(state, versions[0]!, reader.apiBase));
      }
      for (const state of ending) {
        const versions = versionsOf(state, view.lowestScore, before);
        const end = versions[1];
        if (end && selectVersions(versions, q['match[version]']).includes(end)) candidates.push(entryOf(state, end, reader.apiBase));
      }
    }
    if (withIdentity && IDENTITY_CREATED_TS < before) candidates.push(IDENTITY_ENTRY);
    const inRange = candidates.filter((e) => after(e.position, from) && (horizon === null || !after(e.position, horizon)));
    inRange.sort((a, b) => a.position.t - b.position.t || a.position.key - b.position.key);
    const entries = inRange.slice(0, limit);
    const last = entries.at(-1)?.position ?? horizon;
    const more = inRange.length > entries.length || horizon !== null;
    if (entries.length > 0 || !more || !last) {
      return { entries, more, ...(more && last ? { next: reader.cursors.encode(filters, [last.t, last.key]) } : {}) };
    }
    from = last;
  }
  return { entries: [], more: true, next: reader.cursors.encode(filters, [from.t, from.key]) };
}

/**
 * A feed page of the rows after `from`. A position inside a second reads that second again (the
 * feed pages by whole seconds); when all a full page holds is at or before the position, that
 * second was the whole page (a page never splits a second) and the next one starts after it.
 */
async function rowsAfter(source: ReturnType<typeof indicatorSource>, view: OrgView, from: Position, limit: number, settled: number): Promise<IndicatorState[]> {
  if (from.key === Number.MAX_SAFE_INTEGER) return source.page(view, from.t, limit, settled);
  const rows = await source.page(view, from.t - 1, limit, settled);
  const fresh = rows.filter((r) => after({ t: r.ts, key: r.id }, from));
  if (fresh.length > 0 || rows.length < limit) return rows;
  return source.page(view, from.t, limit, settled);
}

/** Entries of the objects `match[id]` names (or of one object), in (date_added, key) order after `from`. */
async function pageOfIds(reader: TaxiiReader, view: OrgView, kind: IndicatorKind, q: Query, from: Position, filters: Record<string, unknown>): Promise<EntryPage> {
  const entries = await objectEntries(reader, view, kind, q['match[id]'] ?? [], q);
  const inRange = entries.filter((e) => after(e.position, from));
  const limit = limitOf(q);
  const page = inRange.slice(0, limit);
  const more = inRange.length > page.length;
  const last = page.at(-1)?.position;
  return { entries: page, more, ...(more && last ? { next: reader.cursors.encode(filters, [last.t, last.key]) } : {}) };
}

/** Every selected version of the named objects the organization sees (unknown ids are left out). */
async function objectEntries(reader: TaxiiReader, view: OrgView, kind: IndicatorKind, ids: string[], q: Query): Promise<Entry[]> {
  const source = indicatorSource(reader.store, kind);
  const before = visibleBefore(view.org, await source.settled());
  const types = q['match[type]'];
  const entries: Entry[] = [];
  for (const id of new Set(ids)) {
    if (id === ALLIANCE_IDENTITY.id) {
      if ((!types || types.includes('identity')) && identitySelected(q) && IDENTITY_CREATED_TS < before) entries.push(IDENTITY_ENTRY);
      continue;
    }
    const rowId = parseIndicatorId(kind, id);
    if (rowId === null || (types && !types.includes('indicator'))) continue;
    const state = await source.byId(view, rowId);
    // A record the organization's delay still hides is not held, for it.
    if (!state || state.ts >= before) continue;
    for (const v of selectVersions(versionsOf(state, view.lowestScore, before), q['match[version]'])) entries.push(entryOf(state, v, reader.apiBase));
  }
  if (!(q['match[spec_version]'] ?? ['2.1']).includes('2.1')) return [];
  return entries.sort((a, b) => a.position.t - b.position.t || a.position.key - b.position.key);
}

/** `…/objects/{object-id}/`: 404 when the organization holds no such object. */
export async function objectPage(reader: TaxiiReader, org: Organization, collectionId: string, kind: IndicatorKind, objectId: string, q: Query): Promise<EntryPage> {
  const view = await orgView(reader.store, org);
  await requireObject(reader, view, kind, objectId);
  const filters = filtersOf(collectionId, q, objectId);
  return pageOfIds(reader, view, kind, { ...q, 'match[id]': [objectId] }, startOf(q, reader.cursors, filters), filters);
}

/** `…/objects/{object-id}/versions/`: the versions (every one), after `added_after`, paged. */
export async function versionsPage(reader: TaxiiReader, org: Organization, collectionId: string, kind: IndicatorKind, objectId: string, q: Query): Promise<EntryPage> {
  const view = await orgView(reader.store, org);
  await requireObject(reader, view, kind, objectId);
  const filters = filtersOf(collectionId, q, `${objectId}/versions`);
  return pageOfIds(reader, view, kind, { ...q, 'match[id]': [objectId], 'match[version]': ['all'], 'match[type]': undefined }, startOf(q, reader.cursors, filters), filters);
}

async function requireObject(reader: TaxiiReader, view: OrgView, kind: IndicatorKind, objectId: string): Promise<void> {
  const found = await objectEntries(reader, view, kind, [objectId], { 'match[version]': ['all'] });
  if (found.length === 0) throw new ApiError('not_found', `no object ${objectId} in this collection`);
}

/** The manifest record of an entry (TAXII 2.1 section 5.3). */
export function manifestRecord(entry: Entry) {
  return { id: entry.object.id, date_added: isoMillis(entry.position.t), version: entry.object.modified, media_type: STIX_MEDIA_TYPE };
}

/** `X-TAXII-Date-Added-First` / `-Last` of a page with entries. */
export function dateAddedHeaders(entries: Entry[]): Record<string, string> {
  if (entries.length === 0) return {};
  return { 'X-TAXII-Date-Added-First': isoMillis(entries[0]!.position.t), 'X-TAXII-Date-Added-Last': isoMillis(entries.at(-1)!.position.t) };
}

import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '@rampart/contracts';
import { cursorCodec } from '../services/cursor.ts';
import { etagMatches, type TextListSource } from '../services/text-list.ts';
import { sendTextList } from './text-list-reply.ts';

// A source over a sorted array: the helper is generic, the store-backed sources are tested in
// the route tests against PGlite and PostgreSQL.
function arraySource(data: number[], calls: { rows: number[] }): TextListSource<number, number> {
  const inRange = (v: number, after: number | null, upTo: number | null) => (after === null || v > after) && (upTo === null || v <= upTo);
  return {
    async rows(after, upTo, limit) {
      calls.rows.push(limit);
      return data.filter((v) => inRange(v, after, upTo)).slice(0, limit);
    },
    async boundary(after, n) {
      const rest = data.filter((v) => inRange(v, after, null));
      return { last: rest.slice(0, n).at(-1) ?? null, more: rest.length > n };
    },
    async version(after, upTo) {
      return data.filter((v) => inRange(v, after, upTo)).join('|');
    },
    key: (v) => v,
  };
}

describe('sendTextList', () => {
  let app: FastifyInstance;
  const data = Array.from({ length: 25 }, (_, i) => (i + 1) * 10);
  const calls = { rows: [] as number[] };

  beforeAll(async () => {
    app = Fastify();
    app.setErrorHandler((err, _req, reply) => {
      if (err instanceof ApiError) return reply.code(err.status).send({ detail: err.detail });
      return reply.code(500).send({ detail: String(err) });
    });
    const cursors = cursorCodec('test-secret-0123456789');
    app.get<{ Querystring: { page?: string; min?: string; format?: string; all?: string } }>('/list', async (request, reply) =>
      sendTextList(request, reply, {
        source: arraySource(data, calls),
        cursors,
        filters: { min: request.query.min ?? '1' },
        page: request.query.page,
        paginate: request.query.all !== 'yes',
        format: request.query.format === 'LIST' ? 'comma' : 'lines',
        ...(request.query.format === 'CSV' ? { header: 'V' } : {}),
        line: (v) => `v${v}`,
        pageLines: 10,
        chunkRows: 4,
      }),
    );
    await app.ready();
  });
  afterAll(() => app.close());

  it('pages 10 entries at a time, streamed in chunks, with next_page absent on the last page', async () => {
    const seen: string[] = [];
    let page: string | undefined;
    let pages = 0;
    do {
      const res = await app.inject({ url: '/list', query: page ? { page } : {} });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
      seen.push(...res.body.split('\n').filter(Boolean));
      page = res.headers.next_page as string | undefined;
      pages += 1;
    } while (page);
    expect(pages).toBe(3);
    expect(seen).toEqual(data.map((v) => `v${v}`));
    expect(Math.max(...calls.rows)).toBe(4);
  });

  it('separates entries by commas and adds the header line', async () => {
    const list = await app.inject({ url: '/list', query: { format: 'LIST' } });
    expect(list.body).toBe('v10,v20,v30,v40,v50,v60,v70,v80,v90,v100');
    const csv = await app.inject({ url: '/list', query: { format: 'CSV', all: 'yes' } });
    expect(csv.body).toBe(`V\n${data.map((v) => `v${v}\n`).join('')}`);
    expect(csv.headers.next_page).toBeUndefined();
  });

  it('rejects a cursor used with other filters and a tampered cursor with 400', async () => {
    const first = await app.inject({ url: '/list', query: { min: '5' } });
    const page = first.headers.next_page as string;
    expect((await app.inject({ url: '/list', query: { min: '5', page } })).statusCode).toBe(200);
    const other = await app.inject({ url: '/list', query: { min: '6', page } });
    expect(other.statusCode).toBe(400);
    expect(other.json().detail).toBe('page: the cursor was issued for other filters');
    expect((await app.inject({ url: '/list', query: { min: '5', page: `${page}x` } })).statusCode).toBe(400);
  });

  it('answers 304 to If-None-Match with the current ETag, keeping next_page', async () => {
    const first = await app.inject({ url: '/list' });
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^"[\w-]{27}"$/);
    const again = await app.inject({ url: '/list', headers: { 'if-none-match': etag } });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
    expect(again.headers.next_page).toBe(first.headers.next_page);
    const otherFormat = await app.inject({ url: '/list', query: { format: 'LIST' }, headers: { 'if-none-match': etag } });
    expect(otherFormat.statusCode).toBe(200);
  });

  it('sends an empty body after the last entry', async () => {
    const cursors = cursorCodec('test-secret-0123456789');
    const page = cursors.encode({ min: '1' }, 250);
    const res = await app.inject({ url: '/list', query: { page } });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('');
    expect(res.headers.next_page).toBeUndefined();
  });
});

describe('etagMatches', () => {
  it('compares strong and weak validators, lists and *', () => {
    expect(etagMatches('"a"', '"a"')).toBe(true);
    expect(etagMatches('W/"a"', '"a"')).toBe(true);
    expect(etagMatches('"b", "a"', '"a"')).toBe(true);
    expect(etagMatches('*', '"a"')).toBe(true);
    expect(etagMatches('"b"', '"a"')).toBe(false);
    expect(etagMatches(undefined, '"a"')).toBe(false);
  });
});

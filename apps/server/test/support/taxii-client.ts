import type { FastifyInstance } from 'fastify';
import { expect } from 'vitest';

// A TAXII 2.1 client written from the specification (OASIS TAXII 2.1, sections 3-5), not from
// the server: it finds the API root from discovery, the collections from the API root, and polls
// a collection's objects with `added_after` (the last poll's X-TAXII-Date-Added-Last) and `next`
// while `more` is true. It checks what the specification requires of every answer on the way.

export const TAXII_21 = 'application/taxii+json;version=2.1';

export interface Received {
  object: Record<string, unknown> & { id: string; type: string; modified?: string };
  /** The poll and page it came with. */
  poll: number;
}

export class TaxiiClient {
  /** Every object version received, in the order received. */
  readonly received: Received[] = [];
  /** The newest version of each object received, by id. */
  readonly newest = new Map<string, Received['object']>();
  /** X-TAXII-Date-Added-Last of the last page that had objects. */
  addedAfter: string | undefined;
  polls = 0;
  pages = 0;

  constructor(
    private readonly app: FastifyInstance,
    private readonly authorization: string,
  ) {}

  async get(url: string): Promise<{ status: number; body: Record<string, unknown>; headers: Record<string, unknown> }> {
    const res = await this.app.inject({ url, headers: { authorization: this.authorization, accept: TAXII_21 } });
    expect(res.headers['content-type'], url).toBe(TAXII_21);
    return { status: res.statusCode, body: res.json(), headers: res.headers };
  }

  /** Discovery → the default API root → its collections. */
  async collections(): Promise<{ root: string; collections: Array<{ id: string; title: string; alias?: string; can_read: boolean }> }> {
    const discovery = await this.get('/taxii2/');
    expect(discovery.status).toBe(200);
    const root = new URL(discovery.body.default as string).pathname;
    expect(discovery.body.api_roots).toContain(discovery.body.default);
    const info = await this.get(root);
    expect(info.status).toBe(200);
    expect(info.body.versions).toContain(TAXII_21);
    const list = await this.get(`${root}collections/`);
    expect(list.status).toBe(200);
    return { root, collections: list.body.collections as Array<{ id: string; title: string; can_read: boolean }> };
  }

  /** One poll: every page from `added_after`, following `next` while `more`. Returns the objects of this poll. */
  async poll(collectionUrl: string, limit: number, extra = ''): Promise<Received['object'][]> {
    this.polls += 1;
    const got: Received['object'][] = [];
    let next: string | undefined;
    for (let page = 0; page < 10_000; page++) {
      const params = new URLSearchParams();
      params.set('limit', String(limit));
      if (next) params.set('next', next);
      else if (this.addedAfter) params.set('added_after', this.addedAfter);
      const res = await this.get(`${collectionUrl}objects/?${params}${extra}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      this.pages += 1;
      const objects = (res.body.objects ?? []) as Received['object'][];
      expect(objects.length).toBeLessThanOrEqual(limit);
      if (objects.length > 0) {
        // The headers name the first and last date_added of the page (section 3.3.1).
        expect(typeof res.headers['x-taxii-date-added-first']).toBe('string');
        this.addedAfter = res.headers['x-taxii-date-added-last'] as string;
      } else expect(res.headers['x-taxii-date-added-first']).toBeUndefined();
      for (const object of objects) {
        this.received.push({ object, poll: this.polls });
        this.newest.set(object.id, object);
        got.push(object);
      }
      if (!res.body.more) {
        expect(res.body.next).toBeUndefined();
        return got;
      }
      next = res.body.next as string;
      expect(typeof next).toBe('string');
    }
    throw new Error('the collection never ended');
  }
}

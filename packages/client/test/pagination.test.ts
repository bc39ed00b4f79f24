import { afterEach, describe, expect, it } from 'vitest';
import { RampartClient } from '../src/index.ts';
import { sampleIpv4Page, sampleIpv4Record } from '../../contracts/src/fixtures.ts';
import { listen } from './support.ts';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

/** 7 records; records 3 and 4 share one ts, as the server's pages never split such a group. */
const TS = [100, 110, 120, 120, 130, 140, 150];
const records = TS.map((ts, i) => ({ ...sampleIpv4Record, gid: `RMP-RULE-GID-${i}`, ip: `203.0.113.${i + 1}`, ts }));

describe('ts pagination of /ips', () => {
  it('follows next_ts from a cursor to the end, every record once, and returns the final cursor', async () => {
    const asked: number[] = [];
    const s = await listen((app) =>
      app.get('/api/v1/ips', async (req) => {
        const q = req.query as { ts: string; page_size: string };
        const ts = Number(q.ts);
        asked.push(ts);
        const after = records.filter((r) => r.ts > ts);
        let page = after.slice(0, Number(q.page_size));
        const last = page.at(-1);
        if (last) page = after.filter((r) => r.ts <= last.ts);
        return { header: { ...sampleIpv4Page.header, ts: String(ts), next_ts: page.at(-1)?.ts ?? ts, page_size: Number(q.page_size) }, body: page };
      }),
    );
    closers.push(s.close);
    const client = new RampartClient({ baseUrl: s.base, apiKey: 'k' });
    const seen: string[] = [];
    const feed = client.ipsFeed(105, { page_size: 2 });
    let step = await feed.next();
    while (!step.done) {
      seen.push(...step.value.body.map((r) => r.ip));
      step = await feed.next();
    }
    expect(seen).toEqual(['203.0.113.2', '203.0.113.3', '203.0.113.4', '203.0.113.5', '203.0.113.6', '203.0.113.7']);
    expect(step.value).toBe(150);
    expect(asked).toEqual([105, 120, 140, 150]);
  });
});

describe('next_page pagination of /ipv4', () => {
  it('follows the next_page header until a page comes without it', async () => {
    const all = Array.from({ length: 5 }, (_, i) => `198.51.100.${i + 1}`);
    const s = await listen((app) =>
      app.get('/api/v1/ipv4/:min', async (req, reply) => {
        const q = req.query as { page?: string; agid?: string };
        const start = q.page ? Number(Buffer.from(q.page, 'base64url').toString()) : 0;
        const slice = all.slice(start, start + 2);
        if (start + 2 < all.length) reply.header('next_page', Buffer.from(String(start + 2)).toString('base64url'));
        expect((req.params as { min: string }).min).toBe('50');
        expect(q.agid).toBe('RMP-AGENT-ID-abc');
        return reply.type('text/plain').send(slice.join('\n') + '\n');
      }),
    );
    closers.push(s.close);
    const client = new RampartClient({ baseUrl: s.base, apiKey: 'k' });
    const pages: string[][] = [];
    for await (const page of client.ipv4List(50, { agid: 'RMP-AGENT-ID-abc' })) pages.push(page.items);
    expect(pages).toEqual([all.slice(0, 2), all.slice(2, 4), all.slice(4)]);
  });
});

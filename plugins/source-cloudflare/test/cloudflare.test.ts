import { waitFor } from '@rampart/plugin-kit/testing';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { memoryOffsetStore } from '@rampart/plugin-kit';
import type { Detection, OffsetStore } from '@rampart/plugin-kit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CloudflareSourceConfig, FirewallEventParser, cloudflareSource, startPoller } from '../src/index.ts';
import { startCloudflareStandIn } from './cloudflare-stand-in.ts';
import type { CloudflareStandIn } from './cloudflare-stand-in.ts';
import { silentLogger as silent } from '@rampart/plugin-kit/testing';

const AUTH = { email: 'secops@example.com', key: 'c2547eb745079dac9320b638f5e225cf483cc5cfdda41' };
const ZONE = '023e105f4ecef8ad9ca31a8372d0c353';
const ZONE2 = '9a7806061c88ada191ed06f989cc3dac';


const at = (secondsAgo: number) => new Date(Math.floor(Date.now() / 1000 - secondsAgo) * 1000).toISOString().replace('.000Z', 'Z');

describe('cdn_waf against a local Cloudflare stand-in', () => {
  let cf: CloudflareStandIn;
  beforeEach(async () => {
    cf = await startCloudflareStandIn(AUTH);
  });
  afterEach(() => cf.close());

  function run(offsets: OffsetStore, extra: { zoneIds?: string[]; key?: string; mode?: 'normal' | 'aggressive'; now?: () => number } = {}) {
    const seen: Detection[] = [];
    const stop = new AbortController();
    const running = startPoller(
      {
        apiBase: cf.url, email: AUTH.email, key: extra.key ?? AUTH.key, zoneIds: extra.zoneIds ?? [ZONE], mode: extra.mode ?? 'normal',
        pollIntervalSeconds: 3600, lookbackSeconds: 900, lagSeconds: 60, pageSize: 2,
        ...(extra.now ? { now: extra.now } : {}),
      },
      { log: silent, emit: (d) => seen.push(d), signal: stop.signal, offsets },
    );
    return { seen, stop, running };
  }

  it('pages through blocks and failed challenges once, and resumes from the saved cursor', async () => {
    const same = at(300);
    cf.events.set(ZONE, [
      { action: 'block', clientIP: '203.0.113.1', datetime: at(600), rayName: 'r1' },
      { action: 'managed_challenge', clientIP: '203.0.113.9', datetime: at(590), rayName: 'r2' },
      { action: 'block', clientIP: '203.0.113.2', datetime: same, rayName: 'r3' },
      { action: 'jschallenge_failed', clientIP: '2001:DB8::3', datetime: same, rayName: 'r4' },
      { action: 'block', clientIP: '203.0.113.4', datetime: same, rayName: 'r5' },
      { action: 'block', clientIP: '203.0.113.5', datetime: at(10), rayName: 'r6' }, // inside the lag: next poll
      { action: 'block', clientIP: '203.0.113.6', datetime: at(2000), rayName: 'r0' }, // before the lookback
    ]);
    const memory = memoryOffsetStore();
    const saved: number[] = [];
    const offsets: OffsetStore = { load: (key) => memory.load(key), save: async (key, position) => (saved.push(position.offset), memory.save(key, position)) };
    const first = run(offsets);
    await waitFor(() => first.seen.length >= 4, 'four detections');
    await waitFor(() => cf.requests.length >= 4, 'the last page');
    // Stop only once the poll has saved where it ended: stopping between the last page and that
    // save would leave an earlier offset (a race a loaded machine hit).
    await waitFor(() => saved.includes(Date.parse(String(cf.requests[0]!.variables!.until))), 'the end of the poll saved');
    first.stop.abort();
    await first.running.done;
    expect(first.seen.map((d) => [d.ip, d.kind])).toEqual([
      ['203.0.113.1', 'cdn_block'],
      ['203.0.113.2', 'cdn_block'],
      ['2001:db8::3', 'cdn_block'],
      ['203.0.113.4', 'cdn_block'],
    ]);
    expect(first.seen[1]!.ts).toBe(Date.parse(same) / 1000);
    // The query asked only for the actions that count, page by page from the boundary second.
    expect(cf.requests[0]!.variables).toMatchObject({ zoneTag: ZONE, limit: 2, actions: ['block', 'drop', 'connection_close', 'challenge_failed', 'jschallenge_failed'] });
    // Page 1 ends inside the busy second, page 2 is all that second: it is read alone (limit
    // 10000), then paging goes on after it.
    const s = Date.parse(same);
    expect(cf.requests.map((r) => [Date.parse(String(r.variables!.since)) - s, Date.parse(String(r.variables!.until)) - s, r.variables!.limit])).toEqual([
      [Date.parse(String(cf.requests[0]!.variables!.since)) - s, Date.parse(String(cf.requests[0]!.variables!.until)) - s, 2],
      [0, Date.parse(String(cf.requests[0]!.variables!.until)) - s, 2],
      [0, 1000, 10_000],
      [1000, Date.parse(String(cf.requests[0]!.variables!.until)) - s, 2],
    ]);

    // Two minutes later a restart with the same offsets asks from where the last poll ended:
    // the event that was inside the lag and one that arrived since, nothing twice.
    const firstUntil = cf.requests[0]!.variables!.until;
    cf.requests.length = 0;
    cf.events.get(ZONE)!.push({ action: 'block', clientIP: '203.0.113.7', datetime: at(30), rayName: 'r7' });
    const second = run(offsets, { now: () => Date.now() + 120_000 });
    await waitFor(() => second.seen.length >= 2, 'the two newer events');
    second.stop.abort();
    await second.running.done;
    expect(second.seen.map((d) => d.ip).sort()).toEqual(['203.0.113.5', '203.0.113.7']);
    expect(cf.requests[0]!.variables!.since).toBe(firstUntil);
  });

  it('discovers the zones when none are configured and counts challenges in aggressive mode', async () => {
    cf.zones.push(ZONE, ZONE2);
    cf.events.set(ZONE2, [{ action: 'managed_challenge', clientIP: '198.51.100.8', datetime: at(200), rayName: 'z2' }]);
    const { seen, stop, running } = run(memoryOffsetStore(), { zoneIds: [], mode: 'aggressive' });
    await waitFor(() => seen.length === 1, 'the challenge');
    stop.abort();
    await running.done;
    expect(seen).toMatchObject([{ ip: '198.51.100.8', kind: 'cdn_challenge', source: 'cdn_waf' }]);
    expect(cf.requests[0]!.path).toBe('/client/v4/zones?page=1');
  });

  it('fails with Cloudflare’s message and never the key when the credentials are refused', async () => {
    const { running } = run(memoryOffsetStore(), { key: 'wrong-key-0123456789' });
    const err = (await running.done.catch((e: unknown) => e)) as Error;
    expect(err.message).toBe('Cloudflare /graphql answered 403: Unknown X-Auth-Key or X-Auth-Email');
    expect(err.message).not.toContain('wrong-key');
  });

  it('runs from its config through the definition', async () => {
    const datetime = at(100);
    cf.events.set(ZONE, [{ action: 'drop', clientIP: '192.0.2.77', datetime, rayName: 'd1' }]);
    const config = CloudflareSourceConfig.parse({ active: true, cdn_waf_x_auth_email: AUTH.email, cdn_waf_x_auth_key: AUTH.key, options: { api_base: cf.url, zone_ids: [ZONE] } });
    const seen: Detection[] = [];
    const stop = new AbortController();
    const running = cloudflareSource.start(config, config.options.mode, { log: silent, emit: (d) => seen.push(d), signal: stop.signal });
    await waitFor(() => seen.length === 1, 'the drop');
    stop.abort();
    await running.done;
    expect(seen).toEqual([{ ts: Date.parse(datetime) / 1000, ip: '192.0.2.77', source: 'cdn_waf', kind: 'cdn_block', attempts: 1 }]);
  });
});

describe('cdn_waf config and parse', () => {
  it('parses the README sample config and names the failing fields', async () => {
    const readme = await readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    const sample = JSON.parse(/## Sample config[\s\S]*?```json\n([\s\S]*?)```/.exec(readme)![1]!) as Record<string, unknown>;
    const parsed = CloudflareSourceConfig.parse(sample);
    expect(parsed).toEqual(CloudflareSourceConfig.parse({ ...sample, options: { zone_ids: parsed.options.zone_ids } }));
    const bad = CloudflareSourceConfig.safeParse({ active: true, cdn_waf_x_auth_email: 'nope', cdn_waf_x_auth_key: '', options: { zone_ids: ['x'], api_base: 'ftp://x' } });
    expect(bad.error!.issues.map((i) => i.path.join('.')).sort()).toEqual(['cdn_waf_x_auth_email', 'cdn_waf_x_auth_key', 'options.api_base', 'options.zone_ids.0']);
  });

  it('reads NDJSON firewall events for rampart-agent parse', () => {
    const p = new FirewallEventParser('normal');
    const lines = [
      '{"action":"block","clientIP":"203.0.113.1","datetime":"2025-06-15T10:00:00Z","rayName":"a"}',
      '{"action":"challenge","clientIP":"203.0.113.2","datetime":"2025-06-15T10:00:01Z"}',
      '{"action":"block"}',
    ];
    expect(lines.flatMap((l) => p.push(l))).toEqual([{ ts: Date.parse('2025-06-15T10:00:00Z') / 1000, ip: '203.0.113.1', source: 'cdn_waf', kind: 'cdn_block', attempts: 1 }]);
    expect(p.stats()).toEqual({ lines: 3, invalid: 1, detections: 1 });
  });
});

import { appendFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { memoryOffsetStore } from '@rampart/plugin-kit';
import type { Detection } from '@rampart/plugin-kit';
import { describe, expect, it } from 'vitest';
import { JsonEventParser, JsonSourceConfig, JsonStream, eventTime, jsonSource } from './index.ts';
import { silentLogger as silent } from '@rampart/plugin-kit/testing';

const readAt = 1_750_000_000;

describe('json_source', () => {
  it('parses the README sample config and names the failing fields', async () => {
    const readme = await readFile(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');
    const sample = JSON.parse(/## Sample config[\s\S]*?```json\n([\s\S]*?)```/.exec(readme)![1]!) as { json: unknown[] };
    const parsed = JsonSourceConfig.parse(sample);
    expect(parsed).toEqual(JsonSourceConfig.parse({ active: true, json: sample.json }));
    expect(parsed.json[0]).toMatchObject({ address_field: 'client.ip', when: { 'event.outcome': ['failure'] } });
    const bad = JsonSourceConfig.safeParse({ active: true, json: [{ path: '', address_field: 'a..b', extra: 1 }] });
    expect(bad.error!.issues.map((i) => i.path.join('.')).sort()).toEqual(['json.0', 'json.0.address_field', 'json.0.path']);
    expect(JsonSourceConfig.safeParse({ active: true, json: [] }).error!.issues[0]!.message).toBe('at least one stream ({"path": …}) is required');
  });

  it('reads the configured address, time, kind and count fields and applies `when`', () => {
    const p = new JsonEventParser(
      JsonStream.parse({ path: '-', address_field: 'client.ip', time_field: '@timestamp', kind_field: 'event.action', attempts_field: 'count', when: { 'event.outcome': ['failure'] } }),
    );
    const lines = [
      JSON.stringify({ '@timestamp': '2025-06-15T10:00:00Z', client: { ip: '203.0.113.5:4242' }, event: { action: 'login', outcome: 'failure' }, count: 3 }),
      JSON.stringify({ '@timestamp': '2025-06-15T10:00:01Z', client: { ip: '203.0.113.6' }, event: { action: 'login', outcome: 'success' } }),
      JSON.stringify({ '@timestamp': 1750000000123, 'client.ip': '[2001:DB8::1]:443', 'event.outcome': 'failure', event: { action: 'bad kind!' } }),
      JSON.stringify({ client: { ip: 'example.com' }, event: { outcome: 'failure' } }),
      'not json',
      '',
    ];
    expect(lines.flatMap((l) => p.push(l, readAt))).toEqual([
      { ts: Date.parse('2025-06-15T10:00:00Z') / 1000, ip: '203.0.113.5', source: 'json_source', kind: 'login', attempts: 3 },
      { ts: 1750000000.123, ip: '2001:db8::1', source: 'json_source', kind: 'event', attempts: 1 },
    ]);
    expect(p.stats()).toEqual({ lines: 6, invalidJson: 1, filteredOut: 1, noAddress: 1, detections: 2 });
  });

  it('understands epoch seconds, milliseconds and ISO times', () => {
    expect([eventTime(1_750_000_000), eventTime('1750000000500'), eventTime('2025-06-15T10:00:00+02:00'), eventTime('soon'), eventTime(-1)]).toEqual([
      1_750_000_000, 1_750_000_000.5, Date.parse('2025-06-15T08:00:00Z') / 1000, undefined, undefined,
    ]);
  });

  it('tails every configured stream', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rampart-json-'));
    try {
      const a = join(dir, 'a.ndjson');
      const b = join(dir, 'b.ndjson');
      await writeFile(a, '');
      await writeFile(b, '');
      const config = JsonSourceConfig.parse({ active: true, json: [{ path: a }, { path: b, address_field: 'src' }], options: { start_at: 'beginning' } });
      const seen: Detection[] = [];
      const stop = new AbortController();
      const running = jsonSource.start(config, 'normal', { log: silent, emit: (d) => seen.push(d), signal: stop.signal, offsets: memoryOffsetStore() });
      await appendFile(a, '{"ip":"192.0.2.1","ts":1}\n');
      await appendFile(b, '{"src":"192.0.2.2","ts":2}\n');
      const end = Date.now() + 10_000;
      while (seen.length < 2 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
      stop.abort();
      await running.done;
      expect(seen.map((d) => [d.ip, d.ts]).sort()).toEqual([['192.0.2.1', 1], ['192.0.2.2', 2]]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

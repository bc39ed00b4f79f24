import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { RampartClient } from '@rampart/client';
import { sampleIpv4Page, sampleIpv4Record } from '@rampart/contracts/fixtures';
import { createMetrics } from '../src/runtime/metrics.ts';
import { Reporter, markerOf } from '../src/runtime/reporter.ts';
import { Spool } from '../src/runtime/spool.ts';

const problem = (code: string, status: number) => ({ type: `https://rampart.dev/problems/${code}`, title: code, status, detail: code, instance: '/api/v1/ips' });

describe('reporter', () => {
  let app: FastifyInstance | undefined;
  let dir: string | undefined;
  afterEach(async () => {
    await app?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function setup(answer: (n: number, body: { ip: string; notes: string }) => { status: number; headers?: Record<string, string>; body?: unknown; storedAnyway?: boolean }, stored: string[] = []) {
    const received: { ip: string; notes: string; key: string | undefined }[] = [];
    let n = 0;
    app = Fastify();
    app.post('/api/v1/ips', async (req, reply) => {
      const body = req.body as { ip: string; notes: string };
      const a = answer(++n, body);
      if (a.status < 300 || a.storedAnyway) {
        received.push({ ...body, key: req.headers['idempotency-key'] as string | undefined });
        stored.push(body.notes);
      }
      reply.code(a.status).headers(a.headers ?? {});
      return a.status < 300 ? null : reply.type('application/problem+json').send(a.body);
    });
    app.get('/api/v1/ips/:ip', async (req) => ({
      header: sampleIpv4Page.header,
      body: [{ ...sampleIpv4Record, ip: (req.params as { ip: string }).ip, info: { ...sampleIpv4Record.info, notes: stored } }],
    }));
    await app.listen({ host: '127.0.0.1', port: 0 });
    dir = await mkdtemp(join(tmpdir(), 'reporter-'));
    const spool = await Spool.open({ dir });
    const metrics = createMetrics();
    const client = new RampartClient({ baseUrl: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/api/v1`, apiKey: 'k' });
    const reporter = new Reporter({ client, spool, log: pino({ level: 'silent' }), metrics, gaid: () => 'RMP-AGENT-ID-r1', backoff: { baseMs: 5, maxMs: 20 }, coinsWaitMs: 30 });
    return { spool, metrics, reporter, received, calls: () => n };
  }

  async function drained(spool: Spool) {
    const deadline = Date.now() + 10_000;
    while (spool.depth > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    expect(spool.depth).toBe(0);
  }

  it('sends in order with a stable Idempotency-Key, through 503, 429 Retry-After and 402, and drops a 403', async () => {
    const script = [
      { status: 503, body: problem('internal', 503) },
      { status: 429, headers: { 'retry-after': '0' }, body: problem('rate_limited', 429) },
      { status: 402, body: problem('insufficient_coins', 402) },
      { status: 201 },
      { status: 403, body: problem('reserved_ip', 403) },
      { status: 200 },
    ];
    const { spool, metrics, reporter, received, calls } = await setup((n) => script[n - 1] ?? { status: 200 });
    const a = await spool.append({ ip: '45.90.0.1', confidence: 0.9, source: 'ssh_log', notes: 'five failures' });
    await spool.append({ ip: '45.90.0.2', confidence: 0.9, source: 'ssh_log' });
    const c = await spool.append({ ip: '45.90.0.3', confidence: 0.9, source: 'ssh_log' });
    reporter.start();
    await drained(spool);
    await reporter.stop();
    expect(calls()).toBe(6);
    expect(received.map((r) => [r.ip, r.key])).toEqual([
      ['45.90.0.1', a.id],
      ['45.90.0.3', c.id],
    ]);
    expect(received[0]!.notes).toBe(`five failures ${markerOf(a.id)}`);
    expect((await metrics.reportsRejected.get()).values[0]?.value).toBe(1);
    expect((await metrics.reportErrors.get()).values.map((v) => [v.labels.kind, v.value]).sort()).toEqual([
      ['402', 1],
      ['429', 1],
      ['503', 1],
    ]);
  });

  it('does not resend a report the server already holds (2xx lost, or a restart after it)', async () => {
    const stored: string[] = [];
    // The server stores the first attempt it gets, but a proxy in between answers 502.
    const { spool, metrics, reporter, received, calls } = await setup((n) => (n === 1 ? { status: 502, body: problem('bad_gateway', 502), storedAnyway: true } : { status: 201 }), stored);
    const first = await spool.append({ ip: '45.90.1.1', confidence: 0.5, source: 'ssh_log' });
    // Already on the server before this process started (a crash between 2xx and ack).
    stored.push(`x ${markerOf(first.id)}`);
    await spool.append({ ip: '45.90.1.2', confidence: 0.5, source: 'ssh_log' });
    reporter.start();
    await drained(spool);
    await reporter.stop();
    // 45.90.1.1 was found on the server at start; 45.90.1.2 was stored once, found after the 502, not resent.
    expect(received.map((r) => r.ip)).toEqual(['45.90.1.2']);
    expect(calls()).toBe(1);
    expect((await metrics.reportsDeduplicated.get()).values[0]?.value).toBe(2);
  });
});

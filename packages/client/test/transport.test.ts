import { afterEach, describe, expect, it } from 'vitest';
import { createServer } from 'node:net';
import {
  ClientApiError,
  InsufficientCoinsError,
  NetworkError,
  RampartClient,
  RateLimitedError,
  ResponseShapeError,
  backoffDelay,
  parseRetryAfter,
} from '../src/index.ts';
import { sampleVersion } from '../../contracts/src/fixtures.ts';
import { fastBackoff, listen, problem } from './support.ts';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});

async function server(build: Parameters<typeof listen>[0]) {
  const s = await listen(build);
  closers.push(s.close);
  return s.base;
}

describe('authentication header', () => {
  it('sends the bare key in Authorization by default, Bearer on request, and the auth_name header when set', async () => {
    const seen: Record<string, string | undefined>[] = [];
    const base = await server((app) =>
      app.get('/api/v1/version', async (req) => {
        seen.push({ authorization: req.headers.authorization, custom: req.headers['x-rampart-key'] as string | undefined });
        return sampleVersion;
      }),
    );
    await new RampartClient({ baseUrl: base, apiKey: 'k1' }).version();
    await new RampartClient({ baseUrl: base, apiKey: 'k2', authScheme: 'bearer' }).version();
    await new RampartClient({ baseUrl: `${base}/`, apiKey: 'k3', authName: 'X-Rampart-Key' }).version();
    expect(seen).toEqual([
      { authorization: 'k1', custom: undefined },
      { authorization: 'Bearer k2', custom: undefined },
      { authorization: undefined, custom: 'k3' },
    ]);
  });
});

describe('retries', () => {
  it('retries 5xx with back-off and returns the first success', async () => {
    let calls = 0;
    const base = await server((app) =>
      app.get('/api/v1/version', async (_req, reply) => {
        calls += 1;
        if (calls < 3) return reply.code(503).type('application/problem+json').send(problem('internal', 503, 'busy'));
        return sampleVersion;
      }),
    );
    const client = new RampartClient({ baseUrl: base, apiKey: 'k', backoff: fastBackoff });
    expect(await client.version()).toEqual(sampleVersion);
    expect(calls).toBe(3);
  });

  it('retries when the connection is dropped mid-request', async () => {
    let calls = 0;
    const base = await server((app) =>
      app.get('/api/v1/version', async (req, reply) => {
        calls += 1;
        if (calls === 1) {
          req.raw.socket.destroy();
          return reply;
        }
        return sampleVersion;
      }),
    );
    const client = new RampartClient({ baseUrl: base, apiKey: 'k', backoff: fastBackoff });
    expect(await client.version()).toEqual(sampleVersion);
    expect(calls).toBe(2);
  });

  it('gives up with NetworkError after retries + 1 attempts when nothing listens', async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const client = new RampartClient({ baseUrl: `http://127.0.0.1:${port}/api/v1`, apiKey: 'k', retries: 2, backoff: fastBackoff });
    const err = await client.version().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetworkError);
    expect((err as NetworkError).url).toBe(`http://127.0.0.1:${port}/api/v1/version`);
  });

  it('waits out a 429 Retry-After and succeeds; a Retry-After longer than allowed ends in RateLimitedError', async () => {
    let calls = 0;
    const base = await server((app) => {
      app.get('/api/v1/version', async (_req, reply) => {
        calls += 1;
        if (calls === 1) return reply.code(429).header('retry-after', '0').type('application/problem+json').send(problem('rate_limited', 429, 'slow down'));
        return sampleVersion;
      });
      app.get('/api/v1/ips', async (_req, reply) =>
        reply.code(429).header('retry-after', '3600').type('application/problem+json').send(problem('rate_limited', 429, 'slow down')),
      );
    });
    const client = new RampartClient({ baseUrl: base, apiKey: 'k', backoff: fastBackoff, maxRetryAfterSeconds: 5 });
    expect(await client.version()).toEqual(sampleVersion);
    expect(calls).toBe(2);
    const err = await client.ipsPage().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitedError);
    expect((err as RateLimitedError).retryAfterSeconds).toBe(3600);
    expect((err as RateLimitedError).code).toBe('rate_limited');
  });

  it('never retries 402 and exposes the problem body', async () => {
    let calls = 0;
    const base = await server((app) =>
      app.post('/api/v1/ips', async (_req, reply) => {
        calls += 1;
        return reply.code(402).type('application/problem+json').send(problem('insufficient_coins', 402, 'balance 0, price 1', { balance: 0, price: 1 }));
      }),
    );
    const client = new RampartClient({ baseUrl: base, apiKey: 'k', backoff: fastBackoff });
    const err = await client.reportIp({ ip: '203.0.113.9', confidence: 0.5, source: 'ssh_log' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InsufficientCoinsError);
    expect(err).toMatchObject({ status: 402, code: 'insufficient_coins', detail: 'balance 0, price 1' });
    expect((err as InsufficientCoinsError).problem).toMatchObject({ balance: 0, price: 1 });
    expect(calls).toBe(1);
  });
});

describe('errors and contracts', () => {
  it('turns problem+json into ClientApiError with its code and failing fields, without retrying 4xx', async () => {
    let calls = 0;
    const base = await server((app) =>
      app.get('/api/v1/ips', async (_req, reply) => {
        calls += 1;
        return reply
          .code(400)
          .type('application/problem+json')
          .send(problem('validation_failed', 400, 'querystring/page_size: too big', { errors: [{ path: 'querystring.page_size', message: 'too big' }] }));
      }),
    );
    const err = await new RampartClient({ baseUrl: base, apiKey: 'k', backoff: fastBackoff }).ipsPage({ page_size: 5000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ClientApiError);
    expect(err).toMatchObject({ status: 400, code: 'validation_failed', errors: [{ path: 'querystring.page_size', message: 'too big' }] });
    expect(calls).toBe(1);
  });

  it('derives the code from the status when the body is not a problem (a proxy page)', async () => {
    const base = await server((app) => app.get('/api/v1/version', async (_req, reply) => reply.code(404).type('text/html').send('<h1>nope</h1>')));
    const err = await new RampartClient({ baseUrl: base, apiKey: 'k' }).version().catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 404, code: 'not_found', problem: null });
  });

  it('rejects a 2xx body that breaks its contract, naming the path', async () => {
    const base = await server((app) => app.get('/api/v1/version', async () => ({ ...sampleVersion, m: 'not a number' })));
    const err = await new RampartClient({ baseUrl: base, apiKey: 'k' }).version().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ResponseShapeError);
    expect((err as ResponseShapeError).issues.map((i) => i.path)).toEqual(['m']);
  });
});

describe('back-off arithmetic', () => {
  it('doubles the ceiling per attempt, stays within [ceiling/2, ceiling] and caps at maxMs', () => {
    const opts = { baseMs: 100, maxMs: 1000 };
    expect([0, 1, 2, 3, 4, 10].map((a) => backoffDelay(a, opts, () => 0))).toEqual([50, 100, 200, 400, 500, 500]);
    expect([0, 1, 2, 3, 4, 10].map((a) => backoffDelay(a, opts, () => 1))).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-11-23T10:00:00Z');
    expect(parseRetryAfter('120', now)).toBe(120);
    expect(parseRetryAfter('Mon, 23 Nov 2026 10:00:30 GMT', now)).toBe(30);
    expect(parseRetryAfter('Mon, 23 Nov 2026 09:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });
});

import fc from 'fast-check';
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { HttpMetrics } from './http-metrics.ts';

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10];

/** The metrics as the plugin counted them before: prom-client's own Counter and Histogram. */
function promClient(registry: Registry) {
  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({ name: 'rampart_http_requests_total', help: 'HTTP requests by route and status', labelNames, registers: [registry] });
  const latency = new Histogram({ name: 'rampart_http_request_duration_seconds', help: 'HTTP request latency by route', labelNames, buckets: BUCKETS, registers: [registry] });
  return (method: string, route: string, status: number, seconds: number) => {
    const labels = { method, route, status: String(status) };
    requests.inc(labels);
    latency.observe(labels, seconds);
  };
}

const request = fc.tuple(
  fc.constantFrom('GET', 'POST', 'PUT'),
  fc.constantFrom('/api/v1/ips/:ipv4', '/api/v1/ips', 'unmatched', '/api/v1/ipv4/:min_score'),
  fc.constantFrom(200, 304, 401, 429),
  fc.oneof(fc.double({ min: 0, max: 20, noNaN: true }), fc.constantFrom(...BUCKETS, 0, 1e-9)),
);

describe('HttpMetrics', () => {
  it('writes exactly what prom-client wrote for the same requests, text and JSON', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(request, { maxLength: 60 }), async (requests) => {
        const [before, after] = [new Registry(), new Registry()];
        const observe = promClient(before);
        const http = new HttpMetrics(after, BUCKETS);
        for (const [method, route, status, seconds] of requests) {
          observe(method, route, status, seconds);
          http.observe(method, route, status, seconds);
        }
        expect(await after.metrics()).toBe(await before.metrics());
        expect(await after.getMetricsAsJSON()).toEqual(await before.getMetricsAsJSON());
        // Scraped twice: the same again.
        expect(await after.metrics()).toBe(await before.metrics());
        before.resetMetrics();
        after.resetMetrics();
        expect(await after.metrics()).toBe(await before.metrics());
      }),
      { numRuns: 200 },
    );
  });
});

import { Counter, Histogram, type Registry } from 'prom-client';

type Label = 'method' | 'route' | 'status';
type Labels = Record<Label, string>;

/** One series: a method, route and status, its requests and their latency buckets (not cumulative). */
interface Series {
  labels: Labels;
  count: number;
  sum: number;
  buckets: Float64Array;
}

/**
 * rampart_http_request_duration_seconds as prom-client writes it, from the series counted by
 * HttpMetrics: prom-client's own `observe` hashes the labels into a string key at each call,
 * a good part of a look-up's metrics work.
 */
class RouteLatency extends Histogram<Label> {
  constructor(
    private readonly metric: { name: string; help: string; buckets: number[] },
    private readonly series: Series[],
    private readonly cleared: () => void,
    registry: Registry,
  ) {
    super({ name: metric.name, help: metric.help, labelNames: ['method', 'route', 'status'], buckets: metric.buckets, registers: [registry] });
  }

  /** What prom-client's Histogram gives the registry for its text format (values with shared labels). */
  async getForPromString() {
    const bucket = `${this.metric.name}_bucket`;
    const values: Array<{ labels: Record<string, string | number>; sharedLabels: Labels; value: number; metricName: string; exemplar: null | undefined }> = [];
    for (const s of this.series) {
      let acc = 0;
      this.metric.buckets.forEach((le, i) => {
        acc += s.buckets[i]!;
        values.push({ labels: { le }, sharedLabels: s.labels, value: acc, metricName: bucket, exemplar: null });
      });
      values.push(
        { labels: { le: '+Inf' }, sharedLabels: s.labels, value: s.count, metricName: bucket, exemplar: null },
        { labels: {}, sharedLabels: s.labels, value: s.sum, metricName: `${this.metric.name}_sum`, exemplar: undefined },
        { labels: {}, sharedLabels: s.labels, value: s.count, metricName: `${this.metric.name}_count`, exemplar: undefined },
      );
    }
    return { name: this.metric.name, help: this.metric.help, type: 'histogram' as const, values, aggregator: 'sum' as const };
  }

  /** What prom-client's Histogram gives `registry.getMetricsAsJSON()`: the shared labels spread into each value's. */
  override async get(): ReturnType<Histogram<Label>['get']> {
    const data = await this.getForPromString();
    const values = data.values.map(({ labels, sharedLabels, ...rest }) => ({ ...rest, labels: Object.assign(labels, sharedLabels) }));
    return { ...data, values } as unknown as Awaited<ReturnType<Histogram<Label>['get']>>;
  }

  override reset(): void {
    super.reset();
    // prom-client's constructor resets too, before this one has set its fields.
    (this.cleared as (() => void) | undefined)?.();
  }
}

/**
 * HTTP requests by method, route and status (rampart_http_requests_total) and their latency
 * (rampart_http_request_duration_seconds), counted per series found through maps of the route
 * pattern, method and status: no labels object, no string key and no label check per request.
 * The registry writes them exactly as prom-client's Counter and Histogram did (http-metrics.test.ts).
 */
export class HttpMetrics {
  private readonly series: Series[] = [];
  private readonly byRoute = new Map<string, Map<string, Map<number, Series>>>();
  private readonly bounds: number[];

  constructor(registry: Registry, buckets: number[]) {
    this.bounds = buckets;
    const series = this.series;
    new Counter({
      name: 'rampart_http_requests_total',
      help: 'HTTP requests by route and status',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
      collect() {
        this.reset();
        for (const s of series) if (s.count > 0) this.inc(s.labels, s.count);
      },
    });
    // registry.resetMetrics(): every series goes, as from prom-client's own histogram.
    const cleared = () => {
      series.length = 0;
      this.byRoute.clear();
    };
    new RouteLatency({ name: 'rampart_http_request_duration_seconds', help: 'HTTP request latency by route', buckets }, series, cleared, registry);
  }

  /** One request answered: `route` is the route pattern (label values stay bounded), `seconds` its latency. */
  observe(method: string, route: string, status: number, seconds: number): void {
    if (!Number.isFinite(seconds)) throw new TypeError(`Value is not a valid number: ${seconds}`);
    let byMethod = this.byRoute.get(route);
    if (!byMethod) this.byRoute.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (!byStatus) byMethod.set(method, (byStatus = new Map()));
    let s = byStatus.get(status);
    if (!s) {
      s = { labels: { method, route, status: String(status) }, count: 0, sum: 0, buckets: new Float64Array(this.bounds.length) };
      byStatus.set(status, s);
      this.series.push(s);
    }
    s.count += 1;
    s.sum += seconds;
    for (let i = 0; i < this.bounds.length; i++) {
      if (seconds <= this.bounds[i]!) {
        s.buckets[i]! += 1;
        break;
      }
    }
  }
}

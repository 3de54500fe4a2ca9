import fc from 'fast-check';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { RequestCounter, RequestHistogram } from '../../src/http/request-families.js';

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** prom-client's own Counter and Histogram, the reference, and ours, fed the same requests. */
function both() {
  const reference = new Registry();
  const counter = new Counter({
    name: 'requests_total',
    help: 'requests',
    labelNames: ['route', 'method', 'status'],
    registers: [reference],
  });
  const histogram = new Histogram({
    name: 'duration_seconds',
    help: 'durations',
    labelNames: ['route'],
    buckets: BUCKETS,
    registers: [reference],
  });
  const ours = new Registry();
  const requests = new RequestCounter('requests_total', 'requests', ours);
  const durations = new RequestHistogram('duration_seconds', 'durations', ours, BUCKETS);
  const observe = (route: string, method: string, status: number, seconds: number) => {
    counter.inc({ route, method, status: String(status) });
    histogram.observe({ route }, seconds);
    const key = `${route} ${method} ${status}`;
    (requests.find(key) ?? requests.add(key, { route, method, status: String(status) })).inc();
    (durations.find(route) ?? durations.add(route, { route })).observe(seconds);
  };
  return { reference, ours, observe };
}

const request = fc.record({
  route: fc.constantFrom('/dlr', '/messages', '/receipts', 'unmatched'),
  method: fc.constantFrom('GET', 'POST'),
  status: fc.constantFrom(200, 400, 401, 429, 500),
  // Bucket bounds themselves included: an observation equal to a bound falls in that bound's bucket.
  seconds: fc.oneof(fc.constantFrom(...BUCKETS, 0, 20), fc.double({ min: 0, max: 30, noNaN: true })),
});

describe('the per-request metric families (http/request-families.ts)', () => {
  it('expose what prom-client’s Counter and Histogram expose for the same requests, byte for byte', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(request, { maxLength: 60 }), async (requests) => {
        const { reference, ours, observe } = both();
        for (const r of requests) observe(r.route, r.method, r.status, r.seconds);
        expect(await ours.metrics()).toBe(await reference.metrics());
        // As JSON too, but for the exemplar fields prom-client adds (always empty: exemplars are off).
        const withoutExemplars = JSON.parse(
          JSON.stringify(await reference.getMetricsAsJSON(), (k, v) => (k === 'exemplar' ? undefined : v)),
        );
        expect(await ours.getMetricsAsJSON()).toEqual(withoutExemplars);
      }),
    );
  });

  it('parse as cumulative buckets whose +Inf equals the requests counted', async () => {
    const { ours, observe } = both();
    for (const seconds of [0.0002, 0.0005, 0.003, 0.003, 0.2, 11]) observe('/dlr', 'GET', 200, seconds);
    observe('/dlr', 'GET', 401, 0.001);
    const families = parsePrometheusTextFormat(await ours.metrics()) as {
      name: string;
      metrics: {
        labels?: Record<string, string>;
        value?: string;
        buckets?: Record<string, string>;
        count?: string;
      }[];
    }[];
    const requests = families.find((f) => f.name === 'requests_total');
    expect(requests?.metrics.map((m) => [m.labels?.status, m.value])).toEqual([
      ['200', '6'],
      ['401', '1'],
    ]);
    const duration = families.find((f) => f.name === 'duration_seconds')?.metrics[0];
    expect(duration?.buckets?.['+Inf']).toBe('7');
    expect(duration?.buckets?.['0.0005']).toBe('2');
    expect(duration?.buckets?.['0.001']).toBe('3');
    expect(duration?.buckets?.['0.005']).toBe('5');
    expect(duration?.buckets?.['10']).toBe('6');
  });

  it('forget their counts on the registry’s reset', async () => {
    const { ours, observe } = both();
    observe('/dlr', 'GET', 200, 0.01);
    ours.resetMetrics();
    expect(await ours.metrics()).not.toContain('/dlr');
  });
});

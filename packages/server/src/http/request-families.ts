import type { Metric, Registry } from 'prom-client';

type Labels = Readonly<Record<string, string>>;

/** A sample as prom-client's registry formats it (`Registry.getMetricsAsString`, `getMetricsAsJSON`). */
interface Sample {
  labels: Record<string, string | number>;
  sharedLabels?: Labels;
  value: number;
  metricName?: string;
}

/** A metric family as prom-client's registry reads it from a metric's `get()`. */
interface Family {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  values: Sample[];
  aggregator: 'sum';
}

/** One label set's count: counting is one addition. */
export class CountCell {
  value = 0;
  constructor(readonly labels: Labels) {}
  inc(): void {
    this.value += 1;
  }
}

/** One label set's observations, per bucket (not cumulative: the family adds them up when scraped). */
export class TimeCell {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  constructor(
    readonly labels: Labels,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length);
  }
  observe(seconds: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && seconds > (bounds[i] as number)) i++;
    if (i < bounds.length) this.counts[i] = (this.counts[i] as number) + 1;
    this.sum += seconds;
    this.count += 1;
  }
}

/**
 * The two families every answered request updates (`waybill_http_requests_total` and
 * `waybill_http_request_duration_seconds`), exposed through prom-client's registry in its own format, but
 * counted in plain numbers per label set. Why not prom-client's Counter and Histogram: even a label-bound child
 * of theirs validates and hashes its label set on every `inc()` and `observe()`, a measurable share of a `/dlr`
 * request (docs/benchmarks.md). Here the caller keeps the cell of its label set and an update is an addition.
 * Label sets are bounded by the route patterns, methods and statuses that exist.
 */
abstract class LabelledFamily<Cell> {
  readonly aggregator = 'sum';
  protected readonly cells = new Map<string, Cell>();
  constructor(
    readonly name: string,
    readonly help: string,
    registry: Registry,
  ) {
    // The registry takes any object with a name and a get(); prom-client's types name only its own classes.
    registry.registerMetric(this as unknown as Metric);
  }
  /** The cell of the label set `key` identifies, if it was counted before. */
  find(key: string): Cell | undefined {
    return this.cells.get(key);
  }
  /** A new cell for a label set first counted now. */
  add(key: string, labels: Labels): Cell {
    const cell = this.make(labels);
    this.cells.set(key, cell);
    return cell;
  }
  /** Forgets every count (prom-client's `Registry.resetMetrics`). */
  reset(): void {
    this.cells.clear();
  }
  protected abstract make(labels: Labels): Cell;
}

export class RequestCounter extends LabelledFamily<CountCell> {
  readonly type = 'counter';
  protected make(labels: Labels): CountCell {
    return new CountCell(labels);
  }
  get(): Family {
    const values = [...this.cells.values()].map((cell) => ({
      labels: { ...cell.labels },
      value: cell.value,
    }));
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}

export class RequestHistogram extends LabelledFamily<TimeCell> {
  readonly type = 'histogram';
  constructor(
    name: string,
    help: string,
    registry: Registry,
    private readonly bounds: readonly number[],
  ) {
    super(name, help, registry);
  }
  protected make(labels: Labels): TimeCell {
    return new TimeCell(labels, this.bounds);
  }
  /** The samples prom-client's Histogram gives: cumulative buckets, `+Inf`, `_sum`, `_count`, per label set. */
  getForPromString(): Family {
    const values: Sample[] = [];
    const bucket = `${this.name}_bucket`;
    for (const cell of this.cells.values()) {
      let cumulative = 0;
      this.bounds.forEach((bound, i) => {
        cumulative += cell.counts[i] as number;
        values.push({
          labels: { le: bound },
          sharedLabels: cell.labels,
          value: cumulative,
          metricName: bucket,
        });
      });
      values.push(
        { labels: { le: '+Inf' }, sharedLabels: cell.labels, value: cell.count, metricName: bucket },
        { labels: {}, sharedLabels: cell.labels, value: cell.sum, metricName: `${this.name}_sum` },
        { labels: {}, sharedLabels: cell.labels, value: cell.count, metricName: `${this.name}_count` },
      );
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
  /** As `getForPromString`, each sample's labels whole (prom-client's `get()`, which `getMetricsAsJSON` reads). */
  get(): Family {
    const family = this.getForPromString();
    family.values = family.values.map(({ labels, sharedLabels, value, metricName }) => ({
      labels: { ...sharedLabels, ...labels },
      value,
      ...(metricName === undefined ? {} : { metricName }),
    }));
    return family;
  }
}

import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { IntakeRouteStore, OutboxStore, Store } from '../store/store.js';
import { RequestCounter, RequestHistogram } from './request-families.js';

export type IntakeOutcome = 'matched' | 'parked' | 'garbled' | 'ignored';
export type IntakeCounts = Record<IntakeOutcome, number>;

/**
 * The service's Prometheus metrics (CONTRACT §11), one registry per app so that tests and several apps in a
 * process never share counters. Labels hold route patterns and fixed vocabularies only: never an id, a key or
 * a secret.
 */
export class Metrics {
  readonly registry = new Registry();

  // Updated by every answered request: counted in plain numbers (http/request-families.ts).
  private readonly httpRequests = new RequestCounter(
    'waybill_http_requests_total',
    'HTTP requests answered, by route pattern, method and status',
    this.registry,
  );

  private readonly httpDuration = new RequestHistogram(
    'waybill_http_request_duration_seconds',
    'Time to answer an HTTP request, by route pattern',
    this.registry,
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  );

  readonly ingestItems = new Counter({
    name: 'waybill_ingest_items_total',
    help: 'Ingested items, by kind (messages, receipts) and outcome (accepted, applied, ignored, unknown, rejected)',
    labelNames: ['kind', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly receiptEvents = new Counter({
    name: 'waybill_receipt_events_total',
    help: 'Receipt events recorded (applied receipts, parked ones included once they apply)',
    registers: [this.registry],
  });

  readonly callbackAttempts = new Counter({
    name: 'waybill_callback_attempts_total',
    help: 'Callback attempts made by this process, by outcome (delivered, failed, dead, gone)',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly callbackQueue = new Gauge({
    name: 'waybill_callback_queue',
    help: 'Callback deliveries waiting (pending) or given up (dead), in the whole database',
    labelNames: ['state'] as const,
    registers: [this.registry],
  });

  readonly parkedReceipts = new Gauge({
    name: 'waybill_parked_receipts',
    help: 'Receipts parked until their message arrives, in the whole database',
    registers: [this.registry],
  });

  readonly intakeReceipts = new Counter({
    name: 'waybill_intake_receipts_total',
    help: 'Receipts that arrived from carriers and gateways, by intake route name and outcome (matched, parked, garbled, ignored)',
    labelNames: ['route', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly smppBindUp = new Gauge({
    name: 'waybill_smpp_bind_up',
    help: 'Whether this process holds a bound SMPP session for the route (1) or not (0)',
    labelNames: ['route'] as const,
    registers: [this.registry],
  });

  /** The routes this process holds a bound SMPP session of (intake/smpp-bind.ts). */
  private readonly boundRoutes = new Set<string>();

  /** Marks the route's bind up or down in this process. */
  setBindUp(route: string, up: boolean): void {
    if (up) this.boundRoutes.add(route);
    else this.boundRoutes.delete(route);
    this.smppBindUp.set({ route }, up ? 1 : 0);
  }

  /** The same counts, readable at once for `GET /admin/v1/routes/{name}`. */
  private readonly intakeTotals = new Map<string, IntakeCounts>();

  /** Counts one receipt of an intake route. */
  countIntake(route: string, outcome: IntakeOutcome): void {
    this.intakeReceipts.inc({ route, outcome });
    const totals = this.intakeTotals.get(route) ?? { matched: 0, parked: 0, garbled: 0, ignored: 0 };
    totals[outcome] += 1;
    this.intakeTotals.set(route, totals);
  }

  /** What this process counted for the route since it started (or since the route was deleted). */
  intakeCounts(route: string): IntakeCounts {
    return { ...(this.intakeTotals.get(route) ?? { matched: 0, parked: 0, garbled: 0, ignored: 0 }) };
  }

  /** Forgets a deleted route's counts, so that a new route of the same name starts at zero. */
  forgetIntakeRoute(route: string): void {
    this.intakeTotals.delete(route);
  }

  readonly replicaLag = new Gauge({
    name: 'waybill_replica_lag_seconds',
    help: 'Replay lag of each read replica behind the primary when last measured (absent while it is down)',
    labelNames: ['replica'] as const,
    registers: [this.registry],
  });

  readonly replicaUp = new Gauge({
    name: 'waybill_replica_up',
    help: 'Whether each read replica answered its last probe (1) or not (0)',
    labelNames: ['replica'] as const,
    registers: [this.registry],
  });

  readonly databaseReads = new Gauge({
    name: 'waybill_database_reads',
    help: 'Query reads served by this process since it started, by node (primary, or a replica)',
    labelNames: ['node'] as const,
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  /** Counts and times one answered request (http/request-metrics.ts). */
  observeRequest(route: string, method: string, status: number, seconds: number): void {
    const key = `${route} ${method} ${status}`;
    (
      this.httpRequests.find(key) ?? this.httpRequests.add(key, { route, method, status: String(status) })
    ).inc();
    (this.httpDuration.find(route) ?? this.httpDuration.add(route, { route })).observe(seconds);
  }

  /**
   * The exposition text. The queue gauges are the database's state (the same on every instance), read once per
   * scrape; when the database does not answer they keep their last value and the scrape still succeeds.
   */
  async scrape(store: OutboxStore & IntakeRouteStore & Pick<Store, 'readReplicas'>): Promise<string> {
    const replicas = store.readReplicas;
    if (replicas !== undefined) {
      for (const { name, up, lagMs } of replicas.status()) {
        this.replicaUp.set({ replica: name }, up ? 1 : 0);
        if (lagMs === null) this.replicaLag.remove({ replica: name });
        else this.replicaLag.set({ replica: name }, lagMs / 1000);
      }
      for (const [node, count] of Object.entries(replicas.reads())) this.databaseReads.set({ node }, count);
    }
    try {
      const stats = await store.outboxStats();
      this.callbackQueue.set({ state: 'pending' }, stats.pending);
      this.callbackQueue.set({ state: 'dead' }, stats.dead);
      this.parkedReceipts.set(stats.parked);
      const smpp = (await store.listIntakeRoutes()).filter((route) => route.kind === 'smpp');
      this.smppBindUp.reset();
      for (const route of smpp) {
        this.smppBindUp.set({ route: route.name }, this.boundRoutes.has(route.name) ? 1 : 0);
      }
    } catch {
      // Reported by /readyz and the 503s; metrics stay available.
    }
    return this.registry.metrics();
  }
}

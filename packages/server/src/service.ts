import type { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import type { Limits } from './auth/limits.js';
import { MemoryLimits } from './auth/memory-limits.js';
import { RedisLimits } from './auth/redis-limits.js';
import { Relay } from './callbacks/relay.js';
import type { Config } from './config.js';
import { Metrics } from './http/metrics.js';
import type { BindTimings } from './intake/smpp-bind.js';
import { SmppBinds } from './intake/smpp-binds.js';
import type { Store } from './store/store.js';

/**
 * The one place the parts of a running Waybill are put together: store, limits, metrics, the Fastify app and the
 * callback relay of this process. `waybill serve` and the tests both start from here, so what a test drives is
 * wired exactly as production is.
 */
export interface ServiceOptions {
  config: Readonly<Config>;
  store: Store;
  pepper: Buffer;
  /** Counters; @default Redis when `config.redisUrl` is set, else in this process */
  limits?: Limits;
  /** Runs the callback relay in this process. @default false (tests drive the relay themselves when they want it) */
  relay?: boolean;
  /**
   * Runs the SMPP binds of the enabled `smpp` routes in this process (each held by one process at a time through
   * its lease). @default false (tests start binds when they want them)
   */
  binds?: boolean;
  /** Lease, backoff and answer timings of the binds. @default CONTRACT §12's (smpp-bind.ts DEFAULT_TIMINGS) */
  bindTimings?: Partial<BindTimings>;
  /** The bind lease holder's name. @default host:pid:random */
  bindHolder?: string;
  /** @default Date.now */
  clock?: () => number;
  /** Where pino writes. @default standard output */
  logStream?: Writable;
}

export interface Service {
  app: FastifyInstance;
  store: Store;
  limits: Limits;
  metrics: Metrics;
  /** This process's relay, when it runs one; started by `start()`. */
  relay: Relay | null;
  /** This process's SMPP binds, when it runs them; started by `start()`. */
  binds: SmppBinds | null;
  /** Starts the relay and the binds (the app is listened on, or injected into, by the caller). */
  start(): void;
  /**
   * Stops the binds (finishing the receipts in flight, then unbinding) and the relay within `deadlineMs`, then
   * closes the app, the limits and the store.
   */
  close(deadlineMs?: number): Promise<void>;
}

/** Shared counters in Redis when REDIS_URL is set (several instances), else in this process. */
export async function openLimits(config: Readonly<Config>, clock: () => number = Date.now): Promise<Limits> {
  if (!config.redisUrl) return new MemoryLimits(config, clock);
  const limits = new RedisLimits(config.redisUrl, config, clock);
  await limits.ping();
  return limits;
}

export async function composeService(options: ServiceOptions): Promise<Service> {
  const { config, store, pepper } = options;
  const limits = options.limits ?? (await openLimits(config, options.clock));
  const metrics = new Metrics();
  // The relay needs the app's logger, and the app needs to poke the relay: bound once both exist.
  let relay: Relay | null = null;
  let binds: SmppBinds | null = null;
  const app = await buildApp({
    config,
    store,
    pepper,
    limits,
    metrics,
    deliveriesQueued: () => relay?.poke(),
    ...(options.binds ? { bindStatus: (route) => (binds as SmppBinds).status(route) } : {}),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.logStream ? { logStream: options.logStream } : {}),
  });
  if (options.relay) {
    relay = new Relay({
      store,
      config,
      pepper,
      logger: app.log.child({ component: 'callback-relay' }),
      metrics,
      ...(options.clock ? { clock: options.clock } : {}),
    });
  }
  if (options.binds) {
    const clock = options.clock ?? Date.now;
    binds = new SmppBinds({
      store,
      metrics,
      pepper,
      now: () => new Date(clock()),
      deliveriesQueued: () => relay?.poke(),
      log: app.log.child({ component: 'smpp-binds' }),
      ...(options.bindHolder ? { holder: options.bindHolder } : {}),
      ...(options.bindTimings ? { timings: options.bindTimings } : {}),
    });
  }
  return {
    app,
    store,
    limits,
    metrics,
    relay,
    binds,
    start() {
      relay?.start();
      binds?.start();
    },
    async close(deadlineMs = 10_000) {
      // Receipts committed by the binds may queue deliveries: the binds stop first, the relay alongside.
      await Promise.all([binds?.stop(deadlineMs), relay?.stop(deadlineMs)]);
      await app.close();
      await limits.close();
      await store.close();
    },
  };
}

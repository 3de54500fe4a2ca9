import type { AccountCache } from './auth/account-cache.js';
import type { Limits } from './auth/limits.js';
import type { Config } from './config.js';
import type { IntakeRouteRecord } from './domain/intake/route.js';
import type { Metrics } from './http/metrics.js';
import type { BindStatus } from './intake/smpp-binds.js';
import type { Store } from './store/store.js';

/** What routes and plugins share: built once by `buildApp` and passed to each as plugin options. */
export interface AppContext {
  config: Readonly<Config>;
  store: Store;
  /**
   * The accounts the query endpoints authenticate with, read through `store` and kept for
   * `config.accountCacheMs`. Whatever changes an account calls its `forget` (or `writing`) with the key.
   */
  accounts: AccountCache;
  limits: Limits;
  /** Server key: hashes API secrets and signs cursors. */
  pepper: Buffer;
  /** The clock, injectable so tests can move past a sunset or a lockout without waiting. */
  now: () => Date;
  /**
   * Called after a write that may have queued callback deliveries, so this process's relay attempts them at
   * once instead of at its next poll. A no-op when no relay runs here.
   */
  deliveriesQueued: () => void;
  /** Prometheus counters of this process (`GET /metrics`). */
  metrics: Metrics;
  /** An SMPP route's bind status (intake/smpp-binds.ts): this process's bind, or what its holder published. */
  bindStatus: (route: IntakeRouteRecord) => Promise<BindStatus>;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** `dlr`: failures use the spec's `{code, descr}` body; otherwise RFC 9457 problem bodies. */
    errorStyle?: 'dlr' | 'problem';
    /** The deprecated v1 endpoint: every response carries Deprecation, Sunset and Link. */
    deprecatedV1?: boolean;
  }
}

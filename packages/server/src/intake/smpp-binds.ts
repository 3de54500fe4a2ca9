import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { IntakeRouteRecord } from '../domain/intake/route.js';
import type { Store } from '../store/store.js';
import { type BindContext, type BindTimings, DEFAULT_TIMINGS, SmppBind } from './smpp-bind.js';

/** An SMPP route's `status` as GET /admin/v1/routes/{name} shows it (CONTRACT §12). */
export interface BindStatus {
  state: 'bound' | 'connecting' | 'backoff' | 'disabled';
  since: string | null;
  lastError: string | null;
  heldBy: string | null;
}

/** How often the routes are read again, to start, change and stop binds. */
const REFRESH_MS = 5000;

/** A name for this process in the leases: host, pid and a random tag (pids repeat across restarts). */
export const processHolder = (): string => `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;

/**
 * The status of a route's bind as the store knows it: the holder's, published with its lease; without a lease
 * (no process holds it) `connecting`. Used where this process runs no binds.
 */
export async function leasedStatus(
  store: Pick<Store, 'getBindLease'>,
  route: IntakeRouteRecord,
): Promise<BindStatus> {
  if (!route.enabled) return { state: 'disabled', since: null, lastError: null, heldBy: null };
  const lease = await store.getBindLease(route.name);
  if (lease === null) return { state: 'connecting', since: null, lastError: null, heldBy: null };
  return {
    state: lease.state,
    since: lease.since?.toISOString() ?? null,
    lastError: lease.lastError,
    heldBy: lease.holder,
  };
}

/**
 * The SMPP binds of this process: one {@link SmppBind} per enabled `smpp` route, kept in step with the routes
 * (read every few seconds). Each bind runs only while this process holds its lease, so with several workers or
 * instances every route is bound once.
 */
export class SmppBinds {
  private readonly binds = new Map<string, { bind: SmppBind; key: string }>();
  private timer: NodeJS.Timeout | null = null;
  private refreshing: Promise<void> | null = null;
  private stopped = false;
  private readonly ctx: BindContext;

  constructor(
    ctx: Omit<BindContext, 'holder' | 'timings'> & { holder?: string; timings?: Partial<BindTimings> },
  ) {
    this.ctx = {
      ...ctx,
      holder: ctx.holder ?? processHolder(),
      timings: { ...DEFAULT_TIMINGS, ...ctx.timings },
    };
  }

  get holder(): string {
    return this.ctx.holder;
  }

  start(): void {
    if (this.timer !== null || this.stopped) return;
    void this.refresh();
    this.timer = setInterval(() => void this.refresh(), REFRESH_MS);
    this.timer.unref();
  }

  /** Reads the routes and starts, updates or stops binds to match. */
  refresh(): Promise<void> {
    this.refreshing ??= this.sync().finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  private async sync(): Promise<void> {
    let routes: IntakeRouteRecord[];
    try {
      routes = await this.ctx.store.listIntakeRoutes();
    } catch (error) {
      this.ctx.log.warn({ err: error }, 'SMPP binds: the routes could not be read; binds keep running');
      return;
    }
    if (this.stopped) return;
    const wanted = new Map(routes.filter((r) => r.kind === 'smpp' && r.enabled).map((r) => [r.name, r]));
    const stopping: Promise<void>[] = [];
    for (const [name, { bind, key }] of this.binds) {
      const route = wanted.get(name);
      if (route === undefined || bindKey(route) !== key) {
        this.binds.delete(name);
        stopping.push(bind.stop());
      } else {
        bind.route = route; // accounts, time zone and errorMap apply from the next receipt
      }
    }
    await Promise.all(stopping);
    if (this.stopped) return;
    for (const [name, route] of wanted) {
      if (this.binds.has(name)) continue;
      const bind = new SmppBind(route, this.ctx);
      this.binds.set(name, { bind, key: bindKey(route) });
      bind.start();
    }
  }

  /** The route's bind status: this process's own when it holds the bind, else what the holder published. */
  async status(route: IntakeRouteRecord): Promise<BindStatus> {
    const local = this.binds.get(route.name)?.bind;
    if (route.enabled && local?.holdsLease) {
      const { state, since, lastError } = local.status;
      return { state, since: since?.toISOString() ?? null, lastError, heldBy: this.ctx.holder };
    }
    const leased = await leasedStatus(this.ctx.store, route);
    if (leased.heldBy !== null || local === undefined || !route.enabled) return leased;
    const { state, since, lastError } = local.status;
    return { state, since: since?.toISOString() ?? null, lastError, heldBy: null };
  }

  /** Stops every bind (each finishes what is in flight and unbinds) within `deadlineMs`. */
  async stop(deadlineMs = 10_000): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.refreshing;
    const binds = [...this.binds.values()].map(({ bind }) => bind.stop(deadlineMs));
    this.binds.clear();
    await Promise.all(binds);
  }
}

/** What a running bind cannot take over without binding again: the connection and credentials. */
const bindKey = (route: IntakeRouteRecord) => JSON.stringify([route.smpp, route.sealedPassword]);

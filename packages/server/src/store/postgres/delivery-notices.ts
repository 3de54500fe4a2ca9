import type pg from 'pg';
import type { QueuedWatcher } from '../store.js';
import { createPool, type PoolOptions } from './pool.js';

/**
 * Wakes the relays of every instance when deliveries are queued (LISTEN/NOTIFY), so a relay on an instance that
 * ingested nothing sends them now rather than at its next poll. A transaction that queues deliveries notifies
 * (`notifyQueued`), and PostgreSQL delivers the notice at its commit to every connection listening on the
 * channel, or never if it rolls back. The notice carries nothing: a woken relay claims as it would at a poll,
 * and the claim decides what is due. Polling stays, as the fallback while the listening connection is down.
 */

/** One channel per database; a schema's relay woken by another schema's notice only claims once for nothing. */
export const DELIVERIES_CHANNEL = 'waybill_deliveries_queued';

/** `pg_notify` for the queued deliveries of this transaction; PostgreSQL folds repeats within it into one. */
export async function notifyQueued(client: pg.PoolClient): Promise<void> {
  await client.query({ name: 'wb_notify_queued', text: `SELECT pg_notify('${DELIVERIES_CHANNEL}', '')` });
}

/** After losing its connection the listener waits this long, doubling up to the maximum, before it tries again. */
const MIN_RETRY_MS = 100;
const MAX_RETRY_MS = 5000;

/**
 * One listening connection per process, of its own (never one of the pool's, so it never holds up a request),
 * shared by whoever watches. It connects when the first watcher comes, reconnects after a loss (a restarted
 * server, a failover: the pool's host resolver finds the writable host, where notices are sent), and closes
 * when the last one leaves. A notice also goes to every watcher right after each (re)connection, as deliveries
 * queued while it was down sent theirs to no one.
 */
export class DeliveryNotices {
  readonly #options: PoolOptions;
  readonly #watchers = new Set<QueuedWatcher>();
  #pool: pg.Pool | null = null;
  #client: pg.PoolClient | null = null;
  #retryMs = MIN_RETRY_MS;
  #timer: NodeJS.Timeout | null = null;

  constructor(options: PoolOptions) {
    // No statement timeout on a connection that only waits; connect and LISTEN still have their deadline.
    this.#options = { ...options, poolSize: 1, statementTimeoutMs: 0 };
  }

  /** Tells `watcher` of every notice (and of every lost connection) until the returned function is called. */
  watch(watcher: QueuedWatcher): () => Promise<void> {
    // An object of its own per watch, so the same watcher watching twice is two watchers.
    const own: QueuedWatcher = { queued: () => watcher.queued(), lost: (error) => watcher.lost(error) };
    this.#watchers.add(own);
    if (this.#watchers.size === 1) this.#connect();
    return async () => {
      this.#watchers.delete(own);
      if (this.#watchers.size === 0) await this.close();
    };
  }

  #connect(): void {
    this.#timer = null;
    if (this.#watchers.size === 0) return;
    this.#pool ??= createPool(this.#options);
    const pool = this.#pool;
    void (async () => {
      let client: pg.PoolClient | null = null;
      try {
        client = await pool.connect();
        const lost = client;
        client.on('error', (error) => this.#lost(lost, error));
        client.on('end', () => this.#lost(lost, new Error('the listening connection ended')));
        client.on('notification', (notice) => {
          if (notice.channel === DELIVERIES_CHANNEL) this.#notify();
        });
        await client.query(`LISTEN ${DELIVERIES_CHANNEL}`);
        if (this.#watchers.size === 0 || this.#pool !== pool) {
          client.release(true);
          return;
        }
        this.#client = client;
        this.#retryMs = MIN_RETRY_MS;
        this.#notify();
      } catch (error) {
        client?.release(true);
        this.#retry(error);
      }
    })();
  }

  #lost(client: pg.PoolClient, error: unknown): void {
    if (this.#client !== client) return;
    this.#client = null;
    client.release(true);
    this.#retry(error);
  }

  #retry(error: unknown): void {
    if (this.#watchers.size === 0 || this.#timer !== null) return;
    for (const watcher of this.#watchers) watcher.lost(error);
    this.#timer = setTimeout(() => this.#connect(), this.#retryMs);
    this.#timer.unref();
    this.#retryMs = Math.min(this.#retryMs * 2, MAX_RETRY_MS);
  }

  #notify(): void {
    for (const watcher of this.#watchers) watcher.queued();
  }

  /** Stops listening (the store's close; watchers are left, none is told anything more). */
  async close(): Promise<void> {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    const client = this.#client;
    const pool = this.#pool;
    this.#client = null;
    this.#pool = null;
    client?.release(true);
    await pool?.end().catch(() => {});
  }
}

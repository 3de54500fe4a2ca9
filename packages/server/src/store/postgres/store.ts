import type pg from 'pg';
import { parseStoredEvent } from '../../domain/deliveries/events.js';
import { isUuid } from '../../domain/formats.js';
import type { Store } from '../store.js';
import { accounts } from './accounts.js';
import { latestStats, withDeadlines } from './deadline.js';
import { DeliveryNotices } from './delivery-notices.js';
import { messageIngest } from './ingest-messages.js';
import { carrierReceiptIngest, receiptIngest } from './ingest-receipts.js';
import { intakeRouteCalls } from './intake-routes.js';
import { leaseCalls } from './leases.js';
import { migrate } from './migrations.js';
import * as outbox from './outbox.js';
import { dropParkedBefore } from './parked.js';
import { pepperFingerprintCalls } from './pepper-fingerprint.js';
import { type ConnectionMode, checkSchemaName, createPool } from './pool.js';
import { prune } from './prune.js';
import { queries, type ReadRouter } from './queries.js';
import { ReadRouting } from './read-routing.js';
import { readReview } from './rollup.js';
import { sessionCalls } from './sessions.js';

export interface PostgresStoreOptions extends ConnectionMode {
  /** The primary: every write, and every read not listed under `readUrl`. */
  url: string;
  /**
   * Read replicas for the query endpoints' reads (findDlr, findMessagesByIds, resolveContact, listHistory),
   * used only while they keep up: see read-routing.ts. Default: every read goes to `url`.
   */
  readUrls?: readonly string[];
  /** A replica serves reads only while it is at most this far behind the primary. @default 1000 */
  readMaxLagMs?: number;
  /** Connections per pool (each replica gets a pool of its own of the same size). */
  poolSize: number;
  /** `statement_timeout` of every connection, in milliseconds; 0 turns it off. */
  statementTimeoutMs: number;
  /** The schema holding Waybill's tables, created by `migrate()` when missing. @default 'public' */
  schema?: string;
  /**
   * The deadline of every store call but `migrate` and `prune` (WAYBILL_DB_TIMEOUT_MS), in milliseconds: past
   * it the call fails with a StoreUnavailableError, and the connection it was using is destroyed. It also
   * bounds opening a connection and waiting for a free one. See deadline.ts. @default 5000
   */
  timeoutMs?: number;
}

/** Store calls that are maintenance, not requests: not bounded by `timeoutMs` (see deadline.ts). */
const MAINTENANCE = new Set(['migrate', 'prune']);

/**
 * Opens a PostgreSQL store. Nothing connects until the first call; run `migrate()` before use.
 *
 * Hot queries are named prepared statements (node-postgres `name:`): parsed and planned once per connection.
 * Behind PgBouncer in transaction mode set `transactionPooling`: the names are then stripped (PgBouncer before
 * 1.21 fails named statements with "prepared statement … does not exist"; 1.21 or later with
 * `max_prepared_statements` may keep them, `preparedStatements: true`), and the schema comes from the role's
 * search_path rather than a session SET (docs/operations.md).
 *
 * @example
 * const store = openPostgresStore({ url: 'postgres://waybill@db/waybill', poolSize: 10, statementTimeoutMs: 5000 });
 * await store.migrate();
 */
export function openPostgresStore(options: PostgresStoreOptions): Store {
  const schema = checkSchemaName(options.schema ?? 'public');
  const timeoutMs = options.timeoutMs ?? 5000;
  const poolOptions = {
    poolSize: options.poolSize,
    statementTimeoutMs: options.statementTimeoutMs,
    schema,
    connectTimeoutMs: timeoutMs,
    queryTimeoutMs: timeoutMs,
    ...(options.transactionPooling !== undefined ? { transactionPooling: options.transactionPooling } : {}),
    ...(options.preparedStatements !== undefined ? { preparedStatements: options.preparedStatements } : {}),
  };
  const primary = createPool({ ...poolOptions, url: options.url });
  const readUrls = options.readUrls ?? [];
  const routing =
    readUrls.length === 0
      ? undefined
      : new ReadRouting(primary, {
          primaryUrl: options.url,
          replicaUrls: readUrls,
          // A replica gets half the call's deadline, to connect and to answer: a read it fails (a replica gone
          // silent before the monitor noticed) still has the other half to run on the primary.
          pool: {
            ...poolOptions,
            connectTimeoutMs: Math.floor(timeoutMs / 2),
            queryTimeoutMs: Math.floor(timeoutMs / 2),
          },
          maxLagMs: options.readMaxLagMs ?? 1000,
        });
  const read: ReadRouter = routing
    ? (accountId, run) => routing.read(accountId, run)
    : (_accountId, run) => run(primary);
  // Read-your-writes: a write (even a failed one, which may have committed) keeps this account's reads on the
  // primary until a replica has replayed past it.
  const writing =
    <A extends unknown[], R>(
      accountId: (...args: A) => string | undefined,
      call: (...args: A) => Promise<R>,
    ) =>
    async (...args: A): Promise<R> => {
      try {
        return await call(...args);
      } finally {
        routing?.noteWrite(accountId(...args));
      }
    };
  const ingest = messageIngest(primary, schema);
  const receipts = receiptIngest(primary);
  const carrierReceipts = carrierReceiptIngest(primary);
  // Migrations and pruning get a connection of their own, opened when first needed, whose statements may run
  // as long as statement_timeout allows (the client gives up `timeoutMs` after that: the server's cancel never
  // came back, so the network is gone).
  let maintenancePool: pg.Pool | undefined;
  const maintenance = () => {
    maintenancePool ??= createPool({
      ...poolOptions,
      url: options.url,
      poolSize: 1,
      queryTimeoutMs: options.statementTimeoutMs > 0 ? options.statementTimeoutMs + timeoutMs : 0,
    });
    return maintenancePool;
  };

  const notices = options.transactionPooling
    ? undefined
    : new DeliveryNotices({ ...poolOptions, url: options.url });

  let closed = false;
  const store: Store = {
    engine: 'postgres',
    // A replica that has not replayed the migrations yet counts as behind: they are a write of every account.
    migrate: writing(
      () => undefined,
      () => migrate(maintenance(), schema),
    ),
    // Readiness is the primary's: a replica that is down or behind only takes itself out of the reads.
    async ping() {
      await primary.query('SELECT 1');
    },
    async close() {
      // pg refuses to end a pool twice; a second close (shutdown racing a failure path) is a no-op here.
      if (closed) return;
      closed = true;
      await routing?.close();
      await notices?.close();
      await primary.end();
      await maintenancePool?.end();
    },
    async prune(cutoff, pruneOptions) {
      return prune(maintenance(), schema, cutoff, pruneOptions);
    },
    ...pepperFingerprintCalls(primary),
    ...intakeRouteCalls(primary),
    ...leaseCalls(primary),
    ...sessionCalls(primary),

    ...accounts(primary),
    ingestMessages: writing((accountId) => accountId, ingest),
    ingestReceipts: writing((accountId) => accountId, receipts),
    // A carrier receipt's account is known only once its pair is found: each account written is noted then
    // (and every account when the call failed, as it may have committed).
    async ingestCarrierReceipts(route, items, now, carrierOptions) {
      let results: Awaited<ReturnType<typeof carrierReceipts>> | undefined;
      try {
        results = await carrierReceipts(route, items, now, carrierOptions);
        return results;
      } finally {
        if (results === undefined) routing?.noteWrite(undefined);
        else for (const r of results) if ('accountId' in r) routing?.noteWrite(r.accountId);
      }
    },
    ...queries(read),
    async reviewSummary(accountId, period) {
      return readReview(read, accountId, period);
    },

    // The feed and the outbox read the primary: a relay must see what it leased, and an operator what they
    // just changed.
    async listReceiptEvents(accountId, afterSeq, limit) {
      if (!isUuid(accountId)) return [];
      return (await outbox.listEvents(primary, accountId, afterSeq, limit)).map(parseStoredEvent);
    },
    async listStoredReceiptEvents(accountId, afterSeq, limit) {
      if (!isUuid(accountId)) return [];
      return outbox.listEvents(primary, accountId, afterSeq, limit);
    },
    async claimDeliveries(request) {
      return outbox.claim(primary, request);
    },
    async recheckClaims(claims) {
      return outbox.recheck(primary, claims, new Date());
    },
    async finishAttempts(results) {
      await outbox.finishAll(primary, results);
    },
    async releaseClaim(claimed) {
      await outbox.release(primary, claimed, new Date());
    },
    watchQueuedDeliveries(watcher) {
      // Behind a transaction-mode pooler a LISTEN would hold no server connection of its own: poll only.
      if (notices === undefined) return async () => {};
      return notices.watch(watcher);
    },
    async nextDeliveryDue() {
      return outbox.nextDue(primary, new Date());
    },
    async listDeliveries(accountId, query) {
      if (!isUuid(accountId)) return [];
      return outbox.listDeliveries(primary, accountId, query);
    },
    async getDelivery(accountId, id) {
      if (!isUuid(accountId)) return null;
      return outbox.getDelivery(primary, accountId, id);
    },
    async listMessageEvents(accountId, messageId) {
      if (!isUuid(accountId)) return [];
      return outbox.listMessageEvents(primary, accountId, messageId);
    },
    async listMessageDeliveries(accountId, messageId) {
      if (!isUuid(accountId)) return [];
      return outbox.listMessageDeliveries(primary, accountId, messageId);
    },
    async redeliver(accountId, id, now) {
      if (!isUuid(accountId)) return null;
      return outbox.redeliver(primary, accountId, id, now);
    },
    async redeliverDead(accountId, now) {
      if (!isUuid(accountId)) return 0;
      return outbox.redeliverDead(primary, accountId, now);
    },
    async backfillDeliveries(accountId, since, now) {
      if (!isUuid(accountId)) return null;
      return outbox.backfill(primary, accountId, since, now);
    },
    async outboxStats() {
      return outbox.stats(primary);
    },
    async dropParkedBefore(cutoff) {
      return dropParkedBefore(primary, cutoff);
    },
  };
  const deleteAccount = store.deleteAccount;
  store.deleteAccount = writing((id) => id, deleteAccount);
  const bounded = withDeadlines(store, timeoutMs, MAINTENANCE);
  return {
    ...bounded,
    outboxStats: latestStats(bounded),
    ...(routing ? { readReplicas: routing } : {}),
  };
}

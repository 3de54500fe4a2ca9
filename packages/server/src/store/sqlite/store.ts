import { statSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { parseStoredEvent } from '../../domain/deliveries/events.js';
import type { ClaimedDelivery, ClaimRequest, FinishedAttempt, Store } from '../store.js';
import { type AccountStatements, accounts, prepareAccounts } from './accounts.js';
import { retryingWhileBusy } from './busy.js';
import { type Checkpointer, holdingWritesForCheckpoints, startCheckpointer } from './checkpointer.js';
import { openDatabase, type Prepared, preparer, relaxedCommits } from './database.js';
import { type EventStatements, prepareEvents } from './events.js';
import { guardingFile } from './file-guard.js';
import { type MessageStatements, messageIngest, prepareMessageIngest } from './ingest-messages.js';
import { carrierReceiptIngest, receiptIngest } from './ingest-receipts.js';
import { intakeRouteCalls } from './intake-routes.js';
import { leaseCalls } from './leases.js';
import { migrate } from './migrations.js';
import * as outbox from './outbox.js';
import { type ParkedStatements, prepareParked } from './parked.js';
import { pepperFingerprintCalls } from './pepper-fingerprint.js';
import { type PruneStatements, preparePrune, prune } from './prune.js';
import { prepareQueries, type QueryStatements, queries } from './queries.js';
import { prepareRecords, type RecordStatements } from './records.js';
import { prepareRollup, type RollupStatements, readReview } from './rollup.js';
import { sessionCalls } from './sessions.js';

export interface SqliteStoreOptions {
  /** A file path (its directory is created when missing), or `:memory:`. */
  path: string;
  /** Page cache size in MiB; file databases also map this much of the file into memory. */
  cacheMb: number;
  /** How long a call waits for a write lock held by another connection before failing. @default 5000 */
  timeoutMs?: number;
  /**
   * The bound on the write-ahead log in MiB: past it the checkpointer empties the log, and writers wait for
   * it (checkpointer.ts). @default 512
   */
  walMaxMb?: number;
}

/** How long `close()` waits for the checkpointer to finish the checkpoint it is running. */
const CHECKPOINTER_STOP_MS = 2000;

/** The prepared statements of each module of this engine. */
export interface Statements {
  ping: Prepared<[], unknown>;
  accounts: AccountStatements;
  messages: MessageStatements;
  records: RecordStatements;
  parked: ParkedStatements;
  events: EventStatements;
  queries: QueryStatements;
  outbox: outbox.Outbox;
  prune: PruneStatements;
  rollup: RollupStatements;
}

/**
 * Every statement the store runs, by the module that runs it, prepared once when the store opens
 * (test/unit/sqlite-plans.test.ts checks the plan of each).
 */
export function prepareStatements(db: Database.Database): Statements {
  return {
    ping: preparer(db)('SELECT 1'),
    accounts: prepareAccounts(db),
    messages: prepareMessageIngest(db),
    records: prepareRecords(db),
    parked: prepareParked(db),
    events: prepareEvents(db),
    queries: prepareQueries(db),
    outbox: outbox.prepareOutbox(db),
    prune: preparePrune(db),
    rollup: prepareRollup(db),
  };
}

/**
 * Opens (and migrates) a SQLite store. The schema is brought up to date here because every statement is
 * prepared at open, and preparing needs the tables; `migrate()` stays callable, and its first call reports
 * the migrations applied here.
 *
 * @example
 * const store = openSqliteStore({ path: './data/waybill.db', cacheMb: 256 });
 */
export function openSqliteStore(options: SqliteStoreOptions): Store {
  const db = openDatabase(options.path, options.cacheMb);
  // The file just opened, to notice it being deleted or replaced under the running store (file-guard.ts).
  const opened = options.path === ':memory:' ? null : statSync(options.path);
  // What opening applied, until the first migrate() call reports it.
  let appliedAtOpen = migrate(db);
  // From here on a lock held elsewhere answers SQLITE_BUSY at once, and the wait happens asynchronously
  // (busy.ts); migrations above still wait synchronously, as nothing is served before they finish.
  db.pragma('busy_timeout = 0');
  const sql = prepareStatements(db);
  // Started once the schema is there, so that its first checkpoint finds a migrated file.
  const checkpointer: Checkpointer | null =
    options.path === ':memory:'
      ? null
      : startCheckpointer({ path: options.path, walMaxMb: options.walMaxMb ?? 512 });
  // The relay's bookkeeping commits without waiting for an fsync (database.ts relaxedCommits).
  const relaxed = relaxedCommits(db);
  const claim = db.transaction((request: ClaimRequest) => outbox.claim(sql.outbox, request));
  // One transaction for the attempts that ended together: one commit instead of one each.
  const finishAll = db.transaction((results: readonly FinishedAttempt[]) => {
    for (const { claim: claimed, outcome } of results) outbox.finish(sql.outbox, claimed, outcome);
  });
  const redeliver = db.transaction((accountId: string, id: string, now: Date) =>
    outbox.redeliver(sql.outbox, accountId, id, now),
  );
  const redeliverDead = db.transaction((accountId: string, now: Date) =>
    outbox.redeliverDead(sql.outbox, accountId, now),
  );
  const recheck = db.transaction((claims: readonly ClaimedDelivery[]) =>
    outbox.recheck(sql.outbox, claims, new Date()),
  );
  const backfill = db.transaction((accountId: string, since: Date, now: Date) =>
    outbox.backfill(sql.outbox, accountId, since, now),
  );

  const store: Store = {
    engine: 'sqlite',
    async migrate() {
      const applied = [...appliedAtOpen, ...migrate(db)];
      appliedAtOpen = [];
      return applied;
    },
    async ping() {
      sql.ping.get();
    },
    async close() {
      // The thread first: closing the last connection, this one, then copies what is left of the log.
      await checkpointer?.stop(CHECKPOINTER_STOP_MS);
      if (db.open) db.close();
    },
    prune: prune(db, sql.prune, sql.outbox, sql.rollup),
    ...pepperFingerprintCalls(db),
    ...intakeRouteCalls(db),
    ...leaseCalls(db),
    ...sessionCalls(db),

    ...accounts(db, sql.accounts),
    ingestMessages: messageIngest(db, sql),
    ingestReceipts: receiptIngest(db, sql),
    ingestCarrierReceipts: carrierReceiptIngest(db, sql),
    ...queries(sql.queries),
    async reviewSummary(accountId, period) {
      return readReview(sql.rollup, accountId, period);
    },

    async listReceiptEvents(accountId, afterSeq, limit) {
      return outbox.listEvents(sql.outbox, accountId, afterSeq, limit).map(parseStoredEvent);
    },
    async listStoredReceiptEvents(accountId, afterSeq, limit) {
      return outbox.listEvents(sql.outbox, accountId, afterSeq, limit);
    },
    async claimDeliveries(request) {
      return relaxed(() => claim.immediate(request));
    },
    async recheckClaims(claims) {
      return relaxed(() => recheck.immediate(claims));
    },
    async finishAttempts(results) {
      if (results.length > 0) relaxed(() => finishAll.immediate(results));
    },
    async releaseClaim(claimed) {
      relaxed(() => sql.outbox.release.run(Date.now(), claimed.accountId, claimed.id, claimed.lease));
    },
    watchQueuedDeliveries() {
      // One process writes a SQLite file, and it pokes its own relay.
      return async () => {};
    },
    async nextDeliveryDue() {
      return outbox.nextDue(sql.outbox, new Date());
    },
    async listDeliveries(accountId, query) {
      return outbox.listDeliveries(sql.outbox, accountId, query);
    },
    async getDelivery(accountId, id) {
      return outbox.getDelivery(sql.outbox, accountId, id);
    },
    async listMessageEvents(accountId, messageId) {
      return outbox.listMessageEvents(sql.outbox, accountId, messageId);
    },
    async listMessageDeliveries(accountId, messageId) {
      return outbox.listMessageDeliveries(sql.outbox, accountId, messageId);
    },
    async redeliver(accountId, id, now) {
      return redeliver.immediate(accountId, id, now);
    },
    async redeliverDead(accountId, now) {
      return redeliverDead.immediate(accountId, now);
    },
    async backfillDeliveries(accountId, since, now) {
      return backfill.immediate(accountId, since, now);
    },
    async outboxStats() {
      const row = sql.outbox.stats.get();
      return { pending: row?.pending ?? 0, dead: row?.dead ?? 0, parked: row?.parked ?? 0 };
    },
    async dropParkedBefore(cutoff) {
      return sql.parked.dropParkedBefore.run(cutoff.getTime()).changes;
    },
  };
  const timeoutMs = options.timeoutMs ?? 5000;
  const retrying = retryingWhileBusy(
    checkpointer === null ? store : holdingWritesForCheckpoints(store, checkpointer, timeoutMs),
    timeoutMs,
  );
  return opened === null ? retrying : guardingFile(retrying, options.path, opened);
}

import { mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { planMessages } from '../../domain/ingest/plan-messages.js';
import { planReceipts } from '../../domain/ingest/plan-receipts.js';
import type { BatchOutcome, ItemError, MessageUpsert, ReceiptInput } from '../../domain/ingest/precedence.js';
import type { Account, AccountPatch, NewAccount, StoredMessage } from '../../domain/records.js';
import type { Channel } from '../../domain/vocabulary.js';
import {
  type AttemptOutcome,
  type ClaimedDelivery,
  type ClaimRequest,
  DuplicateKeyError,
  type HistoryQuery,
  type Store,
} from '../store.js';
import { retryingWhileBusy } from './busy.js';
import { guardingFile } from './file-guard.js';
import { loadMessageBatch, loadReceiptBatch, writeMessagePlan, writeReceiptPlan } from './ingest.js';
import { intakeRouteCalls } from './intake-routes.js';
import { migrate } from './migrations.js';
import * as outboxOps from './outbox.js';
import { prepareOutbox } from './outbox.js';
import { pepperFingerprintCalls } from './pepper-fingerprint.js';
import { accountFromRow, accountWithSecretFromRow, dlrRecipientFromRow, messageFromRow } from './rows.js';
import { type HistoryParams, prepareStatements, type Statements } from './statements.js';

export interface SqliteStoreOptions {
  /** A file path (its directory is created when missing), or `:memory:`. */
  path: string;
  /** Page cache size in MiB; file databases also map this much of the file into memory. */
  cacheMb: number;
  /** How long a call waits for a write lock held by another connection before failing. @default 5000 */
  timeoutMs?: number;
}

/** Thrown inside a transaction to roll a batch back once its item errors are collected. */
class BatchRejected extends Error {
  readonly errors: ItemError[];
  constructor(errors: ItemError[]) {
    super('batch rejected');
    this.errors = errors;
  }
}

/** Thrown inside the transaction of a dry run, once the batch has passed, to roll its writes back. */
class DryRunPassed<T> extends Error {
  readonly value: T;
  constructor(value: T) {
    super('dry run passed');
    this.value = value;
  }
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
  const inMemory = options.path === ':memory:';
  if (!inMemory) mkdirSync(dirname(options.path), { recursive: true });
  const db = new Database(options.path, { timeout: 5000 });
  // The file just opened, to notice it being deleted or replaced under the running store (file-guard.ts).
  const opened = inMemory ? null : statSync(options.path);
  if (!inMemory) {
    db.pragma('journal_mode = WAL');
    db.pragma(`mmap_size = ${Math.floor(options.cacheMb * 1024 * 1024)}`);
  }
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  db.pragma('foreign_keys = ON');
  // A negative cache_size is in KiB rather than pages.
  db.pragma(`cache_size = ${-Math.floor(options.cacheMb * 1024)}`);
  // What opening applied, until the first migrate() call reports it.
  let appliedAtOpen = migrate(db);
  // From here on a lock held elsewhere answers SQLITE_BUSY at once, and the wait happens asynchronously
  // (busy.ts); migrations above still wait synchronously, as nothing is served before they finish.
  db.pragma('busy_timeout = 0');
  const sql = prepareStatements(db);
  const outbox = prepareOutbox(db);
  // Plans are made and written inside one IMMEDIATE transaction: what was loaded cannot change before the write.
  const ingestMessages = db.transaction(
    (accountId: string, items: MessageUpsert[], now: Date, parkedSince: number, dryRun: boolean) => {
      const planned = planMessages(loadMessageBatch(sql, accountId, items, parkedSince), items, now);
      if (!planned.ok) throw new BatchRejected(planned.errors);
      const value = { accepted: items.length, events: planned.plan.events.length };
      if (dryRun) throw new DryRunPassed(value);
      writeMessagePlan(sql, outbox, accountId, planned.plan);
      return value;
    },
  );
  const ingestReceipts = db.transaction(
    (accountId: string, items: ReceiptInput[], now: Date, dryRun: boolean) => {
      const loaded = loadReceiptBatch(sql, accountId, items);
      const planned = planReceipts(loaded.state, items, now);
      if (!planned.ok) throw new BatchRejected(planned.errors);
      if (dryRun) throw new DryRunPassed(planned.plan.outcome);
      writeReceiptPlan(sql, outbox, accountId, planned.plan, loaded.rows, now);
      return planned.plan.outcome;
    },
  );
  const claim = db.transaction((request: ClaimRequest) => outboxOps.claim(outbox, request));
  const finish = db.transaction((claimed: ClaimedDelivery, outcome: AttemptOutcome) =>
    outboxOps.finish(outbox, claimed, outcome),
  );
  const redeliver = db.transaction((accountId: string, id: string, now: Date) =>
    outboxOps.redeliver(outbox, accountId, id, now),
  );
  const deleteAccount = db.transaction((id: string) => {
    if (!sql.accountById.get(id)) return false;
    for (const statement of sql.deleteAccountData) statement.run(id);
    return sql.deleteAccountRow.run(id).changes > 0;
  });
  const prune = db.transaction((cutoff: number) => {
    outbox.pruneAttempts.run(cutoff);
    outbox.pruneDeliveries.run(cutoff);
    outbox.pruneEvents.run(cutoff);
    return sql.prune.run(cutoff).changes;
  });

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
      if (db.open) db.close();
    },
    ...pepperFingerprintCalls(db),
    ...intakeRouteCalls(db),

    async createAccount(account: NewAccount): Promise<Account> {
      try {
        sql.insertAccount.run({
          id: account.id,
          name: account.name,
          key: account.key,
          secret_hash: account.secretHash,
          callback_secret: account.callbackSecret,
          ip_whitelist: JSON.stringify(account.ipWhitelist),
          dlr_query_enabled: account.dlrQueryEnabled ? 1 : 0,
          balance: account.balance,
          credit_limit: account.creditLimit,
          callback_url: account.callbackUrl,
          callback_enabled: account.callbackEnabled ? 1 : 0,
          created_at: account.createdAt.getTime(),
        });
      } catch (error) {
        if (isUniqueViolation(error, 'accounts.key'))
          throw new DuplicateKeyError(`account key ${account.key} is taken`);
        throw error;
      }
      const row = sql.accountById.get(account.id);
      if (!row) throw new Error(`account ${account.id} vanished after insert`);
      return accountFromRow(row);
    },
    async hasAccounts() {
      return sql.anyAccount.get() !== undefined;
    },
    async getAccount(id) {
      const row = sql.accountById.get(id);
      return row ? accountFromRow(row) : null;
    },
    async getAccountByKey(key) {
      const row = sql.accountByKey.get(key);
      return row ? accountWithSecretFromRow(row) : null;
    },
    async getCallbackSecrets(id) {
      const row = sql.callbackSecrets.get(id);
      if (!row) return null;
      return {
        current: row.callback_secret,
        previous: row.previous_callback_secret,
        previousUntil:
          row.previous_callback_secret_until === null ? null : new Date(row.previous_callback_secret_until),
      };
    },
    async sealCallbackSecrets(seal) {
      const sealIfClear = (value: string) => (value.startsWith('sealed:') ? value : seal(value));
      return db
        .transaction(() => {
          const rows = sql.clearCallbackSecrets.all();
          for (const row of rows) {
            const previous = row.previous_callback_secret;
            sql.setCallbackSecrets.run(
              sealIfClear(row.callback_secret),
              previous === null ? null : sealIfClear(previous),
              row.id,
            );
          }
          return rows.length;
        })
        .immediate();
    },
    async rotateCallbackSecret(id, sealed, previousUntil) {
      const row = sql.rotateCallbackSecret.get(previousUntil.getTime(), sealed, id);
      return row ? accountFromRow(row) : null;
    },
    async updateAccount(id: string, patch: AccountPatch) {
      const row = sql.updateAccount.get({
        id,
        name: patch.name ?? null,
        ip_whitelist: patch.ipWhitelist ? JSON.stringify(patch.ipWhitelist) : null,
        dlr_query_enabled: patch.dlrQueryEnabled === undefined ? null : patch.dlrQueryEnabled ? 1 : 0,
        balance: patch.balance ?? null,
        credit_limit: patch.creditLimit ?? null,
        set_callback_url: patch.callbackUrl === undefined ? 0 : 1,
        callback_url: patch.callbackUrl ?? null,
        callback_enabled: patch.callbackEnabled === undefined ? null : patch.callbackEnabled ? 1 : 0,
      });
      return row ? accountFromRow(row) : null;
    },
    async setSecretHash(id, secretHash) {
      const row = sql.setSecretHash.get(secretHash, id);
      return row ? accountFromRow(row) : null;
    },
    async deleteAccount(id) {
      return deleteAccount.immediate(id);
    },

    async ingestMessages(accountId, items, now, options) {
      const parkedSince = options?.parkedSince?.getTime() ?? 0;
      return runBatch(() =>
        ingestMessages.immediate(accountId, items, now, parkedSince, options?.dryRun === true),
      );
    },
    async ingestReceipts(accountId, items, now, options) {
      return runBatch(() => ingestReceipts.immediate(accountId, items, now, options?.dryRun === true));
    },

    async findDlr(accountId, messageId) {
      const rows = sql.dlrItems.all(accountId, messageId);
      if (rows.length > 1) rows.sort((a, b) => a.seq - b.seq);
      return rows.map(dlrRecipientFromRow);
    },
    async findMessagesByIds(accountId, ids, campaignId) {
      if (ids.length === 0) return [];
      return sql.messagesByIds
        .all({ account: accountId, ids: JSON.stringify(ids), campaign: campaignId ?? null })
        .map(messageFromRow);
    },
    async resolveContact(accountId: string, channel: Channel, channelUserId: string) {
      return sql.identity.get(accountId, channel, channelUserId)?.contact_id ?? null;
    },
    async listHistory(accountId, query) {
      return listHistory(sql, accountId, query);
    },

    async listReceiptEvents(accountId, afterSeq, limit) {
      return outboxOps.listEvents(outbox, accountId, afterSeq, limit);
    },
    async claimDeliveries(request) {
      return claim.immediate(request);
    },
    async finishAttempt(claimed, outcome) {
      finish.immediate(claimed, outcome);
    },
    async releaseClaim(claimed) {
      outbox.release.run(Date.now(), claimed.accountId, claimed.id, claimed.lease);
    },
    async nextDeliveryDue() {
      const due = outbox.nextDue.get()?.due ?? null;
      return due === null ? null : new Date(due);
    },
    async listDeliveries(accountId, query) {
      return outboxOps.listDeliveries(outbox, accountId, query);
    },
    async getDelivery(accountId, id) {
      return outboxOps.getDelivery(outbox, accountId, id);
    },
    async redeliver(accountId, id, now) {
      return redeliver.immediate(accountId, id, now);
    },
    async redeliverDead(accountId, now) {
      return outbox.redeliverDead.run(now.getTime(), accountId).changes;
    },
    async outboxStats() {
      const row = outbox.stats.get();
      return { pending: row?.pending ?? 0, dead: row?.dead ?? 0, parked: row?.parked ?? 0 };
    },
    async dropParkedBefore(cutoff) {
      return sql.dropParkedBefore.run(cutoff.getTime()).changes;
    },

    async prune(cutoff) {
      return prune.immediate(cutoff.getTime());
    },
  };
  const retrying = retryingWhileBusy(store, options.timeoutMs ?? 5000);
  return opened === null ? retrying : guardingFile(retrying, options.path, opened);
}

function runBatch<T>(apply: () => T): BatchOutcome<T> {
  try {
    return { ok: true, value: apply() };
  } catch (error) {
    if (error instanceof BatchRejected) return { ok: false, errors: error.errors };
    if (error instanceof DryRunPassed) return { ok: true, value: error.value as T };
    throw error;
  }
}

function isUniqueViolation(error: unknown, column: string): boolean {
  return (
    error instanceof Database.SqliteError &&
    error.code === 'SQLITE_CONSTRAINT_UNIQUE' &&
    error.message.includes(column)
  );
}

function listHistory(sql: Statements, accountId: string, query: HistoryQuery): StoredMessage[] {
  const params: HistoryParams = { account: accountId, limit: query.limit };
  let statements: Statements['history'][keyof Statements['history']];
  if (query.contactId !== undefined) {
    if (query.channel === undefined) throw new Error('a contact history query needs a channel');
    const conversation = sql.conversation.get(accountId, query.contactId, query.channel);
    if (!conversation) return [];
    params.conversation = conversation.id;
    if (query.campaignId !== undefined) {
      params.campaign = query.campaignId;
      statements = sql.history.conversationCampaign;
    } else {
      statements = sql.history.conversation;
    }
  } else if (query.campaignId !== undefined) {
    params.campaign = query.campaignId;
    if (query.channel !== undefined) {
      params.channel = query.channel;
      statements = sql.history.campaignChannel;
    } else {
      statements = sql.history.campaign;
    }
  } else {
    throw new Error('a history query needs a contactId or a campaignId');
  }
  if (query.before === undefined) return statements.first.all(params).map(messageFromRow);
  params.before_at = query.before.createdAt.getTime();
  params.before_id = query.before.id;
  params.before_user = query.before.channelUserId;
  return statements.next.all(params).map(messageFromRow);
}

import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { newId } from '../../domain/ids.js';
import {
  applyReceipt,
  type BatchOutcome,
  type ItemError,
  type MessageUpsert,
  mergeMessage,
  type ReceiptInput,
  type ReceiptOutcome,
  receiptTarget,
} from '../../domain/ingest.js';
import type { Account, AccountPatch, NewAccount, StoredMessage } from '../../domain/records.js';
import type { Channel } from '../../domain/vocabulary.js';
import { DuplicateKeyError, type HistoryQuery, type Store } from '../store.js';
import { migrate } from './migrations.js';
import { accountFromRow, accountWithSecretFromRow, messageFromRow, messageParams } from './rows.js';
import { type HistoryParams, prepareStatements, type Statements } from './statements.js';

export interface SqliteStoreOptions {
  /** A file path (its directory is created when missing), or `:memory:`. */
  path: string;
  /** Page cache size in MiB; file databases also map this much of the file into memory. */
  cacheMb: number;
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
 * prepared at open, and preparing needs the tables; `migrate()` stays callable and is then a no-op.
 *
 * @example
 * const store = openSqliteStore({ path: './data/waybill.db', cacheMb: 256 });
 */
export function openSqliteStore(options: SqliteStoreOptions): Store {
  const inMemory = options.path === ':memory:';
  if (!inMemory) mkdirSync(dirname(options.path), { recursive: true });
  const db = new Database(options.path, { timeout: 5000 });
  if (!inMemory) {
    db.pragma('journal_mode = WAL');
    db.pragma(`mmap_size = ${Math.floor(options.cacheMb * 1024 * 1024)}`);
  }
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  db.pragma('foreign_keys = ON');
  // A negative cache_size is in KiB rather than pages.
  db.pragma(`cache_size = ${-Math.floor(options.cacheMb * 1024)}`);
  migrate(db);
  const sql = prepareStatements(db);
  const ingestMessages = db.transaction(
    (accountId: string, items: MessageUpsert[], now: Date, dryRun: boolean) => {
      const accepted = ingestMessageBatch(sql, accountId, items, now);
      if (dryRun) throw new DryRunPassed({ accepted });
      return { accepted };
    },
  );
  const ingestReceipts = db.transaction((accountId: string, items: ReceiptInput[], dryRun: boolean) => {
    const outcome = ingestReceiptBatch(sql, accountId, items);
    if (dryRun) throw new DryRunPassed(outcome);
    return outcome;
  });

  return {
    engine: 'sqlite',

    async migrate() {
      migrate(db);
    },
    async ping() {
      sql.ping.get();
    },
    async close() {
      if (db.open) db.close();
    },

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
    async getCallbackSecret(id) {
      return sql.callbackSecret.get(id)?.callback_secret ?? null;
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
      });
      return row ? accountFromRow(row) : null;
    },
    async setSecretHash(id, secretHash) {
      const row = sql.setSecretHash.get(secretHash, id);
      return row ? accountFromRow(row) : null;
    },

    async ingestMessages(accountId, items, now, options) {
      return runBatch(() => ingestMessages.immediate(accountId, items, now, options?.dryRun === true));
    },
    async ingestReceipts(accountId, items, _now, options) {
      return runBatch(() => ingestReceipts.immediate(accountId, items, options?.dryRun === true));
    },

    async findDlr(accountId, messageId) {
      return recipientsOf(sql, accountId, messageId);
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

    async prune(cutoff) {
      return sql.prune.run(cutoff.getTime()).changes;
    },
  };
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

/** Runs inside the batch transaction; throws {@link BatchRejected} (rolling back) when any item is bad. */
function ingestMessageBatch(sql: Statements, accountId: string, items: MessageUpsert[], now: Date): number {
  const seqRow = sql.lastMessageSeq.get(accountId);
  if (!seqRow) throw new Error(`unknown account ${accountId}`);
  let seq = seqRow.last_message_seq;
  const errors: ItemError[] = [];
  items.forEach((item, index) => {
    const contactId = resolveOrLinkContact(sql, accountId, item);
    if (typeof contactId !== 'string') {
      errors.push({ index, detail: contactId.error });
      return;
    }
    let conversationId = sql.conversation.get(accountId, contactId, item.channel)?.id;
    if (conversationId === undefined) {
      conversationId = newId();
      sql.insertConversation.run(accountId, contactId, item.channel, conversationId);
    }
    const existingRow = sql.message.get(accountId, item.id, item.channelUserId);
    const existing = existingRow ? messageFromRow(existingRow) : null;
    const merged = mergeMessage(existing, item, { contactId, conversationId }, now);
    if (typeof merged === 'string') {
      errors.push({ index, detail: merged });
      return;
    }
    writeMessage(sql, accountId, merged, existing === null ? ++seq : null);
  });
  if (errors.length > 0) throw new BatchRejected(errors);
  sql.setLastMessageSeq.run(seq, accountId);
  return items.length;
}

/**
 * The contact of an item's identity, creating contact and identity as needed, or why it cannot be linked.
 * Later items of the batch see what earlier ones linked, as if the items had been sent one by one.
 */
function resolveOrLinkContact(
  sql: Statements,
  accountId: string,
  item: MessageUpsert,
): string | { error: string } {
  const owner = sql.identity.get(accountId, item.channel, item.channelUserId)?.contact_id;
  if (item.contactId === undefined) {
    if (owner !== undefined) return owner;
    const contactId = newId();
    sql.insertContact.run(accountId, contactId);
    sql.insertIdentity.run(accountId, item.channel, item.channelUserId, contactId);
    return contactId;
  }
  if (owner !== undefined) {
    if (owner === item.contactId) return owner;
    return { error: `${item.channel} identity ${item.channelUserId} belongs to another contact` };
  }
  const held = sql.identityOfContact.get(accountId, item.contactId, item.channel)?.channel_user_id;
  if (held !== undefined) {
    return { error: `contact ${item.contactId} already has the ${item.channel} identity ${held}` };
  }
  sql.insertContact.run(accountId, item.contactId);
  sql.insertIdentity.run(accountId, item.channel, item.channelUserId, item.contactId);
  return item.contactId;
}

/** The outbound SMS recipients of a message id, in the order they were first ingested. */
function recipientsOf(sql: Statements, accountId: string, messageId: string): StoredMessage[] {
  const rows = sql.dlr.all(accountId, messageId);
  if (rows.length > 1) rows.sort((a, b) => a.seq - b.seq);
  return rows.map(messageFromRow);
}

/** Inserts a new record with its ingest sequence, or updates an existing one (seq null). */
function writeMessage(sql: Statements, accountId: string, message: StoredMessage, seq: number | null): void {
  const params = messageParams(accountId, message);
  if (seq === null) sql.updateMessage.run(params);
  else sql.insertMessage.run({ ...params, seq, created_at: message.createdAt.getTime() });
}

function ingestReceiptBatch(sql: Statements, accountId: string, items: ReceiptInput[]): ReceiptOutcome {
  const outcome: ReceiptOutcome = { applied: 0, ignored: 0, unknown: [] };
  const errors: ItemError[] = [];
  items.forEach((item, index) => {
    const target = receiptTarget(recipientsOf(sql, accountId, item.messageId), item);
    if (typeof target === 'string') {
      errors.push({ index, detail: target });
      return;
    }
    if (!target?.sms) {
      outcome.unknown.push({ messageId: item.messageId, to: item.to ?? null });
      return;
    }
    const sms = applyReceipt(target.sms, item);
    if (sms === null) {
      outcome.ignored++;
      return;
    }
    writeMessage(sql, accountId, { ...target, sms }, null);
    outcome.applied++;
  });
  if (errors.length > 0) throw new BatchRejected(errors);
  return outcome;
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

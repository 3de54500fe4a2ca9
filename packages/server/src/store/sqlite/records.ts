import type Database from 'better-sqlite3';
import type { CarrierClaim, MessagePlan } from '../../domain/ingest/plan-messages.js';
import { recordKey } from '../../domain/ingest/plan-messages.js';
import type { StoredMessage } from '../../domain/records.js';
import { type CarrierRow, carrierClaim, type MessageRow } from '../rows.js';
import { idOfRef, refOf } from './account-ref.js';
import { itemToKeep } from './current-item.js';
import { preparer } from './database.js';
import type { BatchAccount, RecordRefs } from './events.js';
import { conversationRefOf, recordRefOf, recordsWithConversation } from './record-refs.js';
import {
  type Columns,
  fromRow,
  MESSAGE_COLUMNS,
  type MessageParams,
  messageParams,
  NEW_MESSAGE_COLUMNS,
  newMessageValues,
  receiptValues,
  type SqlValue,
} from './rows.js';

/** A carrier pair's columns, its holder's account by id. */
const CARRIER_COLUMNS = `route, carrier_id, ${idOfRef('account_id')} AS account_id, message_id, channel_user_id`;

/**
 * The reads and writes of message records that ingest makes, inside the batch's transaction. The reads take
 * all of a batch's keys at once, as one JSON array: each key is still one search of the index named in its plan,
 * but one statement per batch rather than per key halves their CPU (measured on a 100,000-record account: 8
 * against 14 µs per record).
 */
export function prepareRecords(db: Database.Database) {
  const prepare = preparer(db);
  return {
    messagesByKeys: prepare<[{ account: string; keys: string }], MessageRow<Columns> & { ref: number }>(
      `SELECT ${MESSAGE_COLUMNS}, m.ref FROM ${recordsWithConversation()}
       WHERE m.account_id = ${refOf('@account')}
         AND (m.id, m.channel_user_id) IN (SELECT value ->> 0, value ->> 1 FROM json_each(@keys))`,
    ),
    lastMessageSeq: prepare<[string], { last_message_seq: number }>(
      'SELECT last_message_seq FROM accounts WHERE id = ?',
    ),
    setLastMessageSeq: prepare<[number, string]>('UPDATE accounts SET last_message_seq = ? WHERE id = ?'),
    // One row per statement, on purpose: a multi-row VALUES insert needs a statement journal (a row may fail
    // after others went in), which copied every page it touched and cost more than the calls it saved
    // (measured here: 48 against 33 µs per record). Positional, in NEW_MESSAGE_COLUMNS order, with the
    // account's and the conversation's refs as the batch knows them (writeRecords).
    insertMessage: prepare<[SqlValue[]]>(
      `INSERT INTO messages (${NEW_MESSAGE_COLUMNS})
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    // createdAt and the ingest sequence never change once a record exists.
    updateMessage: prepare<[MessageParams]>(
      `UPDATE messages SET channel = @channel, direction = @direction,
         conversation_ref = ${conversationRefOf('@account_id', '@conversation_id')}, campaign_id = @campaign_id,
         text = @text, content = @content,
         status = @status, sms_status = @sms_status, network = @network, price = @price, counts = @counts,
         dr_statuscode = @dr_statuscode, dr_errcode = @dr_errcode, dr_time = @dr_time
       WHERE account_id = ${refOf('@account_id')} AND id = @id AND channel_user_id = @channel_user_id`,
    ),
    // The outbound SMS recipients of a receipt batch's message ids, with the rowid that updateReceipt writes
    // them by (read in the same transaction, so it cannot have moved). Callers order each id's rows by `seq`.
    recipientsOfIds: prepare<
      [{ account: string; ids: string }],
      MessageRow<Columns> & { seq: number; row: number }
    >(
      `SELECT ${MESSAGE_COLUMNS}, m.seq, m.rowid AS row FROM ${recordsWithConversation()}
       WHERE m.account_id = ${refOf('@account')} AND m.id IN (SELECT value FROM json_each(@ids))
         AND m.sms_status IS NOT NULL`,
    ),
    // A receipt changes only the SMS and receipt columns: text and content are never read back and rewritten.
    // By rowid, from recipientsOfIds: one search of the table rather than of the key index and then the table.
    updateReceipt: prepare<[SqlValue[]]>(
      `UPDATE messages SET sms_status = ?, network = ?, price = ?, counts = ?, dr_statuscode = ?, dr_errcode = ?,
         dr_time = ?
       WHERE rowid = ?`,
    ),
    // The events that store no item (current-item.ts) get the item their record had, before the record changes:
    // by the record's ref (its rowid, from recipientsOfIds) or by its key. INDEXED BY: left to itself, the
    // planner walks the account's events by primary key.
    fillItemsOfRow: prepare<[string, string, number]>(
      `UPDATE receipt_events INDEXED BY receipt_events_message SET item = ?
       WHERE account_id = ${refOf('?')} AND message_ref = ? AND item IS NULL`,
    ),
    fillItemsOfKey: prepare<[string, string, string, string, string]>(
      `UPDATE receipt_events INDEXED BY receipt_events_message SET item = ?
       WHERE account_id = ${refOf('?')} AND message_ref = ${recordRefOf('?', '?', '?')} AND item IS NULL`,
    ),
    // Carrier pairs (CONTRACT §12 "Correlation"): by the pair (primary key), and by the recipient holding one.
    carriersOfPairs: prepare<[{ pairs: string }], CarrierRow>(
      `SELECT ${CARRIER_COLUMNS} FROM carrier_ids
       WHERE (route, carrier_id) IN (SELECT value ->> 0, value ->> 1 FROM json_each(@pairs))`,
    ),
    carriersOfRecords: prepare<[{ account: string; keys: string }], CarrierRow>(
      `SELECT ${CARRIER_COLUMNS} FROM carrier_ids
       WHERE account_id = ${refOf('@account')}
         AND (message_id, channel_user_id) IN (SELECT value ->> 0, value ->> 1 FROM json_each(@keys))`,
    ),
    holdersOnRoute: prepare<[{ route: string; ids: string }], CarrierRow>(
      `SELECT ${CARRIER_COLUMNS} FROM carrier_ids
       WHERE route = @route AND carrier_id IN (SELECT value FROM json_each(@ids))`,
    ),
    releaseCarrier: prepare<[string, string]>('DELETE FROM carrier_ids WHERE route = ? AND carrier_id = ?'),
    claimCarrier: prepare<[string, string, string, string, string, number]>(
      `INSERT INTO carrier_ids (route, carrier_id, account_id, message_id, channel_user_id, created_at)
       VALUES (?, ?, ${refOf('?')}, ?, ?, ?)`,
    ),
  };
}

export type RecordStatements = ReturnType<typeof prepareRecords>;

/** The stored claims of these pairs (any account), and those held by these records of the account. */
export function readCarriers(
  sql: RecordStatements,
  accountId: string,
  pairs: readonly { route: string; carrierId: string }[],
  records: readonly { id: string; channelUserId: string }[],
): CarrierClaim[] {
  const rows: CarrierRow[] = [];
  if (pairs.length > 0) {
    rows.push(
      ...sql.carriersOfPairs.all({ pairs: JSON.stringify(pairs.map((p) => [p.route, p.carrierId])) }),
    );
  }
  if (records.length > 0) {
    const keys = JSON.stringify(records.map((r) => [r.id, r.channelUserId]));
    rows.push(...sql.carriersOfRecords.all({ account: accountId, keys }));
  }
  return rows.map(carrierClaim);
}

/** Gives up the plan's released pairs, then writes its claims. */
export function writeCarriers(sql: RecordStatements, carriers: MessagePlan['carriers']): void {
  for (const r of carriers.release) sql.releaseCarrier.run(r.route, r.carrierId);
  for (const c of carriers.claim) {
    sql.claimCarrier.run(c.route, c.carrierId, c.accountId, c.messageId, c.to, c.createdAt.getTime());
  }
}

/** The stored records of these keys, and their refs, by {@link recordKey}. */
export function readRecords(
  sql: RecordStatements,
  accountId: string,
  keys: readonly { id: string; channelUserId: string }[],
): { records: Map<string, StoredMessage>; refs: RecordRefs } {
  const records = new Map<string, StoredMessage>();
  const refs: RecordRefs = new Map();
  const json = JSON.stringify(keys.map((r) => [r.id, r.channelUserId]));
  for (const row of sql.messagesByKeys.all({ account: accountId, keys: json })) {
    const key = recordKey(row.id, row.channel_user_id);
    records.set(key, fromRow.message(row));
    refs.set(key, row.ref);
  }
  return { records, refs };
}

/**
 * Writes whole records: inserts the new ones, numbered in the given (first-ingested) order, updates the rest,
 * `stored` giving each one's stored state. A new record's conversation ref comes from `conversations` (by
 * conversation id: those the batch read or created), and its own ref goes into `refs`, beside those read.
 */
export function writeRecords(
  sql: RecordStatements,
  account: BatchAccount,
  records: readonly { record: StoredMessage; isNew: boolean }[],
  stored: (record: StoredMessage) => StoredMessage | undefined,
  conversations: ReadonlyMap<string, number>,
  refs: RecordRefs,
): void {
  const accountId = account.id;
  const last = sql.lastMessageSeq.get(accountId);
  if (!last) throw new Error(`unknown account ${accountId}`);
  let seq = last.last_message_seq;
  for (const { record, isNew } of records) {
    if (isNew) {
      const conversation = conversations.get(record.conversationId);
      // The planner gives a new record a conversation the batch read or creates, never another.
      if (conversation === undefined)
        throw new Error(`record of an unknown conversation ${record.conversationId}`);
      const { lastInsertRowid } = sql.insertMessage.run(
        newMessageValues(account.ref, ++seq, record, conversation),
      );
      refs.set(recordKey(record.id, record.channelUserId), Number(lastInsertRowid));
      continue;
    }
    const item = itemToKeep(stored(record), record);
    if (item !== null) sql.fillItemsOfKey.run(item, accountId, accountId, record.id, record.channelUserId);
    sql.updateMessage.run(messageParams(accountId, record));
  }
  sql.setLastMessageSeq.run(seq, accountId);
}

/**
 * A receipt batch's recipients: by message id in first-ingested order, and each one's rowid and stored state by
 * record key.
 */
export interface Recipients {
  byId: Map<string, StoredMessage[]>;
  rows: Map<string, number>;
  stored: Map<string, StoredMessage>;
}

/** The outbound SMS recipients of these message ids. */
export function readRecipients(sql: RecordStatements, accountId: string, ids: readonly string[]): Recipients {
  const found = new Map<string, (MessageRow<Columns> & { seq: number; row: number })[]>();
  for (const row of sql.recipientsOfIds.all({ account: accountId, ids: JSON.stringify(ids) })) {
    const list = found.get(row.id);
    if (list) list.push(row);
    else found.set(row.id, [row]);
  }
  const byId = new Map<string, StoredMessage[]>();
  const rows = new Map<string, number>();
  const stored = new Map<string, StoredMessage>();
  for (const [id, list] of found) {
    // In the order they were first ingested, as /dlr lists them.
    if (list.length > 1) list.sort((a, b) => a.seq - b.seq);
    const records: StoredMessage[] = [];
    for (const r of list) {
      const record = fromRow.message(r);
      const key = recordKey(r.id, r.channel_user_id);
      records.push(record);
      rows.set(key, r.row);
      stored.set(key, record);
    }
    byId.set(id, records);
  }
  return { byId, rows, stored };
}

/** Writes the SMS and receipt columns of recipients read by {@link readRecipients}, and nothing else. */
export function updateSmsState(
  sql: RecordStatements,
  accountId: string,
  recipients: Recipients,
  records: readonly StoredMessage[],
): void {
  for (const record of records) {
    const key = recordKey(record.id, record.channelUserId);
    const row = recipients.rows.get(key);
    // Receipts only ever change recipients the batch loaded.
    if (row === undefined) throw new Error(`receipt plan updates an unloaded record ${record.id}`);
    const item = itemToKeep(recipients.stored.get(key), record);
    if (item !== null) sql.fillItemsOfRow.run(item, accountId, row);
    sql.updateReceipt.run(receiptValues(record, row));
  }
}

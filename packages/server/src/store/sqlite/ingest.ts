import {
  conversationKey,
  identityKey,
  type MessageBatchState,
  type MessagePlan,
  messageBatchKeys,
  recordKey,
} from '../../domain/ingest/plan-messages.js';
import {
  type ReceiptBatchState,
  type ReceiptPlan,
  receiptFingerprint,
} from '../../domain/ingest/plan-receipts.js';
import type { MessageUpsert, ReceiptInput } from '../../domain/ingest/precedence.js';
import type { StoredMessage } from '../../domain/records.js';
import { UnknownAccountError } from '../store.js';
import { type Outbox, writeEvents } from './outbox.js';
import {
  type MessageRow,
  messageFromRow,
  messageParams,
  newMessageValues,
  parkedFromRow,
  parkedJson,
  receiptValues,
} from './rows.js';
import type { Statements } from './statements.js';

/**
 * Loaders and writers of ingest batches on SQLite. The rules are the domain planners'; these functions only
 * read what a plan needs and write what it says, inside the batch's one transaction. Each kind of row a batch
 * needs is read with one statement for all of the batch's keys (statements.ts, "The reads of an ingest batch").
 */

function accountOf(sql: Statements, accountId: string) {
  const row = sql.batchAccount.get(accountId);
  if (!row) throw new UnknownAccountError(`no account ${accountId}`);
  return row;
}

export function loadMessageBatch(
  sql: Statements,
  accountId: string,
  items: readonly MessageUpsert[],
  parkedSince: number,
): MessageBatchState {
  const account = accountId;
  const keys = messageBatchKeys(items);
  const owners = new Map<string, string>();
  const identityKeys = JSON.stringify(keys.identities.map((i) => [i.channel, i.channelUserId]));
  for (const row of sql.identitiesByKeys.all({ account, keys: identityKeys })) {
    owners.set(identityKey(row.channel, row.channel_user_id), row.contact_id);
  }
  const held = new Map<string, string>();
  if (keys.namedContacts.length > 0) {
    const contacts = JSON.stringify(keys.namedContacts);
    for (const row of sql.identitiesOfContacts.all({ account, contacts })) {
      held.set(conversationKey(row.contact_id, row.channel), row.channel_user_id);
    }
  }
  const conversations = new Map<string, string>();
  const contacts = JSON.stringify([...new Set([...keys.namedContacts, ...owners.values()])]);
  for (const row of sql.conversationsOfContacts.all({ account, contacts })) {
    conversations.set(conversationKey(row.contact_id, row.channel), row.id);
  }
  const records = new Map<string, StoredMessage>();
  const recordKeys = JSON.stringify(keys.records.map((r) => [r.id, r.channelUserId]));
  for (const row of sql.messagesByKeys.all({ account, keys: recordKeys })) {
    records.set(recordKey(row.id, row.channel_user_id), messageFromRow(row));
  }
  const parked = sql.parkedOfIds
    .all({ account, ids: JSON.stringify(keys.messageIds), since: parkedSince })
    .map(parkedFromRow);
  return {
    owners,
    held,
    conversations,
    records,
    parked,
    callbacks: accountOf(sql, accountId).callbacks !== 0,
  };
}

export function writeMessagePlan(
  sql: Statements,
  outbox: Outbox,
  accountId: string,
  plan: MessagePlan,
): void {
  for (const contactId of plan.contacts) sql.insertContact.run(accountId, contactId);
  for (const i of plan.identities) sql.insertIdentity.run(accountId, i.channel, i.channelUserId, i.contactId);
  for (const c of plan.conversations) sql.insertConversation.run(accountId, c.contactId, c.channel, c.id);
  let seq = accountOf(sql, accountId).last_message_seq;
  for (const { record, isNew } of plan.records) {
    if (isNew) sql.insertMessage.run(newMessageValues(accountId, ++seq, record));
    else sql.updateMessage.run(messageParams(accountId, record));
  }
  sql.setLastMessageSeq.run(seq, accountId);
  writeEvents(outbox, accountId, plan.events, plan.supersede);
  for (const ref of plan.unparked) sql.unpark.run(ref);
}

/** What a receipt batch loaded: the planner's state, and where each recipient's row is (by record key). */
export interface LoadedReceiptBatch {
  state: ReceiptBatchState;
  rows: ReadonlyMap<string, number>;
}

export function loadReceiptBatch(
  sql: Statements,
  accountId: string,
  items: readonly ReceiptInput[],
): LoadedReceiptBatch {
  const ids = JSON.stringify([...new Set(items.map((i) => i.messageId))]);
  const byId = new Map<string, (MessageRow & { seq: number; row: number })[]>();
  for (const row of sql.recipientsOfIds.all({ account: accountId, ids })) {
    const list = byId.get(row.id);
    if (list) list.push(row);
    else byId.set(row.id, [row]);
  }
  const recipients = new Map<string, StoredMessage[]>();
  const rows = new Map<string, number>();
  for (const [id, list] of byId) {
    // In the order they were first ingested, as /dlr lists them.
    if (list.length > 1) list.sort((a, b) => a.seq - b.seq);
    recipients.set(id, list.map(messageFromRow));
    for (const r of list) rows.set(recordKey(r.id, r.channel_user_id), r.row);
  }
  return { state: { recipients, callbacks: accountOf(sql, accountId).callbacks !== 0 }, rows };
}

export function writeReceiptPlan(
  sql: Statements,
  outbox: Outbox,
  accountId: string,
  plan: ReceiptPlan,
  rows: ReadonlyMap<string, number>,
  now: Date,
): void {
  for (const record of plan.updates) {
    const row = rows.get(recordKey(record.id, record.channelUserId));
    // Receipts only ever change recipients the batch loaded.
    if (row === undefined) throw new Error(`receipt plan updates an unloaded record ${record.id}`);
    sql.updateReceipt.run(receiptValues(record, row));
  }
  writeEvents(outbox, accountId, plan.events, plan.supersede);
  for (const receipt of plan.park) {
    sql.park.run(
      accountId,
      receipt.messageId,
      receiptFingerprint(receipt),
      parkedJson(receipt),
      now.getTime(),
    );
  }
}

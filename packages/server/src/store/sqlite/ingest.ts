import type { MessageUpsert, ReceiptInput } from '../../domain/ingest.js';
import {
  conversationKey,
  identityKey,
  type MessageBatchState,
  type MessagePlan,
  messageBatchKeys,
  recordKey,
} from '../../domain/plan-messages.js';
import { type ReceiptBatchState, type ReceiptPlan, receiptFingerprint } from '../../domain/plan-receipts.js';
import type { StoredMessage } from '../../domain/records.js';
import { type Outbox, writeEvents } from './outbox.js';
import { messageFromRow, messageParams, parkedFromRow, parkedJson } from './rows.js';
import type { Statements } from './statements.js';

/**
 * Loaders and writers of ingest batches on SQLite. The rules are the domain planners'; these functions only
 * read what a plan needs and write what it says, inside the batch's one transaction.
 */

function accountOf(sql: Statements, accountId: string) {
  const row = sql.batchAccount.get(accountId);
  if (!row) throw new Error(`unknown account ${accountId}`);
  return row;
}

export function loadMessageBatch(
  sql: Statements,
  accountId: string,
  items: readonly MessageUpsert[],
  parkedSince: number,
): MessageBatchState {
  const keys = messageBatchKeys(items);
  const owners = new Map<string, string>();
  for (const { channel, channelUserId } of keys.identities) {
    const owner = sql.identity.get(accountId, channel, channelUserId)?.contact_id;
    if (owner !== undefined) owners.set(identityKey(channel, channelUserId), owner);
  }
  const held = new Map<string, string>();
  for (const contactId of keys.namedContacts) {
    for (const row of sql.identitiesOfContact.all(accountId, contactId)) {
      held.set(conversationKey(contactId, row.channel), row.channel_user_id);
    }
  }
  const conversations = new Map<string, string>();
  for (const contactId of new Set([...keys.namedContacts, ...owners.values()])) {
    for (const row of sql.conversationsOfContact.all(accountId, contactId)) {
      conversations.set(conversationKey(contactId, row.channel), row.id);
    }
  }
  const records = new Map<string, StoredMessage>();
  for (const { id, channelUserId } of keys.records) {
    const row = sql.message.get(accountId, id, channelUserId);
    if (row) records.set(recordKey(id, channelUserId), messageFromRow(row));
  }
  const parked = keys.messageIds.flatMap((id) =>
    sql.parkedOf.all(accountId, id, parkedSince).map(parkedFromRow),
  );
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
    const params = messageParams(accountId, record);
    if (isNew) sql.insertMessage.run({ ...params, seq: ++seq, created_at: record.createdAt.getTime() });
    else sql.updateMessage.run(params);
  }
  sql.setLastMessageSeq.run(seq, accountId);
  writeEvents(outbox, accountId, plan.events, plan.supersede);
  for (const ref of plan.unparked) sql.unpark.run(ref);
}

/** The outbound SMS recipients of a message id, in the order they were first ingested. */
export function recipientsOf(sql: Statements, accountId: string, messageId: string): StoredMessage[] {
  const rows = sql.dlr.all(accountId, messageId);
  if (rows.length > 1) rows.sort((a, b) => a.seq - b.seq);
  return rows.map(messageFromRow);
}

export function loadReceiptBatch(
  sql: Statements,
  accountId: string,
  items: readonly ReceiptInput[],
): ReceiptBatchState {
  const recipients = new Map<string, StoredMessage[]>();
  for (const id of new Set(items.map((i) => i.messageId)))
    recipients.set(id, recipientsOf(sql, accountId, id));
  return { recipients, callbacks: accountOf(sql, accountId).callbacks !== 0 };
}

export function writeReceiptPlan(
  sql: Statements,
  outbox: Outbox,
  accountId: string,
  plan: ReceiptPlan,
  now: Date,
): void {
  for (const record of plan.updates) sql.updateReceipt.run(messageParams(accountId, record));
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

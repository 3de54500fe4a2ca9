import type Database from 'better-sqlite3';
import {
  type MessageBatchState,
  type MessagePlan,
  messageBatchKeys,
  planMessages,
  recordKey,
} from '../../domain/ingest/plan-messages.js';
import type { MessageUpsert } from '../../domain/ingest/precedence.js';
import { conversationIds, heldIdentities, identityOwners } from '../rows.js';
import type { IngestOptions, IngestStore, MessageBatchResult } from '../store.js';
import { refOf } from './account-ref.js';
import { preparer, RollBack, runBatch } from './database.js';
import {
  accountOfBatch,
  type BatchAccount,
  type EventStatements,
  type RecordRefs,
  writeEvents,
} from './events.js';
import { type ParkedStatements, readParked, readParkedOfPairs, unpark } from './parked.js';
import { type RecordStatements, readCarriers, readRecords, writeCarriers, writeRecords } from './records.js';
import { type RollupStatements, writeRollupOf } from './rollup.js';

/** The statements of message ingest beyond the records': identities, contacts and conversations. */
export function prepareMessageIngest(db: Database.Database) {
  const prepare = preparer(db);
  return {
    identitiesByKeys: prepare<
      [{ account: string; keys: string }],
      { channel: string; channel_user_id: string; contact_id: string }
    >(
      `SELECT channel, channel_user_id, contact_id FROM identities
       WHERE account_id = ${refOf('@account')}
         AND (channel, channel_user_id) IN (SELECT value ->> 0, value ->> 1 FROM json_each(@keys))`,
    ),
    // Pinned to the UNIQUE (account_id, contact_id, channel) index (SQLite names it _2, after the primary key):
    // left to itself the planner (3.54, with or without ANALYZE) searches the primary key on account_id alone
    // and reads every identity of the account, 8 ms a call at 100,000 identities and the whole cost of a
    // message batch. A missing index fails at open; test/unit/sqlite-plans pins every plan.
    identitiesOfContacts: prepare<
      [{ account: string; contacts: string }],
      { contact_id: string; channel: string; channel_user_id: string }
    >(
      `SELECT contact_id, channel, channel_user_id FROM identities INDEXED BY sqlite_autoindex_identities_2
       WHERE account_id = ${refOf('@account')} AND contact_id IN (SELECT value FROM json_each(@contacts))`,
    ),
    conversationsOfContacts: prepare<
      [{ account: string; contacts: string }],
      { contact_id: string; channel: string; id: string; ref: number }
    >(
      `SELECT contact_id, channel, id, ref FROM conversations
       WHERE account_id = ${refOf('@account')} AND contact_id IN (SELECT value FROM json_each(@contacts))`,
    ),
    // The writes take the account's ref as the batch read it (events.ts accountOfBatch).
    insertContact: prepare<[number, string]>(
      'INSERT INTO contacts (account_id, id) VALUES (?, ?) ON CONFLICT DO NOTHING',
    ),
    insertIdentity: prepare<[number, string, string, string]>(
      'INSERT INTO identities (account_id, channel, channel_user_id, contact_id) VALUES (?, ?, ?, ?)',
    ),
    insertConversation: prepare<[number, string, string, string]>(
      'INSERT INTO conversations (account_id, contact_id, channel, id) VALUES (?, ?, ?, ?)',
    ),
  };
}

export type MessageStatements = ReturnType<typeof prepareMessageIngest>;

export interface MessageIngestStatements {
  messages: MessageStatements;
  records: RecordStatements;
  parked: ParkedStatements;
  events: EventStatements;
  rollup: RollupStatements;
}

/**
 * Message ingest on SQLite. The rules are the domain planner's: a batch reads what the plan needs (each kind
 * of row with one statement for all of the batch's keys) and writes what it says, inside one IMMEDIATE
 * transaction, so what was read cannot change before the write.
 */
export function messageIngest(
  db: Database.Database,
  sql: MessageIngestStatements,
): IngestStore['ingestMessages'] {
  const apply = db.transaction(
    (accountId: string, items: MessageUpsert[], now: Date, options: IngestOptions | undefined) => {
      const batch = loadMessageBatch(sql, accountId, items, options?.parkedSince?.getTime() ?? 0);
      const planned = planMessages(batch.state, items, now);
      if (!planned.ok) throw new RollBack({ ok: false, errors: planned.errors });
      const value: MessageBatchResult = { accepted: items.length, events: planned.plan.events.length };
      if (options?.dryRun === true) throw new RollBack({ ok: true, value });
      writeMessagePlan(sql, batch, planned.plan);
      return value;
    },
  );
  return async (accountId, items, now, options) =>
    runBatch(() => apply.immediate(accountId, items, now, options));
}

/** A message batch as read: the planner's state, with the refs the store writes by. */
interface LoadedMessageBatch {
  state: MessageBatchState;
  account: BatchAccount;
  /** Conversation refs by conversation id: those read, then those the batch creates. */
  conversations: Map<string, number>;
  /** Record refs by record key: those read, then those the batch inserts. */
  refs: RecordRefs;
}

function loadMessageBatch(
  sql: MessageIngestStatements,
  accountId: string,
  items: readonly MessageUpsert[],
  parkedSince: number,
): LoadedMessageBatch {
  const account = accountOfBatch(sql.events, accountId);
  const keys = messageBatchKeys(items);
  const identityKeys = JSON.stringify(keys.identities.map((i) => [i.channel, i.channelUserId]));
  const owners = identityOwners(
    sql.messages.identitiesByKeys.all({ account: accountId, keys: identityKeys }),
  );
  const named = keys.namedContacts;
  const held = heldIdentities(
    named.length === 0
      ? []
      : sql.messages.identitiesOfContacts.all({ account: accountId, contacts: JSON.stringify(named) }),
  );
  const contacts = JSON.stringify([...new Set([...keys.namedContacts, ...owners.values()])]);
  const conversationRows = sql.messages.conversationsOfContacts.all({ account: accountId, contacts });
  const read = readRecords(sql.records, accountId, keys.records);
  const parked = readParked(sql.parked, accountId, keys.messageIds, parkedSince);
  const carriers = readCarriers(sql.records, accountId, keys.carrierPairs, keys.carrierRecords);
  const parkedCarrier = readParkedOfPairs(sql.parked, keys.carrierPairs, parkedSince);
  return {
    state: {
      accountId,
      owners,
      held,
      conversations: conversationIds(conversationRows),
      records: read.records,
      parked,
      carriers,
      parkedCarrier,
      callbacks: account.callbacks,
    },
    account,
    conversations: new Map(conversationRows.map((c) => [c.id, c.ref])),
    refs: read.refs,
  };
}

function writeMessagePlan(sql: MessageIngestStatements, batch: LoadedMessageBatch, plan: MessagePlan): void {
  const { messages } = sql;
  const { state, account } = batch;
  for (const contactId of [...plan.contacts.minted, ...plan.contacts.named]) {
    messages.insertContact.run(account.ref, contactId);
  }
  for (const i of plan.identities) {
    messages.insertIdentity.run(account.ref, i.channel, i.channelUserId, i.contactId);
  }
  for (const c of plan.conversations) {
    const { lastInsertRowid } = messages.insertConversation.run(account.ref, c.contactId, c.channel, c.id);
    batch.conversations.set(c.id, Number(lastInsertRowid));
  }
  const stored = (r: { id: string; channelUserId: string }) =>
    state.records.get(recordKey(r.id, r.channelUserId));
  writeRecords(sql.records, account, plan.records, stored, batch.conversations, batch.refs);
  writeCarriers(sql.records, plan.carriers);
  const written = plan.records.map((r) => r.record);
  writeRollupOf(sql.rollup, account.id, stored, written);
  writeEvents(sql.events, account, plan.events, plan.supersede, written, batch.refs);
  unpark(sql.parked, plan.unparked);
}

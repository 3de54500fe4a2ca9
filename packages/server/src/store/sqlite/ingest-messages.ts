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
import { callbacksOf, type EventStatements, writeEvents } from './events.js';
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
      { contact_id: string; channel: string; id: string }
    >(
      `SELECT contact_id, channel, id FROM conversations
       WHERE account_id = ${refOf('@account')} AND contact_id IN (SELECT value FROM json_each(@contacts))`,
    ),
    insertContact: prepare<[string, string]>(
      `INSERT INTO contacts (account_id, id) VALUES (${refOf('?')}, ?) ON CONFLICT DO NOTHING`,
    ),
    insertIdentity: prepare<[string, string, string, string]>(
      `INSERT INTO identities (account_id, channel, channel_user_id, contact_id) VALUES (${refOf('?')}, ?, ?, ?)`,
    ),
    insertConversation: prepare<[string, string, string, string]>(
      `INSERT INTO conversations (account_id, contact_id, channel, id) VALUES (${refOf('?')}, ?, ?, ?)`,
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
      const state = loadMessageBatch(sql, accountId, items, options?.parkedSince?.getTime() ?? 0);
      const planned = planMessages(state, items, now);
      if (!planned.ok) throw new RollBack({ ok: false, errors: planned.errors });
      const value: MessageBatchResult = { accepted: items.length, events: planned.plan.events.length };
      if (options?.dryRun === true) throw new RollBack({ ok: true, value });
      writeMessagePlan(sql, state, planned.plan);
      return value;
    },
  );
  return async (accountId, items, now, options) =>
    runBatch(() => apply.immediate(accountId, items, now, options));
}

function loadMessageBatch(
  sql: MessageIngestStatements,
  account: string,
  items: readonly MessageUpsert[],
  parkedSince: number,
): MessageBatchState {
  const callbacks = callbacksOf(sql.events, account);
  const keys = messageBatchKeys(items);
  const identityKeys = JSON.stringify(keys.identities.map((i) => [i.channel, i.channelUserId]));
  const owners = identityOwners(sql.messages.identitiesByKeys.all({ account, keys: identityKeys }));
  const named = keys.namedContacts;
  const held = heldIdentities(
    named.length === 0
      ? []
      : sql.messages.identitiesOfContacts.all({ account, contacts: JSON.stringify(named) }),
  );
  const contacts = JSON.stringify([...new Set([...keys.namedContacts, ...owners.values()])]);
  const conversations = conversationIds(sql.messages.conversationsOfContacts.all({ account, contacts }));
  const records = readRecords(sql.records, account, keys.records);
  const parked = readParked(sql.parked, account, keys.messageIds, parkedSince);
  const carriers = readCarriers(sql.records, account, keys.carrierPairs, keys.carrierRecords);
  const parkedCarrier = readParkedOfPairs(sql.parked, keys.carrierPairs, parkedSince);
  return {
    accountId: account,
    owners,
    held,
    conversations,
    records,
    parked,
    carriers,
    parkedCarrier,
    callbacks,
  };
}

function writeMessagePlan(sql: MessageIngestStatements, state: MessageBatchState, plan: MessagePlan): void {
  const { messages } = sql;
  const { accountId } = state;
  for (const contactId of [...plan.contacts.minted, ...plan.contacts.named]) {
    messages.insertContact.run(accountId, contactId);
  }
  for (const i of plan.identities) {
    messages.insertIdentity.run(accountId, i.channel, i.channelUserId, i.contactId);
  }
  for (const c of plan.conversations)
    messages.insertConversation.run(accountId, c.contactId, c.channel, c.id);
  writeRecords(sql.records, accountId, plan.records, (r) =>
    state.records.get(recordKey(r.id, r.channelUserId)),
  );
  writeCarriers(sql.records, plan.carriers);
  writeRollupOf(
    sql.rollup,
    accountId,
    (r) => state.records.get(recordKey(r.id, r.channelUserId)),
    plan.records.map((r) => r.record),
  );
  writeEvents(
    sql.events,
    accountId,
    plan.events,
    plan.supersede,
    plan.records.map((r) => r.record),
  );
  unpark(sql.parked, plan.unparked);
}

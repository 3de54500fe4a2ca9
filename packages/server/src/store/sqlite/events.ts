import type Database from 'better-sqlite3';
import type { PlannedEvent, RecipientRef } from '../../domain/deliveries/events.js';
import { recordKey } from '../../domain/ingest/plan-messages.js';
import type { DlrRecipient } from '../../domain/records.js';
import { storedItem } from '../event-item.js';
import { UnknownAccountError } from '../store.js';
import { itemToStore } from './current-item.js';
import { preparer } from './database.js';

/** Receipt events as ingest records them, with the deliveries they queue, on SQLite. */
export function prepareEvents(db: Database.Database) {
  const prepare = preparer(db);
  return {
    // The account's ref with it (account-ref.ts): read once, a batch's rows are written with the number, not
    // with a search of account_refs each.
    account: prepare<[string], { callbacks: number; ref: number }>(
      `SELECT a.callback_url IS NOT NULL AND a.callback_enabled AS callbacks, r.ref
       FROM accounts a JOIN account_refs r ON r.id = a.id WHERE a.id = ?`,
    ),
    takeEventSeqs: prepare<[number, string], { last_event_seq: number }>(
      'UPDATE accounts SET last_event_seq = last_event_seq + ? WHERE id = ? RETURNING last_event_seq',
    ),
    // The recipient by its record's ref (record-refs.ts), which the batch read or wrote before its events
    // (writeEvents): a search of the account's refs and of the records' key less per event and per delivery,
    // about a quarter of what the two inserts cost (docs/benchmarks.md, "Thirteenth pass").
    insertEvent: prepare<[number, number, string, number, number, string | null]>(
      `INSERT INTO receipt_events (account_id, seq, id, message_ref, recorded_at, item)
       VALUES (?, ?, ?, ?, ?, ?)`,
    ),
    // All of a batch's recipients in one statement (a JSON array of their records' refs, as the batch read or
    // wrote them). Pinned to the record index: left to itself the planner searches (account_id, state) and reads
    // every pending delivery of the account.
    supersede: prepare<[{ account: number; refs: string }]>(
      `UPDATE deliveries INDEXED BY deliveries_record SET state = 'superseded', next_attempt_at = NULL
       WHERE account_id = @account AND message_ref IN (SELECT value FROM json_each(@refs))
         AND state = 'pending'`,
    ),
    // The recipient as its event names it. One row per statement, as records.ts's insertMessage: no statement
    // journal.
    insertDelivery: prepare<[number, number, string, number, string, number, number | null]>(
      `INSERT INTO deliveries (account_id, seq, id, message_ref, state, created_at, next_attempt_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    ),
  };
}

export type EventStatements = ReturnType<typeof prepareEvents>;

/** The account a batch writes: its id, its ref, and whether its events queue deliveries. */
export interface BatchAccount {
  id: string;
  ref: number;
  callbacks: boolean;
}

/**
 * The account of a batch: its ref, and whether its events queue deliveries (a callback URL set and callbacks
 * enabled); the first read of every ingest batch, which throws {@link UnknownAccountError} when the account is
 * gone. The batch's IMMEDIATE transaction holds SQLite's one write lock, so the account cannot be deleted
 * before it commits (and a ref never changes: account-ref.ts).
 */
export function accountOfBatch(sql: EventStatements, accountId: string): BatchAccount {
  const row = sql.account.get(accountId);
  if (!row) throw new UnknownAccountError(`no account ${accountId}`);
  return { id: accountId, ref: row.ref, callbacks: row.callbacks !== 0 };
}

/** The refs of the records a batch read or wrote, by {@link recordKey}. */
export type RecordRefs = Map<string, number>;

/**
 * Records a plan's events with their feed positions, supersedes the recipients' older pending deliveries and
 * queues the new ones. Runs inside the batch's transaction (SQLite has one writer, so the numbering is in
 * commit order by construction), after the batch's records are written: `written` are those records as written,
 * and an event whose item is its record's as written stores none (current-item.ts); `refs` are the refs of the
 * records the batch read or wrote.
 */
export function writeEvents(
  sql: EventStatements,
  account: BatchAccount,
  events: readonly PlannedEvent[],
  supersede: readonly RecipientRef[],
  written: readonly DlrRecipient[],
  refs: RecordRefs,
): void {
  if (events.length === 0) return;
  const current = new Map<string, DlrRecipient>();
  for (const record of written) current.set(recordKey(record.id, record.channelUserId), record);
  const row = sql.takeEventSeqs.get(events.length, account.id);
  if (!row) throw new Error(`unknown account ${account.id}`);
  let seq = row.last_event_seq - events.length;
  if (supersede.length > 0) {
    const of = JSON.stringify(
      supersede.map((r) => refOfRecord(refs, recordKey(r.messageId, r.to), r.messageId)),
    );
    sql.supersede.run({ account: account.ref, refs: of });
  }
  for (const event of events) {
    seq++;
    const key = recordKey(event.messageId, event.to);
    const ref = refOfRecord(refs, key, event.messageId);
    const recordedAt = event.recordedAt.getTime();
    const item = storedItem(event.item, event.messageId, event.to);
    sql.insertEvent.run(account.ref, seq, event.id, ref, recordedAt, itemToStore(item, current.get(key)));
    if (event.delivery !== null) {
      sql.insertDelivery.run(
        account.ref,
        seq,
        event.id,
        ref,
        event.delivery,
        recordedAt,
        event.delivery === 'pending' ? recordedAt : null,
      );
    }
  }
}

/** A recipient's ref: every event and superseded delivery is of a record its batch read (receipts) or wrote. */
function refOfRecord(refs: RecordRefs, key: string, messageId: string): number {
  const ref = refs.get(key);
  if (ref === undefined)
    throw new Error(`an event of a record the batch did not read or write: ${messageId}`);
  return ref;
}

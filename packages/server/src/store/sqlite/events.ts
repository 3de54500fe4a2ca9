import type Database from 'better-sqlite3';
import type { PlannedEvent, RecipientRef } from '../../domain/deliveries/events.js';
import { recordKey } from '../../domain/ingest/plan-messages.js';
import type { DlrRecipient } from '../../domain/records.js';
import { storedItem } from '../event-item.js';
import { UnknownAccountError } from '../store.js';
import { refOf } from './account-ref.js';
import { itemToStore } from './current-item.js';
import { preparer } from './database.js';
import { recordRefOf } from './record-refs.js';

/** Receipt events as ingest records them, with the deliveries they queue, on SQLite. */
export function prepareEvents(db: Database.Database) {
  const prepare = preparer(db);
  return {
    callbacks: prepare<[string], { callbacks: number }>(
      'SELECT callback_url IS NOT NULL AND callback_enabled AS callbacks FROM accounts WHERE id = ?',
    ),
    takeEventSeqs: prepare<[number, string], { last_event_seq: number }>(
      'UPDATE accounts SET last_event_seq = last_event_seq + ? WHERE id = ? RETURNING last_event_seq',
    ),
    // The recipient by its record's ref (record-refs.ts): the record is written before its events, in the same
    // transaction, so the ref is never NULL (the column's NOT NULL would refuse the batch if it were).
    insertEvent: prepare<[string, number, string, string, string, string, number, string | null]>(
      `INSERT INTO receipt_events (account_id, seq, id, message_ref, recorded_at, item)
       VALUES (${refOf('?')}, ?, ?, ${recordRefOf('?', '?', '?')}, ?, ?)`,
    ),
    // All of a batch's recipients in one statement (a JSON array of [messageId, to]), each found by its record's
    // ref. Pinned to the record index: left to itself the planner searches (account_id, state) and reads every
    // pending delivery of the account.
    supersede: prepare<[{ account: string; recipients: string }]>(
      `UPDATE deliveries INDEXED BY deliveries_record SET state = 'superseded', next_attempt_at = NULL
       WHERE account_id = ${refOf('@account')}
         AND message_ref IN (
           SELECT ${recordRefOf('@account', 'value ->> 0', 'value ->> 1')} FROM json_each(@recipients))
         AND state = 'pending'`,
    ),
    // The recipient as its event names it: the event is written just before, in the same transaction, so the
    // ref is never NULL (the column's NOT NULL would refuse the batch if it were). One row per statement, as
    // records.ts's insertMessage: no statement journal.
    insertDelivery: prepare<[string, number, string, string, number, string, number, number | null]>(
      `INSERT INTO deliveries (account_id, seq, id, message_ref, state, created_at, next_attempt_at)
       VALUES (${refOf('?')}, ?, ?,
         (SELECT message_ref FROM receipt_events WHERE account_id = ${refOf('?')} AND seq = ?), ?, ?, ?)`,
    ),
  };
}

export type EventStatements = ReturnType<typeof prepareEvents>;

/**
 * Whether the account's events queue deliveries (a callback URL set and callbacks enabled); the first read of
 * every ingest batch, which throws {@link UnknownAccountError} when the account is gone. The batch's
 * IMMEDIATE transaction holds SQLite's one write lock, so the account cannot be deleted before it commits.
 */
export function callbacksOf(sql: EventStatements, accountId: string): boolean {
  const row = sql.callbacks.get(accountId);
  if (!row) throw new UnknownAccountError(`no account ${accountId}`);
  return row.callbacks !== 0;
}

/**
 * Records a plan's events with their feed positions, supersedes the recipients' older pending deliveries and
 * queues the new ones. Runs inside the batch's transaction (SQLite has one writer, so the numbering is in
 * commit order by construction), after the batch's records are written: `written` are those records as written,
 * and an event whose item is its record's as written stores none (current-item.ts).
 */
export function writeEvents(
  sql: EventStatements,
  accountId: string,
  events: readonly PlannedEvent[],
  supersede: readonly RecipientRef[],
  written: readonly DlrRecipient[],
): void {
  if (events.length === 0) return;
  const current = new Map<string, DlrRecipient>();
  for (const record of written) current.set(recordKey(record.id, record.channelUserId), record);
  const row = sql.takeEventSeqs.get(events.length, accountId);
  if (!row) throw new Error(`unknown account ${accountId}`);
  let seq = row.last_event_seq - events.length;
  if (supersede.length > 0) {
    const recipients = JSON.stringify(supersede.map((r) => [r.messageId, r.to]));
    sql.supersede.run({ account: accountId, recipients });
  }
  for (const event of events) {
    seq++;
    const recordedAt = event.recordedAt.getTime();
    const item = storedItem(event.item, event.messageId, event.to);
    sql.insertEvent.run(
      accountId,
      seq,
      event.id,
      accountId,
      event.messageId,
      event.to,
      recordedAt,
      itemToStore(item, current.get(recordKey(event.messageId, event.to))),
    );
    if (event.delivery !== null) {
      sql.insertDelivery.run(
        accountId,
        seq,
        event.id,
        accountId,
        seq,
        event.delivery,
        recordedAt,
        event.delivery === 'pending' ? recordedAt : null,
      );
    }
  }
}

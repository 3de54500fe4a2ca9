import type pg from 'pg';
import type { PlannedEvent, RecipientRef } from '../../domain/deliveries/events.js';
import { isUuid } from '../../domain/formats.js';
import { storedItem } from '../event-item.js';
import { UnknownAccountError } from '../store.js';
import { DELIVERIES_CHANNEL } from './delivery-notices.js';

/**
 * Each recipient's pending delivery found by a probe of deliveries_recipient, whatever the statistics say; then
 * those rows updated by primary key. Written as a plain join on `state = 'pending'`, with statistics taken while
 * the account had few pending deliveries (a fresh database, or a relay that stalled since), the planner reads
 * every pending delivery of the account per batch through an index on the state: 12 ms for a batch of 40 at
 * 30,000 pending, growing with the backlog (test/postgres/supersede-plan.test.ts). So: the LATERAL lookup
 * (OFFSET 0 keeps it from being flattened) finds each recipient's pending delivery, `IS TRUE` keeps the indexes
 * on the state out of it, and MATERIALIZED runs the lookups once (without it, a plan that rescanned them for
 * every row of the table timed out under two instances). The target's own state test is rechecked on the row's
 * latest version should a relay have just finished that delivery.
 */
export const SUPERSEDE_DELIVERIES = `WITH pending AS MATERIALIZED (
     SELECT p.account_id, p.seq
     FROM unnest($2::text[], $3::text[]) AS u (message_id, recipient)
       CROSS JOIN LATERAL (
         SELECT p.account_id, p.seq FROM deliveries p
         WHERE p.account_id = $1 AND p.message_id = u.message_id AND p.recipient = u.recipient
           AND (p.state = 'pending') IS TRUE
         OFFSET 0
       ) AS p
   )
   UPDATE deliveries d SET state = 'superseded', next_attempt_at = NULL
   FROM pending
   WHERE d.account_id = pending.account_id AND d.seq = pending.seq AND (d.state = 'pending') IS TRUE`;

/**
 * Records a plan's events (receipt ingest, or parked receipts applied by message ingest) inside the batch's
 * transaction: supersedes the recipients' stored pending deliveries, then numbers the events, inserts them and
 * queues their deliveries. Call it last, right before commit.
 *
 * Why the feed has no gap (CONTRACT §10): positions come from `accounts.last_event_seq`, and taking them is an
 * UPDATE of the account row, whose row lock lasts until commit. A second batch of the same account waits on
 * that lock and, once it gets it, reads the first one's committed counter, so it can only take positions after
 * the first one's, and only once the first one is committed and visible (PostgreSQL makes a transaction visible
 * before it releases its locks). Positions are therefore handed out in commit order: a reader that sees
 * position k+1 already sees every position up to k, and never a hole that fills later. A sequence object
 * would not do: its numbers are taken at insert time, not commit time, so a later number could commit first.
 *
 * The price is that event-recording transactions of one account serialize on that row, so the lock is taken
 * by the very last statement: held for one statement and the commit, not for the whole batch.
 */
export async function writeEvents(
  client: pg.PoolClient,
  accountId: string,
  events: readonly PlannedEvent[],
  supersede: readonly RecipientRef[],
): Promise<void> {
  if (events.length === 0) return;
  // Before the account lock: the rows it touches are the batch's own recipients, whose key rows the batch
  // already holds, so no other batch can be superseding them meanwhile.
  if (supersede.length > 0) {
    // Unnamed, so planned at every call with the table's size then: a named statement's generic plan, made
    // while the table was small (a fresh database), was seen keeping sequential scans as the table grew.
    await client.query({
      text: SUPERSEDE_DELIVERIES,
      values: [accountId, supersede.map((r) => r.messageId), supersede.map((r) => r.to)],
    });
  }
  const taken = await client.query<{ last_event_seq: number }>({
    name: 'wb_record_events',
    // One statement: the account row is locked by its first step and the inserts follow without a round trip.
    text: `WITH taken AS (
             UPDATE accounts SET last_event_seq = last_event_seq + cardinality($2::text[])
             WHERE id = $1::uuid
             RETURNING last_event_seq
           ), planned AS (
             SELECT t.last_event_seq - cardinality($2::text[]) + u.ord AS seq, u.*
             FROM taken t,
               unnest($2::text[], $3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[], $7::text[],
                 $8::text[])
               WITH ORDINALITY AS u (id, message_id, recipient, recorded_at, message_created_at, item, delivery, ord)
           ), events AS (
             INSERT INTO receipt_events (account_id, seq, id, message_id, recipient, recorded_at,
               message_created_at, item)
             SELECT $1::uuid, seq, id, message_id, recipient, recorded_at, message_created_at, item FROM planned
           ), queued AS (
             INSERT INTO deliveries (account_id, seq, id, message_id, recipient, state, created_at,
               next_attempt_at)
             SELECT $1::uuid, seq, id, message_id, recipient, delivery, recorded_at,
               CASE WHEN delivery = 'pending' THEN recorded_at END
             FROM planned WHERE delivery IS NOT NULL
           )
           SELECT last_event_seq, CASE WHEN $9::boolean THEN pg_notify('${DELIVERIES_CHANNEL}', '') END AS notice
           FROM taken`,
    values: [
      accountId,
      events.map((e) => e.id),
      events.map((e) => e.messageId),
      events.map((e) => e.to),
      events.map((e) => e.recordedAt.toISOString()),
      events.map((e) => e.messageCreatedAt.toISOString()),
      events.map((e) => storedItem(e.item, e.messageId, e.to)),
      events.map((e) => e.delivery),
      // Wakes the relays of every instance at commit (delivery-notices.ts).
      events.some((e) => e.delivery === 'pending'),
    ],
  });
  if (taken.rowCount !== 1) throw new Error(`unknown account ${accountId}`);
}

/**
 * Whether the account's events queue deliveries (a callback URL set and callbacks enabled); the first statement
 * of every ingest transaction. A flag flipped while the batch runs applies from the next batch on.
 *
 * It also holds the account row FOR KEY SHARE until the batch commits: deleteAccount takes the row FOR UPDATE,
 * so a delete waits for the batches under way, and a batch that comes after it waits for the delete and then
 * finds no account ({@link UnknownAccountError}, before it wrote anything). Without it a batch could write
 * rows the delete had already passed over (a record, a contact, a parked receipt: orphans of a deleted
 * account; no foreign key would stop them). KEY SHARE conflicts with nothing but FOR UPDATE and DELETE:
 * concurrent batches, account patches and the event counter's UPDATE (FOR NO KEY UPDATE) never wait on it.
 */
export async function lockAccount(client: pg.PoolClient, accountId: string): Promise<{ callbacks: boolean }> {
  const result = isUuid(accountId)
    ? await client.query<{ callbacks: boolean }>({
        name: 'wb_lock_account',
        text: `SELECT callback_url IS NOT NULL AND callback_enabled AS callbacks FROM accounts WHERE id = $1
               FOR KEY SHARE`,
        values: [accountId],
      })
    : undefined;
  const row = result?.rows[0];
  if (!row) throw new UnknownAccountError(`no account ${accountId}`);
  return row;
}

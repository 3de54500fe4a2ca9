import type { Database } from 'better-sqlite3';
import type { ReceiptEvent, StoredReceiptEvent } from '../../domain/deliveries/events.js';
import * as rules from '../../domain/deliveries/rules.js';
import type { ClaimedDelivery, ClaimRequest, DeliveryListQuery } from '../store.js';
import { refOf } from './account-ref.js';
import { deliveryFromRow, itemJsonOfRow, itemOfRow } from './current-item.js';
import type { Prepared } from './database.js';
import { EXPIRED_EVENTS, EXPIRED_RECORD_REFS } from './expired.js';
import { eventsWithRecord } from './record-refs.js';
import {
  type AttemptRow,
  attemptFromRow,
  DELIVERY_COLUMNS,
  type DeliveryRow,
  EVENT_COLUMNS,
  type EventRow,
  ITEM_COLUMNS,
  type ItemColumns,
  RECIPIENT_COLUMNS,
} from './rows.js';

/**
 * The receipt feed, the callback outbox and its attempt log on SQLite (events.ts records the events). The
 * delivery rules are domain/deliveries/*: this file loads what they decide on, leases and writes.
 */

/** A pending delivery as the claim and next-due rules read it (claim-policy.ts ClaimCandidate). */
interface PendingRow {
  account_id: string;
  seq: number;
  message_id: string;
  recipient: string;
  next_attempt_at: number;
  created_at: number;
  lease_until: number | null;
  recipient_lease_until: number | null;
}

type CandidateRow = PendingRow & ItemColumns & { id: string; attempts: number };

/** A claimed delivery's stored state, with its key. */
interface StoredClaimRow {
  account_id: number;
  seq: number;
  state: rules.DeliveryState;
  lease: string | null;
}

/**
 * The key of each delivery this store claimed, by the claim it handed out: the account's ref and the delivery's
 * seq, its primary key. The relay gives the same object back when the attempt ends, so finishing it finds the
 * row by its key: not by its id through `deliveries_id` (the state read, the update) nor the account through
 * `account_refs` (all three statements; docs/benchmarks.md, "Thirteenth pass"). Weak: a claim the relay drops
 * takes its entry with it.
 */
export type ClaimKeys = WeakMap<ClaimedDelivery, { account: number; seq: number }>;

interface AccountCallbackRow {
  account_id: string;
  account_ref: number;
  callback_url: string;
  callback_secret: string;
  previous_callback_secret: string | null;
  previous_callback_secret_until: number | null;
}

const candidateOf = <R extends PendingRow>(row: R): rules.ClaimCandidate & { row: R } => ({
  accountId: row.account_id,
  seq: row.seq,
  messageId: row.message_id,
  to: row.recipient,
  nextAttemptAt: new Date(row.next_attempt_at),
  createdAt: new Date(row.created_at),
  leaseUntil: row.lease_until === null ? null : new Date(row.lease_until),
  recipientLeaseUntil: row.recipient_lease_until === null ? null : new Date(row.recipient_lease_until),
  row,
});

/**
 * The latest lease end among the other deliveries of d's recipient (its record: migration 13). INDEXED BY: with
 * the primary key as the table (WITHOUT ROWID), the planner would otherwise walk the account's deliveries by
 * (account_id, seq).
 */
const RECIPIENT_LEASE = `(SELECT max(b.lease_until) FROM deliveries b INDEXED BY deliveries_record
   WHERE b.account_id = d.account_id AND b.message_ref = d.message_ref
     AND b.seq <> d.seq) AS recipient_lease_until`;

/**
 * `account`: the parameter the statement selects the account by, which every row belongs to; the recipient
 * from the delivery's record `m`.
 */
const pendingColumns = (
  account: string,
) => `${account} AS account_id, d.seq, ${RECIPIENT_COLUMNS}, d.next_attempt_at, d.created_at,
  d.lease_until, ${RECIPIENT_LEASE}`;

/** Whether a newer delivery of d's recipient exists (redeliver.ts). */
const NEWER_OF_RECIPIENT = `EXISTS (SELECT 1 FROM deliveries n INDEXED BY deliveries_record
   WHERE n.account_id = d.account_id AND n.message_ref = d.message_ref AND n.seq > d.seq) AS newer`;

/**
 * Deliveries with their events and their record (`m`: the recipient's message id and number, and the item of an
 * event that stores none, current-item.ts); `index` pins the deliveries' side to that index.
 */
const fromDeliveries = (index?: string) =>
  `FROM deliveries d${index ? ` INDEXED BY ${index}` : ''} JOIN receipt_events e ON e.account_id = d.account_id AND e.seq = d.seq
   JOIN messages m ON m.ref = d.message_ref`;
const FROM_DELIVERIES = fromDeliveries();

export function prepareOutbox(db: Database) {
  const prepare = <P extends unknown[] = [], R = unknown>(sql: string): Prepared<P, R> =>
    db.prepare<P, R>(sql);
  const listStatement = (byState: boolean) =>
    prepare<[{ account: string; state: string | null; before: number; limit: number }], DeliveryRow>(
      // INDEXED BY for a state: the planner would otherwise walk the primary key and skip every other state.
      `SELECT ${DELIVERY_COLUMNS} ${byState ? fromDeliveries('deliveries_state') : FROM_DELIVERIES}
       WHERE d.account_id = ${refOf('@account')} ${byState ? 'AND d.state = @state' : ''} AND d.seq < @before
       ORDER BY d.seq DESC LIMIT @limit`,
    );
  return {
    claims: new WeakMap() as ClaimKeys,
    events: prepare<[string, number, number], EventRow>(
      `SELECT ${EVENT_COLUMNS} FROM ${eventsWithRecord}
       WHERE e.account_id = ${refOf('?')} AND e.seq > ? ORDER BY e.seq LIMIT ?`,
    ),
    // Accounts with callbacks on and something due: each is then asked for its own oldest due deliveries.
    dueAccounts: prepare<[{ now: number }], AccountCallbackRow>(
      `SELECT a.id AS account_id, r.ref AS account_ref, a.callback_url, a.callback_secret,
         a.previous_callback_secret, a.previous_callback_secret_until
       FROM accounts a JOIN account_refs r ON r.id = a.id
       WHERE a.callback_url IS NOT NULL AND a.callback_enabled
         AND EXISTS (
           SELECT 1 FROM deliveries d INDEXED BY deliveries_account_due
           WHERE d.account_id = r.ref AND d.state = 'pending' AND d.next_attempt_at <= @now)`,
    ),
    // An account's oldest due, unleased deliveries, pre-selected on the index for claim-policy.ts to choose from.
    candidates: prepare<[{ account: string; now: number; limit: number }], CandidateRow>(
      `SELECT ${pendingColumns('@account')}, d.id, d.attempts, ${ITEM_COLUMNS}
       ${fromDeliveries('deliveries_account_due')}
       WHERE d.account_id = ${refOf('@account')} AND d.state = 'pending' AND d.next_attempt_at <= @now
         AND (d.lease_until IS NULL OR d.lease_until <= @now)
       ORDER BY d.next_attempt_at, d.seq
       LIMIT @limit`,
    ),
    // A claim's delivery by its account's ref and its seq (the claim's key, ClaimKeys), or, for a claim this
    // store did not hand out, by the account's id and the delivery's id.
    claimState: prepare<[number, number], StoredClaimRow>(
      'SELECT account_id, seq, state, lease FROM deliveries WHERE account_id = ? AND seq = ?',
    ),
    claimStateById: prepare<[string, string], StoredClaimRow>(
      `SELECT account_id, seq, state, lease FROM deliveries WHERE account_id = ${refOf('?')} AND id = ?`,
    ),
    lease: prepare<[string, number, number, number]>(
      'UPDATE deliveries SET lease = ?, lease_until = ? WHERE account_id = ? AND seq = ?',
    ),
    finish: prepare<
      [
        {
          account: number;
          seq: number;
          lease: string;
          state: string;
          next: number | null;
          at: number;
          status: number | null;
          error: string | null;
          duration: number;
        },
      ],
      { seq: number }
    >(
      `UPDATE deliveries SET
         attempts = attempts + 1, state = @state, next_attempt_at = @next, lease = NULL, lease_until = NULL,
         last_at = @at, last_http_status = @status, last_error = @error, last_duration_ms = @duration
       WHERE account_id = @account AND seq = @seq AND lease = @lease
       RETURNING seq`,
    ),
    // Numbered within the delivery's whole log: `attempts` restarts at a redelivery, the log does not.
    insertAttempt: prepare<
      [
        {
          account: number;
          seq: number;
          at: number;
          status: number | null;
          error: string | null;
          duration: number;
        },
      ]
    >(
      `INSERT INTO delivery_attempts (account_id, seq, n, at, http_status, error, duration_ms)
       SELECT @account, @seq, coalesce(max(n), 0) + 1, @at, @status, @error, @duration
       FROM delivery_attempts WHERE account_id = @account AND seq = @seq`,
    ),
    disableCallbacks: prepare<[string]>('UPDATE accounts SET callback_enabled = 0 WHERE id = ?'),
    release: prepare<[number, string, string, string]>(
      `UPDATE deliveries SET lease = NULL, lease_until = NULL,
         next_attempt_at = CASE WHEN state = 'pending' THEN ? ELSE NULL END
       WHERE account_id = ${refOf('?')} AND id = ? AND lease = ?`,
    ),
    // Paused deliveries (callbacks off) are never due, so only accounts with callbacks on are looked at, each
    // on its own slice of the index: a paused backlog, however long, costs nothing here.
    pendingAccounts: prepare<[], { account_id: string }>(
      `SELECT a.id AS account_id FROM accounts a JOIN account_refs r ON r.id = a.id
       WHERE a.callback_url IS NOT NULL AND a.callback_enabled
         AND EXISTS (SELECT 1 FROM deliveries d INDEXED BY deliveries_account_due
                     WHERE d.account_id = r.ref AND d.state = 'pending')`,
    ),
    earliestPending: prepare<[{ account: string; limit: number }], PendingRow>(
      `SELECT ${pendingColumns('@account')} FROM deliveries d INDEXED BY deliveries_account_due
         JOIN messages m ON m.ref = d.message_ref
       WHERE d.account_id = ${refOf('@account')} AND d.state = 'pending'
       ORDER BY d.next_attempt_at, d.seq LIMIT @limit`,
    ),
    stats: prepare<[], { pending: number; dead: number; parked: number }>(
      `SELECT (SELECT count(*) FROM deliveries INDEXED BY deliveries_account_due WHERE state = 'pending') AS pending,
              (SELECT count(*) FROM deliveries INDEXED BY deliveries_dead WHERE state = 'dead') AS dead,
              (SELECT count(*) FROM parked_receipts) AS parked`,
    ),
    list: listStatement(false),
    listByState: listStatement(true),
    delivery: prepare<[string, string], DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} ${FROM_DELIVERIES} WHERE d.account_id = ${refOf('?')} AND d.id = ?`,
    ),
    // The id's records, then each one's events: CROSS JOIN keeps the records outside, as SQLite documents.
    // INDEXED BY, as RECIPIENT_LEASE: not the account's whole primary-key range.
    messageEvents: prepare<[string, string], EventRow>(
      `SELECT ${EVENT_COLUMNS}
       FROM messages m CROSS JOIN receipt_events e INDEXED BY receipt_events_message
         ON e.account_id = m.account_id AND e.message_ref = m.ref
       WHERE m.account_id = ${refOf('?')} AND m.id = ? ORDER BY e.seq`,
    ),
    // INDEXED BY: left to itself, SQLite walks the account's deliveries in seq order to skip the sort.
    messageDeliveries: prepare<[string, string], DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS}
       FROM messages m CROSS JOIN deliveries d INDEXED BY deliveries_record
           ON d.account_id = m.account_id AND d.message_ref = m.ref
         JOIN receipt_events e ON e.account_id = d.account_id AND e.seq = d.seq
       WHERE m.account_id = ${refOf('?')} AND m.id = ? ORDER BY d.seq`,
    ),
    attempts: prepare<[string, number], AttemptRow>(
      `SELECT at, http_status, error, duration_ms FROM delivery_attempts WHERE account_id = ${refOf('?')} AND seq = ? ORDER BY n`,
    ),
    redeliveryRow: prepare<[string, string], { seq: number; state: rules.DeliveryState; newer: number }>(
      `SELECT d.seq, d.state, ${NEWER_OF_RECIPIENT} FROM deliveries d WHERE d.account_id = ${refOf('?')} AND d.id = ?`,
    ),
    deadRows: prepare<[string], { seq: number; state: rules.DeliveryState; newer: number }>(
      `SELECT d.seq, d.state, ${NEWER_OF_RECIPIENT} FROM deliveries d INDEXED BY deliveries_dead
       WHERE d.account_id = ${refOf('?')} AND d.state = 'dead'`,
    ),
    redeliver: prepare<[number, string, number]>(
      `UPDATE deliveries SET state = 'pending', attempts = 0, next_attempt_at = ? WHERE account_id = ${refOf('?')} AND seq = ?`,
    ),
    accountCallbacks: prepare<[string], { callback_url: string | null; callback_enabled: number }>(
      'SELECT callback_url, callback_enabled FROM accounts WHERE id = ?',
    ),
    // The events since `since` (one pass over the account's feed: events have no index by time), and the
    // older pending deliveries a backfilled one may supersede.
    backfillRows: prepare<
      [{ account: string; since: number }],
      {
        seq: number;
        message_id: string;
        recipient: string;
        recorded_at: number;
        delivery: rules.DeliveryState | null;
      }
    >(
      `SELECT e.seq, m.id AS message_id, m.channel_user_id AS recipient, e.recorded_at, d.state AS delivery
       FROM ${eventsWithRecord} LEFT JOIN deliveries d ON d.account_id = e.account_id AND d.seq = e.seq
       WHERE e.account_id = ${refOf('@account')} AND e.recorded_at >= @since
       UNION ALL
       SELECT d.seq, m.id, m.channel_user_id, e.recorded_at, d.state
       ${fromDeliveries('deliveries_account_due')}
       WHERE d.account_id = ${refOf('@account')} AND d.state = 'pending' AND e.recorded_at < @since`,
    ),
    backfillQueue: prepare<[{ account: string; seq: number; now: number }]>(
      `INSERT INTO deliveries (account_id, seq, id, message_ref, state, created_at, next_attempt_at)
       SELECT e.account_id, e.seq, e.id, e.message_ref, 'pending', @now, @now
       FROM receipt_events e WHERE e.account_id = ${refOf('@account')} AND e.seq = @seq`,
    ),
    supersedeOne: prepare<[string, number]>(
      `UPDATE deliveries SET state = 'superseded', next_attempt_at = NULL
       WHERE account_id = ${refOf('?')} AND seq = ? AND state = 'pending'`,
    ),
    // Retention, through the expired records (expired.ts): the attempts, the deliveries and the events go in that
    // order, each before what finds it.
    pruneAttempts: prepare<[number]>(
      `DELETE FROM delivery_attempts WHERE (account_id, seq) IN (SELECT e.account_id, e.seq FROM ${EXPIRED_EVENTS})`,
    ),
    pruneDeliveries: prepare<[number]>(
      `DELETE FROM deliveries WHERE (account_id, seq) IN (SELECT e.account_id, e.seq FROM ${EXPIRED_EVENTS})`,
    ),
    pruneEvents: prepare<[number]>(
      `DELETE FROM receipt_events INDEXED BY receipt_events_message
       WHERE (account_id, message_ref) IN (${EXPIRED_RECORD_REFS})`,
    ),
  };
}

export type Outbox = ReturnType<typeof prepareOutbox>;

export function listEvents(
  outbox: Outbox,
  accountId: string,
  afterSeq: number,
  limit: number,
): StoredReceiptEvent[] {
  return outbox.events.all(accountId, afterSeq, limit).map((row) => ({
    id: row.id,
    seq: row.seq,
    recordedAt: new Date(row.recorded_at),
    itemJson: itemJsonOfRow(row),
  }));
}

/**
 * Leases due deliveries within the request's limits (claim-policy.ts: accounts take turns, one per recipient, none
 * whose recipient has an attempt in flight). Each account with callbacks on, something due and room left is asked
 * for its own oldest due deliveries; the picker chooses among them all. Runs in one IMMEDIATE transaction.
 */
export function claim(outbox: Outbox, request: ClaimRequest): ClaimedDelivery[] {
  const now = request.now.getTime();
  const picker = new rules.ClaimPicker(request);
  const accounts = new Map<string, AccountCallbackRow>();
  const candidates: (rules.ClaimCandidate & { row: CandidateRow })[] = [];
  for (const account of outbox.dueAccounts.all({ now })) {
    if (picker.accountRoom(account.account_id) <= 0) continue;
    accounts.set(account.account_id, account);
    const rows = outbox.candidates.all({
      account: account.account_id,
      now,
      limit: rules.candidateWindow(request.perAccount),
    });
    for (const row of rows) candidates.push(candidateOf(row));
  }
  return picker.choose(candidates).map(({ row }) => {
    const account = accounts.get(row.account_id) as AccountCallbackRow;
    outbox.lease.run(request.lease, request.leaseUntil.getTime(), account.account_ref, row.seq);
    const claimed: ClaimedDelivery = {
      accountId: row.account_id,
      id: row.id,
      lease: request.lease,
      attempts: row.attempts,
      createdAt: new Date(row.created_at),
      callbackUrl: account.callback_url,
      secrets: {
        current: account.callback_secret,
        previous: account.previous_callback_secret,
        previousUntil:
          account.previous_callback_secret_until === null
            ? null
            : new Date(account.previous_callback_secret_until),
      },
      body: itemJsonOfRow(row),
    };
    outbox.claims.set(claimed, { account: account.account_ref, seq: row.seq });
    return claimed;
  });
}

/** A claim's delivery as stored now, found by its key where this store handed the claim out; null when gone. */
function storedClaim(outbox: Outbox, claimed: ClaimedDelivery): StoredClaimRow | null {
  const keys = outbox.claims.get(claimed);
  const row = keys
    ? outbox.claimState.get(keys.account, keys.seq)
    : outbox.claimStateById.get(claimed.accountId, claimed.id);
  return row ?? null;
}

/** Those claims that may still be sent (finish.ts maySend); the others are handed back. */
export function recheck(outbox: Outbox, claims: readonly ClaimedDelivery[], now: Date): ClaimedDelivery[] {
  return claims.filter((claimed) => {
    if (rules.maySend(storedClaim(outbox, claimed), claimed.lease)) return true;
    outbox.release.run(now.getTime(), claimed.accountId, claimed.id, claimed.lease);
    return false;
  });
}

/** Records an attempt as finish.ts settles it; nothing when the lease is no longer this claim's. */
export function finish(outbox: Outbox, claimed: ClaimedDelivery, outcome: rules.AttemptOutcome): void {
  const stored = storedClaim(outbox, claimed);
  const settled = rules.settleAttempt(stored, claimed.lease, outcome);
  if (!stored || !settled) return;
  const { attempt } = outcome;
  const done = outbox.finish.get({
    account: stored.account_id,
    seq: stored.seq,
    lease: claimed.lease,
    state: settled.state,
    next: settled.nextAttemptAt?.getTime() ?? null,
    at: attempt.at.getTime(),
    status: attempt.httpStatus,
    error: attempt.error,
    duration: Math.round(attempt.durationMs),
  });
  if (!done) return;
  outbox.insertAttempt.run({
    account: stored.account_id,
    seq: done.seq,
    at: attempt.at.getTime(),
    status: attempt.httpStatus,
    error: attempt.error,
    duration: Math.round(attempt.durationMs),
  });
  if (settled.disableCallbacks) outbox.disableCallbacks.run(claimed.accountId);
}

/** When the relay should look again (claim-policy.ts nextDue), from each active account's earliest deliveries. */
export function nextDue(outbox: Outbox, now: Date): Date | null {
  const candidates: rules.ClaimCandidate[] = [];
  for (const { account_id } of outbox.pendingAccounts.all()) {
    for (const row of outbox.earliestPending.all({ account: account_id, limit: rules.NEXT_DUE_WINDOW }))
      candidates.push(candidateOf(row));
  }
  return rules.nextDue(candidates, now);
}

export function listDeliveries(
  outbox: Outbox,
  accountId: string,
  query: DeliveryListQuery,
): rules.Delivery[] {
  const params = {
    account: accountId,
    state: query.state ?? null,
    before: query.beforeSeq ?? Number.MAX_SAFE_INTEGER,
    limit: query.limit,
  };
  const statement = query.state === undefined ? outbox.list : outbox.listByState;
  return statement.all(params).map(deliveryFromRow);
}

export function getDelivery(outbox: Outbox, accountId: string, id: string): rules.DeliveryDetail | null {
  const row = outbox.delivery.get(accountId, id);
  if (!row) return null;
  return { ...deliveryFromRow(row), attemptLog: outbox.attempts.all(accountId, row.seq).map(attemptFromRow) };
}

export function listMessageEvents(outbox: Outbox, accountId: string, messageId: string): ReceiptEvent[] {
  return outbox.messageEvents.all(accountId, messageId).map((row) => ({
    id: row.id,
    seq: row.seq,
    recordedAt: new Date(row.recorded_at),
    item: itemOfRow(row),
  }));
}

export function listMessageDeliveries(
  outbox: Outbox,
  accountId: string,
  messageId: string,
): rules.DeliveryDetail[] {
  return outbox.messageDeliveries.all(accountId, messageId).map((row) => ({
    ...deliveryFromRow(row),
    attemptLog: outbox.attempts.all(accountId, row.seq).map(attemptFromRow),
  }));
}

export function redeliver(
  outbox: Outbox,
  accountId: string,
  id: string,
  now: Date,
): rules.Delivery | 'superseded' | null {
  const row = outbox.redeliveryRow.get(accountId, id);
  if (!row) return null;
  const refusal = rules.redeliveryRefusal({ state: row.state, newerOfRecipient: row.newer === 1 });
  if (refusal) return refusal;
  outbox.redeliver.run(now.getTime(), accountId, row.seq);
  const updated = outbox.delivery.get(accountId, id);
  return updated ? deliveryFromRow(updated) : null;
}

export function redeliverDead(outbox: Outbox, accountId: string, now: Date): number {
  const dead = outbox.deadRows.all(accountId).map((row) => ({ ...row, newerOfRecipient: row.newer === 1 }));
  const chosen = rules.redeliverableDead(dead);
  for (const row of chosen) outbox.redeliver.run(now.getTime(), accountId, row.seq);
  return chosen.length;
}

export function backfill(
  outbox: Outbox,
  accountId: string,
  since: Date,
  now: Date,
): number | 'callbacks-off' | null {
  const account = outbox.accountCallbacks.get(accountId);
  if (!account) return null;
  if (
    !rules.callbacksOn({ callbackUrl: account.callback_url, callbackEnabled: account.callback_enabled === 1 })
  ) {
    return 'callbacks-off';
  }
  const events: rules.BackfillEvent[] = outbox.backfillRows
    .all({ account: accountId, since: since.getTime() })
    .map((row) => ({
      seq: row.seq,
      messageId: row.message_id,
      to: row.recipient,
      recordedAt: new Date(row.recorded_at),
      delivery: row.delivery,
    }));
  const plan = rules.planBackfill(events, since);
  for (const seq of plan.supersede) outbox.supersedeOne.run(accountId, seq);
  for (const seq of plan.queue) outbox.backfillQueue.run({ account: accountId, seq, now: now.getTime() });
  for (const seq of plan.requeue) outbox.redeliver.run(now.getTime(), accountId, seq);
  return rules.queuedBy(plan);
}

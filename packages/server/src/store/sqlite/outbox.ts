import type { Database } from 'better-sqlite3';
import type { Delivery, DeliveryDetail } from '../../domain/deliveries/delivery.js';
import type { ReceiptEvent } from '../../domain/deliveries/events.js';
import type { DlrItem } from '../../domain/wire.js';
import type { AttemptOutcome, ClaimedDelivery, ClaimRequest, DeliveryListQuery } from '../store.js';
import type { Prepared } from './database.js';
import {
  type AttemptRow,
  attemptFromRow,
  DELIVERY_COLUMNS,
  type DeliveryRow,
  deliveryFromRow,
} from './rows.js';

/** The receipt feed, the callback outbox and its attempt log on SQLite (events.ts records the events). */

interface CandidateRow {
  account_id: string;
  seq: number;
  id: string;
  message_id: string;
  recipient: string;
  attempts: number;
  created_at: number;
  item: string;
  callback_url: string;
  callback_secret: string;
  previous_callback_secret: string | null;
  previous_callback_secret_until: number | null;
}

const FROM_DELIVERIES =
  'FROM deliveries d JOIN receipt_events e ON e.account_id = d.account_id AND e.seq = d.seq';

export function prepareOutbox(db: Database) {
  const prepare = <P extends unknown[] = [], R = unknown>(sql: string): Prepared<P, R> =>
    db.prepare<P, R>(sql);
  const listStatement = (byState: boolean) =>
    prepare<[{ account: string; state: string | null; before: number; limit: number }], DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} ${FROM_DELIVERIES}
       WHERE d.account_id = @account ${byState ? 'AND d.state = @state' : ''} AND d.seq < @before
       ORDER BY d.seq DESC LIMIT @limit`,
    );
  return {
    events: prepare<[string, number, number], { seq: number; id: string; recorded_at: number; item: string }>(
      `SELECT seq, id, recorded_at, item FROM receipt_events
       WHERE account_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
    ),
    // Accounts with callbacks on and something due: each is then asked for its own oldest due deliveries.
    dueAccounts: prepare<
      [{ now: number }],
      Pick<
        CandidateRow,
        | 'account_id'
        | 'callback_url'
        | 'callback_secret'
        | 'previous_callback_secret'
        | 'previous_callback_secret_until'
      >
    >(
      `SELECT a.id AS account_id, a.callback_url, a.callback_secret, a.previous_callback_secret,
         a.previous_callback_secret_until
       FROM accounts a
       WHERE a.callback_url IS NOT NULL AND a.callback_enabled
         AND EXISTS (
           SELECT 1 FROM deliveries d INDEXED BY deliveries_account_due
           WHERE d.account_id = a.id AND d.state = 'pending' AND d.next_attempt_at <= @now)`,
    ),
    // Due and unleased, of a recipient with no attempt in flight (a superseded delivery may still be in flight:
    // the newer one waits for it, so the two never cross).
    candidates: prepare<
      [{ account: string; now: number; limit: number }],
      Omit<
        CandidateRow,
        'callback_url' | 'callback_secret' | 'previous_callback_secret' | 'previous_callback_secret_until'
      >
    >(
      `SELECT d.account_id, d.seq, d.id, d.message_id, d.recipient, d.attempts, d.created_at, e.item
       ${FROM_DELIVERIES.replace('deliveries d', 'deliveries d INDEXED BY deliveries_account_due')}
       WHERE d.account_id = @account AND d.state = 'pending' AND d.next_attempt_at <= @now
         AND (d.lease_until IS NULL OR d.lease_until <= @now)
         AND NOT EXISTS (
           SELECT 1 FROM deliveries b
           WHERE b.account_id = d.account_id AND b.message_id = d.message_id AND b.recipient = d.recipient
             AND b.seq <> d.seq AND b.lease_until > @now)
       ORDER BY d.next_attempt_at, d.seq
       LIMIT @limit`,
    ),
    lease: prepare<[string, number, string, number]>(
      'UPDATE deliveries SET lease = ?, lease_until = ? WHERE account_id = ? AND seq = ?',
    ),
    finish: prepare<
      [
        {
          account: string;
          id: string;
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
      // A delivery superseded while its attempt was in flight stays superseded, unless that attempt delivered it.
      `UPDATE deliveries SET
         attempts = attempts + 1,
         state = CASE WHEN state = 'superseded' AND @state <> 'delivered' THEN 'superseded' ELSE @state END,
         next_attempt_at = CASE WHEN state = 'superseded' OR @state <> 'pending' THEN NULL ELSE @next END,
         lease = NULL, lease_until = NULL,
         last_at = @at, last_http_status = @status, last_error = @error, last_duration_ms = @duration
       WHERE account_id = @account AND id = @id AND lease = @lease
       RETURNING seq`,
    ),
    // Numbered within the delivery's whole log: `attempts` restarts at a redelivery, the log does not.
    insertAttempt: prepare<
      [
        {
          account: string;
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
       WHERE account_id = ? AND id = ? AND lease = ?`,
    ),
    // Paused deliveries (callbacks off) are not due; a leased one is due again when its lease runs out.
    nextDue: prepare<[], { due: number | null }>(
      `SELECT min(max(d.next_attempt_at, coalesce(d.lease_until, 0))) AS due
       FROM (SELECT account_id, next_attempt_at, lease_until FROM deliveries INDEXED BY deliveries_due
             WHERE state = 'pending' ORDER BY next_attempt_at LIMIT 256) d
       JOIN accounts a ON a.id = d.account_id
       WHERE a.callback_url IS NOT NULL AND a.callback_enabled`,
    ),
    stats: prepare<[], { pending: number; dead: number; parked: number }>(
      `SELECT (SELECT count(*) FROM deliveries INDEXED BY deliveries_due WHERE state = 'pending') AS pending,
              (SELECT count(*) FROM deliveries INDEXED BY deliveries_dead WHERE state = 'dead') AS dead,
              (SELECT count(*) FROM parked_receipts) AS parked`,
    ),
    list: listStatement(false),
    listByState: listStatement(true),
    delivery: prepare<[string, string], DeliveryRow>(
      `SELECT ${DELIVERY_COLUMNS} ${FROM_DELIVERIES} WHERE d.account_id = ? AND d.id = ?`,
    ),
    attempts: prepare<[string, number], AttemptRow>(
      'SELECT at, http_status, error, duration_ms FROM delivery_attempts WHERE account_id = ? AND seq = ? ORDER BY n',
    ),
    newerOfRecipient: prepare<[string, string, string, number], { one: number }>(
      `SELECT 1 AS one FROM deliveries WHERE account_id = ? AND message_id = ? AND recipient = ? AND seq > ?
       LIMIT 1`,
    ),
    redeliver: prepare<[number, string, number]>(
      `UPDATE deliveries SET state = 'pending', attempts = 0, next_attempt_at = ? WHERE account_id = ? AND seq = ?`,
    ),
    redeliverDead: prepare<[number, string]>(
      `UPDATE deliveries AS d SET state = 'pending', attempts = 0, next_attempt_at = ?
       WHERE d.account_id = ? AND d.state = 'dead'
         AND NOT EXISTS (
           SELECT 1 FROM deliveries n
           WHERE n.account_id = d.account_id AND n.message_id = d.message_id AND n.recipient = d.recipient
             AND n.seq > d.seq)`,
    ),
    pruneAttempts: prepare<[number]>(
      `DELETE FROM delivery_attempts WHERE (account_id, seq) IN (
         SELECT account_id, seq FROM deliveries WHERE message_created_at < ?)`,
    ),
    pruneDeliveries: prepare<[number]>('DELETE FROM deliveries WHERE message_created_at < ?'),
    pruneEvents: prepare<[number]>('DELETE FROM receipt_events WHERE message_created_at < ?'),
  };
}

export type Outbox = ReturnType<typeof prepareOutbox>;

export function listEvents(
  outbox: Outbox,
  accountId: string,
  afterSeq: number,
  limit: number,
): ReceiptEvent[] {
  return outbox.events.all(accountId, afterSeq, limit).map((row) => ({
    id: row.id,
    seq: row.seq,
    recordedAt: new Date(row.recorded_at),
    item: JSON.parse(row.item) as DlrItem,
  }));
}

/**
 * Chooses and leases due deliveries within the request's limits, one per recipient. Each account with room is
 * asked for its own oldest due deliveries, and the accounts take turns (every account's first, then every
 * account's second…), so an account with a long backlog never holds up the others: it only ever gets its share.
 */
export function claim(outbox: Outbox, request: ClaimRequest): ClaimedDelivery[] {
  const now = request.now.getTime();
  const turns: { row: CandidateRow; turn: number }[] = [];
  for (const account of outbox.dueAccounts.all({ now })) {
    const room = request.perAccount - (request.inFlight.get(account.account_id) ?? 0);
    if (room <= 0) continue;
    const rows = outbox.candidates.all({ account: account.account_id, now, limit: room });
    const recipients = new Set<string>();
    let turn = 0;
    for (const row of rows) {
      const recipient = `${row.message_id}\u0000${row.recipient}`;
      if (recipients.has(recipient)) continue;
      recipients.add(recipient);
      turns.push({ row: { ...row, ...account }, turn: turn++ });
    }
  }
  turns.sort((a, b) => a.turn - b.turn || a.row.created_at - b.row.created_at);
  const claimed: ClaimedDelivery[] = [];
  for (const { row } of turns.slice(0, request.limit)) {
    outbox.lease.run(request.lease, request.leaseUntil.getTime(), row.account_id, row.seq);
    claimed.push({
      accountId: row.account_id,
      id: row.id,
      lease: request.lease,
      attempts: row.attempts,
      createdAt: new Date(row.created_at),
      callbackUrl: row.callback_url,
      secrets: {
        current: row.callback_secret,
        previous: row.previous_callback_secret,
        previousUntil:
          row.previous_callback_secret_until === null ? null : new Date(row.previous_callback_secret_until),
      },
      body: row.item,
    });
  }
  return claimed;
}

export function finish(outbox: Outbox, claimed: ClaimedDelivery, outcome: AttemptOutcome): void {
  const { attempt, next } = outcome;
  const done = outbox.finish.get({
    account: claimed.accountId,
    id: claimed.id,
    lease: claimed.lease,
    state: next.state,
    next: next.state === 'pending' ? next.at.getTime() : null,
    at: attempt.at.getTime(),
    status: attempt.httpStatus,
    error: attempt.error,
    duration: Math.round(attempt.durationMs),
  });
  if (!done) return;
  outbox.insertAttempt.run({
    account: claimed.accountId,
    seq: done.seq,
    at: attempt.at.getTime(),
    status: attempt.httpStatus,
    error: attempt.error,
    duration: Math.round(attempt.durationMs),
  });
  if (next.state === 'dead' && next.disableAccount) outbox.disableCallbacks.run(claimed.accountId);
}

export function listDeliveries(outbox: Outbox, accountId: string, query: DeliveryListQuery): Delivery[] {
  const params = {
    account: accountId,
    state: query.state ?? null,
    before: query.beforeSeq ?? Number.MAX_SAFE_INTEGER,
    limit: query.limit,
  };
  const statement = query.state === undefined ? outbox.list : outbox.listByState;
  return statement.all(params).map(deliveryFromRow);
}

export function getDelivery(outbox: Outbox, accountId: string, id: string): DeliveryDetail | null {
  const row = outbox.delivery.get(accountId, id);
  if (!row) return null;
  return { ...deliveryFromRow(row), attemptLog: outbox.attempts.all(accountId, row.seq).map(attemptFromRow) };
}

export function redeliver(
  outbox: Outbox,
  accountId: string,
  id: string,
  now: Date,
): Delivery | 'superseded' | null {
  const row = outbox.delivery.get(accountId, id);
  if (!row) return null;
  if (
    row.state === 'superseded' ||
    outbox.newerOfRecipient.get(accountId, row.message_id, row.recipient, row.seq)
  ) {
    return 'superseded';
  }
  outbox.redeliver.run(now.getTime(), accountId, row.seq);
  const updated = outbox.delivery.get(accountId, id);
  return updated ? deliveryFromRow(updated) : null;
}

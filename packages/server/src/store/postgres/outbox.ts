import type pg from 'pg';
import type { Delivery, DeliveryDetail } from '../../domain/deliveries/delivery.js';
import type { ReceiptEvent } from '../../domain/deliveries/events.js';
import type { AttemptOutcome, ClaimedDelivery, ClaimRequest, DeliveryListQuery } from '../store.js';
import { inTransaction } from './pool.js';
import {
  type AttemptRow,
  attemptFromRow,
  DELIVERY_COLUMNS,
  type DeliveryRow,
  deliveryFromRow,
  type EventRow,
  eventFromRow,
} from './rows.js';

/** The receipt feed, the callback outbox and its attempt log on PostgreSQL. */

const FROM_DELIVERIES =
  'FROM deliveries d JOIN receipt_events e ON e.account_id = d.account_id AND e.seq = d.seq';

/** Gap-free by construction (events.ts): positions become visible in order. */
export async function listEvents(
  pool: pg.Pool,
  accountId: string,
  afterSeq: number,
  limit: number,
): Promise<ReceiptEvent[]> {
  const result = await pool.query<EventRow>({
    name: 'wb_events',
    text: `SELECT seq, id, recorded_at, item FROM receipt_events
           WHERE account_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
    values: [accountId, afterSeq, limit],
  });
  return result.rows.map(eventFromRow);
}

interface CandidateRow {
  account_id: string;
  seq: number;
  id: string;
  message_id: string;
  recipient: string;
  attempts: number;
  created_at: Date;
  item: string;
  callback_url: string;
  callback_secret: string;
  previous_callback_secret: string | null;
  previous_callback_secret_until: Date | null;
}

/**
 * Leases due deliveries within the request's limits, oldest due first, one per recipient.
 *
 * Candidates are read without a lock, chosen here (the per-account and per-recipient limits), and only the
 * chosen ones are then locked and leased, with SKIP LOCKED and every condition re-checked under the lock: a
 * candidate another relay leased meanwhile is skipped or fails the check, and this relay chooses again from the
 * rest. Locking the whole scan window instead would hand a concurrent relay nothing while this one holds far
 * more rows than it takes; this way relays on several instances split the queue.
 *
 * The in-flight check of a recipient needs no lock: a recipient has at most one pending delivery, and an older
 * one still in flight took its lease before the newer one was queued, so any view that shows the newer one
 * shows that lease too.
 */
export async function claim(pool: pg.Pool, request: ClaimRequest): Promise<ClaimedDelivery[]> {
  if (request.limit <= 0) return [];
  let candidates = await claimCandidates(pool, request);
  const picker = new Picker(request);
  const claimed: ClaimedDelivery[] = [];
  for (let round = 0; round < CLAIM_ROUNDS && candidates.length > 0 && picker.room() > 0; round++) {
    const chosen = picker.choose(candidates);
    if (chosen.length === 0) break;
    const leased = await lease(pool, request, chosen);
    for (const row of chosen) {
      const attempts = leased.get(deliveryKey(row));
      if (attempts === undefined) picker.lost(row);
      else claimed.push(claimedFromRow({ ...row, attempts }, request.lease));
    }
    const tried = new Set(chosen.map(deliveryKey));
    candidates = candidates.filter((row) => !tried.has(deliveryKey(row)));
  }
  return claimed;
}

/** How often a claim chooses again after losing candidates to another relay, before it settles for less. */
const CLAIM_ROUNDS = 4;

const deliveryKey = (row: { account_id: string; seq: number }) => `${row.account_id}\u0000${row.seq}`;

/**
 * The oldest due deliveries of each account with callbacks on and room left, up to its room, ordered so that the
 * accounts take turns (every account's first candidate, then every account's second…): an account with a long
 * backlog gets its share and never holds up the others. One index probe per such account
 * (`deliveries_account_due`).
 */
async function claimCandidates(pool: pg.Pool, request: ClaimRequest): Promise<CandidateRow[]> {
  const full = [...request.inFlight].filter(([, n]) => n >= request.perAccount).map(([id]) => id);
  const result = await pool.query<CandidateRow & { turn: number }>({
    name: 'wb_claim_candidates',
    // Due, unleased, and of a recipient with no attempt in flight (a superseded delivery may still be in
    // flight: the newer one waits for it, so the two never cross).
    text: `SELECT c.*, a.callback_url, a.callback_secret, a.previous_callback_secret,
             a.previous_callback_secret_until
           FROM accounts a
           CROSS JOIN LATERAL (
             SELECT d.account_id, d.seq, d.id, d.message_id, d.recipient, d.attempts, d.created_at, e.item,
               row_number() OVER (ORDER BY d.next_attempt_at, d.seq) AS turn
             ${FROM_DELIVERIES}
             WHERE d.account_id = a.id AND d.state = 'pending' AND d.next_attempt_at <= $1
               AND (d.lease_until IS NULL OR d.lease_until <= $1)
               AND NOT EXISTS (
                 SELECT 1 FROM deliveries b
                 WHERE b.account_id = d.account_id AND b.message_id = d.message_id
                   AND b.recipient = d.recipient AND b.seq <> d.seq AND b.lease_until > $1)
             ORDER BY d.next_attempt_at, d.seq
             LIMIT $2
           ) c
           WHERE a.callback_url IS NOT NULL AND a.callback_enabled AND a.id <> ALL($3::uuid[])
           ORDER BY c.turn, c.created_at`,
    values: [request.now.toISOString(), request.perAccount, full],
  });
  return result.rows;
}

/** Leases those of `rows` still due and unleased; returns their attempt counts (as of the lease) by key. */
async function lease(
  pool: pg.Pool,
  request: ClaimRequest,
  rows: readonly CandidateRow[],
): Promise<Map<string, number>> {
  const result = await pool.query<{ account_id: string; seq: number; attempts: number }>({
    name: 'wb_lease_deliveries',
    text: `WITH still AS (
             SELECT d.account_id, d.seq FROM deliveries d
             JOIN unnest($3::uuid[], $4::bigint[]) AS u (account_id, seq)
               ON d.account_id = u.account_id AND d.seq = u.seq
             WHERE d.state = 'pending' AND d.next_attempt_at <= $5
               AND (d.lease_until IS NULL OR d.lease_until <= $5)
             FOR UPDATE OF d SKIP LOCKED
           )
           UPDATE deliveries d SET lease = $1, lease_until = $2
           FROM still s
           WHERE d.account_id = s.account_id AND d.seq = s.seq
           RETURNING d.account_id, d.seq, d.attempts`,
    values: [
      request.lease,
      request.leaseUntil.toISOString(),
      rows.map((row) => row.account_id),
      rows.map((row) => row.seq),
      request.now.toISOString(),
    ],
  });
  return new Map(result.rows.map((row) => [deliveryKey(row), row.attempts]));
}

/** Chooses candidates within the total and per-account limits, one per recipient, across claim rounds. */
class Picker {
  private readonly perAccount: Map<string, number>;
  private readonly recipients = new Set<string>();
  private taken = 0;

  constructor(private readonly request: ClaimRequest) {
    this.perAccount = new Map(request.inFlight);
  }

  room(): number {
    return this.request.limit - this.taken;
  }

  /** Oldest due first, as the candidates come. */
  choose(rows: readonly CandidateRow[]): CandidateRow[] {
    const chosen: CandidateRow[] = [];
    for (const row of rows) {
      if (this.room() <= 0) break;
      const busy = this.perAccount.get(row.account_id) ?? 0;
      const recipient = `${row.account_id}\u0000${row.message_id}\u0000${row.recipient}`;
      if (busy >= this.request.perAccount || this.recipients.has(recipient)) continue;
      this.perAccount.set(row.account_id, busy + 1);
      this.recipients.add(recipient);
      this.taken++;
      chosen.push(row);
    }
    return chosen;
  }

  /**
   * Gives back the room of a candidate another relay took. Its recipient stays taken: that relay's attempt is
   * now in flight.
   */
  lost(row: CandidateRow): void {
    this.perAccount.set(row.account_id, (this.perAccount.get(row.account_id) ?? 1) - 1);
    this.taken--;
  }
}

const claimedFromRow = (row: CandidateRow, lease: string): ClaimedDelivery => ({
  accountId: row.account_id,
  id: row.id,
  lease,
  attempts: row.attempts,
  createdAt: row.created_at,
  callbackUrl: row.callback_url,
  secrets: {
    current: row.callback_secret,
    previous: row.previous_callback_secret,
    previousUntil: row.previous_callback_secret_until,
  },
  body: row.item,
});

/**
 * Records an attempt, in one statement so it needs no transaction: the delivery's new state (only if the lease
 * is still ours), its attempt log entry, and turning the account's callbacks off after a 410. The delivery row
 * is locked before the account row, the order ingest takes them in too.
 */
export async function finish(
  pool: pg.Pool,
  claimed: ClaimedDelivery,
  outcome: AttemptOutcome,
): Promise<void> {
  const { attempt, next } = outcome;
  await pool.query({
    name: 'wb_finish_attempt',
    // A delivery superseded while its attempt was in flight stays superseded, unless that attempt delivered it.
    // The log is numbered within the delivery's whole history: `attempts` restarts at a redelivery, the log
    // does not.
    text: `WITH done AS (
             UPDATE deliveries SET
               attempts = attempts + 1,
               state = CASE WHEN state = 'superseded' AND $4::text <> 'delivered' THEN 'superseded' ELSE $4::text END,
               next_attempt_at = CASE WHEN state = 'superseded' OR $4::text <> 'pending' THEN NULL
                                      ELSE $5::timestamptz END,
               lease = NULL, lease_until = NULL,
               last_at = $6, last_http_status = $7, last_error = $8, last_duration_ms = $9
             WHERE account_id = $1::uuid AND id = $2 AND lease = $3
             RETURNING account_id, seq
           ), logged AS (
             INSERT INTO delivery_attempts (account_id, seq, n, at, http_status, error, duration_ms)
             SELECT d.account_id, d.seq,
               coalesce((SELECT max(x.n) FROM delivery_attempts x
                         WHERE x.account_id = d.account_id AND x.seq = d.seq), 0) + 1,
               $6, $7, $8, $9
             FROM done d
           ), disabled AS (
             UPDATE accounts SET callback_enabled = false
             WHERE $10::boolean AND id IN (SELECT account_id FROM done)
           )
           SELECT count(*) AS n FROM done`,
    values: [
      claimed.accountId,
      claimed.id,
      claimed.lease,
      next.state,
      next.state === 'pending' ? next.at.toISOString() : null,
      attempt.at.toISOString(),
      attempt.httpStatus,
      attempt.error,
      Math.round(attempt.durationMs),
      next.state === 'dead' && next.disableAccount,
    ],
  });
}

export async function release(pool: pg.Pool, claimed: ClaimedDelivery, now: Date): Promise<void> {
  await pool.query({
    name: 'wb_release_claim',
    text: `UPDATE deliveries SET lease = NULL, lease_until = NULL,
             next_attempt_at = CASE WHEN state = 'pending' THEN $4::timestamptz END
           WHERE account_id = $1 AND id = $2 AND lease = $3`,
    values: [claimed.accountId, claimed.id, claimed.lease, now.toISOString()],
  });
}

/**
 * When the relay should look again: the earliest due time of an unleased pending delivery, or the earliest
 * lease expiry of a leased one (a crashed attempt is due again then). Paused deliveries (callbacks off) are not
 * due. Two probes, each on its own index, rather than one pass over every pending delivery.
 */
export async function nextDue(pool: pg.Pool): Promise<Date | null> {
  const result = await pool.query<{ due: Date | null }>({
    name: 'wb_next_due',
    text: `SELECT least(
             (SELECT d.next_attempt_at FROM deliveries d JOIN accounts a ON a.id = d.account_id
              WHERE d.state = 'pending' AND d.lease_until IS NULL
                AND a.callback_url IS NOT NULL AND a.callback_enabled
              ORDER BY d.next_attempt_at LIMIT 1),
             (SELECT min(greatest(d.next_attempt_at, d.lease_until))
              FROM deliveries d JOIN accounts a ON a.id = d.account_id
              WHERE d.state = 'pending' AND d.lease_until IS NOT NULL
                AND a.callback_url IS NOT NULL AND a.callback_enabled)
           ) AS due`,
  });
  return result.rows[0]?.due ?? null;
}

/** Whole-queue counts for the metrics; each reads a partial index (or the small parked table). */
export async function stats(pool: pg.Pool): Promise<{ pending: number; dead: number; parked: number }> {
  const result = await pool.query<{ pending: number; dead: number; parked: number }>({
    name: 'wb_outbox_stats',
    text: `SELECT (SELECT count(*) FROM deliveries WHERE state = 'pending') AS pending,
                  (SELECT count(*) FROM deliveries WHERE state = 'dead') AS dead,
                  (SELECT count(*) FROM parked_receipts) AS parked`,
  });
  const row = result.rows[0];
  return { pending: row?.pending ?? 0, dead: row?.dead ?? 0, parked: row?.parked ?? 0 };
}

export async function listDeliveries(
  pool: pg.Pool,
  accountId: string,
  query: DeliveryListQuery,
): Promise<Delivery[]> {
  const values: unknown[] = [accountId, query.beforeSeq ?? Number.MAX_SAFE_INTEGER, query.limit];
  if (query.state !== undefined) values.push(query.state);
  // One statement per shape, so each gets a plan that walks its own index backwards from the cursor.
  const result = await pool.query<DeliveryRow>({
    name: query.state === undefined ? 'wb_deliveries' : 'wb_deliveries_by_state',
    text: `SELECT ${DELIVERY_COLUMNS} ${FROM_DELIVERIES}
           WHERE d.account_id = $1 AND d.seq < $2 ${query.state === undefined ? '' : 'AND d.state = $4'}
           ORDER BY d.seq DESC LIMIT $3`,
    values,
  });
  return result.rows.map(deliveryFromRow);
}

async function deliveryRow(
  client: pg.Pool | pg.PoolClient,
  accountId: string,
  id: string,
): Promise<DeliveryRow | undefined> {
  const result = await client.query<DeliveryRow>({
    name: 'wb_delivery',
    text: `SELECT ${DELIVERY_COLUMNS} ${FROM_DELIVERIES} WHERE d.account_id = $1 AND d.id = $2`,
    values: [accountId, id],
  });
  return result.rows[0];
}

export async function getDelivery(
  pool: pg.Pool,
  accountId: string,
  id: string,
): Promise<DeliveryDetail | null> {
  const row = await deliveryRow(pool, accountId, id);
  if (!row) return null;
  const attempts = await pool.query<AttemptRow>({
    name: 'wb_delivery_attempts',
    text: `SELECT at, http_status, error, duration_ms FROM delivery_attempts
           WHERE account_id = $1 AND seq = $2 ORDER BY n`,
    values: [accountId, row.seq],
  });
  return { ...deliveryFromRow(row), attemptLog: attempts.rows.map(attemptFromRow) };
}

/**
 * The recipients' key rows are locked first, as ingest locks them before it records an event: a batch queuing
 * a newer delivery of the same recipient has then either committed (and the newer one is seen) or waits until
 * this redelivery is done (and supersedes it). Without the lock, both could end up pending and the older state
 * could reach the receiver after the newer one.
 */
const lockRecipientKeys = (deliveries: string): string => `SELECT 1 FROM message_keys k
  WHERE k.account_id = $1 AND (k.id, k.channel_user_id) IN (SELECT d.message_id, d.recipient FROM deliveries d
    WHERE d.account_id = $1 AND ${deliveries})
  ORDER BY k.id, k.channel_user_id
  FOR UPDATE OF k`;

const NEWEST_OF_RECIPIENT = `NOT EXISTS (
  SELECT 1 FROM deliveries n
  WHERE n.account_id = d.account_id AND n.message_id = d.message_id AND n.recipient = d.recipient
    AND n.seq > d.seq)`;

export async function redeliver(
  pool: pg.Pool,
  accountId: string,
  id: string,
  now: Date,
): Promise<Delivery | 'superseded' | null> {
  return inTransaction<Delivery | 'superseded' | null>(pool, async (client) => {
    await client.query({
      name: 'wb_redeliver_lock',
      text: lockRecipientKeys('d.id = $2'),
      values: [accountId, id],
    });
    const updated = await client.query<DeliveryRow>({
      name: 'wb_redeliver',
      text: `UPDATE deliveries d SET state = 'pending', attempts = 0, next_attempt_at = $3
             FROM receipt_events e
             WHERE d.account_id = $1 AND d.id = $2 AND d.state <> 'superseded' AND ${NEWEST_OF_RECIPIENT}
               AND e.account_id = d.account_id AND e.seq = d.seq
             RETURNING ${DELIVERY_COLUMNS}`,
      values: [accountId, id, now.toISOString()],
    });
    const row = updated.rows[0];
    if (row) return { commit: true, value: deliveryFromRow(row) };
    const exists = (await deliveryRow(client, accountId, id)) !== undefined;
    return { commit: false, value: exists ? 'superseded' : null };
  });
}

export async function redeliverDead(pool: pg.Pool, accountId: string, now: Date): Promise<number> {
  return inTransaction(pool, async (client) => {
    await client.query({
      name: 'wb_redeliver_dead_lock',
      text: lockRecipientKeys(`d.state = 'dead'`),
      values: [accountId],
    });
    const updated = await client.query({
      name: 'wb_redeliver_dead',
      text: `UPDATE deliveries d SET state = 'pending', attempts = 0, next_attempt_at = $2
             WHERE d.account_id = $1 AND d.state = 'dead' AND ${NEWEST_OF_RECIPIENT}`,
      values: [accountId, now.toISOString()],
    });
    return { commit: true, value: updated.rowCount ?? 0 };
  });
}

import type pg from 'pg';
import type { ReceiptEvent, StoredReceiptEvent } from '../../domain/deliveries/events.js';
import * as rules from '../../domain/deliveries/rules.js';
import { itemJsonOf } from '../event-item.js';
import type { ClaimedDelivery, ClaimRequest, DeliveryListQuery, FinishedAttempt } from '../store.js';
import { notifyQueued } from './delivery-notices.js';
import { inTransaction } from './pool.js';
import {
  type AttemptRow,
  attemptFromRow,
  DELIVERY_COLUMNS,
  type DeliveryRow,
  deliveryFromRow,
  EVENT_COLUMNS,
  type EventRow,
  eventFromRow,
  storedEventFromRow,
} from './rows.js';

/**
 * The receipt feed, the callback outbox and its attempt log on PostgreSQL. The delivery rules are
 * domain/deliveries/*: this file loads what they decide on, leases and writes.
 */

const FROM_DELIVERIES =
  'FROM deliveries d JOIN receipt_events e ON e.account_id = d.account_id AND e.seq = d.seq';

/** Gap-free by construction (events.ts): positions become visible in order. */
export async function listEvents(
  pool: pg.Pool,
  accountId: string,
  afterSeq: number,
  limit: number,
): Promise<StoredReceiptEvent[]> {
  const result = await pool.query<EventRow>({
    name: 'wb_events',
    text: `SELECT ${EVENT_COLUMNS} FROM receipt_events
           WHERE account_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
    values: [accountId, afterSeq, limit],
  });
  return result.rows.map(storedEventFromRow);
}

/** A pending delivery as the claim and next-due rules read it (claim-policy.ts ClaimCandidate). */
interface PendingRow {
  account_id: string;
  seq: number;
  message_id: string;
  recipient: string;
  next_attempt_at: Date;
  created_at: Date;
  lease_until: Date | null;
  recipient_lease_until: Date | null;
}

interface CandidateRow extends PendingRow {
  id: string;
  attempts: number;
  item: string;
  callback_url: string;
  callback_secret: string;
  previous_callback_secret: string | null;
  previous_callback_secret_until: Date | null;
}

const candidateOf = <R extends PendingRow>(row: R): rules.ClaimCandidate & { row: R } => ({
  accountId: row.account_id,
  seq: row.seq,
  messageId: row.message_id,
  to: row.recipient,
  nextAttemptAt: row.next_attempt_at,
  createdAt: row.created_at,
  leaseUntil: row.lease_until,
  recipientLeaseUntil: row.recipient_lease_until,
  row,
});

/**
 * The latest lease end among the other deliveries of d's recipient, read through deliveries_recipient (a
 * recipient has a few): no index names the lease, so that taking one is an update in place (migration 13).
 */
const PENDING_COLUMNS = `d.account_id, d.seq, d.message_id, d.recipient, d.next_attempt_at, d.created_at,
  d.lease_until,
  (SELECT max(b.lease_until) FROM deliveries b
   WHERE b.account_id = d.account_id AND b.message_id = d.message_id AND b.recipient = d.recipient
     AND b.lease_until IS NOT NULL AND b.seq <> d.seq) AS recipient_lease_until`;

/**
 * Leases due deliveries within the request's limits, as claim-policy.ts chooses them (accounts take turns, one
 * per recipient, none whose recipient has an attempt in flight).
 *
 * Candidates are read without a lock, chosen, and only the chosen ones are then locked and leased, with SKIP
 * LOCKED and their own conditions re-checked under the lock: a candidate another relay leased meanwhile is
 * skipped or fails the check, and this relay chooses again from the rest. Locking the whole scan window instead
 * would hand a concurrent relay nothing while this one holds far more rows than it takes; this way relays on
 * several instances split the queue.
 *
 * The in-flight check of a recipient needs no lock: a recipient has at most one pending delivery, and an older
 * one still in flight took its lease before the newer one was queued, so any view that shows the newer one
 * shows that lease too.
 */
export async function claim(pool: pg.Pool, request: ClaimRequest): Promise<ClaimedDelivery[]> {
  if (request.limit <= 0) return [];
  const picker = new rules.ClaimPicker(request);
  let candidates = (await claimCandidates(pool, request, picker)).map(candidateOf);
  const claimed: ClaimedDelivery[] = [];
  for (let round = 0; round < CLAIM_ROUNDS && candidates.length > 0 && picker.room() > 0; round++) {
    const chosen = picker.choose(candidates);
    if (chosen.length === 0) break;
    const leased = await lease(
      pool,
      request,
      chosen.map((c) => c.row),
    );
    for (const candidate of chosen) {
      const attempts = leased.get(deliveryKey(candidate.row));
      if (attempts === undefined) picker.lost(candidate);
      else claimed.push(claimedFromRow({ ...candidate.row, attempts }, request.lease));
    }
    const tried = new Set(chosen.map((c) => deliveryKey(c.row)));
    candidates = candidates.filter((c) => !tried.has(deliveryKey(c.row)));
  }
  return claimed;
}

/** How often a claim chooses again after losing candidates to another relay, before it settles for less. */
const CLAIM_ROUNDS = 4;

const deliveryKey = (row: { account_id: string; seq: number }) => `${row.account_id}\u0000${row.seq}`;

/**
 * The oldest due, unleased deliveries of each account with callbacks on and room left (its candidate window).
 * One index probe per such account (`deliveries_account_due`).
 */
async function claimCandidates(
  pool: pg.Pool,
  request: ClaimRequest,
  picker: rules.ClaimPicker,
): Promise<CandidateRow[]> {
  const full = [...request.inFlight.keys()].filter((id) => picker.accountRoom(id) <= 0);
  const result = await pool.query<CandidateRow>({
    name: 'wb_claim_candidates',
    text: `SELECT c.*, a.callback_url, a.callback_secret, a.previous_callback_secret,
             a.previous_callback_secret_until
           FROM accounts a
           CROSS JOIN LATERAL (
             SELECT ${PENDING_COLUMNS}, d.id, d.attempts, e.item
             ${FROM_DELIVERIES}
             WHERE d.account_id = a.id AND d.state = 'pending' AND d.next_attempt_at <= $1
               AND (d.lease_until IS NULL OR d.lease_until <= $1)
             ORDER BY d.next_attempt_at, d.seq
             LIMIT $2
           ) c
           WHERE a.callback_url IS NOT NULL AND a.callback_enabled AND a.id <> ALL($3::uuid[])`,
    values: [request.now.toISOString(), rules.candidateWindow(request.perAccount), full],
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
    // One primary-key probe per row asked for (LATERAL): joined to the array instead, the prepared statement's
    // generic plan read every due delivery and hashed them, per claim (bench/callbacks.mjs on PostgreSQL).
    text: `WITH still AS (
             SELECT s.account_id, s.seq FROM unnest($3::uuid[], $4::bigint[]) AS u (account_id, seq)
             CROSS JOIN LATERAL (
               SELECT d.account_id, d.seq FROM deliveries d
               WHERE d.account_id = u.account_id AND d.seq = u.seq AND d.state = 'pending'
                 AND d.next_attempt_at <= $5 AND (d.lease_until IS NULL OR d.lease_until <= $5)
               FOR UPDATE OF d SKIP LOCKED
             ) s
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
  body: itemJsonOf(row.message_id, row.recipient, row.item),
});

interface ClaimStateRow {
  account_id: string;
  id: string;
  state: rules.DeliveryState;
  lease: string | null;
}

async function claimStates(
  pool: pg.Pool,
  claims: readonly ClaimedDelivery[],
): Promise<Map<string, ClaimStateRow>> {
  const result = await pool.query<ClaimStateRow>({
    name: 'wb_claim_states',
    text: `SELECT d.account_id, d.id, d.state, d.lease FROM deliveries d
           JOIN unnest($1::uuid[], $2::text[]) AS u (account_id, id) ON d.account_id = u.account_id AND d.id = u.id`,
    values: [claims.map((c) => c.accountId), claims.map((c) => c.id)],
  });
  return new Map(result.rows.map((row) => [`${row.account_id}\u0000${row.id}`, row]));
}

/** Those claims that may still be sent (finish.ts maySend), in one query; the others are handed back. */
export async function recheck(
  pool: pg.Pool,
  claims: readonly ClaimedDelivery[],
  now: Date,
): Promise<ClaimedDelivery[]> {
  if (claims.length === 0) return [];
  const states = await claimStates(pool, claims);
  const sendable: ClaimedDelivery[] = [];
  for (const claimed of claims) {
    if (rules.maySend(states.get(`${claimed.accountId}\u0000${claimed.id}`) ?? null, claimed.lease)) {
      sendable.push(claimed);
    } else {
      await release(pool, claimed, now);
    }
  }
  return sendable;
}

/** How often a finish tries again after the delivery's state changed under it. */
const FINISH_TRIES = 3;

/**
 * Records an attempt as finish.ts settles it on the stored delivery. The rule is applied to the state the write
 * expects (pending, as claimed, first; then the state read back), and the write is made only if that is still
 * the stored state: ingest may supersede the delivery at any moment, and then the rule is applied again to what
 * is there. So the common case is one statement, needing no transaction: the delivery's new state (only if the
 * lease is still ours), its attempt log entry, and turning the account's callbacks off after a 410. The
 * delivery row is locked before the account row, the order ingest takes them in too.
 */
export async function finish(
  pool: pg.Pool,
  claimed: ClaimedDelivery,
  outcome: rules.AttemptOutcome,
): Promise<void> {
  const { attempt } = outcome;
  const key = `${claimed.accountId}\u0000${claimed.id}`;
  let stored: rules.StoredClaim | undefined = { state: 'pending', lease: claimed.lease };
  for (let tries = 0; tries < FINISH_TRIES; tries++) {
    if (tries > 0) stored = (await claimStates(pool, [claimed])).get(key);
    const settled = rules.settleAttempt(stored ?? null, claimed.lease, outcome);
    if (!stored || !settled) return;
    const result = await pool.query<{ n: number }>({
      name: 'wb_finish_attempt',
      // The log is numbered within the delivery's whole history: `attempts` restarts at a redelivery, the log
      // does not.
      text: `WITH done AS (
               UPDATE deliveries SET
                 attempts = attempts + 1, state = $4, next_attempt_at = $5, lease = NULL, lease_until = NULL,
                 last_at = $6, last_http_status = $7, last_error = $8, last_duration_ms = $9
               WHERE account_id = $1::uuid AND id = $2 AND lease = $3 AND state = $11
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
             SELECT count(*)::int AS n FROM done`,
      values: [
        claimed.accountId,
        claimed.id,
        claimed.lease,
        settled.state,
        settled.nextAttemptAt?.toISOString() ?? null,
        attempt.at.toISOString(),
        attempt.httpStatus,
        attempt.error,
        Math.round(attempt.durationMs),
        settled.disableCallbacks,
        stored.state,
      ],
    });
    if ((result.rows[0]?.n ?? 0) > 0) return;
  }
  throw new Error('the delivery kept changing while its attempt was recorded');
}

/**
 * Records many attempts (those that ended together) as {@link finish} records each, in one statement for the
 * common case: every delivery still pending under its claim's lease. The rule (finish.ts settleAttempt) is
 * applied here to that expected state, as finish applies it first; the statement writes only the rows that
 * still are so. The others — superseded meanwhile, the lease lost, or the row locked right now by an ingest
 * batch superseding it (skipped rather than waited for, so this statement and ingest's multi-row updates never
 * wait on each other in opposite orders) — then go through finish one by one, as does a 410 that turns the
 * account's callbacks off (rare, and finish takes the delivery row before the account row).
 */
export async function finishAll(pool: pg.Pool, results: readonly FinishedAttempt[]): Promise<void> {
  const batch: { claim: ClaimedDelivery; outcome: rules.AttemptOutcome; settled: rules.SettledAttempt }[] =
    [];
  const single: FinishedAttempt[] = [];
  for (const { claim: claimed, outcome } of results) {
    const settled = rules.settleAttempt({ state: 'pending', lease: claimed.lease }, claimed.lease, outcome);
    if (settled === null || settled.disableCallbacks) single.push({ claim: claimed, outcome });
    else batch.push({ claim: claimed, outcome, settled });
  }
  if (batch.length > 0) {
    const written = await pool.query<{ account_id: string; id: string }>({
      name: 'wb_finish_attempts',
      // The log is numbered within the delivery's whole history (see finish); each delivery is at most once
      // in a batch, as only its lease holder records its attempt.
      text: `WITH u AS (
               SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::timestamptz[],
                 $6::timestamptz[], $7::int[], $8::text[], $9::int[])
               AS u (account_id, id, lease, state, next_attempt_at, at, http_status, error, duration_ms)
             ), still AS (
               -- One probe of deliveries_id per attempt (LATERAL), never a scan of the pending queue (see lease).
               -- The state is checked outside the probe, behind OFFSET 0: inside, the planner walked the
               -- account's pending deliveries in deliveries_by_state to find each one (EXPLAIN, 9x the buffers
               -- at a few thousand pending). A row locked here but no longer pending goes to finish.
               SELECT s.account_id, s.seq, s.id FROM u
               CROSS JOIN LATERAL (
                 SELECT d.account_id, d.seq, d.id, d.state FROM deliveries d
                 WHERE d.account_id = u.account_id AND d.id = u.id AND d.lease = u.lease
                 FOR UPDATE OF d SKIP LOCKED
                 OFFSET 0
               ) s
               WHERE s.state = 'pending'
             ), done AS (
               UPDATE deliveries d SET
                 attempts = d.attempts + 1, state = u.state, next_attempt_at = u.next_attempt_at, lease = NULL,
                 lease_until = NULL, last_at = u.at, last_http_status = u.http_status, last_error = u.error,
                 last_duration_ms = u.duration_ms
               FROM still s JOIN u ON u.account_id = s.account_id AND u.id = s.id
               WHERE d.account_id = s.account_id AND d.seq = s.seq
               RETURNING d.account_id, d.seq, d.id, u.at, u.http_status, u.error, u.duration_ms
             ), logged AS (
               INSERT INTO delivery_attempts (account_id, seq, n, at, http_status, error, duration_ms)
               SELECT d.account_id, d.seq,
                 coalesce((SELECT max(x.n) FROM delivery_attempts x
                           WHERE x.account_id = d.account_id AND x.seq = d.seq), 0) + 1,
                 d.at, d.http_status, d.error, d.duration_ms
               FROM done d
             )
             SELECT account_id, id FROM done`,
      values: [
        batch.map((b) => b.claim.accountId),
        batch.map((b) => b.claim.id),
        batch.map((b) => b.claim.lease),
        batch.map((b) => b.settled.state),
        batch.map((b) => b.settled.nextAttemptAt?.toISOString() ?? null),
        batch.map((b) => b.outcome.attempt.at.toISOString()),
        batch.map((b) => b.outcome.attempt.httpStatus),
        batch.map((b) => b.outcome.attempt.error),
        batch.map((b) => Math.round(b.outcome.attempt.durationMs)),
      ],
    });
    const recorded = new Set(written.rows.map((row) => `${row.account_id}\u0000${row.id}`));
    for (const b of batch) {
      if (!recorded.has(`${b.claim.accountId}\u0000${b.claim.id}`)) single.push(b);
    }
  }
  for (const { claim: claimed, outcome } of single) await finish(pool, claimed, outcome);
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
 * When the relay should look again (claim-policy.ts nextDue), from the earliest pending deliveries of each
 * account with callbacks on: a paused backlog (callbacks off), however long, is never read, and a delivery
 * waiting on its recipient's attempt in flight is not taken for due.
 */
export async function nextDue(pool: pg.Pool, now: Date): Promise<Date | null> {
  const result = await pool.query<PendingRow>({
    name: 'wb_next_due',
    text: `SELECT c.* FROM accounts a
           CROSS JOIN LATERAL (
             SELECT ${PENDING_COLUMNS} FROM deliveries d
             WHERE d.account_id = a.id AND d.state = 'pending'
             ORDER BY d.next_attempt_at, d.seq
             LIMIT $1
           ) c
           WHERE a.callback_url IS NOT NULL AND a.callback_enabled`,
    values: [rules.NEXT_DUE_WINDOW],
  });
  return rules.nextDue(result.rows.map(candidateOf), now);
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
): Promise<rules.Delivery[]> {
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
): Promise<rules.DeliveryDetail | null> {
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

export async function listMessageEvents(
  pool: pg.Pool,
  accountId: string,
  messageId: string,
): Promise<ReceiptEvent[]> {
  const result = await pool.query<EventRow>({
    name: 'wb_message_events',
    text: `SELECT ${EVENT_COLUMNS} FROM receipt_events
           WHERE account_id = $1 AND message_id = $2 ORDER BY seq`,
    values: [accountId, messageId],
  });
  return result.rows.map(eventFromRow);
}

/** A message's deliveries and all their attempts: two statements, whatever the number of deliveries. */
export async function listMessageDeliveries(
  pool: pg.Pool,
  accountId: string,
  messageId: string,
): Promise<rules.DeliveryDetail[]> {
  const deliveries = await pool.query<DeliveryRow>({
    name: 'wb_message_deliveries',
    text: `SELECT ${DELIVERY_COLUMNS} ${FROM_DELIVERIES}
           WHERE d.account_id = $1 AND d.message_id = $2 ORDER BY d.seq`,
    values: [accountId, messageId],
  });
  if (deliveries.rows.length === 0) return [];
  const attempts = await pool.query<AttemptRow & { seq: number }>({
    name: 'wb_message_delivery_attempts',
    text: `SELECT seq, at, http_status, error, duration_ms FROM delivery_attempts
           WHERE account_id = $1 AND seq = ANY($2::bigint[]) ORDER BY seq, n`,
    values: [accountId, deliveries.rows.map((row) => row.seq)],
  });
  return deliveries.rows.map((row) => ({
    ...deliveryFromRow(row),
    attemptLog: attempts.rows.filter((a) => Number(a.seq) === Number(row.seq)).map(attemptFromRow),
  }));
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

/** A delivery's seq and state, and whether a newer delivery of its recipient exists (redeliver.ts). */
const REDELIVERY_COLUMNS = `d.seq, d.state, EXISTS (
  SELECT 1 FROM deliveries n
  WHERE n.account_id = d.account_id AND n.message_id = d.message_id AND n.recipient = d.recipient
    AND n.seq > d.seq) AS "newerOfRecipient"`;

interface RedeliveryRow {
  seq: number;
  state: rules.DeliveryState;
  newerOfRecipient: boolean;
}

/** Makes these deliveries pending again with a fresh schedule. */
async function requeue(client: pg.PoolClient, accountId: string, seqs: readonly number[], now: Date) {
  await client.query({
    name: 'wb_requeue',
    text: `UPDATE deliveries SET state = 'pending', attempts = 0, next_attempt_at = $3
           WHERE account_id = $1 AND seq = ANY($2::bigint[])`,
    values: [accountId, seqs, now.toISOString()],
  });
}

export async function redeliver(
  pool: pg.Pool,
  accountId: string,
  id: string,
  now: Date,
): Promise<rules.Delivery | 'superseded' | null> {
  return inTransaction<rules.Delivery | 'superseded' | null>(pool, async (client) => {
    await client.query({
      name: 'wb_redeliver_lock',
      text: lockRecipientKeys('d.id = $2'),
      values: [accountId, id],
    });
    const loaded = await client.query<RedeliveryRow>({
      name: 'wb_redelivery_row',
      text: `SELECT ${REDELIVERY_COLUMNS} FROM deliveries d WHERE d.account_id = $1 AND d.id = $2`,
      values: [accountId, id],
    });
    const row = loaded.rows[0];
    if (!row) return { commit: false, value: null };
    const refusal = rules.redeliveryRefusal(row);
    if (refusal) return { commit: false, value: refusal };
    await requeue(client, accountId, [row.seq], now);
    await notifyQueued(client);
    const updated = await deliveryRow(client, accountId, id);
    return { commit: true, value: updated ? deliveryFromRow(updated) : null };
  });
}

export async function redeliverDead(pool: pg.Pool, accountId: string, now: Date): Promise<number> {
  return inTransaction(pool, async (client) => {
    await client.query({
      name: 'wb_redeliver_dead_lock',
      text: lockRecipientKeys(`d.state = 'dead'`),
      values: [accountId],
    });
    const dead = await client.query<RedeliveryRow>({
      name: 'wb_dead_rows',
      text: `SELECT ${REDELIVERY_COLUMNS} FROM deliveries d WHERE d.account_id = $1 AND d.state = 'dead'`,
      values: [accountId],
    });
    const chosen = rules.redeliverableDead(dead.rows);
    if (chosen.length > 0) {
      await requeue(
        client,
        accountId,
        chosen.map((row) => row.seq),
        now,
      );
      await notifyQueued(client);
    }
    return { commit: true, value: chosen.length };
  });
}

/**
 * Backfill (backfill.ts planBackfill). The keys of the recipients with an event since `since` are locked first,
 * as in a redelivery: an ingest recording a newer event of one of them either committed before (and its event
 * is read here) or waits until the backfill commits (and supersedes what it queued).
 */
export async function backfill(
  pool: pg.Pool,
  accountId: string,
  since: Date,
  now: Date,
): Promise<number | 'callbacks-off' | null> {
  return inTransaction<number | 'callbacks-off' | null>(pool, async (client) => {
    const account = await client.query<{ callback_url: string | null; callback_enabled: boolean }>({
      name: 'wb_backfill_account',
      text: 'SELECT callback_url, callback_enabled FROM accounts WHERE id = $1 FOR SHARE',
      values: [accountId],
    });
    const row = account.rows[0];
    if (!row) return { commit: false, value: null };
    if (!rules.callbacksOn({ callbackUrl: row.callback_url, callbackEnabled: row.callback_enabled })) {
      return { commit: false, value: 'callbacks-off' };
    }
    await client.query({
      name: 'wb_backfill_lock',
      text: `SELECT 1 FROM message_keys k
             WHERE k.account_id = $1 AND (k.id, k.channel_user_id) IN (
               SELECT e.message_id, e.recipient FROM receipt_events e
               WHERE e.account_id = $1 AND e.recorded_at >= $2)
             ORDER BY k.id, k.channel_user_id
             FOR UPDATE OF k`,
      values: [accountId, since.toISOString()],
    });
    // The events since `since` (one pass over the account's feed: events have no index by time), and the
    // older pending deliveries a backfilled one may supersede.
    const loaded = await client.query<{
      seq: number;
      message_id: string;
      recipient: string;
      recorded_at: Date;
      delivery: rules.DeliveryState | null;
    }>({
      name: 'wb_backfill_rows',
      text: `SELECT e.seq, e.message_id, e.recipient, e.recorded_at, d.state AS delivery
             FROM receipt_events e LEFT JOIN deliveries d ON d.account_id = e.account_id AND d.seq = e.seq
             WHERE e.account_id = $1 AND e.recorded_at >= $2
             UNION ALL
             SELECT d.seq, d.message_id, d.recipient, e.recorded_at, d.state
             ${FROM_DELIVERIES}
             WHERE d.account_id = $1 AND d.state = 'pending' AND e.recorded_at < $2`,
      values: [accountId, since.toISOString()],
    });
    const events: rules.BackfillEvent[] = loaded.rows.map((r) => ({
      seq: r.seq,
      messageId: r.message_id,
      to: r.recipient,
      recordedAt: r.recorded_at,
      delivery: r.delivery,
    }));
    const plan = rules.planBackfill(events, since);
    if (plan.supersede.length > 0) {
      await client.query({
        name: 'wb_backfill_supersede',
        text: `UPDATE deliveries SET state = 'superseded', next_attempt_at = NULL
               WHERE account_id = $1 AND seq = ANY($2::bigint[]) AND state = 'pending'`,
        values: [accountId, plan.supersede],
      });
    }
    if (plan.queue.length > 0) {
      await client.query({
        name: 'wb_backfill_queue',
        text: `INSERT INTO deliveries (account_id, seq, id, message_id, recipient, state, created_at,
                 next_attempt_at)
               SELECT e.account_id, e.seq, e.id, e.message_id, e.recipient, 'pending', $3, $3
               FROM receipt_events e WHERE e.account_id = $1 AND e.seq = ANY($2::bigint[])`,
        values: [accountId, plan.queue, now.toISOString()],
      });
    }
    if (plan.requeue.length > 0) await requeue(client, accountId, plan.requeue, now);
    if (rules.queuedBy(plan) > 0) await notifyQueued(client);
    return { commit: true, value: rules.queuedBy(plan) };
  });
}

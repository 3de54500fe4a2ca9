import type pg from 'pg';
import { carrierReceiptFingerprint, type RouteAccounts } from '../../domain/ingest/plan-carrier-receipts.js';
import {
  type ParkedCarrierReceipt,
  type ParkedReceipt,
  receiptFingerprint,
} from '../../domain/ingest/plan-receipts.js';
import type { CarrierReceiptInput, ReceiptInput } from '../../domain/ingest/precedence.js';
import type { ParkedCarrierRow, ParkedRow } from '../rows.js';
import { type Columns, fromRow, parkedCarrierJson, parkedJson } from './rows.js';

/** Receipts parked until their recipient arrives (CONTRACT §9 "Early receipts"). */

/**
 * The live parked receipts of these message ids, locked: a concurrent message batch of the same id waits here,
 * then finds the ones this batch consumed gone.
 */
export async function lockParked(
  client: pg.PoolClient,
  accountId: string,
  messageIds: readonly string[],
  since: Date | undefined,
): Promise<ParkedReceipt[]> {
  if (messageIds.length === 0) return [];
  const result = await client.query<ParkedRow<Columns>>({
    name: 'wb_lock_parked',
    text: `SELECT ref, receipt, parked_at FROM parked_receipts
           WHERE account_id = $1 AND message_id = ANY($2::text[]) AND parked_at >= $3::timestamptz
           ORDER BY ref
           FOR UPDATE`,
    values: [accountId, messageIds, since?.toISOString() ?? '-infinity'],
  });
  return result.rows.map(fromRow.parked);
}

/** The live parked carrier receipts of these pairs, locked like {@link lockParked}'s. */
export async function lockParkedOfPairs(
  client: pg.PoolClient,
  pairs: readonly { route: string; carrierId: string }[],
  since: Date | undefined,
): Promise<ParkedCarrierReceipt[]> {
  if (pairs.length === 0) return [];
  const result = await client.query<ParkedCarrierRow<Columns>>({
    name: 'wb_lock_parked_of_pairs',
    text: `SELECT p.ref, p.route, p.receipt, p.parked_at FROM parked_receipts p
           JOIN unnest($1::text[], $2::text[]) AS u (route, carrier_id)
             ON p.route = u.route AND p.carrier_id = u.carrier_id
           WHERE p.parked_at >= $3::timestamptz
           ORDER BY p.ref
           FOR UPDATE OF p`,
    values: [pairs.map((p) => p.route), pairs.map((p) => p.carrierId), since?.toISOString() ?? '-infinity'],
  });
  return result.rows.map(fromRow.parkedCarrier);
}

/** Deletes consumed parked receipts of either kind (the account's, and carrier ones its batch claimed). */
export async function unpark(
  client: pg.PoolClient,
  accountId: string,
  refs: readonly number[],
): Promise<void> {
  if (refs.length === 0) return;
  await client.query({
    name: 'wb_unpark',
    text: `DELETE FROM parked_receipts
           WHERE ref = ANY($2::bigint[]) AND (account_id = $1 OR account_id IS NULL)`,
    values: [accountId, refs],
  });
}

/** Parks carrier receipts under their route's key; a replay is parked once, its park time restarted. */
export async function parkCarrier(
  client: pg.PoolClient,
  route: string,
  receipts: readonly CarrierReceiptInput[],
  accounts: RouteAccounts,
  now: Date,
): Promise<void> {
  if (receipts.length === 0) return;
  await client.query({
    name: 'wb_park_carrier',
    text: `INSERT INTO parked_receipts (route, carrier_id, fingerprint, receipt, parked_at)
           SELECT $1, u.carrier_id, u.fingerprint, u.receipt, $5
           FROM unnest($2::text[], $3::text[], $4::json[]) AS u (carrier_id, fingerprint, receipt)
           -- As park; the receipt is rewritten too, so it carries the route's accounts as they are now.
           ON CONFLICT (route, carrier_id, fingerprint) DO UPDATE SET receipt = EXCLUDED.receipt,
             parked_at = GREATEST(parked_receipts.parked_at, EXCLUDED.parked_at)`,
    values: [
      route,
      receipts.map((r) => r.carrierId),
      receipts.map((r) => carrierReceiptFingerprint(route, r)),
      receipts.map((r) => parkedCarrierJson(r, accounts)),
      now.toISOString(),
    ],
  });
}

/** Parks receipts; one already parked (same fingerprint) is parked once, its park time restarted. */
export async function park(
  client: pg.PoolClient,
  accountId: string,
  receipts: readonly ReceiptInput[],
  now: Date,
): Promise<void> {
  if (receipts.length === 0) return;
  await client.query({
    name: 'wb_park',
    text: `INSERT INTO parked_receipts (account_id, message_id, fingerprint, receipt, parked_at)
           SELECT $1, u.message_id, u.fingerprint, u.receipt, $5
           FROM unnest($2::text[], $3::text[], $4::json[]) AS u (message_id, fingerprint, receipt)
           -- A replay is parked once; its park time restarts, so a copy expired but not yet dropped comes back.
           ON CONFLICT (account_id, fingerprint)
             DO UPDATE SET parked_at = GREATEST(parked_receipts.parked_at, EXCLUDED.parked_at)`,
    values: [
      accountId,
      receipts.map((r) => r.messageId),
      receipts.map((r) => receiptFingerprint(r)),
      receipts.map((r) => parkedJson(r)),
      now.toISOString(),
    ],
  });
}

/**
 * Drops parked receipts older than `cutoff`. Walks the accounts so each one's range of the (account_id,
 * parked_at) index is read, rather than the whole table.
 */
export async function dropParkedBefore(pool: pg.Pool, cutoff: Date): Promise<number> {
  const result = await pool.query({
    name: 'wb_drop_parked',
    text: `DELETE FROM parked_receipts p USING accounts a
           WHERE p.account_id = a.id AND p.parked_at < $1`,
    values: [cutoff.toISOString()],
  });
  // Carrier receipts have no account until claimed: their own (partial) index by age.
  const carrier = await pool.query({
    name: 'wb_drop_parked_carrier',
    text: 'DELETE FROM parked_receipts WHERE route IS NOT NULL AND parked_at < $1',
    values: [cutoff.toISOString()],
  });
  return (result.rowCount ?? 0) + (carrier.rowCount ?? 0);
}

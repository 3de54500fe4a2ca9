import type pg from 'pg';
import { type ParkedReceipt, receiptFingerprint } from '../../domain/ingest/plan-receipts.js';
import type { ReceiptInput } from '../../domain/ingest/precedence.js';
import type { ParkedRow } from '../rows.js';
import { type Columns, fromRow, parkedJson } from './rows.js';

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

export async function unpark(
  client: pg.PoolClient,
  accountId: string,
  refs: readonly number[],
): Promise<void> {
  if (refs.length === 0) return;
  await client.query({
    name: 'wb_unpark',
    text: 'DELETE FROM parked_receipts WHERE account_id = $1 AND ref = ANY($2::bigint[])',
    values: [accountId, refs],
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
  return result.rowCount ?? 0;
}

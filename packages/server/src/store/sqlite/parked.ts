import type Database from 'better-sqlite3';
import { type ParkedReceipt, receiptFingerprint } from '../../domain/ingest/plan-receipts.js';
import type { ReceiptInput } from '../../domain/ingest/precedence.js';
import type { ParkedRow } from '../rows.js';
import { preparer } from './database.js';
import { type Columns, fromRow, parkedJson } from './rows.js';

/** Receipts parked until their recipient arrives (CONTRACT §9 "Early receipts"). */
export function prepareParked(db: Database.Database) {
  const prepare = preparer(db);
  return {
    parkedOfIds: prepare<[{ account: string; ids: string; since: number }], ParkedRow<Columns>>(
      `SELECT ref, receipt, parked_at FROM parked_receipts
       WHERE account_id = @account AND message_id IN (SELECT value FROM json_each(@ids)) AND parked_at >= @since`,
    ),
    park: prepare<[string, string, string, string, number]>(
      `INSERT INTO parked_receipts (account_id, message_id, fingerprint, receipt, parked_at)
       VALUES (?, ?, ?, ?, ?)
       -- A replay is parked once; its park time restarts, so a copy expired but not yet dropped comes back.
       ON CONFLICT (account_id, fingerprint) DO UPDATE SET parked_at = max(parked_at, excluded.parked_at)`,
    ),
    unpark: prepare<[number]>('DELETE FROM parked_receipts WHERE ref = ?'),
    dropParkedBefore: prepare<[number]>('DELETE FROM parked_receipts WHERE parked_at < ?'),
  };
}

export type ParkedStatements = ReturnType<typeof prepareParked>;

/** The live parked receipts of these message ids (parked at `since` or later). */
export function readParked(
  sql: ParkedStatements,
  accountId: string,
  messageIds: readonly string[],
  since: number,
): ParkedReceipt[] {
  return sql.parkedOfIds
    .all({ account: accountId, ids: JSON.stringify(messageIds), since })
    .map(fromRow.parked);
}

export function unpark(sql: ParkedStatements, refs: readonly number[]): void {
  for (const ref of refs) sql.unpark.run(ref);
}

/** Parks receipts; one already parked (same fingerprint) is parked once, its park time restarted. */
export function park(
  sql: ParkedStatements,
  accountId: string,
  receipts: readonly ReceiptInput[],
  now: Date,
): void {
  for (const receipt of receipts) {
    sql.park.run(
      accountId,
      receipt.messageId,
      receiptFingerprint(receipt),
      parkedJson(receipt),
      now.getTime(),
    );
  }
}

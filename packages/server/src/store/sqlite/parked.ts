import type Database from 'better-sqlite3';
import { carrierReceiptFingerprint, type RouteAccounts } from '../../domain/ingest/plan-carrier-receipts.js';
import {
  type ParkedCarrierReceipt,
  type ParkedReceipt,
  receiptFingerprint,
} from '../../domain/ingest/plan-receipts.js';
import type { CarrierReceiptInput, ReceiptInput } from '../../domain/ingest/precedence.js';
import type { ParkedCarrierRow, ParkedRow } from '../rows.js';
import { refOf } from './account-ref.js';
import { preparer } from './database.js';
import { type Columns, fromRow, parkedCarrierJson, parkedJson } from './rows.js';

/** Receipts parked until their recipient arrives (CONTRACT §9 "Early receipts"). */
export function prepareParked(db: Database.Database) {
  const prepare = preparer(db);
  return {
    parkedOfIds: prepare<[{ account: string; ids: string; since: number }], ParkedRow<Columns>>(
      `SELECT ref, receipt, parked_at FROM parked_receipts
       WHERE account_id = ${refOf('@account')} AND message_id IN (SELECT value FROM json_each(@ids)) AND parked_at >= @since`,
    ),
    park: prepare<[string, string, string, string, number]>(
      `INSERT INTO parked_receipts (account_id, message_id, fingerprint, receipt, parked_at)
       VALUES (${refOf('?')}, ?, ?, ?, ?)
       -- A replay is parked once; its park time restarts, so a copy expired but not yet dropped comes back.
       ON CONFLICT (account_id, fingerprint) DO UPDATE SET parked_at = max(parked_at, excluded.parked_at)`,
    ),
    parkedOfPairs: prepare<[{ pairs: string; since: number }], ParkedCarrierRow<Columns>>(
      `SELECT ref, route, receipt, parked_at FROM parked_receipts
       WHERE (route, carrier_id) IN (SELECT value ->> 0, value ->> 1 FROM json_each(@pairs))
         AND parked_at >= @since`,
    ),
    parkCarrier: prepare<[string, string, string, string, number]>(
      `INSERT INTO parked_receipts (route, carrier_id, fingerprint, receipt, parked_at)
       VALUES (?, ?, ?, ?, ?)
       -- As parkReceipt; the receipt is rewritten too, so it carries the route's accounts as they are now.
       ON CONFLICT (route, carrier_id, fingerprint)
         DO UPDATE SET receipt = excluded.receipt, parked_at = max(parked_at, excluded.parked_at)`,
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

/** The live parked carrier receipts of these pairs (parked at `since` or later). */
export function readParkedOfPairs(
  sql: ParkedStatements,
  pairs: readonly { route: string; carrierId: string }[],
  since: number,
): ParkedCarrierReceipt[] {
  if (pairs.length === 0) return [];
  const json = JSON.stringify(pairs.map((p) => [p.route, p.carrierId]));
  return sql.parkedOfPairs.all({ pairs: json, since }).map(fromRow.parkedCarrier);
}

/** Parks carrier receipts under their route's key; a replay is parked once, its park time restarted. */
export function parkCarrier(
  sql: ParkedStatements,
  route: string,
  receipts: readonly CarrierReceiptInput[],
  accounts: RouteAccounts,
  now: Date,
): void {
  for (const receipt of receipts) {
    sql.parkCarrier.run(
      route,
      receipt.carrierId,
      carrierReceiptFingerprint(route, receipt),
      parkedCarrierJson(receipt, accounts),
      now.getTime(),
    );
  }
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

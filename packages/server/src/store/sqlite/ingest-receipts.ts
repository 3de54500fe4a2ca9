import type Database from 'better-sqlite3';
import {
  type CarrierHolder,
  type CarrierReceiptState,
  planCarrierReceipts,
  type RouteAccounts,
} from '../../domain/ingest/plan-carrier-receipts.js';
import { planReceipts, type ReceiptBatchState } from '../../domain/ingest/plan-receipts.js';
import type { CarrierReceiptInput, ReceiptInput } from '../../domain/ingest/precedence.js';
import { storedRecipients } from '../rows.js';
import type { IngestOptions, IngestStore } from '../store.js';
import { RollBack, runBatch } from './database.js';
import { accountOfBatch, type BatchAccount, type EventStatements, writeEvents } from './events.js';
import { type ParkedStatements, park, parkCarrier } from './parked.js';
import { type Recipients, type RecordStatements, readRecipients, updateSmsState } from './records.js';
import { type RollupStatements, writeRollupOf } from './rollup.js';

export interface ReceiptIngestStatements {
  records: RecordStatements;
  parked: ParkedStatements;
  events: EventStatements;
  rollup: RollupStatements;
}

/**
 * Receipt ingest on SQLite: reads the recipients of the batch's message ids, lets the domain planner decide,
 * and writes the changed recipients' SMS state, the events and the parked receipts, in one IMMEDIATE
 * transaction.
 */
export function receiptIngest(
  db: Database.Database,
  sql: ReceiptIngestStatements,
): IngestStore['ingestReceipts'] {
  const apply = db.transaction(
    (accountId: string, items: ReceiptInput[], now: Date, options: IngestOptions | undefined) => {
      const account = accountOfBatch(sql.events, accountId);
      const ids = [...new Set(items.map((i) => i.messageId))];
      const recipients = readRecipients(sql.records, accountId, ids);
      const planned = planReceipts({ recipients: recipients.byId, callbacks: account.callbacks }, items, now);
      if (!planned.ok) throw new RollBack({ ok: false, errors: planned.errors });
      const { plan } = planned;
      if (options?.dryRun === true) throw new RollBack({ ok: true, value: plan.outcome });
      updateSmsState(sql.records, accountId, recipients, plan.updates);
      writeRollupOf(sql.rollup, accountId, storedRecipients(recipients.byId), plan.updates);
      writeEvents(sql.events, account, plan.events, plan.supersede, plan.updates, recipients.rows);
      park(sql.parked, accountId, plan.park, now);
      return plan.outcome;
    },
  );
  return async (accountId, items, now, options) =>
    runBatch(() => apply.immediate(accountId, items, now, options));
}

/**
 * Carrier receipt ingest on SQLite (CONTRACT §12 "Correlation"): reads who holds the batch's carrier ids on the
 * route and those recipients, lets domain/ingest/plan-carrier-receipts.ts decide, and writes each matched
 * account's changes and events and the parked receipts, in one IMMEDIATE transaction.
 */
export function carrierReceiptIngest(
  db: Database.Database,
  sql: ReceiptIngestStatements,
): IngestStore['ingestCarrierReceipts'] {
  const apply = db.transaction(
    (route: string, items: CarrierReceiptInput[], now: Date, accounts: RouteAccounts) => {
      const ids = JSON.stringify([...new Set(items.map((i) => i.carrierId))]);
      const holders = new Map<string, CarrierHolder>();
      const idsOf = new Map<string, Set<string>>();
      for (const row of sql.records.holdersOnRoute.all({ route, ids })) {
        holders.set(row.carrier_id, {
          accountId: row.account_id,
          messageId: row.message_id,
          to: row.channel_user_id,
        });
        idsOf.set(row.account_id, (idsOf.get(row.account_id) ?? new Set()).add(row.message_id));
      }
      const loaded = new Map<string, ReceiptBatchState>();
      const read = new Map<string, { recipients: Recipients; account: BatchAccount }>();
      for (const [accountId, messageIds] of idsOf) {
        const recipients = readRecipients(sql.records, accountId, [...messageIds]);
        const account = accountOfBatch(sql.events, accountId);
        loaded.set(accountId, { recipients: recipients.byId, callbacks: account.callbacks });
        read.set(accountId, { recipients, account });
      }
      const state: CarrierReceiptState = { holders, accounts: loaded };
      const plan = planCarrierReceipts(state, route, items, accounts, now);
      for (const [accountId, accountPlan] of plan.accounts) {
        // The planner groups receipts by the holders read above: every account it plans for was read.
        const batch = read.get(accountId);
        if (batch === undefined)
          throw new Error(`carrier receipts planned for an account not read: ${accountId}`);
        const { recipients, account } = batch;
        updateSmsState(sql.records, accountId, recipients, accountPlan.updates);
        writeRollupOf(sql.rollup, accountId, storedRecipients(recipients.byId), accountPlan.updates);
        writeEvents(
          sql.events,
          account,
          accountPlan.events,
          accountPlan.supersede,
          accountPlan.updates,
          recipients.rows,
        );
        park(sql.parked, accountId, accountPlan.park, now);
      }
      parkCarrier(sql.parked, route, plan.park, accounts, now);
      return plan.results;
    },
  );
  return async (route, items, now, options) => apply.immediate(route, items, now, options?.accounts ?? null);
}

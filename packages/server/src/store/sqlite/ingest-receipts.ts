import type Database from 'better-sqlite3';
import { planReceipts } from '../../domain/ingest/plan-receipts.js';
import type { ReceiptInput } from '../../domain/ingest/precedence.js';
import type { IngestOptions, IngestStore } from '../store.js';
import { RollBack, runBatch } from './database.js';
import { callbacksOf, type EventStatements, writeEvents } from './events.js';
import { type ParkedStatements, park } from './parked.js';
import { type RecordStatements, readRecipients, updateSmsState } from './records.js';

export interface ReceiptIngestStatements {
  records: RecordStatements;
  parked: ParkedStatements;
  events: EventStatements;
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
      const callbacks = callbacksOf(sql.events, accountId);
      const ids = [...new Set(items.map((i) => i.messageId))];
      const recipients = readRecipients(sql.records, accountId, ids);
      const planned = planReceipts({ recipients: recipients.byId, callbacks }, items, now);
      if (!planned.ok) throw new RollBack({ ok: false, errors: planned.errors });
      const { plan } = planned;
      if (options?.dryRun === true) throw new RollBack({ ok: true, value: plan.outcome });
      updateSmsState(sql.records, recipients.rows, plan.updates);
      writeEvents(sql.events, accountId, plan.events, plan.supersede);
      park(sql.parked, accountId, plan.park, now);
      return plan.outcome;
    },
  );
  return async (accountId, items, now, options) =>
    runBatch(() => apply.immediate(accountId, items, now, options));
}

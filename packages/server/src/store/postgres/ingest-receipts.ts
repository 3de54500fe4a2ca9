import type pg from 'pg';
import { planReceipts, type ReceiptBatchState, type ReceiptPlan } from '../../domain/ingest/plan-receipts.js';
import type { BatchOutcome, ReceiptInput, ReceiptOutcome } from '../../domain/ingest/precedence.js';
import type { StoredMessage } from '../../domain/records.js';
import type { IngestStore } from '../store.js';
import { lockAccount, writeEvents } from './events.js';
import { lockParking } from './park-locks.js';
import { park } from './parked.js';
import { inTransaction, RETRY, type TransactionResult } from './pool.js';
import { countKeysOfIds, type KeyRow, lockKeysOfIds, readRecords, updateSmsState } from './records.js';
import { recordKey } from './rows.js';

/** Receipt ingest on PostgreSQL. */
export function receiptIngest(pool: pg.Pool): IngestStore['ingestReceipts'] {
  return async (accountId, items, now, options) => {
    const dryRun = options?.dryRun === true;
    return inTransaction(pool, (client) => ingestReceiptsOnce(client, accountId, items, now, dryRun));
  };
}

/**
 * One attempt at a receipt batch, inside a transaction: locks every record of the batch's message ids, lets
 * domain/ingest/plan-receipts.ts decide, and writes the changed recipients' SMS state, the events and the parked
 * receipts. Receipts never create records, so a lock on the existing keys orders them against every other
 * writer of those records; parking is ordered against the records' arrival by park-locks.ts.
 */
async function ingestReceiptsOnce(
  client: pg.PoolClient,
  accountId: string,
  items: readonly ReceiptInput[],
  now: Date,
  dryRun = false,
): Promise<TransactionResult<BatchOutcome<ReceiptOutcome>> | typeof RETRY> {
  const { callbacks } = await lockAccount(client, accountId);
  const keyRows = await lockKeysOfIds(client, accountId, [...new Set(items.map((i) => i.messageId))]);
  const state: ReceiptBatchState = {
    recipients: await loadRecipients(client, accountId, keyRows),
    callbacks,
  };
  const planned = planReceipts(state, items, now);
  if (!planned.ok) return { commit: false, value: { ok: false, errors: planned.errors } };
  const { plan } = planned;
  if (dryRun) return { commit: false, value: { ok: true, value: plan.outcome } };
  if (!(await mayPark(client, accountId, plan, keyRows))) return RETRY;
  await updateSmsState(client, accountId, plan.updates);
  await park(client, accountId, plan.park, now);
  await writeEvents(client, accountId, plan.events, plan.supersede);
  return { commit: true, value: { ok: true, value: plan.outcome } };
}

/** Outbound SMS recipients per message id, in first-ingested order (as /dlr lists them). */
async function loadRecipients(
  client: pg.PoolClient,
  accountId: string,
  keyRows: readonly KeyRow[],
): Promise<Map<string, StoredMessage[]>> {
  const records = await readRecords(client, accountId, keyRows);
  const recipients = new Map<string, StoredMessage[]>();
  for (const key of [...keyRows].sort((a, b) => a.seq - b.seq)) {
    const record = records.get(recordKey(key.id, key.channel_user_id));
    if (!record?.sms) continue;
    const list = recipients.get(key.id) ?? [];
    list.push(record);
    recipients.set(key.id, list);
  }
  return recipients;
}

/**
 * Takes the parking locks of the ids the plan parks, then checks that no record of them arrived since the
 * batch looked: one that did was committed by a message batch this one could not see, and parking beside it
 * would strand the receipt. Then the batch must start over (and will apply the receipt instead).
 */
async function mayPark(
  client: pg.PoolClient,
  accountId: string,
  plan: ReceiptPlan,
  keyRows: readonly KeyRow[],
): Promise<boolean> {
  if (plan.park.length === 0) return true;
  const ids = new Set(plan.park.map((r) => r.messageId));
  await lockParking(client, accountId, ids, 'exclusive');
  const seen = keyRows.filter((k) => ids.has(k.id)).length;
  return (await countKeysOfIds(client, accountId, [...ids])) <= seen;
}

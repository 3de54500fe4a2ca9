import type pg from 'pg';
import {
  applyReceipt,
  type BatchOutcome,
  type ItemError,
  type ReceiptInput,
  type ReceiptOutcome,
  receiptTarget,
} from '../../domain/ingest.js';
import type { StoredMessage } from '../../domain/records.js';
import { lockKeysOfIds, readRecords, upsertRecords } from './message-writes.js';
import type { TransactionResult } from './pool.js';
import { recordKey } from './rows.js';

/**
 * One receipt batch, inside a transaction: locks every record of the batch's message ids, replays the
 * receipts in order in memory under the precedence of domain/ingest.ts, and writes the changed recipients in
 * one statement. Receipts never create rows, so a lock on the existing keys is all the concurrency it needs.
 */
export async function ingestReceiptsOnce(
  client: pg.PoolClient,
  accountId: string,
  items: readonly ReceiptInput[],
  dryRun = false,
): Promise<TransactionResult<BatchOutcome<ReceiptOutcome>>> {
  const ids = [...new Set(items.map((i) => i.messageId))];
  const keyRows = await lockKeysOfIds(client, accountId, ids);
  const records = await readRecords(client, accountId, keyRows);

  // Outbound SMS recipients per message id, in first-ingested order (as /dlr lists them).
  const recipients = new Map<string, StoredMessage[]>();
  for (const key of [...keyRows].sort((a, b) => a.seq - b.seq)) {
    const record = records.get(recordKey(key.id, key.channel_user_id));
    if (!record?.sms) continue;
    const list = recipients.get(key.id) ?? [];
    list.push(record);
    recipients.set(key.id, list);
  }

  const outcome: ReceiptOutcome = { applied: 0, ignored: 0, unknown: [] };
  const errors: ItemError[] = [];
  const changed = new Map<string, StoredMessage>();
  items.forEach((item, index) => {
    const list = recipients.get(item.messageId) ?? [];
    const target = receiptTarget(list, item);
    if (typeof target === 'string') {
      errors.push({ index, detail: target });
      return;
    }
    if (!target?.sms) {
      outcome.unknown.push({ messageId: item.messageId, to: item.to ?? null });
      return;
    }
    const sms = applyReceipt(target.sms, item);
    if (sms === null) {
      outcome.ignored++;
      return;
    }
    const updated = { ...target, sms };
    // Later receipts of the batch must see this one.
    list[list.indexOf(target)] = updated;
    changed.set(recordKey(updated.id, updated.channelUserId), updated);
    outcome.applied++;
  });

  if (errors.length > 0) return { commit: false, value: { ok: false, errors } };
  if (dryRun) return { commit: false, value: { ok: true, value: outcome } };
  await upsertRecords(client, accountId, [...changed.values()]);
  return { commit: true, value: { ok: true, value: outcome } };
}

import type pg from 'pg';
import {
  type CarrierHolder,
  type CarrierReceiptResult,
  planCarrierReceipts,
  type RouteAccounts,
} from '../../domain/ingest/plan-carrier-receipts.js';
import { planReceipts, type ReceiptBatchState, type ReceiptPlan } from '../../domain/ingest/plan-receipts.js';
import type {
  BatchOutcome,
  CarrierReceiptInput,
  ReceiptInput,
  ReceiptOutcome,
} from '../../domain/ingest/precedence.js';
import type { StoredMessage } from '../../domain/records.js';
import { storedRecipients } from '../rows.js';
import { type IngestStore, UnknownAccountError } from '../store.js';
import { lockAccount, writeEvents } from './events.js';
import { lockCarrierParking, lockMessageTurn, lockParking } from './park-locks.js';
import { park, parkCarrier } from './parked.js';
import { inTransaction, RETRY, type TransactionResult } from './pool.js';
import {
  countReceiptKeys,
  holdersOnRoute,
  type KeyRow,
  lockReceiptKeys,
  type ReceiptKey,
  type RowLocation,
  readRecords,
  updateSmsState,
} from './records.js';
import { writeRollupOf } from './rollup.js';
import { recordKey } from './rows.js';

/** Receipt ingest on PostgreSQL. */
export function receiptIngest(pool: pg.Pool): IngestStore['ingestReceipts'] {
  return async (accountId, items, now, options) => {
    const dryRun = options?.dryRun === true;
    return inTransaction(pool, (client, attempt) =>
      ingestReceiptsOnce(client, accountId, items, now, dryRun, attempt > 1),
    );
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
  dryRun: boolean,
  retry: boolean,
): Promise<TransactionResult<BatchOutcome<ReceiptOutcome>> | typeof RETRY> {
  // A retry runs while no message batch of the account does: none can add a record under its parking.
  if (retry) await lockMessageTurn(client, accountId, true);
  const { callbacks } = await lockAccount(client, accountId);
  const keys = receiptKeys(items);
  const keyRows = await lockReceiptKeys(client, accountId, keys);
  const locations = new Map<string, RowLocation>();
  const state: ReceiptBatchState = {
    recipients: await loadRecipients(client, accountId, keyRows, locations),
    callbacks,
  };
  const planned = planReceipts(state, items, now);
  if (!planned.ok) return { commit: false, value: { ok: false, errors: planned.errors } };
  const { plan } = planned;
  if (dryRun) return { commit: false, value: { ok: true, value: plan.outcome } };
  if (!(await mayPark(client, accountId, plan, keys, keyRows))) return RETRY;
  await updateSmsState(client, plan.updates, locations);
  await park(client, accountId, plan.park, now);
  await writeRollupOf(client, accountId, storedRecipients(state.recipients), plan.updates);
  await writeEvents(client, accountId, plan.events, plan.supersede);
  return { commit: true, value: { ok: true, value: plan.outcome } };
}

/**
 * The records a receipt batch may touch: the recipient each receipt names, or every recipient of its message id
 * when one of its receipts names none.
 */
function receiptKeys(items: readonly ReceiptInput[]): ReceiptKey[] {
  const named = new Map<string, Set<string> | null>();
  for (const { messageId, to } of items) {
    const tos = named.get(messageId);
    if (to === undefined || tos === null) named.set(messageId, null);
    else named.set(messageId, (tos ?? new Set()).add(to));
  }
  const keys: ReceiptKey[] = [];
  for (const [id, tos] of named) {
    if (tos === null) keys.push({ id, to: null });
    else for (const to of tos) keys.push({ id, to });
  }
  return keys;
}

/**
 * Outbound SMS recipients per message id, in first-ingested order (as /dlr lists them): those of `keyRows`,
 * which for a receipt naming its recipient is that one alone.
 */
async function loadRecipients(
  client: pg.PoolClient,
  accountId: string,
  keyRows: readonly KeyRow[],
  locations: Map<string, RowLocation>,
): Promise<Map<string, StoredMessage[]>> {
  const records = await readRecords(client, accountId, keyRows, locations);
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
 * Takes the parking locks of the ids the plan parks, then checks that none of the records their receipts name
 * arrived since the batch looked: one that did was committed by a message batch this one could not see, and
 * parking beside it would strand the receipt. Then the batch must start over (and will apply the receipt
 * instead).
 */
async function mayPark(
  client: pg.PoolClient,
  accountId: string,
  plan: ReceiptPlan,
  keys: readonly ReceiptKey[],
  keyRows: readonly KeyRow[],
): Promise<boolean> {
  if (plan.park.length === 0) return true;
  const ids = new Set(plan.park.map((r) => r.messageId));
  await lockParking(client, accountId, ids, 'exclusive');
  const seen = keyRows.filter((k) => ids.has(k.id)).length;
  const parking = keys.filter((k) => ids.has(k.id));
  return (await countReceiptKeys(client, accountId, parking)) <= seen;
}

/** Carrier receipt ingest on PostgreSQL (CONTRACT §12 "Correlation"). */
export function carrierReceiptIngest(pool: pg.Pool): IngestStore['ingestCarrierReceipts'] {
  return async (route, items, now, options) =>
    inTransaction(pool, (client) =>
      ingestCarrierReceiptsOnce(client, route, items, now, options?.accounts ?? null),
    );
}

/**
 * One attempt at a batch of a route's receipts: finds who holds the carrier ids, locks those records as receipt
 * ingest does (account, then key rows), then the holders against release, checking they did not change
 * meanwhile; lets domain/ingest/plan-carrier-receipts.ts decide, and writes each account's part and the parked
 * receipts. Locks are taken in the order message ingest takes them (records, then pairs), so the two never wait
 * on each other in a cycle. Parking is ordered against a claim of the pair by the route's parking locks.
 */
async function ingestCarrierReceiptsOnce(
  client: pg.PoolClient,
  route: string,
  items: readonly CarrierReceiptInput[],
  now: Date,
  accounts: RouteAccounts,
): Promise<TransactionResult<CarrierReceiptResult[]> | typeof RETRY> {
  const ids = [...new Set(items.map((i) => i.carrierId))];
  const seen = await holdersOnRoute(client, route, ids, false);
  // Each holder's recipient, by account: every receipt here names its recipient.
  const keysOf = new Map<string, Map<string, ReceiptKey>>();
  for (const row of seen) {
    const keys = keysOf.get(row.account_id) ?? new Map<string, ReceiptKey>();
    keys.set(recordKey(row.message_id, row.channel_user_id), { id: row.message_id, to: row.channel_user_id });
    keysOf.set(row.account_id, keys);
  }
  const loaded = new Map<string, ReceiptBatchState>();
  const locationsOf = new Map<string, Map<string, RowLocation>>();
  for (const accountId of [...keysOf.keys()].sort()) {
    let callbacks: boolean;
    try {
      ({ callbacks } = await lockAccount(client, accountId));
    } catch (error) {
      // Deleted after we looked (its pairs went with it): look again.
      if (error instanceof UnknownAccountError) return RETRY;
      throw error;
    }
    const keyRows = await lockReceiptKeys(client, accountId, [...(keysOf.get(accountId)?.values() ?? [])]);
    const locations = new Map<string, RowLocation>();
    locationsOf.set(accountId, locations);
    loaded.set(accountId, {
      recipients: await loadRecipients(client, accountId, keyRows, locations),
      callbacks,
    });
  }
  const locked = await holdersOnRoute(client, route, ids, true);
  const holders = new Map<string, CarrierHolder>();
  for (const row of locked) {
    holders.set(row.carrier_id, {
      accountId: row.account_id,
      messageId: row.message_id,
      to: row.channel_user_id,
    });
  }
  const unchanged =
    locked.length === seen.length &&
    seen.every((row) => {
      const now = holders.get(row.carrier_id);
      return (
        now?.accountId === row.account_id &&
        now.messageId === row.message_id &&
        now.to === row.channel_user_id
      );
    });
  if (!unchanged) return RETRY;
  const plan = planCarrierReceipts({ holders, accounts: loaded }, route, items, accounts, now);
  if (plan.park.length > 0) {
    const parking = [...new Set(plan.park.map((r) => r.carrierId))];
    await lockCarrierParking(client, route, parking, 'exclusive');
    // A message batch that claimed one of these meanwhile has committed by now: apply to it instead.
    if ((await holdersOnRoute(client, route, parking, false)).length > 0) return RETRY;
  }
  for (const [accountId, accountPlan] of plan.accounts) {
    await updateSmsState(client, accountPlan.updates, locationsOf.get(accountId) ?? new Map());
    await park(client, accountId, accountPlan.park, now);
    const stored = loaded.get(accountId)?.recipients ?? new Map<string, StoredMessage[]>();
    await writeRollupOf(client, accountId, storedRecipients(stored), accountPlan.updates);
    await writeEvents(client, accountId, accountPlan.events, accountPlan.supersede);
  }
  await parkCarrier(client, route, plan.park, accounts, now);
  return { commit: true, value: plan.results };
}

import type pg from 'pg';
import {
  type MessageBatchState,
  type MessagePlan,
  messageBatchKeys,
  planMessages,
  recordKey,
} from '../../domain/ingest/plan-messages.js';
import type { BatchOutcome, MessageUpsert } from '../../domain/ingest/precedence.js';
import { conversationIds, heldIdentities, identityOwners } from '../rows.js';
import type { IngestOptions, IngestStore, MessageBatchResult } from '../store.js';
import { callDeadline } from './deadline.js';
import { lockAccount, writeEvents } from './events.js';
import { InFlight, type InFlightBatch } from './in-flight.js';
import { lockCarrierParking, lockMessageTurn, lockParking } from './park-locks.js';
import { lockParked, lockParkedOfPairs, unpark } from './parked.js';
import { ensurePartitions } from './partitions.js';
import { insertedAll, inTransaction, RETRY, type TransactionResult } from './pool.js';
import { ACCOUNT } from './probes.js';
import { insertKeys, lockCarriers, lockKeys, readRecords, writeCarriers, writeRecords } from './records.js';
import { writeRollupOf } from './rollup.js';

/** Message ingest on PostgreSQL. */
export function messageIngest(pool: pg.Pool, schema: string): IngestStore['ingestMessages'] {
  const inFlight = new InFlight();
  return async (accountId, items, now, options) => {
    // The batch's months are checked against the catalog once per batch (another process may have dropped
    // one), and partition DDL runs before, in transactions of its own: it must not hold the batch's row locks
    // while it waits for the parent table, and a created partition stays useful even if the batch is refused.
    await ensurePartitions(
      pool,
      schema,
      items.map((i) => i.createdAt ?? now),
      now,
    );
    // Each attempt is known to inFlight until its commit or rollback has returned (then batches that used
    // what it created go on, or start over).
    let batch: InFlightBatch | undefined;
    let committed = false;
    try {
      const outcome = await inTransaction(pool, async (client, attempt) => {
        batch?.settle(false);
        batch = inFlight.begin(accountId);
        const run = { inFlight, batch, retry: attempt > 1 };
        const result = await ingestMessagesOnce(client, accountId, items, now, options ?? {}, run);
        if (result === RETRY) batch.settle(false);
        return result;
      });
      committed = outcome.ok && options?.dryRun !== true;
      return outcome;
    } finally {
      batch?.settle(committed);
    }
  };
}

/** How one attempt takes part in {@link InFlight}, and whether it is a retry. */
interface Attempt {
  inFlight: InFlight;
  batch: InFlightBatch;
  retry: boolean;
}

/**
 * The longest a batch waits for the batches whose contacts it used (InFlight), in milliseconds; then it starts
 * over. Such a wait is for one batch ahead to finish, well under this. It bounds a wait that could not end: the
 * batch waited for could be queued on a row lock the waiting batch holds, through a third transaction, and
 * PostgreSQL's deadlock detector cannot see a wait that is not on a lock of its own.
 */
const DEPENDENCY_WAIT_MS = 2000;

/** Whether every batch of `dependencies` committed, waiting at most DEPENDENCY_WAIT_MS and to the deadline. */
async function committedInTime(dependencies: readonly InFlightBatch[]): Promise<boolean> {
  if (dependencies.length === 0) return true;
  const deadline = callDeadline.getStore();
  const wait = Math.min(
    DEPENDENCY_WAIT_MS,
    deadline === undefined ? DEPENDENCY_WAIT_MS : deadline - Date.now(),
  );
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, wait));
  });
  try {
    const outcome = await Promise.race([Promise.all(dependencies.map((d) => d.settled)), late]);
    return outcome !== false && outcome.every(Boolean);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * One attempt at a message batch, inside a transaction: loads what the planner needs in a few set-wise
 * statements, lets domain/ingest/plan-messages.ts decide, and writes its plan set-wise.
 *
 * Concurrency: existing records are locked (their key rows) before they are read, and so are the parked
 * receipts the batch may consume. Everything the batch creates (identities, conversations, record keys) is
 * inserted plainly; if any of it turns out to exist (a unique violation), a concurrent batch made it after our
 * reads, and the attempt returns RETRY to start over and merge into what that batch committed. So nothing is
 * duplicated and no write is lost. A retry runs alone in its account (park-locks.ts {@link lockMessageTurn}),
 * so it cannot lose again: under a steady stream of overlapping batches a batch otherwise lost race after race.
 * Batches of this instance mostly do not meet so: they share what they are creating (in-flight.ts).
 */
async function ingestMessagesOnce(
  client: pg.PoolClient,
  accountId: string,
  items: readonly MessageUpsert[],
  now: Date,
  options: IngestOptions,
  { inFlight, batch, retry }: Attempt,
): Promise<TransactionResult<BatchOutcome<MessageBatchResult>> | typeof RETRY> {
  await lockMessageTurn(client, accountId, retry);
  const loaded = await loadMessageBatch(client, accountId, items, options.parkedSince);
  // No await from here to register: what the batch takes from others and what it offers them stay consistent.
  const dryRun = options.dryRun === true;
  const { state, dependencies } = dryRun
    ? { state: loaded, dependencies: [] }
    : inFlight.adopt(batch, loaded, items);
  const planned = planMessages(state, items, now);
  if (!planned.ok) return { commit: false, value: { ok: false, errors: planned.errors } };
  const { plan } = planned;
  const value = { ok: true as const, value: { accepted: items.length, events: plan.events.length } };
  if (dryRun) return { commit: false, value };
  inFlight.register(batch, accountId, plan);
  if (!(await writeMessagePlan(client, state, plan, () => committedInTime(dependencies)))) return RETRY;
  return { commit: true, value };
}

async function loadMessageBatch(
  client: pg.PoolClient,
  accountId: string,
  items: readonly MessageUpsert[],
  parkedSince: Date | undefined,
): Promise<MessageBatchState> {
  const keys = messageBatchKeys(items);
  const { callbacks } = await lockAccount(client, accountId);
  const { owners, held } = await loadIdentities(client, accountId, keys.identities, keys.namedContacts);
  const conversations = await loadConversations(client, accountId, [
    ...new Set([...keys.namedContacts, ...owners.values()]),
  ]);
  const keyRows = await lockKeys(client, accountId, keys.records);
  const records = await readRecords(client, accountId, keyRows);
  const existing = new Set(keyRows.map((k) => recordKey(k.id, k.channel_user_id)));
  const creating = keys.records.filter((k) => !existing.has(recordKey(k.id, k.channelUserId)));
  // Before the parked receipts are read, so a receipt parked meanwhile for a record this batch creates either
  // committed first (and is read here) or waits and then finds the record (park-locks.ts).
  await lockParking(
    client,
    accountId,
    creating.map((k) => k.id),
    'shared',
  );
  const parked = await lockParked(client, accountId, keys.messageIds, parkedSince);
  const carriers = await lockCarriers(client, accountId, keys.carrierPairs, keys.carrierRecords);
  // As for message ids above: a carrier receipt parked meanwhile either is read here or finds our claim.
  const routes = new Map<string, string[]>();
  for (const p of keys.carrierPairs) routes.set(p.route, [...(routes.get(p.route) ?? []), p.carrierId]);
  for (const [route, ids] of [...routes].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    await lockCarrierParking(client, route, ids, 'shared');
  }
  const parkedCarrier = await lockParkedOfPairs(client, keys.carrierPairs, parkedSince);
  return { accountId, owners, held, conversations, records, parked, carriers, parkedCarrier, callbacks };
}

/** The owners of the batch's identities, and the identities the named contacts hold. */
async function loadIdentities(
  client: pg.PoolClient,
  accountId: string,
  identities: readonly { channel: string; channelUserId: string }[],
  namedContacts: readonly string[],
) {
  const result = await client.query<{
    named: boolean;
    channel: string;
    channel_user_id: string;
    contact_id: string;
  }>({
    name: 'wb_batch_identities',
    // One probe per identity and per contact (probes.ts).
    text: `SELECT false AS named, i.channel, i.channel_user_id, i.contact_id
           FROM unnest($2::text[], $3::text[]) AS u (channel, channel_user_id)
           CROSS JOIN LATERAL (
             SELECT * FROM identities i
             WHERE i.account_id = ${ACCOUNT} AND i.channel = u.channel AND i.channel_user_id = u.channel_user_id
             OFFSET 0
           ) i
           UNION ALL
           SELECT true AS named, i.channel, i.channel_user_id, i.contact_id
           FROM (SELECT DISTINCT contact_id FROM unnest($4::uuid[]) AS t (contact_id)) u
           CROSS JOIN LATERAL (
             SELECT * FROM identities i WHERE i.account_id = ${ACCOUNT} AND i.contact_id = u.contact_id OFFSET 0
           ) i`,
    values: [
      accountId,
      identities.map((i) => i.channel),
      identities.map((i) => i.channelUserId),
      namedContacts,
    ],
  });
  return {
    owners: identityOwners(result.rows.filter((row) => !row.named)),
    held: heldIdentities(result.rows.filter((row) => row.named)),
  };
}

async function loadConversations(
  client: pg.PoolClient,
  accountId: string,
  contactIds: readonly string[],
): Promise<Map<string, string>> {
  if (contactIds.length === 0) return new Map();
  const result = await client.query<{ contact_id: string; channel: string; id: string }>({
    name: 'wb_conversations_of_contacts',
    // One probe per contact (probes.ts).
    text: `SELECT c.contact_id, c.channel, c.id
           FROM (SELECT DISTINCT contact_id FROM unnest($2::uuid[]) AS t (contact_id)) u
           CROSS JOIN LATERAL (
             SELECT * FROM conversations c WHERE c.account_id = ${ACCOUNT} AND c.contact_id = u.contact_id OFFSET 0
           ) c`,
    values: [accountId, contactIds],
  });
  return conversationIds(result.rows);
}

/**
 * Writes a plan, set-wise. Returns false when something the plan creates already exists (a concurrent batch
 * made it): the caller must start over.
 */
async function writeMessagePlan(
  client: pg.PoolClient,
  state: MessageBatchState,
  plan: MessagePlan,
  dependenciesCommitted: () => Promise<boolean>,
): Promise<boolean> {
  const { accountId } = state;
  // Contacts first, the parents of identities and conversations (which have no foreign key: migration 10). Each
  // insert of what only this batch may create is plain, and a row that exists after all means a concurrent
  // batch created it after this one looked: start over (insertedAll).
  const { minted, named } = plan.contacts;
  if (minted.length > 0) {
    await client.query({
      name: 'wb_insert_contacts',
      text: 'INSERT INTO contacts (account_id, id) SELECT $1, unnest($2::uuid[])',
      values: [accountId, minted],
    });
  }
  if (named.length > 0) {
    // A contact an item names may exist already: it stays as it is.
    await client.query({
      name: 'wb_insert_named_contacts',
      text: 'INSERT INTO contacts (account_id, id) SELECT $1, unnest($2::uuid[]) ON CONFLICT DO NOTHING',
      values: [accountId, named],
    });
  }
  if (plan.identities.length > 0) {
    const inserted = client.query({
      name: 'wb_insert_identities',
      text: `INSERT INTO identities (account_id, channel, channel_user_id, contact_id)
             SELECT $1, * FROM unnest($2::text[], $3::text[], $4::uuid[])`,
      values: [
        accountId,
        plan.identities.map((i) => i.channel),
        plan.identities.map((i) => i.channelUserId),
        plan.identities.map((i) => i.contactId),
      ],
    });
    if (!(await insertedAll(inserted))) return false;
  }
  if (plan.conversations.length > 0) {
    const inserted = client.query({
      name: 'wb_insert_conversations',
      text: `INSERT INTO conversations (account_id, contact_id, channel, id)
             SELECT $1, * FROM unnest($2::uuid[], $3::text[], $4::uuid[])`,
      values: [
        accountId,
        plan.conversations.map((c) => c.contactId),
        plan.conversations.map((c) => c.channel),
        plan.conversations.map((c) => c.id),
      ],
    });
    if (!(await insertedAll(inserted))) return false;
  }
  const fresh = plan.records.filter((r) => r.isNew).map((r) => r.record);
  if (!(await insertKeys(client, accountId, fresh))) return false;
  await writeRecords(client, accountId, plan.records);
  if (!(await writeCarriers(client, plan.carriers))) return false;
  await unpark(client, accountId, plan.unparked);
  // The contacts and conversations taken from batches in flight must be committed before this batch's rollup
  // and events (whose rows another batch may be waiting to write) and its commit; if one of those batches
  // failed, this one starts over.
  if (!(await dependenciesCommitted())) return false;
  await writeRollupOf(
    client,
    accountId,
    (r) => state.records.get(recordKey(r.id, r.channelUserId)),
    plan.records.map((r) => r.record),
  );
  await writeEvents(client, accountId, plan.events, plan.supersede);
  return true;
}

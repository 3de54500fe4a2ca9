import type pg from 'pg';
import type { CarrierClaim, MessagePlan } from '../../domain/ingest/plan-messages.js';
import type { StoredMessage } from '../../domain/records.js';
import { type CarrierRow, carrierClaim, type MessageRow } from '../rows.js';
import { insertedAll } from './pool.js';
import { ACCOUNT, joinRecord } from './probes.js';
import { type Columns, fromRow, MESSAGE_COLUMNS, recordKey } from './rows.js';

/**
 * The batch statements shared by message and receipt ingest. Each takes whole arrays (`unnest`), so a batch
 * of a thousand records is a handful of round trips rather than thousands, and each statement's text is
 * fixed, so it is a named prepared statement.
 */

/** A record's identity row: where its one row lives (created_at never changes) and its ingest order. */
export interface KeyRow {
  id: string;
  channel_user_id: string;
  created_at: Date;
  seq: number;
}

/**
 * Locks the identity rows of these records (those that exist) until the transaction ends, in key order so
 * that concurrent batches queue rather than deadlock. Everything read about a record afterwards is current:
 * whoever held the lock before us has committed.
 */
export async function lockKeys(
  client: pg.PoolClient,
  accountId: string,
  keys: readonly { id: string; channelUserId: string }[],
): Promise<KeyRow[]> {
  const result = await client.query<KeyRow>({
    name: 'wb_lock_keys',
    // One probe per key (probes.ts), taken in key order: the keys sorted as the index sorts them.
    text: `SELECT k.id, k.channel_user_id, k.created_at, k.seq
           FROM (
             SELECT DISTINCT id COLLATE "C" AS id, channel_user_id COLLATE "C" AS channel_user_id
             FROM unnest($2::text[], $3::text[]) AS t (id, channel_user_id)
             ORDER BY 1, 2
           ) u
           CROSS JOIN LATERAL (
             SELECT * FROM message_keys k
             WHERE k.account_id = ${ACCOUNT} AND k.id = u.id AND k.channel_user_id = u.channel_user_id
             FOR UPDATE
           ) k`,
    values: [accountId, keys.map((k) => k.id), keys.map((k) => k.channelUserId)],
  });
  return result.rows;
}

/**
 * The records a receipt batch names: one recipient of a message id (`to` given), or all of them (`to` null, for a
 * receipt without `to`, which needs to know how many there are). Each id at most once with `to` null.
 */
export interface ReceiptKey {
  id: string;
  to: string | null;
}

/**
 * The key rows of `keys`, one fenced probe each (probes.ts), in key order: the keys sorted as the index sorts
 * them, and an id's recipients in index order. A receipt with `to` locks its recipient only, so batches with
 * receipts for other recipients of one message id (a message to many numbers) do not queue behind each other.
 */
const receiptKeysStatement = (lock: boolean): string =>
  `SELECT k.id, k.channel_user_id, k.created_at, k.seq
   FROM (
     SELECT id COLLATE "C" AS id, channel_user_id COLLATE "C" AS channel_user_id
     FROM unnest($2::text[], $3::text[]) AS t (id, channel_user_id)
     ORDER BY 1, 2
   ) u
   CROSS JOIN LATERAL (
     SELECT * FROM (
       SELECT * FROM message_keys k
       WHERE u.channel_user_id IS NULL AND k.account_id = ${ACCOUNT} AND k.id = u.id
       ORDER BY k.channel_user_id
       ${lock ? 'FOR UPDATE' : 'OFFSET 0'}
     ) every_recipient
     UNION ALL
     SELECT * FROM (
       SELECT * FROM message_keys k
       WHERE k.account_id = ${ACCOUNT} AND k.id = u.id AND k.channel_user_id = u.channel_user_id
       ${lock ? 'FOR UPDATE' : 'OFFSET 0'}
     ) one_recipient
   ) k`;

/** Locks the key rows of a receipt batch's records ({@link ReceiptKey}), in key order as lockKeys takes them. */
export async function lockReceiptKeys(
  client: pg.PoolClient,
  accountId: string,
  keys: readonly ReceiptKey[],
): Promise<KeyRow[]> {
  const result = await client.query<KeyRow>({
    name: 'wb_lock_receipt_keys',
    text: receiptKeysStatement(true),
    values: [accountId, keys.map((k) => k.id), keys.map((k) => k.to)],
  });
  return result.rows;
}

/** How many key rows these {@link ReceiptKey}s name now: a fresh snapshot, to compare with those locked. */
export async function countReceiptKeys(
  client: pg.PoolClient,
  accountId: string,
  keys: readonly ReceiptKey[],
): Promise<number> {
  const result = await client.query<{ n: number }>({
    name: 'wb_count_receipt_keys',
    text: `SELECT count(*)::int AS n FROM (${receiptKeysStatement(false)}) named`,
    values: [accountId, keys.map((k) => k.id), keys.map((k) => k.to)],
  });
  return result.rows[0]?.n ?? 0;
}

/**
 * Where a record's row is: its partition (as `regclass` text, quoted and qualified as needed) and tuple id.
 * Stable while the batch holds the record's key lock, which every writer takes first; PostgreSQL moves a
 * tuple only when it is updated (or by VACUUM FULL and CLUSTER, which lock the table).
 */
export interface RowLocation {
  table: string;
  tid: string;
}

/**
 * Reads the records of these (locked) keys; with `locations`, also where each row is, by recordKey. A separate
 * statement from the lock on purpose: it takes a fresh snapshot after the lock was granted. One probe per
 * record (probes.ts joinRecord): a set-wise join read every record of the account's month per batch, 72 ms
 * for 1,000 records of a 100,000-record account against 4 ms.
 */
export async function readRecords(
  client: pg.PoolClient,
  accountId: string,
  keys: readonly KeyRow[],
  locations?: Map<string, RowLocation>,
): Promise<Map<string, StoredMessage>> {
  const records = new Map<string, StoredMessage>();
  if (keys.length === 0) return records;
  const result = await client.query<MessageRow<Columns> & { row_table: string; row_tid: string }>({
    name: 'wb_read_records',
    text: `SELECT ${MESSAGE_COLUMNS}, m.row_table, m.row_tid
           FROM unnest($2::text[], $3::text[], $4::timestamptz[]) AS u (id, channel_user_id, created_at)
           ${joinRecord('u', ACCOUNT, true)}`,
    values: [
      accountId,
      keys.map((k) => k.id),
      keys.map((k) => k.channel_user_id),
      keys.map((k) => k.created_at.toISOString()),
    ],
  });
  for (const row of result.rows) {
    const key = recordKey(row.id, row.channel_user_id);
    records.set(key, fromRow.message(row));
    locations?.set(key, { table: row.row_table, tid: row.row_tid });
  }
  return records;
}

/**
 * Inserts identity rows for new records, numbering them in the given (first-ingested) order. Returns false
 * when any of them already existed: a concurrent batch created it after we looked, and the caller must start
 * over to merge into what that batch wrote (the transaction is aborted: {@link insertedAll}).
 */
export async function insertKeys(
  client: pg.PoolClient,
  accountId: string,
  records: readonly StoredMessage[],
): Promise<boolean> {
  if (records.length === 0) return true;
  const inserted = client.query({
    name: 'wb_insert_keys',
    // The ordered subquery makes nextval() run in batch order, so the sequence follows the items.
    text: `INSERT INTO message_keys (account_id, id, channel_user_id, created_at, seq)
           SELECT $1, u.id, u.channel_user_id, u.created_at, nextval('message_seq')
           FROM (
             SELECT * FROM unnest($2::text[], $3::text[], $4::timestamptz[])
               WITH ORDINALITY AS t (id, channel_user_id, created_at, ord)
             ORDER BY ord
           ) u`,
    values: [
      accountId,
      records.map((r) => r.id),
      records.map((r) => r.channelUserId),
      records.map((r) => r.createdAt.toISOString()),
    ],
  });
  return insertedAll(inserted);
}

/** The columns a whole record is written with, and the `unnest` of their arrays ($2…$19). */
const RECORD_COLUMNS = `account_id, id, channel_user_id, created_at, channel, direction, contact_id, conversation_id,
  campaign_id, text, content, status, sms_status, network, price, counts, dr_statuscode, dr_errcode, dr_time`;
const RECORD_ROWS = `SELECT $1::uuid, * FROM unnest($2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::text[],
  $7::uuid[], $8::uuid[], $9::text[], $10::text[], $11::json[], $12::text[], $13::text[], $14::text[],
  $15::numeric[], $16::integer[], $17::text[], $18::text[], $19::timestamptz[])`;

const recordValues = (accountId: string, records: readonly StoredMessage[]) => [
  accountId,
  ...keyColumns(records),
  records.map((r) => r.channel),
  records.map((r) => r.direction),
  records.map((r) => r.contactId),
  records.map((r) => r.conversationId),
  records.map((r) => r.campaignId),
  records.map((r) => r.text),
  records.map((r) => (r.content === null ? null : JSON.stringify(r.content))),
  records.map((r) => r.status),
  ...smsColumns(records),
];

/**
 * Writes whole records, each key at most once. New ones (whose key row this batch just inserted, so no other
 * batch can be writing them) are a plain insert: an insert with ON CONFLICT probes the primary key before it
 * inserts, and sets a speculative token it then clears, which cost a third more on 1,000 new records (docs/
 * benchmarks.md, "Twelfth pass"). Existing ones are overwritten, found by their full primary key (created_at
 * included, which is the same row since created_at never changes).
 */
export async function writeRecords(
  client: pg.PoolClient,
  accountId: string,
  records: readonly { record: StoredMessage; isNew: boolean }[],
): Promise<void> {
  const fresh = records.filter((r) => r.isNew).map((r) => r.record);
  const stored = records.filter((r) => !r.isNew).map((r) => r.record);
  if (fresh.length > 0) {
    await client.query({
      name: 'wb_insert_records',
      text: `INSERT INTO messages (${RECORD_COLUMNS}) ${RECORD_ROWS}`,
      values: recordValues(accountId, fresh),
    });
  }
  if (stored.length > 0) {
    await client.query({
      name: 'wb_upsert_records',
      text: `INSERT INTO messages (${RECORD_COLUMNS}) ${RECORD_ROWS}
             ON CONFLICT (account_id, id, channel_user_id, created_at) DO UPDATE SET
               channel = EXCLUDED.channel, direction = EXCLUDED.direction, contact_id = EXCLUDED.contact_id,
               conversation_id = EXCLUDED.conversation_id, campaign_id = EXCLUDED.campaign_id,
               text = EXCLUDED.text, content = EXCLUDED.content, status = EXCLUDED.status,
               sms_status = EXCLUDED.sms_status, network = EXCLUDED.network, price = EXCLUDED.price,
               counts = EXCLUDED.counts, dr_statuscode = EXCLUDED.dr_statuscode,
               dr_errcode = EXCLUDED.dr_errcode, dr_time = EXCLUDED.dr_time`,
      values: recordValues(accountId, stored),
    });
  }
}

/**
 * Writes the SMS and receipt columns of existing records, and nothing else: a receipt never rewrites the text
 * or content it did not read for its own sake (and they can be large).
 *
 * Each row is updated where readRecords found it (`locations`, by recordKey), one statement per partition:
 * no index is read again. Through the partitioned table, a join on (tableoid, ctid) visits that tuple id in
 * every partition (run-time pruning does not apply to tableoid), so its cost grew with the months kept: 35 ms
 * per 1,000 receipts with five partitions, against 11 this way. Should a row be missing anyway, the batch
 * fails rather than acknowledge a receipt it did not write.
 */
export async function updateSmsState(
  client: pg.PoolClient,
  records: readonly StoredMessage[],
  locations: ReadonlyMap<string, RowLocation>,
): Promise<void> {
  const byTable = new Map<string, { tids: string[]; records: StoredMessage[] }>();
  for (const record of records) {
    const at = locations.get(recordKey(record.id, record.channelUserId));
    if (at === undefined)
      throw new Error(`record ${record.id} to ${record.channelUserId} was not read first`);
    const group = byTable.get(at.table) ?? { tids: [], records: [] };
    group.tids.push(at.tid);
    group.records.push(record);
    byTable.set(at.table, group);
  }
  for (const [table, group] of [...byTable].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const result = await client.query({
      // The table is the catalog's own regclass text (quoted and qualified as needed), not input.
      name: `wb_update_sms_state ${table}`,
      text: `UPDATE ${table} m SET sms_status = u.sms_status, network = u.network, price = u.price,
               counts = u.counts, dr_statuscode = u.dr_statuscode, dr_errcode = u.dr_errcode, dr_time = u.dr_time
             FROM unnest($1::tid[], $2::text[], $3::text[], $4::numeric[], $5::integer[], $6::text[], $7::text[],
               $8::timestamptz[])
               AS u (row_tid, sms_status, network, price, counts, dr_statuscode, dr_errcode, dr_time)
             WHERE m.ctid = u.row_tid`,
      values: [group.tids, ...smsColumns(group.records)],
    });
    if (result.rowCount !== group.records.length) {
      throw new Error(
        `${group.records.length - (result.rowCount ?? 0)} locked records were not found to update`,
      );
    }
  }
}

/** A record's full primary key (account aside) as `unnest` arrays: id, channel_user_id, created_at. */
const keyColumns = (records: readonly StoredMessage[]) => [
  records.map((r) => r.id),
  records.map((r) => r.channelUserId),
  records.map((r) => r.createdAt.toISOString()),
];

/** The SMS and receipt columns as `unnest` arrays, in table order: sms_status … dr_time. */
const smsColumns = (records: readonly StoredMessage[]) => [
  records.map((r) => r.sms?.status ?? null),
  records.map((r) => r.sms?.network ?? null),
  records.map((r) => r.sms?.price ?? null),
  records.map((r) => r.sms?.counts ?? null),
  records.map((r) => r.sms?.receipt?.drStatuscode ?? null),
  records.map((r) => r.sms?.receipt?.drErrcode ?? null),
  records.map((r) => r.sms?.receipt?.drTime.toISOString() ?? null),
];

/**
 * Locks the stored claims of these carrier pairs (any account) and those held by these records of the account
 * (CONTRACT §12 "Correlation"), in pair order. A pair not claimed yet has no row to lock: two batches claiming it
 * at once meet at the primary key ({@link writeCarriers}).
 */
export async function lockCarriers(
  client: pg.PoolClient,
  accountId: string,
  pairs: readonly { route: string; carrierId: string }[],
  records: readonly { id: string; channelUserId: string }[],
): Promise<CarrierClaim[]> {
  if (pairs.length === 0 && records.length === 0) return [];
  const result = await client.query<CarrierRow>({
    name: 'wb_lock_carriers',
    // The pairs named, and those the records hold, as one set of primary keys: each side an index probe (an OR
    // of the two conditions would read the whole table).
    text: `SELECT c.route, c.carrier_id, c.account_id, c.message_id, c.channel_user_id
           FROM carrier_ids c
           JOIN (
             SELECT * FROM unnest($2::text[], $3::text[]) AS p (route, carrier_id)
             UNION
             SELECT h.route, h.carrier_id
             FROM unnest($4::text[], $5::text[]) AS r (message_id, channel_user_id)
             CROSS JOIN LATERAL (
               SELECT h.route, h.carrier_id FROM carrier_ids h
               WHERE h.account_id = ${ACCOUNT} AND h.message_id = r.message_id AND h.channel_user_id = r.channel_user_id
               OFFSET 0
             ) h
           ) k ON c.route = k.route AND c.carrier_id = k.carrier_id
           ORDER BY c.route, c.carrier_id
           FOR UPDATE OF c`,
    values: [
      accountId,
      pairs.map((p) => p.route),
      pairs.map((p) => p.carrierId),
      records.map((r) => r.id),
      records.map((r) => r.channelUserId),
    ],
  });
  return result.rows.map(carrierClaim);
}

/**
 * Gives up the plan's released pairs, then inserts its claims. Returns false when a pair it claims was claimed
 * meanwhile by a batch this one could not see: the caller starts over (and then reports the item error).
 */
export async function writeCarriers(
  client: pg.PoolClient,
  carriers: MessagePlan['carriers'],
): Promise<boolean> {
  if (carriers.release.length > 0) {
    await client.query({
      name: 'wb_release_carriers',
      text: `DELETE FROM carrier_ids c USING unnest($1::text[], $2::text[]) AS u (route, carrier_id)
             WHERE c.route = u.route AND c.carrier_id = u.carrier_id`,
      values: [carriers.release.map((r) => r.route), carriers.release.map((r) => r.carrierId)],
    });
  }
  if (carriers.claim.length === 0) return true;
  const { claim } = carriers;
  const inserted = await client.query({
    name: 'wb_claim_carriers',
    text: `INSERT INTO carrier_ids (route, carrier_id, account_id, message_id, channel_user_id, created_at)
           SELECT * FROM unnest($1::text[], $2::text[], $3::uuid[], $4::text[], $5::text[], $6::timestamptz[])
           ON CONFLICT DO NOTHING`,
    values: [
      claim.map((c) => c.route),
      claim.map((c) => c.carrierId),
      claim.map((c) => c.accountId),
      claim.map((c) => c.messageId),
      claim.map((c) => c.to),
      claim.map((c) => c.createdAt.toISOString()),
    ],
  });
  return inserted.rowCount === claim.length;
}

/** The holders of these carrier ids on a route, optionally locked against release until the transaction ends. */
export async function holdersOnRoute(
  client: pg.PoolClient,
  route: string,
  carrierIds: readonly string[],
  lock: boolean,
): Promise<CarrierRow[]> {
  const result = await client.query<CarrierRow>({
    name: lock ? 'wb_lock_holders_on_route' : 'wb_holders_on_route',
    text: `SELECT route, carrier_id, account_id, message_id, channel_user_id FROM carrier_ids
           WHERE route = $1 AND carrier_id = ANY($2::text[])
           ORDER BY carrier_id${lock ? ' FOR SHARE' : ''}`,
    values: [route, carrierIds],
  });
  return result.rows;
}

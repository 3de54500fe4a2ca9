import pg from 'pg';
import { quoteIdent, withClient } from './pool.js';

/**
 * Month partitions of `messages`: `messages_pYYYYMM` holds [first instant of the month, first of the next),
 * UTC. They are made on demand by ingest and dropped whole by prune.
 */

const PARTITION_NAME = /^messages_p(\d{4})(\d{2})$/;

/**
 * How full a month partition's pages are written (migration 9 sets the same on the partitions that existed). A
 * receipt rewrites its record's SMS columns, none of them indexed, so with room on the page the new version is a
 * HOT update: no new entry in the partition's indexes, and no bloat in them. Measured on the ingest bench: 15%
 * more receipts per second (18,307 → 21,050) and PostgreSQL's CPU 52.8 → 44.2 ms per 1,000, for 15% more heap.
 */
export const RECORD_FILLFACTOR = 85;

// Only months near the present get a partition of their own; a record dated far away (a typo, a backfill
// from 1999) lands in the default partition rather than adding one partition per stray month.
const MONTHS_BACK = 120;
const MONTHS_AHEAD = 12;

/** The first instant (epoch ms) of the UTC month holding `date`. */
export const monthStart = (date: Date): number => Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);

const nextMonth = (start: number): number => {
  const d = new Date(start);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
};

export function partitionName(start: number): string {
  const d = new Date(start);
  return `messages_p${d.getUTCFullYear().toString().padStart(4, '0')}${(d.getUTCMonth() + 1).toString().padStart(2, '0')}`;
}

/** The bounds of a month partition, from its name; null for any other table (the default partition). */
export function partitionBounds(name: string): { from: number; to: number } | null {
  const match = PARTITION_NAME.exec(name);
  if (!match) return null;
  const from = Date.UTC(Number(match[1]), Number(match[2]) - 1, 1);
  return { from, to: nextMonth(from) };
}

/** Serializes partition DDL of one schema across processes (creation here, dropping in prune). */
export const lockPartitions = async (client: pg.PoolClient, schema: string): Promise<void> => {
  await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`waybill:partitions:${schema}`]);
};

/**
 * The longest partition creation waits for a lock, in milliseconds. Attaching needs an exclusive lock on
 * `messages_default`, which a long reader (a report over `messages`, `pg_dump`) holds off, and every ingest
 * that touches the default partition queues behind a waiting request; so rather than wait, the batch goes
 * ahead with its records in the default partition.
 */
const CREATE_LOCK_TIMEOUT_MS = 200;
/** After a creation that did not get its locks, this process leaves that month alone for this long. */
const CREATE_RETRY_MS = 1_000;
const LOCK_NOT_AVAILABLE = '55P03';
/** `schema.partition` → when this process may try to create it again (after a lock timeout). */
const deferred = new Map<string, number>();

/**
 * Gives every month among `dates` that deserves a partition one, attached to `messages`, before the batch
 * inserts: otherwise the batch's records of that month land in the default partition.
 *
 * There is no cache of which partitions exist: another process (`waybill prune`, another instance) may drop
 * one at any time, and a process that trusted what it saw earlier would keep filling the default partition.
 * Instead one catalog lookup per batch (a named statement on `pg_inherits`, for the few months the batch
 * touches; no cost per record) tells which are missing, and only then is the partition lock taken and the
 * lookup repeated under it, so two processes never race on the DDL. A partition dropped between this check
 * and the batch's insert still sends that batch's rows of the month to the default partition; the next batch
 * of that month makes the partition again and moves them into it. The same happens when making the partition
 * would wait for a lock longer than {@link CREATE_LOCK_TIMEOUT_MS}: no batch waits on a long reader for it.
 *
 * The partition is created detached, filled with whatever the default partition holds for its month, then
 * attached: attaching is what PostgreSQL allows while the default partition may hold rows of that range
 * (CREATE TABLE … PARTITION OF would fail), and it builds the partition's indexes from the parent's.
 */
export async function ensurePartitions(
  pool: pg.Pool,
  schema: string,
  dates: readonly Date[],
  now: Date,
): Promise<void> {
  const earliest = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - MONTHS_BACK, 1);
  const latest = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + MONTHS_AHEAD, 1);
  const months = new Map<string, number>();
  for (const date of dates) {
    const start = monthStart(date);
    if (start < earliest || start > latest) continue;
    months.set(partitionName(start), start);
  }
  if (months.size === 0) return;

  // A failed statement (a timeout, a lost connection) destroys the connection rather than handing it back.
  await withClient(pool, async (client) => {
    const attached = await client.query<{ name: string }>({
      name: 'wb_attached_partitions',
      text: `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'messages'::regclass AND c.relname = ANY($1::text[])`,
      values: [[...months.keys()]],
    });
    for (const row of attached.rows) months.delete(row.name);
    for (const [name, start] of months) {
      const key = `${schema}.${name}`;
      if ((deferred.get(key) ?? 0) > Date.now()) continue;
      await client.query('BEGIN');
      try {
        await client.query(`SET LOCAL lock_timeout = ${CREATE_LOCK_TIMEOUT_MS}`);
        await lockPartitions(client, schema);
        const exists = await client.query<{ found: string | null }>('SELECT to_regclass($1) AS found', [
          `${quoteIdent(schema)}.${quoteIdent(name)}`,
        ]);
        if (exists.rows[0]?.found == null) {
          const table = quoteIdent(name);
          const from = new Date(start).toISOString();
          const to = new Date(nextMonth(start)).toISOString();
          await client.query(
            `CREATE TABLE ${table} (LIKE messages INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
             WITH (fillfactor = ${RECORD_FILLFACTOR})`,
          );
          await client.query(
            `WITH moved AS (
               DELETE FROM messages_default WHERE created_at >= '${from}' AND created_at < '${to}' RETURNING *
             ) INSERT INTO ${table} SELECT * FROM moved`,
          );
          await client.query(
            `ALTER TABLE messages ATTACH PARTITION ${table} FOR VALUES FROM ('${from}') TO ('${to}')`,
          );
        }
        await client.query('COMMIT');
        deferred.delete(key);
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        if (!(error instanceof pg.DatabaseError && error.code === LOCK_NOT_AVAILABLE)) throw error;
        // Another session holds what attaching needs: this batch's records of the month go to the default
        // partition, and the month is made (and they are moved into it) by a later batch.
        deferred.set(key, Date.now() + CREATE_RETRY_MS);
      }
    }
  });
}

/** The month partitions that currently exist, oldest first. */
export async function listPartitions(
  client: pg.PoolClient,
): Promise<{ name: string; from: number; to: number }[]> {
  const result = await client.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = 'messages'::regclass`,
  );
  return result.rows
    .flatMap((row) => {
      const bounds = partitionBounds(row.name);
      return bounds ? [{ name: row.name, ...bounds }] : [];
    })
    .sort((a, b) => a.from - b.from);
}

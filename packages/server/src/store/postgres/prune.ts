import type pg from 'pg';
import { listPartitions, lockPartitions } from './partitions.js';
import { quoteIdent, withClient } from './pool.js';
import { pruneCarriers } from './records.js';

/**
 * Retention: removes every message record created before `cutoff`, with its receipt events, deliveries and
 * their attempt logs, and returns how many records went.
 *
 * Month partitions wholly older than the cutoff are dropped (with their key rows), which costs the same for
 * a million rows as for one and leaves no dead tuples for vacuum; only the month the cutoff falls in, and the
 * default partition, are deleted from row by row. Each partition goes in its own short transaction.
 */
export async function prune(
  pool: pg.Pool,
  schema: string,
  cutoff: Date,
  known: Set<string>,
): Promise<number> {
  let removed = 0;
  await withClient(pool, async (client) => {
    await pruneEvents(client, cutoff);
    await pruneCarriers(client, cutoff);
    const partitions = await listPartitions(client);
    for (const partition of partitions) {
      if (partition.to > cutoff.getTime()) break;
      await client.query('BEGIN');
      try {
        await lockPartitions(client, schema);
        const exists = await client.query<{ found: string | null }>('SELECT to_regclass($1) AS found', [
          `${quoteIdent(schema)}.${quoteIdent(partition.name)}`,
        ]);
        if (exists.rows[0]?.found != null) {
          const table = quoteIdent(partition.name);
          // Deleting the key rows first locks them, so an ingest still merging into one of these records
          // finishes before its partition goes (and one arriving later starts the record afresh).
          await client.query(
            `DELETE FROM message_keys k USING ${table} p
             WHERE k.account_id = p.account_id AND k.id = p.id AND k.channel_user_id = p.channel_user_id
               AND k.created_at = p.created_at`,
          );
          const count = await client.query<{ n: number }>(`SELECT count(*) AS n FROM ${table}`);
          await client.query(`DROP TABLE ${table}`);
          removed += count.rows[0]?.n ?? 0;
        }
        await client.query('COMMIT');
        known.delete(partition.name);
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      }
    }

    const rest = await client.query<{ n: number }>({
      name: 'wb_prune_rows',
      text: `WITH gone AS (
               DELETE FROM messages WHERE created_at < $1
               RETURNING account_id, id, channel_user_id, created_at
             ), keys AS (
               DELETE FROM message_keys k USING gone g
               WHERE k.account_id = g.account_id AND k.id = g.id AND k.channel_user_id = g.channel_user_id
                 AND k.created_at = g.created_at
             )
             SELECT count(*) AS n FROM gone`,
      values: [cutoff.toISOString()],
    });
    removed += rest.rows[0]?.n ?? 0;
  });
  return removed;
}

/**
 * Events and deliveries go by their record's `created_at` (copied into them), in one statement so none is
 * left without the other. Walking the accounts reads each one's range of the (account_id, message_created_at)
 * indexes rather than the whole tables.
 */
async function pruneEvents(client: pg.PoolClient, cutoff: Date): Promise<void> {
  await client.query({
    name: 'wb_prune_events',
    text: `WITH deliveries_gone AS (
             DELETE FROM deliveries d USING accounts a
             WHERE d.account_id = a.id AND d.message_created_at < $1
             RETURNING d.account_id, d.seq
           ), attempts_gone AS (
             DELETE FROM delivery_attempts x USING deliveries_gone g
             WHERE x.account_id = g.account_id AND x.seq = g.seq
           )
           DELETE FROM receipt_events e USING accounts a
           WHERE e.account_id = a.id AND e.message_created_at < $1`,
    values: [cutoff.toISOString()],
  });
}

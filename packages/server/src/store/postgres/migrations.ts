import type pg from 'pg';
import { quoteIdent } from './pool.js';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/**
 * The schema, in order. A migration, once released, never changes: fix things with a new one. Statements
 * name tables unqualified; the connection's search_path is the store's schema.
 *
 * Distribution-ready: every primary key and index leads with `account_id`, so with Citus each table can be
 * distributed on it and every query stays on one shard. The one exception is the unique index on
 * `accounts.key`: authentication looks an account up by key before it knows the account, so `accounts` is a
 * small reference table there (docs/operations.md).
 *
 * Partitioning: `messages` is range-partitioned by month on `created_at`, so retention drops whole months
 * instead of deleting row by row, and the newest months stay hot in cache. A unique constraint on a
 * partitioned table must include the partition key, and `created_at` is not part of a record's identity
 * (account, id, channelUserId); the unpartitioned `message_keys` table holds that identity, guards it with
 * its primary key, and maps it to the record's `created_at` (which never changes) and ingest sequence. Hash
 * partitioning by account would keep the unique key without the extra table, but it cannot drop old data
 * wholesale, one big account still lands in one partition, and Citus already spreads accounts across nodes.
 *
 * Text that takes part in ordering or keys is `COLLATE "C"`: byte order, as SQLite's BINARY, so both engines
 * sort the total order (createdAt, id, channelUserId) identically whatever the database's locale.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'initial schema',
    sql: `
      CREATE TABLE accounts (
        id uuid NOT NULL PRIMARY KEY,
        name text NOT NULL,
        key text COLLATE "C" NOT NULL,
        secret_hash bytea NOT NULL,
        callback_secret text NOT NULL,
        ip_whitelist text[] NOT NULL,
        dlr_query_enabled boolean NOT NULL,
        balance numeric NOT NULL,
        credit_limit numeric NOT NULL,
        callback_url text,
        created_at timestamptz NOT NULL,
        CONSTRAINT accounts_key UNIQUE (key)
      );

      CREATE TABLE contacts (
        account_id uuid NOT NULL REFERENCES accounts (id),
        id uuid NOT NULL,
        PRIMARY KEY (account_id, id)
      );

      -- An identity belongs to one contact, and a contact has at most one identity per channel.
      CREATE TABLE identities (
        account_id uuid NOT NULL,
        channel text COLLATE "C" NOT NULL,
        channel_user_id text COLLATE "C" NOT NULL,
        contact_id uuid NOT NULL,
        PRIMARY KEY (account_id, channel, channel_user_id),
        UNIQUE (account_id, contact_id, channel),
        FOREIGN KEY (account_id, contact_id) REFERENCES contacts (account_id, id)
      );

      CREATE TABLE conversations (
        account_id uuid NOT NULL,
        contact_id uuid NOT NULL,
        channel text COLLATE "C" NOT NULL,
        id uuid NOT NULL,
        PRIMARY KEY (account_id, contact_id, channel),
        UNIQUE (account_id, id),
        FOREIGN KEY (account_id, contact_id) REFERENCES contacts (account_id, id)
      );

      -- The identity of every message record, unpartitioned so its primary key can be unique on exactly
      -- (account, id, channelUserId). Ingest locks these rows (FOR UPDATE) before reading and merging a
      -- record, and inserts new ones with ON CONFLICT DO NOTHING: two writers of one record serialize here.
      -- seq is the ingest order, which /dlr lists recipients in.
      CREATE TABLE message_keys (
        account_id uuid NOT NULL,
        id text COLLATE "C" NOT NULL,
        channel_user_id text COLLATE "C" NOT NULL,
        created_at timestamptz NOT NULL,
        seq bigint NOT NULL,
        PRIMARY KEY (account_id, id, channel_user_id)
      );
      CREATE SEQUENCE message_seq AS bigint;

      -- One table for every message record. For an outbound SMS the record is one recipient, and its send
      -- status and receipt live in the same row (sms_* and dr_* columns, NULL on every other record).
      -- sms_status IS NOT NULL exactly for outbound SMS records. No foreign key to conversations: ingest
      -- resolves the conversation in the same transaction, and a per-row trigger would tax the hot insert.
      CREATE TABLE messages (
        account_id uuid NOT NULL,
        id text COLLATE "C" NOT NULL,
        channel_user_id text COLLATE "C" NOT NULL,
        created_at timestamptz NOT NULL,
        channel text COLLATE "C" NOT NULL,
        direction text NOT NULL,
        contact_id uuid NOT NULL,
        conversation_id uuid NOT NULL,
        campaign_id text COLLATE "C",
        text text,
        content json,
        status text,
        sms_status text,
        network text,
        price numeric,
        counts integer,
        dr_statuscode text,
        dr_errcode text,
        dr_time timestamptz,
        PRIMARY KEY (account_id, id, channel_user_id, created_at)
      ) PARTITION BY RANGE (created_at);

      -- Month partitions are created on demand at ingest; the default one catches whatever arrives for a month
      -- that has none (far past or future dates, or a month pruned meanwhile), so no insert can fail.
      CREATE TABLE messages_default PARTITION OF messages DEFAULT;

      CREATE INDEX messages_history
        ON messages (account_id, conversation_id, created_at, id, channel_user_id);
      CREATE INDEX messages_campaign
        ON messages (account_id, campaign_id, created_at, id, channel_user_id)
        WHERE campaign_id IS NOT NULL;
      CREATE INDEX messages_conversation_campaign
        ON messages (account_id, conversation_id, campaign_id, created_at, id, channel_user_id)
        WHERE campaign_id IS NOT NULL;
    `,
  },
];

/**
 * Applies the migrations not yet recorded in `schema_migrations`, each in its own transaction, creating the
 * schema first if it is missing. A transaction-scoped advisory lock per schema serializes processes that
 * start at once: the second waits, then finds the step recorded and skips it.
 */
export async function migrate(pool: pg.Pool, schema: string): Promise<void> {
  const client = await pool.connect();
  try {
    for (const migration of MIGRATIONS) {
      await client.query('BEGIN');
      try {
        await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`waybill:migrate:${schema}`]);
        await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
        await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
          version integer NOT NULL PRIMARY KEY,
          name text NOT NULL,
          applied_at timestamptz NOT NULL DEFAULT now()
        )`);
        const applied = await client.query('SELECT 1 FROM schema_migrations WHERE version = $1', [
          migration.version,
        ]);
        if (applied.rowCount === 0) {
          await client.query(migration.sql);
          await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
            migration.version,
            migration.name,
          ]);
        }
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      }
    }
  } finally {
    client.release();
  }
}

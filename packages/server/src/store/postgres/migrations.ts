import type pg from 'pg';
import { MESSAGE_INDEXES } from '../message-indexes.js';
import type { AppliedMigration, Migration } from '../store.js';
import { quoteIdent, withClient } from './pool.js';
import { POSTGRES_ROLLUP_BACKFILL } from './rollup.js';

/**
 * The schema, in order. A migration, once released, never changes: fix things with a new one. Statements
 * name tables unqualified; the connection's search_path is the store's schema.
 *
 * Distribution-ready: every primary key and index leads with `account_id`, so with Citus each table can be
 * distributed on it and every query stays on one shard. The exceptions are the operator's tables (intake routes
 * and what they could not read, bind leases, carrier ids and the receipts parked under them by route, console
 * sessions, the pepper's fingerprint) and the unique index on `accounts.key` (authentication looks an account up
 * by key before it knows the account, so `accounts` is a small reference table there, docs/operations.md);
 * test/postgres/migrate.test.ts holds the schema to that. `deliveries_due`, the callback relay's queue across
 * accounts, was one until migration 12.
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

      ${MESSAGE_INDEXES}
    `,
  },
  {
    version: 2,
    name: 'receipt events, callback deliveries and parked receipts',
    sql: `
      ALTER TABLE accounts
        ADD COLUMN callback_enabled boolean NOT NULL DEFAULT true,
        -- After a rotation the previous secret keeps signing beside the new one until its grace period ends.
        ADD COLUMN previous_callback_secret text,
        ADD COLUMN previous_callback_secret_until timestamptz,
        -- The last feed position handed out in this account. Taking positions updates this row, and that row
        -- lock is what numbers events in commit order with no gap (events.ts).
        ADD COLUMN last_event_seq bigint NOT NULL DEFAULT 0;

      -- One row per applied receipt (CONTRACT §9). item is the recipient's /dlr item after the receipt, kept as
      -- the exact JSON text that callbacks send byte for byte (json or jsonb could reformat it). message_created_at
      -- lets prune remove events with their message record.
      CREATE TABLE receipt_events (
        account_id uuid NOT NULL,
        seq bigint NOT NULL,
        id text COLLATE "C" NOT NULL,
        message_id text COLLATE "C" NOT NULL,
        recipient text COLLATE "C" NOT NULL,
        recorded_at timestamptz NOT NULL,
        message_created_at timestamptz NOT NULL,
        item text NOT NULL,
        PRIMARY KEY (account_id, seq),
        CONSTRAINT receipt_events_id UNIQUE (account_id, id)
      );
      CREATE INDEX receipt_events_prune ON receipt_events (account_id, message_created_at);

      -- The outbox: one delivery per event of an account with callbacks on, keyed like its event. A relay holds
      -- a lease (lease, lease_until) while it attempts one; an expired lease is a crashed attempt.
      CREATE TABLE deliveries (
        account_id uuid NOT NULL,
        seq bigint NOT NULL,
        id text COLLATE "C" NOT NULL,
        message_id text COLLATE "C" NOT NULL,
        recipient text COLLATE "C" NOT NULL,
        state text NOT NULL,
        attempts integer NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL,
        message_created_at timestamptz NOT NULL,
        next_attempt_at timestamptz,
        lease text,
        lease_until timestamptz,
        last_at timestamptz,
        last_http_status integer,
        last_error text,
        last_duration_ms integer,
        PRIMARY KEY (account_id, seq),
        CONSTRAINT deliveries_id UNIQUE (account_id, id),
        CONSTRAINT deliveries_state CHECK (state IN ('pending', 'delivered', 'dead', 'superseded'))
      );
      -- "When is anything due next", across every account (the relay's sleep, and the metrics' count): the one
      -- index that cannot lead with account_id. With Citus each shard walks its own and the coordinator merges.
      CREATE INDEX deliveries_due ON deliveries (next_attempt_at, seq) WHERE state = 'pending';
      -- The relay claims per account, oldest due first, so accounts take turns (outbox.ts claimCandidates).
      CREATE INDEX deliveries_account_due ON deliveries (account_id, next_attempt_at, seq) WHERE state = 'pending';
      -- Leases are few (attempts in flight, or crashed ones): the in-flight check of a recipient and the
      -- earliest lease expiry both read this small index instead of every pending delivery.
      CREATE INDEX deliveries_leased ON deliveries (account_id, message_id, recipient)
        WHERE lease_until IS NOT NULL;
      CREATE INDEX deliveries_recipient ON deliveries (account_id, message_id, recipient, seq);
      CREATE INDEX deliveries_by_state ON deliveries (account_id, state, seq);
      CREATE INDEX deliveries_prune ON deliveries (account_id, message_created_at);
      -- Dead deliveries are few and wanted by themselves: the bulk redelivery and the metrics count them.
      CREATE INDEX deliveries_dead ON deliveries (account_id) WHERE state = 'dead';

      CREATE TABLE delivery_attempts (
        account_id uuid NOT NULL,
        seq bigint NOT NULL,
        n integer NOT NULL,
        at timestamptz NOT NULL,
        http_status integer,
        error text,
        duration_ms integer NOT NULL,
        PRIMARY KEY (account_id, seq, n)
      );

      -- Receipts that came before their recipient (CONTRACT §9 "Early receipts"). fingerprint is the receipt's
      -- content, so a replay is parked once; receipt is the normalized item (drTime as an ISO string).
      CREATE TABLE parked_receipts (
        account_id uuid NOT NULL,
        ref bigint GENERATED ALWAYS AS IDENTITY,
        message_id text COLLATE "C" NOT NULL,
        fingerprint text COLLATE "C" NOT NULL,
        receipt json NOT NULL,
        parked_at timestamptz NOT NULL,
        PRIMARY KEY (account_id, ref),
        CONSTRAINT parked_receipts_fingerprint UNIQUE (account_id, fingerprint)
      );
      CREATE INDEX parked_receipts_message ON parked_receipts (account_id, message_id);
      CREATE INDEX parked_receipts_age ON parked_receipts (account_id, parked_at);
    `,
  },
  {
    version: 3,
    name: 'pepper fingerprint',
    sql: `
      -- One row: a keyed hash of the server pepper (never the pepper) and where it came from, so that a start
      -- with another pepper is refused instead of silently breaking every secret (auth/pepper.ts).
      CREATE TABLE pepper_fingerprint (
        id integer NOT NULL PRIMARY KEY CHECK (id = 1),
        fingerprint text NOT NULL,
        origin text NOT NULL,
        recorded_at timestamptz NOT NULL
      );
    `,
  },
  {
    version: 4,
    name: 'intake routes',
    sql: `
      -- Named sources of receipts (CONTRACT §12). smpp holds the bind settings, its password apart and sealed;
      -- token is the sealed intake token of an HTTP route and token_digest its keyed hash, the lookup key of an
      -- adapter request.
      CREATE TABLE intake_routes (
        name text COLLATE "C" NOT NULL PRIMARY KEY,
        kind text NOT NULL,
        accounts jsonb NOT NULL,
        timezone text NOT NULL,
        error_map jsonb NOT NULL,
        enabled boolean NOT NULL,
        smpp jsonb,
        smpp_password text,
        token text,
        token_digest bytea UNIQUE,
        created_at timestamptz NOT NULL
      );

      -- The last unreadable receipts of each route, for the operator (GET /admin/v1/routes/{name}/garbled).
      CREATE TABLE intake_garbled (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        route text COLLATE "C" NOT NULL,
        at timestamptz NOT NULL,
        text text NOT NULL,
        pdu text
      );
      CREATE INDEX intake_garbled_route ON intake_garbled (route, id);
    `,
  },
  {
    version: 5,
    name: 'carrier ids and parked carrier receipts',
    sql: `
      -- Which recipient holds each carrier pair (CONTRACT §12 "Correlation"): the id a route's SMSC gave it.
      -- Unpartitioned, like message_keys, so its primary key is unique on exactly the pair. Keyed by the pair,
      -- not by account (the second exception to "every key leads with account_id"): a route may serve several
      -- accounts and a carrier id is unique on its SMSC, so a pair belongs to one recipient of any account, and
      -- a receipt from a route finds it by the pair alone. With Citus it is distributed on route. A recipient
      -- holds at most one pair. created_at is its record's, for retention.
      CREATE TABLE carrier_ids (
        route text COLLATE "C" NOT NULL,
        carrier_id text COLLATE "C" NOT NULL,
        account_id uuid NOT NULL,
        message_id text COLLATE "C" NOT NULL,
        channel_user_id text COLLATE "C" NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (route, carrier_id),
        CONSTRAINT carrier_ids_recipient UNIQUE (account_id, message_id, channel_user_id)
      );
      CREATE INDEX carrier_ids_prune ON carrier_ids (account_id, created_at);

      -- A parked receipt waits either for a recipient of an account's message id (account_id, message_id) or
      -- for whichever recipient claims a route's carrier id (route, carrier_id), never both. The primary key
      -- becomes the ref alone, as a carrier receipt has no account until its recipient claims the pair.
      ALTER TABLE parked_receipts DROP CONSTRAINT parked_receipts_pkey;
      ALTER TABLE parked_receipts
        ALTER COLUMN account_id DROP NOT NULL,
        ALTER COLUMN message_id DROP NOT NULL,
        ADD COLUMN route text COLLATE "C",
        ADD COLUMN carrier_id text COLLATE "C",
        ADD PRIMARY KEY (ref),
        ADD CONSTRAINT parked_receipts_key CHECK (
          (account_id IS NOT NULL AND message_id IS NOT NULL AND route IS NULL AND carrier_id IS NULL)
          OR (account_id IS NULL AND message_id IS NULL AND route IS NOT NULL AND carrier_id IS NOT NULL));
      -- NULLs are distinct in a unique index: each key's uniqueness binds only its own kind of row.
      CREATE UNIQUE INDEX parked_receipts_carrier ON parked_receipts (route, carrier_id, fingerprint);
      CREATE INDEX parked_receipts_carrier_age ON parked_receipts (parked_at) WHERE route IS NOT NULL;
    `,
  },
  {
    version: 6,
    name: 'SMPP bind leases',
    sql: `
      -- Who holds each SMPP route's bind (CONTRACT §12 "SMPP binds"): one process at a time, until expires_at
      -- unless it renews; times are the database's clock, so instances with skewed clocks agree. state, since
      -- and last_error are the holder's bind status as it last published it, so that every instance can report
      -- the bind it does not hold.
      CREATE TABLE bind_leases (
        route text COLLATE "C" NOT NULL PRIMARY KEY,
        holder text NOT NULL,
        expires_at timestamptz NOT NULL,
        state text NOT NULL,
        since timestamptz,
        last_error text
      );
    `,
  },
  {
    version: 7,
    name: 'review rollup',
    sql: `
      -- The review rollup (docs/review.md, domain/rollup.ts): how many outbound SMS recipients of an account,
      -- sent on a UTC day (whole days since 1970), are in each (campaign, network, drStatuscode, drErrcode),
      -- '' standing for none; and, of those with a final receipt, how many took each bucket of time from sending
      -- to it. Kept by every write of a recipient, in its transaction; the review page reads only these. Not
      -- partitioned: a day holds one row per key in use, not per recipient, and prune takes its records' counts
      -- away exactly rather than dropping days.
      CREATE TABLE review_counts (
        account_id uuid NOT NULL,
        day integer NOT NULL,
        campaign_id text COLLATE "C" NOT NULL,
        network text COLLATE "C" NOT NULL,
        state text COLLATE "C" NOT NULL,
        errcode text COLLATE "C" NOT NULL,
        n bigint NOT NULL,
        PRIMARY KEY (account_id, day, campaign_id, network, state, errcode)
      );
      CREATE TABLE review_latency (
        account_id uuid NOT NULL,
        day integer NOT NULL,
        campaign_id text COLLATE "C" NOT NULL,
        bucket integer NOT NULL,
        n bigint NOT NULL,
        PRIMARY KEY (account_id, day, campaign_id, bucket)
      );
      -- The records already there.
      ${POSTGRES_ROLLUP_BACKFILL};
    `,
  },
  {
    version: 8,
    name: 'console sessions and the timeline index',
    sql: `
      -- Console sessions (CONTRACT §13): the SHA-256 of the cookie's token, never the token. account_id is
      -- NULL for the operator; an account's sessions go with the account.
      CREATE TABLE console_sessions (
        token_hash bytea NOT NULL PRIMARY KEY,
        account_id uuid REFERENCES accounts (id) ON DELETE CASCADE,
        created_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL
      );
      CREATE INDEX console_sessions_account ON console_sessions (account_id);
      CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);
      -- The console's receipt timeline of one message id (its deliveries have deliveries_recipient).
      CREATE INDEX receipt_events_message ON receipt_events (account_id, message_id, seq);
    `,
  },
  {
    version: 9,
    name: 'room on record pages for receipts',
    sql: `
      -- A receipt rewrites its record's SMS columns, none of them indexed: with room left on the page the new
      -- version stays there (a HOT update) and no index gains an entry. Pages written from now on keep 15% free;
      -- new month partitions are made with the same setting (partitions.ts RECORD_FILLFACTOR).
      DO $$
      DECLARE partition regclass;
      BEGIN
        FOR partition IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'messages'::regclass LOOP
          EXECUTE format('ALTER TABLE %s SET (fillfactor = 85)', partition);
        END LOOP;
      END $$;
    `,
  },
  {
    version: 10,
    name: 'contacts without foreign keys',
    sql: `
      -- Each was a per-row trigger on the hottest inserts of message ingest: three checks per new number, each
      -- a query that also locked the row it found, 11 ms of PostgreSQL's CPU per 1,000 new contacts (docs/
      -- benchmarks.md, "Twelfth pass"). What they guarded, ingest holds by itself, as it always did for messages
      -- (which never had one): a batch writes a contact in the same transaction as the identity and the
      -- conversation that name it, or takes one that another batch in flight is creating and then commits only
      -- after that batch did (in-flight.ts); and contacts are deleted only with their account, which waits for
      -- every batch under way (lockAccount, deleteAccount).
      ALTER TABLE identities DROP CONSTRAINT identities_account_id_contact_id_fkey;
      ALTER TABLE conversations DROP CONSTRAINT conversations_account_id_contact_id_fkey;
      ALTER TABLE contacts DROP CONSTRAINT contacts_account_id_fkey;
    `,
  },
  {
    version: 11,
    name: 'receipt events without their id index',
    sql: `
      -- Nothing reads an event by its id: the feed reads by seq, a message's timeline by its message id, and a
      -- delivery (found by the same id for a redelivery) keeps its own deliveries_id. The ids are minted by
      -- the service (evt_ and a ULID, domain/deliveries/events.ts), so the index only ever checked what holds
      -- by construction, at one random-place entry per event: 66 bytes a recipient, and one index write of
      -- every receipt's (docs/benchmarks.md, "Fourteenth pass"). SQLite dropped its own in its migration 11.
      ALTER TABLE receipt_events DROP CONSTRAINT receipt_events_id;
    `,
  },
  {
    version: 12,
    name: 'callback deliveries without their due index across accounts',
    sql: `
      -- Its readers were the relay's look for the next due delivery across accounts and the metrics' count of
      -- pending ones. The relay reads each account's slice of deliveries_account_due (the same partial index,
      -- led by the account: outbox.ts nextDue, claimCandidates), and that index counts the pending deliveries
      -- as well. So every queued delivery wrote an entry that nothing read, and every finished one left a dead
      -- one (docs/benchmarks.md, "Fifteenth pass"). Every index now leads with account_id but those of the
      -- operator's tables.
      DROP INDEX deliveries_due;
    `,
  },
  {
    version: 13,
    name: 'callback leases as updates in place',
    sql: `
      -- A lease sets lease and lease_until, which only deliveries_leased read (the relay's check for a
      -- recipient's attempt in flight, in its predicate): so every lease wrote a new row version with an entry
      -- in seven of the table's eight indexes, and the lease was the relay's costliest statement. Without it, and with
      -- room left on each page, a lease is a HOT update: the row's new version on its page, no index entry.
      -- The in-flight check reads the recipient's deliveries through deliveries_recipient instead (outbox.ts
      -- RECIPIENT_LEASE; a recipient has a few). Pages written before this stay full until rewritten.
      -- docs/benchmarks.md, "Sixteenth pass".
      DROP INDEX deliveries_leased;
      ALTER TABLE deliveries SET (fillfactor = 85);
    `,
  },
  {
    version: 14,
    name: 'callback deliveries without their own time index',
    sql: `
      -- Retention finds a delivery and its attempts through their event (one delivery per event, keyed by its
      -- seq), in the statement that removes the event (prune.ts), as SQLite has since its migration 11. So the
      -- delivery needs neither the record's created_at nor an index by it: that index took an entry at every
      -- queued delivery and at every update that is not in place (each attempt's result, and a lease whose page
      -- is full), one of six. The column stays, unwritten, so that instances not yet upgraded can still queue
      -- deliveries (docs/benchmarks.md, "Nineteenth pass").
      DROP INDEX deliveries_prune;
      ALTER TABLE deliveries ALTER COLUMN message_created_at DROP NOT NULL;
    `,
  },
];

/**
 * Applies the migrations not yet recorded in `schema_migrations`, each in its own transaction, creating the
 * schema first if it is missing. A transaction-scoped advisory lock per schema serializes processes that
 * start at once: the second waits, then finds the step recorded and skips it. Returns the steps this call
 * applied, oldest first.
 */
export async function migrate(pool: pg.Pool, schema: string): Promise<AppliedMigration[]> {
  const done: AppliedMigration[] = [];
  await withClient(pool, async (client) => {
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
        if (applied.rowCount === 0) done.push({ version: migration.version, name: migration.name });
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        throw error;
      }
    }
  });
  return done;
}

import type { Database } from 'better-sqlite3';
import { MESSAGE_INDEXES } from '../message-indexes.js';
import type { SmsColumns } from '../rows.js';
import type { AppliedMigration, Migration } from '../store.js';
import { currentItemOf } from './current-item.js';
import { SQLITE_ROLLUP_BACKFILL } from './rollup.js';
import { type Columns, fromRow } from './rows.js';

/** The SQL function by which migration 12 asks for a record's current item as stored (current-item.ts). */
const CURRENT_ITEM_FUNCTION = 'waybill_current_item';
/** A record's SMS and receipt columns, in table order, as SQL passes them to a function. */
type SmsColumnValues = SmsColumns<Columns>;
type SmsValues = [
  SmsColumnValues['sms_status'],
  SmsColumnValues['network'],
  SmsColumnValues['price'],
  SmsColumnValues['counts'],
  SmsColumnValues['dr_statuscode'],
  SmsColumnValues['dr_errcode'],
  SmsColumnValues['dr_time'],
];

/**
 * The schema, in order. A migration, once released, never changes: fix things with a new one.
 *
 * Every key and index leads with `account_id`, so no lookup can wander into another account's rows and
 * every query is a range within one account. Small, narrow tables are `WITHOUT ROWID` (the primary key is the
 * table); `messages` keeps its rowid because its rows are wide (text, content) and secondary indexes then
 * point at a compact integer.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'initial schema',
    sql: `
      CREATE TABLE accounts (
        id TEXT NOT NULL PRIMARY KEY,
        name TEXT NOT NULL,
        key TEXT NOT NULL UNIQUE,
        secret_hash BLOB NOT NULL,
        callback_secret TEXT NOT NULL,
        ip_whitelist TEXT NOT NULL,
        dlr_query_enabled INTEGER NOT NULL,
        balance REAL NOT NULL,
        credit_limit REAL NOT NULL,
        callback_url TEXT,
        created_at INTEGER NOT NULL,
        -- The last ingest sequence handed out in this account: /dlr lists recipients in first-ingested order,
        -- and a rowid is no stable order (VACUUM may renumber it).
        last_message_seq INTEGER NOT NULL DEFAULT 0
      ) WITHOUT ROWID, STRICT;

      CREATE TABLE contacts (
        account_id TEXT NOT NULL REFERENCES accounts (id),
        id TEXT NOT NULL,
        PRIMARY KEY (account_id, id)
      ) WITHOUT ROWID, STRICT;

      -- An identity belongs to one contact, and a contact has at most one identity per channel.
      CREATE TABLE identities (
        account_id TEXT NOT NULL,
        channel TEXT NOT NULL,
        channel_user_id TEXT NOT NULL,
        contact_id TEXT NOT NULL,
        PRIMARY KEY (account_id, channel, channel_user_id),
        UNIQUE (account_id, contact_id, channel),
        FOREIGN KEY (account_id, contact_id) REFERENCES contacts (account_id, id)
      ) WITHOUT ROWID, STRICT;

      CREATE TABLE conversations (
        account_id TEXT NOT NULL,
        contact_id TEXT NOT NULL,
        channel TEXT NOT NULL,
        id TEXT NOT NULL,
        PRIMARY KEY (account_id, contact_id, channel),
        UNIQUE (account_id, id),
        FOREIGN KEY (account_id, contact_id) REFERENCES contacts (account_id, id)
      ) WITHOUT ROWID, STRICT;

      -- One table for every message record. For an outbound SMS the record is one recipient, and its send
      -- status and receipt live in the same row (sms_* and dr_* columns, NULL on every other record): /dlr
      -- and history both read one row per recipient, a receipt updates one row, and no join sits on the hot
      -- path. sms_status IS NOT NULL exactly for outbound SMS records.
      CREATE TABLE messages (
        account_id TEXT NOT NULL,
        id TEXT NOT NULL,
        channel_user_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        channel TEXT NOT NULL,
        direction TEXT NOT NULL,
        contact_id TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        campaign_id TEXT,
        text TEXT,
        content TEXT,
        status TEXT,
        sms_status TEXT,
        network TEXT,
        price REAL,
        counts INTEGER,
        dr_statuscode TEXT,
        dr_errcode TEXT,
        dr_time INTEGER,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (account_id, id, channel_user_id),
        FOREIGN KEY (account_id, conversation_id) REFERENCES conversations (account_id, id)
      ) STRICT;

      ${MESSAGE_INDEXES}
    `,
  },
  {
    version: 2,
    name: 'receipt events, callback deliveries and parked receipts',
    sql: `
      ALTER TABLE accounts ADD COLUMN callback_enabled INTEGER NOT NULL DEFAULT 1;
      -- After a rotation the previous secret keeps signing beside the new one until its grace period ends.
      ALTER TABLE accounts ADD COLUMN previous_callback_secret TEXT;
      ALTER TABLE accounts ADD COLUMN previous_callback_secret_until INTEGER;
      -- The last feed position handed out in this account: events are numbered 1, 2, 3… in commit order.
      ALTER TABLE accounts ADD COLUMN last_event_seq INTEGER NOT NULL DEFAULT 0;

      -- One row per applied receipt (CONTRACT §9). item is the recipient's /dlr item after the receipt, as the
      -- JSON text that callbacks send byte for byte. message_created_at lets prune remove events with their
      -- message record.
      CREATE TABLE receipt_events (
        account_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        recipient TEXT NOT NULL,
        recorded_at INTEGER NOT NULL,
        message_created_at INTEGER NOT NULL,
        item TEXT NOT NULL,
        PRIMARY KEY (account_id, seq)
      ) STRICT;
      CREATE UNIQUE INDEX receipt_events_id ON receipt_events (account_id, id);
      CREATE INDEX receipt_events_prune ON receipt_events (message_created_at);

      -- The outbox: one delivery per event of an account with callbacks on, keyed like its event. A relay
      -- holds a lease (lease, lease_until) while it attempts one; an expired lease is a crashed attempt.
      CREATE TABLE deliveries (
        account_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        recipient TEXT NOT NULL,
        state TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        message_created_at INTEGER NOT NULL,
        next_attempt_at INTEGER,
        lease TEXT,
        lease_until INTEGER,
        last_at INTEGER,
        last_http_status INTEGER,
        last_error TEXT,
        last_duration_ms INTEGER,
        PRIMARY KEY (account_id, seq)
      ) STRICT;
      CREATE UNIQUE INDEX deliveries_id ON deliveries (account_id, id);
      -- The relay claims per account (fairly: one busy account never holds up the others), oldest due first;
      -- deliveries_due counts the pending deliveries of every account (the /metrics gauge).
      CREATE INDEX deliveries_account_due ON deliveries (account_id, next_attempt_at, seq) WHERE state = 'pending';
      CREATE INDEX deliveries_due ON deliveries (next_attempt_at, seq) WHERE state = 'pending';
      CREATE INDEX deliveries_recipient ON deliveries (account_id, message_id, recipient, seq);
      CREATE INDEX deliveries_state ON deliveries (account_id, state, seq);
      CREATE INDEX deliveries_prune ON deliveries (message_created_at);
      CREATE INDEX deliveries_dead ON deliveries (account_id) WHERE state = 'dead';

      CREATE TABLE delivery_attempts (
        account_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        n INTEGER NOT NULL,
        at INTEGER NOT NULL,
        http_status INTEGER,
        error TEXT,
        duration_ms INTEGER NOT NULL,
        PRIMARY KEY (account_id, seq, n)
      ) WITHOUT ROWID, STRICT;

      -- Receipts that came before their recipient (CONTRACT §9 "Early receipts"). fingerprint is the receipt's
      -- content, so a replay is parked once; receipt is the normalized item as JSON.
      CREATE TABLE parked_receipts (
        ref INTEGER PRIMARY KEY,
        account_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        receipt TEXT NOT NULL,
        parked_at INTEGER NOT NULL
      ) STRICT;
      CREATE UNIQUE INDEX parked_receipts_fingerprint ON parked_receipts (account_id, fingerprint);
      CREATE INDEX parked_receipts_message ON parked_receipts (account_id, message_id);
      CREATE INDEX parked_receipts_age ON parked_receipts (parked_at);
    `,
  },
  {
    version: 3,
    name: 'pepper fingerprint',
    sql: `
      -- The pepper's keyed hash and origin, one row (see the PostgreSQL twin and auth/pepper.ts).
      CREATE TABLE pepper_fingerprint (
        id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
        fingerprint TEXT NOT NULL,
        origin TEXT NOT NULL,
        recorded_at INTEGER NOT NULL
      ) STRICT;
    `,
  },
  {
    version: 4,
    name: 'intake routes',
    sql: `
      -- Named sources of receipts (CONTRACT §12). smpp holds the bind settings as JSON, its password apart and
      -- sealed; token is the sealed intake token of an HTTP route and token_digest its keyed hash, the lookup
      -- key of an adapter request.
      CREATE TABLE intake_routes (
        name TEXT NOT NULL PRIMARY KEY,
        kind TEXT NOT NULL,
        accounts TEXT NOT NULL,
        timezone TEXT NOT NULL,
        error_map TEXT NOT NULL,
        enabled INTEGER NOT NULL,
        smpp TEXT,
        smpp_password TEXT,
        token TEXT,
        token_digest BLOB UNIQUE,
        created_at INTEGER NOT NULL
      ) WITHOUT ROWID, STRICT;

      -- The last unreadable receipts of each route, for the operator (GET /admin/v1/routes/{name}/garbled).
      CREATE TABLE intake_garbled (
        id INTEGER PRIMARY KEY,
        route TEXT NOT NULL,
        at INTEGER NOT NULL,
        text TEXT NOT NULL,
        pdu TEXT
      ) STRICT;
      CREATE INDEX intake_garbled_route ON intake_garbled (route, id);
    `,
  },
  {
    version: 5,
    name: 'carrier ids and parked carrier receipts',
    sql: `
      -- Which recipient holds each carrier pair (CONTRACT §12 "Correlation"): the id a route's SMSC gave it.
      -- Keyed by the pair, not by account: a route may serve several accounts and a carrier id is unique on
      -- its SMSC, so a pair belongs to one recipient of any account, and a receipt from a route finds it by
      -- the pair alone. A recipient holds at most one pair. created_at is its record's, for retention.
      CREATE TABLE carrier_ids (
        route TEXT NOT NULL,
        carrier_id TEXT NOT NULL,
        account_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        channel_user_id TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (route, carrier_id),
        UNIQUE (account_id, message_id, channel_user_id)
      ) WITHOUT ROWID, STRICT;
      CREATE INDEX carrier_ids_prune ON carrier_ids (created_at);

      -- A parked receipt waits either for a recipient of an account's message id (account_id, message_id) or
      -- for whichever recipient claims a route's carrier id (route, carrier_id), never both. SQLite cannot
      -- relax NOT NULL in place, so the table is rebuilt, keeping every row and its ref.
      CREATE TABLE parked_receipts_v5 (
        ref INTEGER PRIMARY KEY,
        account_id TEXT,
        message_id TEXT,
        route TEXT,
        carrier_id TEXT,
        fingerprint TEXT NOT NULL,
        receipt TEXT NOT NULL,
        parked_at INTEGER NOT NULL,
        CHECK ((account_id IS NOT NULL AND message_id IS NOT NULL AND route IS NULL AND carrier_id IS NULL)
          OR (account_id IS NULL AND message_id IS NULL AND route IS NOT NULL AND carrier_id IS NOT NULL))
      ) STRICT;
      INSERT INTO parked_receipts_v5 (ref, account_id, message_id, fingerprint, receipt, parked_at)
        SELECT ref, account_id, message_id, fingerprint, receipt, parked_at FROM parked_receipts;
      DROP TABLE parked_receipts;
      ALTER TABLE parked_receipts_v5 RENAME TO parked_receipts;
      -- NULLs are distinct in a unique index: each key's uniqueness binds only its own kind of row.
      CREATE UNIQUE INDEX parked_receipts_fingerprint ON parked_receipts (account_id, fingerprint);
      CREATE INDEX parked_receipts_message ON parked_receipts (account_id, message_id);
      CREATE INDEX parked_receipts_age ON parked_receipts (parked_at);
      CREATE UNIQUE INDEX parked_receipts_carrier ON parked_receipts (route, carrier_id, fingerprint);
    `,
  },
  {
    version: 6,
    name: 'SMPP bind leases',
    sql: `
      -- Who holds each SMPP route's bind (CONTRACT §12 "SMPP binds"): one process at a time, until expires_at
      -- (epoch ms) unless it renews. state, since and last_error are the holder's bind status as it last
      -- published it, so that every process can report the bind it does not hold.
      CREATE TABLE bind_leases (
        route TEXT NOT NULL PRIMARY KEY,
        holder TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        state TEXT NOT NULL,
        since INTEGER,
        last_error TEXT
      ) WITHOUT ROWID, STRICT;
    `,
  },
  {
    version: 7,
    name: 'review rollup',
    sql: `
      -- The review rollup (docs/review.md, domain/rollup.ts): how many outbound SMS recipients of an account,
      -- sent on a UTC day (whole days since 1970), are in each (campaign, network, drStatuscode, drErrcode),
      -- '' standing for none; and, of those with a final receipt, how many took each bucket of time from sending
      -- to it. Kept by every write of a recipient, in its transaction; the review page reads only these.
      CREATE TABLE review_counts (
        account_id TEXT NOT NULL,
        day INTEGER NOT NULL,
        campaign_id TEXT NOT NULL,
        network TEXT NOT NULL,
        state TEXT NOT NULL,
        errcode TEXT NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (account_id, day, campaign_id, network, state, errcode)
      ) WITHOUT ROWID, STRICT;
      CREATE TABLE review_latency (
        account_id TEXT NOT NULL,
        day INTEGER NOT NULL,
        campaign_id TEXT NOT NULL,
        bucket INTEGER NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (account_id, day, campaign_id, bucket)
      ) WITHOUT ROWID, STRICT;
      -- The records already there.
      ${SQLITE_ROLLUP_BACKFILL};
    `,
  },
  {
    version: 8,
    name: 'console sessions and the timeline index',
    sql: `
      -- Console sessions (CONTRACT §13): the SHA-256 of the cookie's token, never the token. account_id is
      -- NULL for the operator; an account's sessions go with the account. Times are epoch ms.
      CREATE TABLE console_sessions (
        token_hash BLOB NOT NULL PRIMARY KEY,
        account_id TEXT REFERENCES accounts (id) ON DELETE CASCADE,
        created_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL
      ) WITHOUT ROWID, STRICT;
      CREATE INDEX console_sessions_account ON console_sessions (account_id);
      CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);
      -- The console's receipt timeline of one message id (its deliveries have deliveries_recipient).
      CREATE INDEX receipt_events_message ON receipt_events (account_id, message_id, seq);
    `,
  },
  {
    version: 9,
    name: 'integer account refs',
    sql: `
      -- Every table of an account's data keys the account by an integer ref instead of its 36-character id
      -- (account-ref.ts): a ref is one or two bytes in each row and index entry. A ref is given when the
      -- account is created and kept after it is deleted, so it never names two ids.
      CREATE TABLE account_refs (
        ref INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE
      ) STRICT;
      INSERT INTO account_refs (id) SELECT id FROM accounts ORDER BY created_at, id;
      CREATE TRIGGER accounts_ref AFTER INSERT ON accounts
      BEGIN
        INSERT INTO account_refs (id) VALUES (new.id) ON CONFLICT (id) DO NOTHING;
      END;

      -- Receipt events and deliveries become WITHOUT ROWID: their primary key (account, seq) is the table, as it
      -- is for every other narrow table here, so each row is one B-tree entry fewer to write and to store.
      --
      -- Each table is rebuilt with the ref in place of the id, under a new name, then swapped in: children
      -- are dropped before their parents and renamed after them, so the foreign keys (checked at the end,
      -- migrate()) follow the new tables. A row of an account no longer in accounts (none should exist:
      -- deleting an account deletes its rows) has no ref and is not carried over.
      CREATE TABLE contacts_v9 (
        account_id INTEGER NOT NULL REFERENCES account_refs (ref),
        id TEXT NOT NULL,
        PRIMARY KEY (account_id, id)
      ) WITHOUT ROWID, STRICT;
      INSERT INTO contacts_v9 SELECT r.ref, t.id FROM contacts t JOIN account_refs r ON r.id = t.account_id;

      CREATE TABLE identities_v9 (
        account_id INTEGER NOT NULL,
        channel TEXT NOT NULL,
        channel_user_id TEXT NOT NULL,
        contact_id TEXT NOT NULL,
        PRIMARY KEY (account_id, channel, channel_user_id),
        UNIQUE (account_id, contact_id, channel),
        FOREIGN KEY (account_id, contact_id) REFERENCES contacts_v9 (account_id, id)
      ) WITHOUT ROWID, STRICT;
      INSERT INTO identities_v9
        SELECT r.ref, t.channel, t.channel_user_id, t.contact_id
        FROM identities t JOIN account_refs r ON r.id = t.account_id;

      CREATE TABLE conversations_v9 (
        account_id INTEGER NOT NULL,
        contact_id TEXT NOT NULL,
        channel TEXT NOT NULL,
        id TEXT NOT NULL,
        PRIMARY KEY (account_id, contact_id, channel),
        UNIQUE (account_id, id),
        FOREIGN KEY (account_id, contact_id) REFERENCES contacts_v9 (account_id, id)
      ) WITHOUT ROWID, STRICT;
      INSERT INTO conversations_v9
        SELECT r.ref, t.contact_id, t.channel, t.id FROM conversations t JOIN account_refs r ON r.id = t.account_id;

      CREATE TABLE messages_v9 (
        account_id INTEGER NOT NULL,
        id TEXT NOT NULL,
        channel_user_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        channel TEXT NOT NULL,
        direction TEXT NOT NULL,
        contact_id TEXT NOT NULL,
        conversation_id TEXT NOT NULL,
        campaign_id TEXT,
        text TEXT,
        content TEXT,
        status TEXT,
        sms_status TEXT,
        network TEXT,
        price REAL,
        counts INTEGER,
        dr_statuscode TEXT,
        dr_errcode TEXT,
        dr_time INTEGER,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (account_id, id, channel_user_id),
        FOREIGN KEY (account_id, conversation_id) REFERENCES conversations_v9 (account_id, id)
      ) STRICT;
      -- In rowid order, so the new table is written in the order the old one was.
      INSERT INTO messages_v9
        SELECT r.ref, t.id, t.channel_user_id, t.seq, t.channel, t.direction, t.contact_id, t.conversation_id,
          t.campaign_id, t.text, t.content, t.status, t.sms_status, t.network, t.price, t.counts, t.dr_statuscode,
          t.dr_errcode, t.dr_time, t.created_at
        FROM messages t JOIN account_refs r ON r.id = t.account_id ORDER BY t.rowid;

      CREATE TABLE receipt_events_v9 (
        account_id INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        recipient TEXT NOT NULL,
        recorded_at INTEGER NOT NULL,
        message_created_at INTEGER NOT NULL,
        item TEXT NOT NULL,
        PRIMARY KEY (account_id, seq)
      ) WITHOUT ROWID, STRICT;
      INSERT INTO receipt_events_v9
        SELECT r.ref, t.seq, t.id, t.message_id, t.recipient, t.recorded_at, t.message_created_at, t.item
        FROM receipt_events t JOIN account_refs r ON r.id = t.account_id ORDER BY 1, 2;

      CREATE TABLE deliveries_v9 (
        account_id INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        recipient TEXT NOT NULL,
        state TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        message_created_at INTEGER NOT NULL,
        next_attempt_at INTEGER,
        lease TEXT,
        lease_until INTEGER,
        last_at INTEGER,
        last_http_status INTEGER,
        last_error TEXT,
        last_duration_ms INTEGER,
        PRIMARY KEY (account_id, seq)
      ) WITHOUT ROWID, STRICT;
      INSERT INTO deliveries_v9
        SELECT r.ref, t.seq, t.id, t.message_id, t.recipient, t.state, t.attempts, t.created_at,
          t.message_created_at, t.next_attempt_at, t.lease, t.lease_until, t.last_at, t.last_http_status,
          t.last_error, t.last_duration_ms
        FROM deliveries t JOIN account_refs r ON r.id = t.account_id ORDER BY 1, 2;

      CREATE TABLE delivery_attempts_v9 (
        account_id INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        n INTEGER NOT NULL,
        at INTEGER NOT NULL,
        http_status INTEGER,
        error TEXT,
        duration_ms INTEGER NOT NULL,
        PRIMARY KEY (account_id, seq, n)
      ) WITHOUT ROWID, STRICT;
      INSERT INTO delivery_attempts_v9
        SELECT r.ref, t.seq, t.n, t.at, t.http_status, t.error, t.duration_ms
        FROM delivery_attempts t JOIN account_refs r ON r.id = t.account_id;

      -- A carrier receipt parked by its pair has no account (account_id NULL) and keeps none.
      CREATE TABLE parked_receipts_v9 (
        ref INTEGER PRIMARY KEY,
        account_id INTEGER,
        message_id TEXT,
        route TEXT,
        carrier_id TEXT,
        fingerprint TEXT NOT NULL,
        receipt TEXT NOT NULL,
        parked_at INTEGER NOT NULL,
        CHECK ((account_id IS NOT NULL AND message_id IS NOT NULL AND route IS NULL AND carrier_id IS NULL)
          OR (account_id IS NULL AND message_id IS NULL AND route IS NOT NULL AND carrier_id IS NOT NULL))
      ) STRICT;
      INSERT INTO parked_receipts_v9
        SELECT t.ref, r.ref, t.message_id, t.route, t.carrier_id, t.fingerprint, t.receipt, t.parked_at
        FROM parked_receipts t LEFT JOIN account_refs r ON r.id = t.account_id
        WHERE t.account_id IS NULL OR r.ref IS NOT NULL;

      CREATE TABLE carrier_ids_v9 (
        route TEXT NOT NULL,
        carrier_id TEXT NOT NULL,
        account_id INTEGER NOT NULL,
        message_id TEXT NOT NULL,
        channel_user_id TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (route, carrier_id),
        UNIQUE (account_id, message_id, channel_user_id)
      ) WITHOUT ROWID, STRICT;
      INSERT INTO carrier_ids_v9
        SELECT t.route, t.carrier_id, r.ref, t.message_id, t.channel_user_id, t.created_at
        FROM carrier_ids t JOIN account_refs r ON r.id = t.account_id;

      CREATE TABLE review_counts_v9 (
        account_id INTEGER NOT NULL,
        day INTEGER NOT NULL,
        campaign_id TEXT NOT NULL,
        network TEXT NOT NULL,
        state TEXT NOT NULL,
        errcode TEXT NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (account_id, day, campaign_id, network, state, errcode)
      ) WITHOUT ROWID, STRICT;
      INSERT INTO review_counts_v9
        SELECT r.ref, t.day, t.campaign_id, t.network, t.state, t.errcode, t.n
        FROM review_counts t JOIN account_refs r ON r.id = t.account_id;

      CREATE TABLE review_latency_v9 (
        account_id INTEGER NOT NULL,
        day INTEGER NOT NULL,
        campaign_id TEXT NOT NULL,
        bucket INTEGER NOT NULL,
        n INTEGER NOT NULL,
        PRIMARY KEY (account_id, day, campaign_id, bucket)
      ) WITHOUT ROWID, STRICT;
      INSERT INTO review_latency_v9
        SELECT r.ref, t.day, t.campaign_id, t.bucket, t.n FROM review_latency t JOIN account_refs r ON r.id = t.account_id;

      DROP TABLE messages;
      DROP TABLE identities;
      DROP TABLE conversations;
      DROP TABLE contacts;
      DROP TABLE receipt_events;
      DROP TABLE delivery_attempts;
      DROP TABLE deliveries;
      DROP TABLE parked_receipts;
      DROP TABLE carrier_ids;
      DROP TABLE review_counts;
      DROP TABLE review_latency;
      ALTER TABLE contacts_v9 RENAME TO contacts;
      ALTER TABLE identities_v9 RENAME TO identities;
      ALTER TABLE conversations_v9 RENAME TO conversations;
      ALTER TABLE messages_v9 RENAME TO messages;
      ALTER TABLE receipt_events_v9 RENAME TO receipt_events;
      ALTER TABLE deliveries_v9 RENAME TO deliveries;
      ALTER TABLE delivery_attempts_v9 RENAME TO delivery_attempts;
      ALTER TABLE parked_receipts_v9 RENAME TO parked_receipts;
      ALTER TABLE carrier_ids_v9 RENAME TO carrier_ids;
      ALTER TABLE review_counts_v9 RENAME TO review_counts;
      ALTER TABLE review_latency_v9 RENAME TO review_latency;

      -- The indexes of migrations 1, 2, 5 and 8, as they were.
      ${MESSAGE_INDEXES}
      CREATE UNIQUE INDEX receipt_events_id ON receipt_events (account_id, id);
      CREATE INDEX receipt_events_prune ON receipt_events (message_created_at);
      CREATE INDEX receipt_events_message ON receipt_events (account_id, message_id, seq);
      CREATE UNIQUE INDEX deliveries_id ON deliveries (account_id, id);
      CREATE INDEX deliveries_account_due ON deliveries (account_id, next_attempt_at, seq) WHERE state = 'pending';
      CREATE INDEX deliveries_due ON deliveries (next_attempt_at, seq) WHERE state = 'pending';
      CREATE INDEX deliveries_recipient ON deliveries (account_id, message_id, recipient, seq);
      CREATE INDEX deliveries_state ON deliveries (account_id, state, seq);
      CREATE INDEX deliveries_prune ON deliveries (message_created_at);
      CREATE INDEX deliveries_dead ON deliveries (account_id) WHERE state = 'dead';
      CREATE UNIQUE INDEX parked_receipts_fingerprint ON parked_receipts (account_id, fingerprint);
      CREATE INDEX parked_receipts_message ON parked_receipts (account_id, message_id);
      CREATE INDEX parked_receipts_age ON parked_receipts (parked_at);
      CREATE UNIQUE INDEX parked_receipts_carrier ON parked_receipts (route, carrier_id, fingerprint);
      CREATE INDEX carrier_ids_prune ON carrier_ids (created_at);
    `,
  },
  {
    version: 10,
    name: 'conversation refs in records, record refs in receipt events',
    sql: `
      -- A record names its conversation by the conversation's integer ref instead of carrying the contact's
      -- and the conversation's 36-character ids: the conversation is always the (contact, channel) pair's, so
      -- its row gives both ids back (record-refs.ts). That was 72 bytes of every record and 36 of every
      -- history index entry. A conversation's ref, and a record's, is its rowid, declared, so VACUUM cannot
      -- renumber it.
      CREATE TABLE conversations_v10 (
        ref INTEGER PRIMARY KEY,
        account_id INTEGER NOT NULL,
        contact_id TEXT NOT NULL,
        channel TEXT NOT NULL,
        id TEXT NOT NULL,
        UNIQUE (account_id, contact_id, channel),
        UNIQUE (account_id, id),
        FOREIGN KEY (account_id, contact_id) REFERENCES contacts (account_id, id)
      ) STRICT;
      INSERT INTO conversations_v10 (account_id, contact_id, channel, id)
        SELECT account_id, contact_id, channel, id FROM conversations ORDER BY account_id, contact_id, channel;

      CREATE TABLE messages_v10 (
        ref INTEGER PRIMARY KEY,
        account_id INTEGER NOT NULL,
        id TEXT NOT NULL,
        channel_user_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        channel TEXT NOT NULL,
        direction TEXT NOT NULL,
        conversation_ref INTEGER NOT NULL REFERENCES conversations_v10 (ref),
        campaign_id TEXT,
        text TEXT,
        content TEXT,
        status TEXT,
        sms_status TEXT,
        network TEXT,
        price REAL,
        counts INTEGER,
        dr_statuscode TEXT,
        dr_errcode TEXT,
        dr_time INTEGER,
        created_at INTEGER NOT NULL,
        UNIQUE (account_id, id, channel_user_id)
      ) STRICT;
      -- Each record keeps its rowid as its ref, in rowid order: the new table is written in the order the old
      -- one was.
      INSERT INTO messages_v10
        SELECT t.rowid, t.account_id, t.id, t.channel_user_id, t.seq, t.channel, t.direction, c.ref, t.campaign_id, t.text,
          t.content, t.status, t.sms_status, t.network, t.price, t.counts, t.dr_statuscode, t.dr_errcode,
          t.dr_time, t.created_at
        FROM messages t JOIN conversations_v10 c ON c.account_id = t.account_id AND c.id = t.conversation_id
        ORDER BY t.rowid;

      -- A receipt event names its recipient by the record's ref instead of the message id and number, which
      -- the record holds: 48 bytes of every event and of every entry of its index by message. A record and its
      -- events always go together (retention cuts both at the record's created_at, an account's deletion takes
      -- both), so every event finds its record; one that did not could not be shown and is not carried over.
      CREATE TABLE receipt_events_v10 (
        account_id INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        id TEXT NOT NULL,
        message_ref INTEGER NOT NULL,
        recorded_at INTEGER NOT NULL,
        message_created_at INTEGER NOT NULL,
        item TEXT NOT NULL,
        PRIMARY KEY (account_id, seq)
      ) WITHOUT ROWID, STRICT;
      INSERT INTO receipt_events_v10
        SELECT t.account_id, t.seq, t.id, m.ref, t.recorded_at, t.message_created_at, t.item
        FROM receipt_events t
          JOIN messages_v10 m ON m.account_id = t.account_id AND m.id = t.message_id AND m.channel_user_id = t.recipient
        ORDER BY 1, 2;

      DROP TABLE receipt_events;
      DROP TABLE messages;
      DROP TABLE conversations;
      ALTER TABLE conversations_v10 RENAME TO conversations;
      ALTER TABLE messages_v10 RENAME TO messages;
      ALTER TABLE receipt_events_v10 RENAME TO receipt_events;
      CREATE UNIQUE INDEX receipt_events_id ON receipt_events (account_id, id);
      CREATE INDEX receipt_events_prune ON receipt_events (message_created_at);
      CREATE INDEX receipt_events_message ON receipt_events (account_id, message_ref, seq);

      -- The keyset indexes of message-indexes.ts, by the conversation's ref.
      CREATE INDEX messages_history ON messages (account_id, conversation_ref, created_at, id, channel_user_id);
      CREATE INDEX messages_campaign ON messages (account_id, campaign_id, created_at, id, channel_user_id)
        WHERE campaign_id IS NOT NULL;
      CREATE INDEX messages_conversation_campaign
        ON messages (account_id, conversation_ref, campaign_id, created_at, id, channel_user_id)
        WHERE campaign_id IS NOT NULL;
    `,
  },
  {
    version: 11,
    name: 'receipt events and deliveries without their own time index, events without their id index, a conversation history index by time alone',
    sql: `
      -- Nothing reads an event by its id (a delivery is found by deliveries_id, which keeps the id unique
      -- among the events that queue one), and ULIDs do not collide: the index was 39 bytes a recipient.
      DROP INDEX receipt_events_id;
      -- Retention finds an expired event through its record (outbox.ts, pruneEvents), as it finds the record,
      -- and a delivery and its attempts through their event (one delivery per event, by its seq), so neither
      -- needs to carry the record's created_at, nor an index by it.
      DROP INDEX receipt_events_prune;
      ALTER TABLE receipt_events DROP COLUMN message_created_at;
      DROP INDEX deliveries_prune;
      ALTER TABLE deliveries DROP COLUMN message_created_at;
      -- A conversation's history index keys the records by time alone: the rowid that ends every entry gives
      -- an order without a sort, and the rare records of one conversation at the same millisecond are put in
      -- the contract's order (id, number) when read (queries.ts). The message id and number were 47 of the
      -- entry's 67 bytes. The campaign indexes keep them: one campaign's records at one time are common.
      DROP INDEX messages_history;
      CREATE INDEX messages_history ON messages (account_id, conversation_ref, created_at);
      DROP INDEX messages_conversation_campaign;
      CREATE INDEX messages_conversation_campaign ON messages (account_id, conversation_ref, campaign_id, created_at)
        WHERE campaign_id IS NOT NULL;
    `,
  },
  {
    version: 12,
    name: 'receipt events without the item their record holds',
    sql: `
      -- An event whose item is its record's as the record stands stores none (current-item.ts): the record's
      -- columns hold it, and it was 66 of an event's 134 bytes. The column becomes nullable, which SQLite does
      -- by rebuilding the table; the events that stand for their record's item now lose their copy of it.
      -- ${CURRENT_ITEM_FUNCTION} is the store's own currentItemOf (registerMigrationFunctions, below).
      CREATE TABLE receipt_events_v12 (
        account_id INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        id TEXT NOT NULL,
        message_ref INTEGER NOT NULL,
        recorded_at INTEGER NOT NULL,
        item TEXT,
        PRIMARY KEY (account_id, seq)
      ) WITHOUT ROWID, STRICT;
      INSERT INTO receipt_events_v12
        SELECT e.account_id, e.seq, e.id, e.message_ref, e.recorded_at,
          CASE WHEN m.ref IS NOT NULL AND e.item = ${CURRENT_ITEM_FUNCTION}(m.id, m.channel_user_id, m.sms_status,
              m.network, m.price, m.counts, m.dr_statuscode, m.dr_errcode, m.dr_time)
            THEN NULL ELSE e.item END
        FROM receipt_events e LEFT JOIN messages m ON m.ref = e.message_ref
        ORDER BY 1, 2;
      DROP TABLE receipt_events;
      ALTER TABLE receipt_events_v12 RENAME TO receipt_events;
      CREATE INDEX receipt_events_message ON receipt_events (account_id, message_ref, seq);
    `,
  },
  {
    version: 13,
    name: 'callback deliveries name their recipient by its record',
    sql: `
      -- A delivery names its recipient by its record's ref, as its event does (record-refs.ts), instead of the
      -- message id and number: 48 bytes of every delivery, and its index by recipient from about 65 bytes an entry
      -- to about 12. A recipient is one record, so "the same recipient" is the same ref. Entries by ref also land
      -- where the recent records' are, not at random places of the index.
      CREATE TABLE deliveries_v13 (
        account_id INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        id TEXT NOT NULL,
        message_ref INTEGER NOT NULL,
        state TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        next_attempt_at INTEGER,
        lease TEXT,
        lease_until INTEGER,
        last_at INTEGER,
        last_http_status INTEGER,
        last_error TEXT,
        last_duration_ms INTEGER,
        PRIMARY KEY (account_id, seq)
      ) WITHOUT ROWID, STRICT;
      -- One delivery per event, by its seq: the event names the record.
      INSERT INTO deliveries_v13
        SELECT d.account_id, d.seq, d.id, e.message_ref, d.state, d.attempts, d.created_at, d.next_attempt_at,
          d.lease, d.lease_until, d.last_at, d.last_http_status, d.last_error, d.last_duration_ms
        FROM deliveries d JOIN receipt_events e ON e.account_id = d.account_id AND e.seq = d.seq
        ORDER BY 1, 2;
      DROP TABLE deliveries;
      ALTER TABLE deliveries_v13 RENAME TO deliveries;
      CREATE UNIQUE INDEX deliveries_id ON deliveries (account_id, id);
      CREATE INDEX deliveries_account_due ON deliveries (account_id, next_attempt_at, seq) WHERE state = 'pending';
      CREATE INDEX deliveries_due ON deliveries (next_attempt_at, seq) WHERE state = 'pending';
      CREATE INDEX deliveries_record ON deliveries (account_id, message_ref, seq);
      CREATE INDEX deliveries_state ON deliveries (account_id, state, seq);
      CREATE INDEX deliveries_dead ON deliveries (account_id) WHERE state = 'dead';
    `,
  },
  {
    version: 14,
    name: 'callback deliveries without their due index across accounts',
    sql: `
      -- Its one reader was the metrics' count of pending deliveries, which deliveries_account_due (the same
      -- partial index, led by the account) answers as well: the relay's claims and its next-due time read
      -- each account's slice of that one. So every queued delivery wrote an entry that nothing needed, and
      -- every finished one removed it (docs/benchmarks.md, "Fifteenth pass").
      DROP INDEX deliveries_due;
    `,
  },
];

/**
 * The SQL functions the migrations call: `waybill_current_item(id, to, sms columns…)`, a record's current item as
 * stored (current-item.ts), which migration 12 compares every event's item with. migrate() registers them on its
 * connection; a tool that applies the migrations' SQL itself must too.
 */
export function registerMigrationFunctions(db: Database): void {
  db.function(
    CURRENT_ITEM_FUNCTION,
    { deterministic: true, varargs: true },
    (id: string, to: string, ...sms: SmsValues) => {
      const [sms_status, network, price, counts, dr_statuscode, dr_errcode, dr_time] = sms;
      const row = {
        id,
        channel_user_id: to,
        sms_status,
        network,
        price,
        counts,
        dr_statuscode,
        dr_errcode,
        dr_time,
      };
      return currentItemOf(fromRow.dlrRecipient(row));
    },
  );
}

/**
 * Applies the migrations not yet recorded in `schema_migrations`, each in its own transaction. Idempotent;
 * IMMEDIATE transactions take the write lock before checking, so two processes migrating one file at once
 * apply each step exactly once (the second waits on busy_timeout, then finds it done). Returns the steps this
 * call applied, oldest first.
 */
export function migrate(db: Database): AppliedMigration[] {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER NOT NULL PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at INTEGER NOT NULL
  ) STRICT`);
  const applied = db.prepare<[number], { version: number }>(
    'SELECT version FROM schema_migrations WHERE version = ?',
  );
  const record = db.prepare<[number, string, number]>(
    'INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)',
  );
  const done: AppliedMigration[] = [];
  registerMigrationFunctions(db);
  // SQLite's way to rebuild tables (https://sqlite.org/lang_altertable.html#otheralter): foreign keys off
  // while tables are dropped and renamed (the pragma cannot change inside a transaction), then every key
  // checked before the step commits, so no step leaves a broken reference behind.
  const enforcing = db.pragma('foreign_keys', { simple: true }) === 1;
  if (enforcing) db.pragma('foreign_keys = OFF');
  try {
    for (const migration of MIGRATIONS) {
      db.transaction(() => {
        if (applied.get(migration.version)) return;
        db.exec(migration.sql);
        const broken = db.pragma('foreign_key_check') as { table: string; parent: string }[];
        if (broken.length > 0)
          throw new Error(
            `migration ${migration.version} left ${broken.length} rows of ${broken[0]?.table} without their ${broken[0]?.parent}`,
          );
        record.run(migration.version, migration.name, Date.now());
        done.push({ version: migration.version, name: migration.name });
      }).immediate();
    }
  } finally {
    if (enforcing) db.pragma('foreign_keys = ON');
  }
  return done;
}

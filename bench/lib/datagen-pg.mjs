// The PostgreSQL side of bench/lib/datagen.mjs: the same dataset, bulk-loaded into the schema the server's
// migrations made (month partitions of `messages` made by the server's own ensurePartitions, the `message_keys`
// identity table and its `message_seq` sequence), then VACUUM (ANALYZE). Run it through bench/datagen.mjs:
//
//   node bench/datagen.mjs --database-url postgres://postgres@127.0.0.1:5432/waybill_bench --recipients 1000000
//
// Rows go in as arrays, INSERT … SELECT FROM unnest(…), in one transaction per connection over four
// connections (two take alternate message records, one message_keys with the contacts, identities and
// conversations, one the receipt events), so PostgreSQL works on a batch while this process makes the next.
// Each array travels as one delimited text parameter (string_to_array) written straight into a buffer, instead
// of node-pg quoting every element. The indexes and key constraints of messages, message_keys and
// receipt_events are dropped for the load and rebuilt from their own definitions after it (by sorting, which
// costs far less than inserting random keys one by one); the other tables keep theirs, foreign keys included.
import pg from 'pg';
import { serverModules } from './paths.mjs';

const { ensurePartitions } = await serverModules();

/** Records per batch (a batch of each connection is in flight while the next is made). */
const BATCH = 25_000;
/** Separates array elements in the text sent; NULL_MARK stands for NULL. Neither occurs in any value. */
const SEP = '\u001f';
const NULL_MARK = '\u001e';
const texts = (n) => `string_to_array($${n}, E'\\x1f', E'\\x1e')`;
const numbers = (n, type) => `string_to_array($${n}, ',', '')::${type}[]`;
const at = (column) => `'epoch'::timestamptz + ${column} * interval '1 millisecond'`;

/**
 * One column of a batch, written straight into a buffer as delimited text: `sep` between values, `none` for
 * NULL. Sent as a Buffer, node-pg passes it in binary format, which for a text parameter is the bytes
 * themselves: no string is built or joined (joining the many small strings cost more than making them). Every
 * value is ASCII (ids, numbers, fixed texts, JSON of those), written one byte per character.
 */
class Column {
  constructor(sep, none) {
    this.sep = sep.charCodeAt(0);
    this.none = none;
    this.buf = Buffer.allocUnsafe(1 << 16);
    this.len = 0;
    this.count = 0;
  }
  push(value) {
    const text = value === null ? this.none : typeof value === 'string' ? value : String(value);
    if (this.len + text.length + 1 > this.buf.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.len + text.length + 1));
      this.buf.copy(grown, 0, 0, this.len);
      this.buf = grown;
    }
    if (this.count++ > 0) this.buf[this.len++] = this.sep;
    this.len += this.buf.latin1Write(text, this.len);
  }
  get empty() {
    return this.count === 0;
  }
  /** The column's bytes so far, left in place. */
  bytes() {
    return this.buf.subarray(0, this.len);
  }
  /** The column's bytes; the column starts over (in a new buffer: these are still to be sent). */
  take() {
    const bytes = this.bytes();
    this.buf = Buffer.allocUnsafe(Math.max(1 << 16, this.len + (this.len >> 3)));
    this.len = 0;
    this.count = 0;
    return bytes;
  }
}

/** The values of several columns of the same kind, as one parameter. */
const joined = (list) => {
  const parts = list.filter((column) => !column.empty);
  if (parts.length === 0) return Buffer.alloc(0);
  const sep = Buffer.from([parts[0].sep]);
  return Buffer.concat(parts.flatMap((column, k) => (k === 0 ? [column.bytes()] : [sep, column.bytes()])));
};

/**
 * Columns collected row by row: `spec` names them in row order, a `:n` suffix for numbers (text otherwise).
 * `row(...values)` adds a row; `take(names)` gives the named columns' bytes, in that order, and starts them over.
 */
function table(spec) {
  const columns = {};
  for (const entry of spec.split(' ')) {
    const [name, kind] = entry.split(':');
    columns[name] = kind === 'n' ? new Column(',', '') : new Column(SEP, NULL_MARK);
  }
  const order = Object.values(columns);
  return {
    columns,
    row(...values) {
      for (let k = 0; k < order.length; k++) order[k].push(values[k]);
    },
    take: (names) => names.split(' ').map((name) => columns[name].take()),
    get rows() {
      return order[0].count;
    },
  };
}

/** Creates the database of `url` when it does not exist; with `force`, drops it first. */
async function ensureDatabase(url, force, log) {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  if (!name) throw new Error(`no database name in ${url}`);
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const quoted = `"${name.replaceAll('"', '""')}"`;
    const exists = (await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount > 0;
    if (exists && force) {
      await client.query(`DROP DATABASE ${quoted} WITH (FORCE)`);
      log(`  dropped database ${name}`);
    }
    if (!exists || force) await client.query(`CREATE DATABASE ${quoted}`);
  } finally {
    await client.end();
  }
}

/** The first instant of every UTC month from `fromMs` to `toMs`. */
function monthsOf(fromMs, toMs) {
  const months = [];
  const d = new Date(fromMs);
  let t = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  while (t <= toMs) {
    months.push(new Date(t));
    const m = new Date(t);
    t = Date.UTC(m.getUTCFullYear(), m.getUTCMonth() + 1, 1);
  }
  return months;
}

/**
 * A sink collecting rows into columns. `flush()` sends what is collected (at most one statement per connection,
 * so the previous batch must be done) and returns the promise of its statements.
 */
function pgSink(accountId, { messagesClients, keysClient, eventsClient }) {
  const account = accountId;
  // The records of a batch alternate between the message connections, one share each. A row ends with the SMS
  // columns in the order the sink's sms() receives them, then counts.
  const shares = messagesClients.map(() =>
    table(
      'seq:n at:n id channel direction contact user conversation campaign text content status ' +
        'smsStatus network price:n code errcode drTime:n counts:n',
    ),
  );
  const NO_SMS = [null, null, null, null, null, null, null];
  let records = 0;
  const share = () => shares[records++ % shares.length];
  const e = table('seq:n id messageId recipient recordedAt:n createdAt:n item');
  const c = table('id');
  const i = table('channel user contact');
  const v = table('contact channel id');
  return {
    events: true,
    contact: (id) => c.row(id),
    identity: (channel, user, contactId) => i.row(channel, user, contactId),
    conversation: (contactId, channel, id) => v.row(contactId, channel, id),
    sms(seq, createdAt, id, contactId, to, conv, campaign, text, ...sms) {
      share().row(
        seq,
        createdAt,
        id,
        'SMS',
        'outbound',
        contactId,
        to,
        conv,
        campaign,
        text,
        null,
        null,
        ...sms,
        1,
      );
    },
    inbound(seq, createdAt, id, contactId, from, conv, text) {
      share().row(
        seq,
        createdAt,
        id,
        'SMS',
        'inbound',
        contactId,
        from,
        conv,
        null,
        text,
        null,
        null,
        ...NO_SMS,
      );
    },
    chat(seq, createdAt, id, direction, contactId, user, conv, text, content, status) {
      const row = [
        seq,
        createdAt,
        id,
        'WHATSAPP',
        direction,
        contactId,
        user,
        conv,
        null,
        text,
        content,
        status,
      ];
      share().row(...row, ...NO_SMS);
    },
    event: (...row) => e.row(...row),
    /**
     * Sends the collected rows, one statement per connection (the previous batch must be done); resolves when
     * PostgreSQL has them all.
     */
    flush() {
      const sent = [];
      const query = (client, name, text, values) => sent.push(client.query({ name, text, values }));
      if (e.rows > 0) {
        query(
          eventsClient,
          'dg_events',
          `INSERT INTO receipt_events (account_id, seq, id, message_id, recipient, recorded_at, message_created_at,
             item)
           SELECT $1::uuid, u.seq, u.id, u.message_id, u.recipient, ${at('u.recorded_at')}, ${at('u.created_at')},
             u.item
           FROM unnest(${numbers(2, 'bigint')}, ${texts(3)}, ${texts(4)}, ${texts(5)}, ${numbers(6, 'bigint')},
             ${numbers(7, 'bigint')}, ${texts(8)})
             AS u (seq, id, message_id, recipient, recorded_at, created_at, item)`,
          [account, ...e.take('seq id messageId recipient recordedAt createdAt item')],
        );
      }
      if (records > 0) {
        // The records' identity rows (created_at and the ingest seq) with the contacts, identities and
        // conversations; foreign keys (identities and conversations → contacts) are checked at the end of the
        // statement, when the contacts it inserts are there.
        query(
          keysClient,
          'dg_keys',
          `WITH c AS (
             INSERT INTO contacts (account_id, id) SELECT $1::uuid, u FROM unnest(${texts(2)}::uuid[]) AS u
           ), i AS (
             INSERT INTO identities (account_id, channel, channel_user_id, contact_id)
             SELECT $1::uuid, * FROM unnest(${texts(3)}, ${texts(4)}, ${texts(5)}::uuid[])
           ), v AS (
             INSERT INTO conversations (account_id, contact_id, channel, id)
             SELECT $1::uuid, * FROM unnest(${texts(6)}::uuid[], ${texts(7)}, ${texts(8)}::uuid[])
           )
           INSERT INTO message_keys (account_id, id, channel_user_id, created_at, seq)
           SELECT $1::uuid, u.id, u.channel_user_id, ${at('u.at')}, u.seq
           FROM unnest(${texts(9)}, ${texts(10)}, ${numbers(11, 'bigint')}, ${numbers(12, 'bigint')})
             AS u (id, channel_user_id, at, seq)`,
          [
            account,
            ...c.take('id'),
            ...i.take('channel user contact'),
            ...v.take('contact channel id'),
            ...['id', 'user', 'at', 'seq'].map((name) => joined(shares.map((share) => share.columns[name]))),
          ],
        );
        shares.forEach((share, k) => {
          if (share.columns.id.empty) return;
          query(
            messagesClients[k],
            'dg_messages',
            `INSERT INTO messages (account_id, id, channel_user_id, created_at, channel, direction, contact_id,
               conversation_id, campaign_id, text, content, status, sms_status, network, price, counts,
               dr_statuscode, dr_errcode, dr_time)
             SELECT $1::uuid, u.id, u.channel_user_id, ${at('u.at')}, u.channel, u.direction, u.contact_id,
               u.conversation_id, u.campaign_id, u.text, u.content, u.status, u.sms_status, u.network, u.price,
               u.counts, u.dr_statuscode, u.dr_errcode, CASE WHEN u.dr_time IS NOT NULL THEN ${at('u.dr_time')} END
             FROM unnest(${texts(2)}, ${texts(3)}, ${numbers(4, 'bigint')}, ${texts(5)}, ${texts(6)},
               ${texts(7)}::uuid[], ${texts(8)}::uuid[], ${texts(9)}, ${texts(10)}, ${texts(11)}::json[],
               ${texts(12)}, ${texts(13)}, ${texts(14)}, ${numbers(15, 'numeric')}, ${numbers(16, 'integer')},
               ${texts(17)}, ${texts(18)}, ${numbers(19, 'bigint')})
               AS u (id, channel_user_id, at, channel, direction, contact_id, conversation_id, campaign_id, text,
                 content, status, sms_status, network, price, counts, dr_statuscode, dr_errcode, dr_time)`,
            [
              account,
              ...share.take(
                'id user at channel direction contact conversation campaign text content status smsStatus ' +
                  'network price counts code errcode drTime',
              ),
            ],
          );
          share.take('seq');
        });
      } else if (c.rows + i.rows + v.rows > 0) {
        throw new Error('datagen: contacts without records');
      }
      records = 0;
      const all = Promise.all(sent);
      all.catch(() => {}); // awaited by the caller; a failure must not go unhandled meanwhile
      return all;
    },
  };
}

/** Tables whose indexes and key constraints are dropped for the load and rebuilt after it. */
const BIG_TABLES = ['messages', 'message_keys', 'receipt_events'];

/**
 * The indexes of these tables, as the statements that rebuild them: primary keys and unique constraints as
 * ALTER TABLE … ADD CONSTRAINT (pg_get_constraintdef), other indexes as CREATE INDEX (pg_get_indexdef). The
 * definition of a partitioned table's index reads `ON ONLY`, which would build the parent's index alone (and
 * leave it invalid): rebuilt with `ON`, as the migration made it, it is built on every partition too.
 */
async function indexesOf(client, tables) {
  const constraints = await client.query(
    `SELECT c.conname AS name, t.relname AS "table", pg_get_constraintdef(c.oid) AS def
     FROM pg_constraint c
     JOIN pg_class t ON t.oid = c.conrelid
     JOIN pg_namespace n ON n.oid = t.relnamespace
     WHERE n.nspname = current_schema() AND t.relname = ANY($1::text[]) AND c.contype IN ('p', 'u')
     ORDER BY c.oid`,
    [tables],
  );
  const indexes = await client.query(
    `SELECT i.relname AS name, pg_get_indexdef(i.oid) AS def
     FROM pg_index x
     JOIN pg_class i ON i.oid = x.indexrelid
     JOIN pg_class t ON t.oid = x.indrelid
     JOIN pg_namespace n ON n.oid = t.relnamespace
     WHERE n.nspname = current_schema() AND t.relname = ANY($1::text[])
       AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.oid)
     ORDER BY i.oid`,
    [tables],
  );
  const ident = (name) => `"${name.replaceAll('"', '""')}"`;
  return [
    ...constraints.rows.map((c) => ({
      name: c.name,
      drop: `ALTER TABLE ${ident(c.table)} DROP CONSTRAINT ${ident(c.name)}`,
      create: `ALTER TABLE ${ident(c.table)} ADD CONSTRAINT ${ident(c.name)} ${c.def}`,
    })),
    ...indexes.rows.map((i) => ({
      name: i.name,
      drop: `DROP INDEX ${ident(i.name)}`,
      create: i.def.replace(/ ON ONLY /, ' ON '),
    })),
  ];
}

/** Loads the dataset of `options` into the PostgreSQL database of `url`; see datagen.mjs generate(). */
export async function loadPostgres(
  options,
  url,
  { log, force, prepareDatabase, createDataset, periodOf, rollupBackfill },
) {
  await ensureDatabase(url, force, log);
  const { startMs, endMs } = periodOf(options);
  const accountId = await prepareDatabase(url, startMs);
  const pool = new pg.Pool({ connectionString: url, max: 5, application_name: 'waybill-datagen' });
  pool.on('error', () => {});
  let phase = performance.now();
  const lap = () => {
    const now = performance.now();
    const text = `${((now - phase) / 1000).toFixed(1)} s`;
    phase = now;
    return text;
  };
  const clients = [];
  for (let k = 0; k < 4; k++) clients.push(await pool.connect());
  const [messagesClient, keysClient, eventsClient] = clients;
  const messagesClients = [clients[0], clients[3]];
  try {
    // The month partitions ingest would have made, by the server's own code.
    await ensurePartitions(pool, 'public', monthsOf(startMs, endMs - 1), new Date(), new Set());
    const indexes = await indexesOf(messagesClient, BIG_TABLES);
    for (const { drop } of indexes) await messagesClient.query(drop);
    log(`  dropped ${indexes.map((i) => i.name).join(', ')} (rebuilt after the load)`);

    for (const client of clients) {
      await client.query('SET synchronous_commit = off');
      await client.query('BEGIN');
    }
    const sink = pgSink(accountId, { messagesClients, keysClient, eventsClient });
    const gen = createDataset(options, sink);
    let inFlight = Promise.resolve();
    let nextLog = performance.now() + 5000;
    while (!gen.done) {
      gen.run(BATCH); // meanwhile PostgreSQL takes the previous batch
      await inFlight;
      inFlight = sink.flush();
      if (performance.now() >= nextLog) {
        nextLog = performance.now() + 5000;
        log(`  ${gen.produced.toLocaleString('en')} / ${gen.shape.records.toLocaleString('en')} records`);
      }
    }
    await inFlight;
    await eventsClient.query('UPDATE accounts SET last_event_seq = $2 WHERE id = $1', [
      accountId,
      gen.events,
    ]);
    await keysClient.query(`SELECT setval('message_seq', $1)`, [gen.lastSeq]);
    await Promise.all(clients.map((client) => client.query('COMMIT')));
    log(`  rows written in ${lap()}`);

    // Rebuilt in parallel, one index per connection at a time, the biggest first.
    const queue = [...indexes];
    await Promise.all(
      clients.map(async (client) => {
        await client.query(`SET maintenance_work_mem = '256MB'`);
        for (let next = queue.shift(); next; next = queue.shift()) {
          const started = performance.now();
          await client.query(next.create);
          log(`  rebuilt ${next.name} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
        }
      }),
    );
    log(`  indexes rebuilt in ${lap()}`);
    // The review rollup, as migration 7 counts the records already there (the store keeps it on every write).
    await messagesClient.query(rollupBackfill);
    log(`  review rollup counted in ${lap()}`);
    await messagesClient.query('VACUUM (ANALYZE)');
    log(`  VACUUM (ANALYZE) ${lap()}`);
    const { rows } = await messagesClient.query(
      'SELECT pg_database_size(current_database())::bigint AS bytes',
    );
    return { accountId, summary: gen.summary(), bytes: Number(rows[0].bytes) };
  } catch (error) {
    await Promise.all(clients.map((client) => client.query('ROLLBACK').catch(() => {})));
    throw error;
  } finally {
    for (const client of clients) client.release();
    await pool.end();
  }
}

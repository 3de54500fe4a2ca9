import type { Database, RunResult } from 'better-sqlite3';
import {
  ACCOUNT_COLUMNS,
  type AccountRow,
  DLR_COLUMNS,
  type DlrRow,
  MESSAGE_COLUMNS,
  type MessageParams,
  type MessageRow,
  NEW_MESSAGE_COLUMNS,
  type SqlValue,
} from './rows.js';

/** The parameters of a history page; `before_*` only on the statements that continue from a cursor. */
export interface HistoryParams {
  account: string;
  conversation?: string;
  campaign?: string;
  channel?: string;
  before_at?: number;
  before_id?: string;
  before_user?: string;
  limit: number;
}

export type HistoryKind = 'conversation' | 'conversationCampaign' | 'campaign' | 'campaignChannel';

// Each filter names its index so the plan cannot drift to a scan-and-sort; a wrong name fails at open.
const HISTORY_FILTERS: Record<HistoryKind, { index: string; where: string }> = {
  conversation: { index: 'messages_history', where: 'conversation_id = @conversation' },
  conversationCampaign: {
    index: 'messages_conversation_campaign',
    where: 'conversation_id = @conversation AND campaign_id = @campaign',
  },
  campaign: { index: 'messages_campaign', where: 'campaign_id = @campaign' },
  campaignChannel: { index: 'messages_campaign', where: 'campaign_id = @campaign AND channel = @channel' },
};

function historyStatement(
  db: Database,
  kind: HistoryKind,
  keyset: boolean,
): Prepared<[HistoryParams], MessageRow> {
  const { index, where } = HISTORY_FILTERS[kind];
  // Row-value comparison under BINARY collation: the same total order as comparePositions, and an index
  // range rather than OFFSET, so rows arriving between pages cannot shift a later page.
  const after = keyset
    ? ' AND (created_at, id, channel_user_id) < (@before_at, @before_id, @before_user)'
    : '';
  return db.prepare<[HistoryParams], MessageRow>(
    `SELECT ${MESSAGE_COLUMNS} FROM messages INDEXED BY ${index}
     WHERE account_id = @account AND ${where}${after}
     ORDER BY created_at DESC, id DESC, channel_user_id DESC
     LIMIT @limit`,
  );
}

type NewAccountParams = Omit<AccountRow, 'secret_hash'> & { secret_hash: Buffer; callback_secret: string };

interface AccountPatchParams {
  id: string;
  name: string | null;
  ip_whitelist: string | null;
  dlr_query_enabled: number | null;
  balance: number | null;
  credit_limit: number | null;
  set_callback_url: number;
  callback_url: string | null;
  callback_enabled: number | null;
}

/**
 * The part of a prepared statement the store uses, under a name of our own: better-sqlite3's types keep theirs
 * in a namespace that declaration output cannot name.
 */
export interface Prepared<P extends unknown[], R> {
  run(...params: P): RunResult;
  get(...params: P): R | undefined;
  all(...params: P): R[];
}

/** Every statement the store runs, prepared once when the store opens. */
export function prepareStatements(db: Database) {
  const prepare = <P extends unknown[] = [], R = unknown>(sql: string): Prepared<P, R> =>
    db.prepare<P, R>(sql);
  const history = (kind: HistoryKind) => ({
    first: historyStatement(db, kind, false),
    next: historyStatement(db, kind, true),
  });
  return {
    ping: prepare('SELECT 1'),

    insertAccount: prepare<[NewAccountParams]>(
      `INSERT INTO accounts (${ACCOUNT_COLUMNS}, callback_secret)
       VALUES (@id, @name, @key, @secret_hash, @ip_whitelist, @dlr_query_enabled, @balance, @credit_limit,
               @callback_url, @callback_enabled, @created_at, @callback_secret)`,
    ),
    // Children first: the foreign keys point from identities and conversations to contacts, and from messages
    // to conversations. The account row goes last (deleteAccountRow).
    deleteAccountData: [
      'delivery_attempts',
      'deliveries',
      'receipt_events',
      'parked_receipts',
      'messages',
      'identities',
      'conversations',
      'contacts',
    ].map((table) => prepare<[string]>(`DELETE FROM ${table} WHERE account_id = ?`)),
    deleteAccountRow: prepare<[string]>('DELETE FROM accounts WHERE id = ?'),
    anyAccount: prepare<[], { one: number }>('SELECT 1 AS one FROM accounts LIMIT 1'),
    accountById: prepare<[string], AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = ?`),
    accountByKey: prepare<[string], AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE key = ?`),
    callbackSecrets: prepare<
      [string],
      {
        callback_secret: string;
        previous_callback_secret: string | null;
        previous_callback_secret_until: number | null;
      }
    >(
      `SELECT callback_secret, previous_callback_secret, previous_callback_secret_until
       FROM accounts WHERE id = ?`,
    ),
    clearCallbackSecrets: prepare<
      [],
      { id: string; callback_secret: string; previous_callback_secret: string | null }
    >(
      `SELECT id, callback_secret, previous_callback_secret FROM accounts
       WHERE callback_secret NOT LIKE 'sealed:%' OR previous_callback_secret NOT LIKE 'sealed:%'`,
    ),
    setCallbackSecrets: prepare<[string, string | null, string]>(
      'UPDATE accounts SET callback_secret = ?, previous_callback_secret = ? WHERE id = ?',
    ),
    rotateCallbackSecret: prepare<[number, string, string], AccountRow>(
      `UPDATE accounts SET previous_callback_secret = callback_secret, previous_callback_secret_until = ?,
         callback_secret = ?
       WHERE id = ? RETURNING ${ACCOUNT_COLUMNS}`,
    ),
    // One statement for every PATCH shape: NULL means "not given", except callbackUrl, where NULL clears.
    updateAccount: prepare<[AccountPatchParams], AccountRow>(
      `UPDATE accounts SET
         name = coalesce(@name, name),
         ip_whitelist = coalesce(@ip_whitelist, ip_whitelist),
         dlr_query_enabled = coalesce(@dlr_query_enabled, dlr_query_enabled),
         balance = coalesce(@balance, balance),
         credit_limit = coalesce(@credit_limit, credit_limit),
         callback_url = CASE WHEN @set_callback_url THEN @callback_url ELSE callback_url END,
         -- A new callback URL turns callbacks back on (after a 410 disabled them), unless the patch says.
         callback_enabled = coalesce(
           @callback_enabled,
           CASE WHEN @set_callback_url AND @callback_url IS NOT callback_url THEN 1 ELSE callback_enabled END
         )
       WHERE id = @id
       RETURNING ${ACCOUNT_COLUMNS}`,
    ),
    setSecretHash: prepare<[Buffer, string], AccountRow>(
      `UPDATE accounts SET secret_hash = ? WHERE id = ? RETURNING ${ACCOUNT_COLUMNS}`,
    ),
    batchAccount: prepare<[string], { last_message_seq: number; callbacks: number }>(
      `SELECT last_message_seq, callback_url IS NOT NULL AND callback_enabled AS callbacks
       FROM accounts WHERE id = ?`,
    ),
    setLastMessageSeq: prepare<[number, string]>('UPDATE accounts SET last_message_seq = ? WHERE id = ?'),

    identity: prepare<[string, string, string], { contact_id: string }>(
      'SELECT contact_id FROM identities WHERE account_id = ? AND channel = ? AND channel_user_id = ?',
    ),

    // The reads of an ingest batch take all of its keys at once, as one JSON array: each key is still one search
    // of the index named in its plan, but one statement per batch rather than per key halves their CPU (measured
    // on a 100,000-record account: 5 against 10 µs per identity, 8 against 14 per record).
    identitiesByKeys: prepare<
      [{ account: string; keys: string }],
      { channel: string; channel_user_id: string; contact_id: string }
    >(
      `SELECT channel, channel_user_id, contact_id FROM identities
       WHERE account_id = @account
         AND (channel, channel_user_id) IN (SELECT value ->> 0, value ->> 1 FROM json_each(@keys))`,
    ),
    // Pinned to the UNIQUE (account_id, contact_id, channel) index (SQLite names it _2, after the primary key):
    // left to itself the planner (3.54, with or without ANALYZE) searches the primary key on account_id alone
    // and reads every identity of the account, 8 ms a call at 100,000 identities and the whole cost of a
    // message batch. A missing index fails at open; test/unit/sqlite-plans pins every plan.
    identitiesOfContacts: prepare<
      [{ account: string; contacts: string }],
      { contact_id: string; channel: string; channel_user_id: string }
    >(
      `SELECT contact_id, channel, channel_user_id FROM identities INDEXED BY sqlite_autoindex_identities_2
       WHERE account_id = @account AND contact_id IN (SELECT value FROM json_each(@contacts))`,
    ),
    conversationsOfContacts: prepare<
      [{ account: string; contacts: string }],
      { contact_id: string; channel: string; id: string }
    >(
      `SELECT contact_id, channel, id FROM conversations
       WHERE account_id = @account AND contact_id IN (SELECT value FROM json_each(@contacts))`,
    ),
    insertContact: prepare<[string, string]>(
      'INSERT INTO contacts (account_id, id) VALUES (?, ?) ON CONFLICT DO NOTHING',
    ),
    insertIdentity: prepare<[string, string, string, string]>(
      'INSERT INTO identities (account_id, channel, channel_user_id, contact_id) VALUES (?, ?, ?, ?)',
    ),
    conversation: prepare<[string, string, string], { id: string }>(
      'SELECT id FROM conversations WHERE account_id = ? AND contact_id = ? AND channel = ?',
    ),
    insertConversation: prepare<[string, string, string, string]>(
      'INSERT INTO conversations (account_id, contact_id, channel, id) VALUES (?, ?, ?, ?)',
    ),

    messagesByKeys: prepare<[{ account: string; keys: string }], MessageRow>(
      `SELECT ${MESSAGE_COLUMNS} FROM messages
       WHERE account_id = @account
         AND (id, channel_user_id) IN (SELECT value ->> 0, value ->> 1 FROM json_each(@keys))`,
    ),
    // One row per statement, on purpose: a multi-row VALUES insert needs a statement journal (a row may fail
    // after others went in), which copied every page it touched and cost more than the calls it saved
    // (measured here: 48 against 33 µs per record). Positional, in NEW_MESSAGE_COLUMNS order.
    insertMessage: prepare<[SqlValue[]]>(
      `INSERT INTO messages (${NEW_MESSAGE_COLUMNS})
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    // createdAt and the ingest sequence never change once a record exists.
    updateMessage: prepare<[MessageParams]>(
      `UPDATE messages SET channel = @channel, direction = @direction, contact_id = @contact_id,
         conversation_id = @conversation_id, campaign_id = @campaign_id, text = @text, content = @content,
         status = @status, sms_status = @sms_status, network = @network, price = @price, counts = @counts,
         dr_statuscode = @dr_statuscode, dr_errcode = @dr_errcode, dr_time = @dr_time
       WHERE account_id = @account_id AND id = @id AND channel_user_id = @channel_user_id`,
    ),
    // The outbound SMS recipients of a receipt batch's message ids, with the rowid that updateReceipt writes
    // them by (read in the same transaction, so it cannot have moved). Callers order each id's rows by `seq`.
    recipientsOfIds: prepare<[{ account: string; ids: string }], MessageRow & { seq: number; row: number }>(
      `SELECT ${MESSAGE_COLUMNS}, seq, rowid AS row FROM messages
       WHERE account_id = @account AND id IN (SELECT value FROM json_each(@ids)) AND sms_status IS NOT NULL`,
    ),
    // A receipt changes only the SMS and receipt columns: text and content are never read back and rewritten.
    // By rowid, from recipientsOfIds: one search of the table rather than of the key index and then the table.
    updateReceipt: prepare<[SqlValue[]]>(
      `UPDATE messages SET sms_status = ?, network = ?, price = ?, counts = ?, dr_statuscode = ?, dr_errcode = ?,
         dr_time = ?
       WHERE rowid = ?`,
    ),
    parkedOfIds: prepare<
      [{ account: string; ids: string; since: number }],
      { ref: number; receipt: string; parked_at: number }
    >(
      `SELECT ref, receipt, parked_at FROM parked_receipts
       WHERE account_id = @account AND message_id IN (SELECT value FROM json_each(@ids)) AND parked_at >= @since`,
    ),
    park: prepare<[string, string, string, string, number]>(
      `INSERT INTO parked_receipts (account_id, message_id, fingerprint, receipt, parked_at)
       VALUES (?, ?, ?, ?, ?)
       -- A replay is parked once; its park time restarts, so a copy expired but not yet dropped comes back.
       ON CONFLICT (account_id, fingerprint) DO UPDATE SET parked_at = max(parked_at, excluded.parked_at)`,
    ),
    unpark: prepare<[number]>('DELETE FROM parked_receipts WHERE ref = ?'),
    dropParkedBefore: prepare<[number]>('DELETE FROM parked_receipts WHERE parked_at < ?'),
    // The primary key finds every recipient of the id; sorting that handful by seq is cheap.
    // No ORDER BY: SQLite's sorter costs ~4× the primary-key lookup even for the 1–3 rows of a message
    // (measured under /dlr load, docs/benchmarks.md), so callers order by `seq` in JavaScript. Only the columns
    // /dlr shows are read (receipt batches read whole records with recipientsOfIds).
    dlrItems: prepare<[string, string], DlrRow & { seq: number }>(
      `SELECT ${DLR_COLUMNS}, seq FROM messages
       WHERE account_id = ? AND id = ? AND sms_status IS NOT NULL`,
    ),
    messagesByIds: prepare<[{ account: string; ids: string; campaign: string | null }], MessageRow>(
      `SELECT ${MESSAGE_COLUMNS} FROM messages
       WHERE account_id = @account AND id IN (SELECT value FROM json_each(@ids))
         AND (@campaign IS NULL OR campaign_id = @campaign)
       ORDER BY created_at, id, channel_user_id`,
    ),
    history: {
      conversation: history('conversation'),
      conversationCampaign: history('conversationCampaign'),
      campaign: history('campaign'),
      campaignChannel: history('campaignChannel'),
    } satisfies Record<HistoryKind, unknown>,
    // Walks the history index one conversation at a time, so only the expired range of each is visited.
    prune: prepare<[number]>(
      `DELETE FROM messages
       WHERE (account_id, conversation_id) IN (SELECT account_id, id FROM conversations) AND created_at < ?`,
    ),
  };
}

export type Statements = ReturnType<typeof prepareStatements>;

import type pg from 'pg';
import { isUuid } from '../../domain/formats.js';
import type { Account, AccountPatch, NewAccount } from '../../domain/records.js';
import type { Channel } from '../../domain/vocabulary.js';
import { DuplicateKeyError, type HistoryQuery, type Store, StoreUnavailableError } from '../store.js';
import { withDeadlines } from './deadline.js';
import { ingestMessagesOnce } from './ingest-messages.js';
import { ingestReceiptsOnce } from './ingest-receipts.js';
import { intakeRouteCalls } from './intake-routes.js';
import { migrate } from './migrations.js';
import * as outbox from './outbox.js';
import { dropParkedBefore } from './parked.js';
import { ensurePartitions } from './partitions.js';
import { pepperFingerprintCalls } from './pepper-fingerprint.js';
import { checkSchemaName, createPool, inTransaction, isUniqueViolation } from './pool.js';
import { prune } from './prune.js';
import {
  ACCOUNT_COLUMNS,
  type AccountRow,
  accountFromRow,
  accountWithSecretFromRow,
  type CallbackSecretRow,
  callbackSecretsFromRow,
  DLR_COLUMNS,
  type DlrRow,
  dlrRecipientFromRow,
  joinRecord,
  MESSAGE_COLUMNS,
  type MessageRow,
  messageFromRow,
} from './rows.js';

export interface PostgresStoreOptions {
  /** The primary: every write, and every read not listed under `readUrl`. */
  url: string;
  /**
   * A read replica for the query endpoints' reads (findDlr, findMessagesByIds, resolveContact, listHistory,
   * getAccountByKey). They then lag the primary by the replica's delay. Default: read from `url`.
   */
  readUrl?: string;
  /** Connections per pool (the replica gets a pool of its own of the same size). */
  poolSize: number;
  /** `statement_timeout` of every connection, in milliseconds; 0 turns it off. */
  statementTimeoutMs: number;
  /** The schema holding Waybill's tables, created by `migrate()` when missing. @default 'public' */
  schema?: string;
  /**
   * The deadline of every store call but `migrate` and `prune` (WAYBILL_DB_TIMEOUT_MS), in milliseconds: past
   * it the call fails with a StoreUnavailableError, and the connection it was using is destroyed. It also
   * bounds opening a connection and waiting for a free one. See deadline.ts. @default 5000
   */
  timeoutMs?: number;
}

/** How long a metrics scrape waits for fresh queue counts before it takes the last ones (see outboxStats). */
const STATS_WAIT_MS = 100;

/** The tables holding an account's data, children before their parents (deleteAccount). */
const ACCOUNT_TABLES = [
  'delivery_attempts',
  'deliveries',
  'receipt_events',
  'parked_receipts',
  'message_keys',
  'messages',
  'identities',
  'conversations',
  'contacts',
] as const;

/** Store calls that are maintenance, not requests: not bounded by `timeoutMs` (see deadline.ts). */
const MAINTENANCE = new Set(['migrate', 'prune']);

/**
 * Opens a PostgreSQL store. Nothing connects until the first call; run `migrate()` before use.
 *
 * Hot queries are named prepared statements (node-postgres `name:`): parsed and planned once per connection.
 * Behind PgBouncer in transaction mode that needs PgBouncer 1.21 or later with `max_prepared_statements` set
 * (it then tracks protocol-level prepared statements across server connections); older PgBouncer in that mode
 * fails with "prepared statement … does not exist" (docs/operations.md).
 *
 * @example
 * const store = openPostgresStore({ url: 'postgres://waybill@db/waybill', poolSize: 10, statementTimeoutMs: 5000 });
 * await store.migrate();
 */
export function openPostgresStore(options: PostgresStoreOptions): Store {
  const schema = checkSchemaName(options.schema ?? 'public');
  const timeoutMs = options.timeoutMs ?? 5000;
  const poolOptions = {
    poolSize: options.poolSize,
    statementTimeoutMs: options.statementTimeoutMs,
    schema,
    connectTimeoutMs: timeoutMs,
    queryTimeoutMs: timeoutMs,
  };
  const primary = createPool({ ...poolOptions, url: options.url });
  const replica =
    options.readUrl === undefined ? primary : createPool({ ...poolOptions, url: options.readUrl });
  // Migrations and pruning get a connection of their own, opened when first needed, whose statements may run
  // as long as statement_timeout allows (the client gives up `timeoutMs` after that: the server's cancel never
  // came back, so the network is gone).
  let maintenancePool: pg.Pool | undefined;
  const maintenance = () => {
    maintenancePool ??= createPool({
      ...poolOptions,
      url: options.url,
      poolSize: 1,
      queryTimeoutMs: options.statementTimeoutMs > 0 ? options.statementTimeoutMs + timeoutMs : 0,
    });
    return maintenancePool;
  };
  // Month partitions this process knows exist; see ensurePartitions.
  const partitions = new Set<string>();

  const accountQuery = async (name: string, text: string, values: unknown[], pool = primary) =>
    (await pool.query<AccountRow>({ name, text, values })).rows[0];

  let closed = false;
  const store: Store = {
    engine: 'postgres',

    async migrate() {
      return migrate(maintenance(), schema);
    },
    async ping() {
      await primary.query('SELECT 1');
      if (replica !== primary) await replica.query('SELECT 1');
    },
    async close() {
      // pg refuses to end a pool twice; a second close (shutdown racing a failure path) is a no-op here.
      if (closed) return;
      closed = true;
      await primary.end();
      if (replica !== primary) await replica.end();
      await maintenancePool?.end();
    },
    ...pepperFingerprintCalls(primary),
    ...intakeRouteCalls(primary),

    async createAccount(account: NewAccount): Promise<Account> {
      try {
        const row = await accountQuery(
          'wb_insert_account',
          `INSERT INTO accounts (id, name, key, secret_hash, callback_secret, ip_whitelist, dlr_query_enabled,
             balance, credit_limit, callback_url, callback_enabled, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
           RETURNING ${ACCOUNT_COLUMNS}`,
          [
            account.id,
            account.name,
            account.key,
            account.secretHash,
            account.callbackSecret,
            account.ipWhitelist,
            account.dlrQueryEnabled,
            account.balance,
            account.creditLimit,
            account.callbackUrl,
            account.callbackEnabled,
            account.createdAt.toISOString(),
          ],
        );
        if (!row) throw new Error(`account ${account.id} was not returned by its insert`);
        return accountFromRow(row);
      } catch (error) {
        if (isUniqueViolation(error, 'accounts_key')) {
          throw new DuplicateKeyError(`account key ${account.key} is taken`);
        }
        throw error;
      }
    },
    async hasAccounts() {
      const result = await primary.query({ name: 'wb_any_account', text: 'SELECT 1 FROM accounts LIMIT 1' });
      return (result.rowCount ?? 0) > 0;
    },
    async getAccount(id) {
      if (!isUuid(id)) return null;
      const row = await accountQuery('wb_account', `SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = $1`, [
        id,
      ]);
      return row ? accountFromRow(row) : null;
    },
    async getAccountByKey(key) {
      const row = await accountQuery(
        'wb_account_by_key',
        `SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE key = $1`,
        [key],
        replica,
      );
      return row ? accountWithSecretFromRow(row) : null;
    },
    async getCallbackSecrets(id) {
      if (!isUuid(id)) return null;
      const result = await primary.query<CallbackSecretRow>({
        name: 'wb_callback_secrets',
        text: `SELECT callback_secret, previous_callback_secret, previous_callback_secret_until
               FROM accounts WHERE id = $1`,
        values: [id],
      });
      const row = result.rows[0];
      return row ? callbackSecretsFromRow(row) : null;
    },
    async sealCallbackSecrets(seal) {
      return sealCallbackSecrets(primary, seal);
    },
    async rotateCallbackSecret(id, sealed, previousUntil) {
      if (!isUuid(id)) return null;
      // SET reads the row as it was: the previous secret becomes the one that was current.
      const row = await accountQuery(
        'wb_rotate_callback_secret',
        `UPDATE accounts SET previous_callback_secret = callback_secret, previous_callback_secret_until = $2,
           callback_secret = $3
         WHERE id = $1 RETURNING ${ACCOUNT_COLUMNS}`,
        [id, previousUntil.toISOString(), sealed],
      );
      return row ? accountFromRow(row) : null;
    },
    async updateAccount(id: string, patch: AccountPatch) {
      if (!isUuid(id)) return null;
      const row = await accountQuery(
        'wb_update_account',
        `UPDATE accounts SET
           name = COALESCE($2::text, name),
           ip_whitelist = COALESCE($3::text[], ip_whitelist),
           dlr_query_enabled = COALESCE($4::boolean, dlr_query_enabled),
           balance = COALESCE($5::numeric, balance),
           credit_limit = COALESCE($6::numeric, credit_limit),
           callback_url = CASE WHEN $7::boolean THEN $8::text ELSE callback_url END,
           -- A new callback URL turns callbacks back on (after a 410 turned them off), unless the patch says.
           callback_enabled = COALESCE(
             $9::boolean,
             CASE WHEN $7::boolean AND $8::text IS DISTINCT FROM callback_url THEN true ELSE callback_enabled END
           )
         WHERE id = $1
         RETURNING ${ACCOUNT_COLUMNS}`,
        [
          id,
          patch.name ?? null,
          patch.ipWhitelist ?? null,
          patch.dlrQueryEnabled ?? null,
          patch.balance ?? null,
          patch.creditLimit ?? null,
          patch.callbackUrl !== undefined,
          patch.callbackUrl ?? null,
          patch.callbackEnabled ?? null,
        ],
      );
      return row ? accountFromRow(row) : null;
    },
    async setSecretHash(id, secretHash) {
      if (!isUuid(id)) return null;
      const row = await accountQuery(
        'wb_set_secret_hash',
        `UPDATE accounts SET secret_hash = $2 WHERE id = $1 RETURNING ${ACCOUNT_COLUMNS}`,
        [id, secretHash],
      );
      return row ? accountFromRow(row) : null;
    },
    async deleteAccount(id) {
      if (!isUuid(id)) return false;
      return inTransaction(primary, async (client) => {
        // The account row is locked first: a receipt ingest (which updates it) or a new contact (whose foreign
        // key locks it) waits, then finds the account gone. Children go before their parents: identities and
        // conversations refer to contacts, messages to conversations, so a message ingested into an existing
        // conversation meanwhile fails this delete on its foreign key rather than outliving the account.
        const found = await client.query({
          name: 'wb_delete_account_lock',
          text: 'SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE',
          values: [id],
        });
        if (found.rowCount === 0) return { commit: false, value: false };
        for (const table of ACCOUNT_TABLES) {
          await client.query({
            name: `wb_delete_account_${table}`,
            text: `DELETE FROM ${table} WHERE account_id = $1`,
            values: [id],
          });
        }
        await client.query({
          name: 'wb_delete_account',
          text: 'DELETE FROM accounts WHERE id = $1',
          values: [id],
        });
        return { commit: true, value: true };
      });
    },

    async ingestMessages(accountId, items, now, options) {
      // Partition DDL runs before, in transactions of its own: it must not hold the batch's row locks while
      // it waits for the parent table, and a created partition stays useful even if the batch is refused.
      await ensurePartitions(
        primary,
        schema,
        items.map((i) => i.createdAt ?? now),
        now,
        partitions,
      );
      return inTransaction(primary, (client) => ingestMessagesOnce(client, accountId, items, now, options));
    },
    async ingestReceipts(accountId, items, now, options) {
      const dryRun = options?.dryRun === true;
      return inTransaction(primary, (client) => ingestReceiptsOnce(client, accountId, items, now, dryRun));
    },

    async findDlr(accountId, messageId) {
      if (!isUuid(accountId)) return [];
      const result = await replica.query<DlrRow>({
        name: 'wb_dlr',
        text: `SELECT ${DLR_COLUMNS}
               FROM message_keys k
               ${joinRecord('k')}
               WHERE k.account_id = $1 AND k.id = $2 AND m.sms_status IS NOT NULL
               ORDER BY k.seq`,
        values: [accountId, messageId],
      });
      return result.rows.map(dlrRecipientFromRow);
    },
    async findMessagesByIds(accountId, ids, campaignId) {
      if (ids.length === 0 || !isUuid(accountId)) return [];
      const values: unknown[] = [accountId, ids];
      if (campaignId !== undefined) values.push(campaignId);
      const result = await replica.query<MessageRow>({
        name: campaignId === undefined ? 'wb_messages_by_ids' : 'wb_messages_by_ids_campaign',
        text: `SELECT ${MESSAGE_COLUMNS}
               FROM message_keys k
               ${joinRecord('k')}
               WHERE k.account_id = $1 AND k.id = ANY($2::text[])
                 ${campaignId === undefined ? '' : 'AND m.campaign_id = $3'}
               ORDER BY m.created_at, m.id, m.channel_user_id`,
        values,
      });
      return result.rows.map(messageFromRow);
    },
    async resolveContact(accountId: string, channel: Channel, channelUserId: string) {
      if (!isUuid(accountId)) return null;
      const result = await replica.query<{ contact_id: string }>({
        name: 'wb_resolve_contact',
        text: 'SELECT contact_id FROM identities WHERE account_id = $1 AND channel = $2 AND channel_user_id = $3',
        values: [accountId, channel, channelUserId],
      });
      return result.rows[0]?.contact_id ?? null;
    },
    async listHistory(accountId, query) {
      if (!isUuid(accountId) || (query.contactId !== undefined && !isUuid(query.contactId))) return [];
      const result = await replica.query<MessageRow>(historyStatement(accountId, query));
      return result.rows.map(messageFromRow);
    },

    // The feed and the outbox read the primary: a relay must see what it leased, and an operator what they
    // just changed.
    async listReceiptEvents(accountId, afterSeq, limit) {
      if (!isUuid(accountId)) return [];
      return outbox.listEvents(primary, accountId, afterSeq, limit);
    },
    async claimDeliveries(request) {
      return outbox.claim(primary, request);
    },
    async finishAttempt(claimed, outcome) {
      await outbox.finish(primary, claimed, outcome);
    },
    async releaseClaim(claimed) {
      await outbox.release(primary, claimed, new Date());
    },
    async nextDeliveryDue() {
      return outbox.nextDue(primary);
    },
    async listDeliveries(accountId, query) {
      if (!isUuid(accountId)) return [];
      return outbox.listDeliveries(primary, accountId, query);
    },
    async getDelivery(accountId, id) {
      if (!isUuid(accountId)) return null;
      return outbox.getDelivery(primary, accountId, id);
    },
    async redeliver(accountId, id, now) {
      if (!isUuid(accountId)) return null;
      return outbox.redeliver(primary, accountId, id, now);
    },
    async redeliverDead(accountId, now) {
      if (!isUuid(accountId)) return 0;
      return outbox.redeliverDead(primary, accountId, now);
    },
    async outboxStats() {
      return outbox.stats(primary);
    },
    async dropParkedBefore(cutoff) {
      return dropParkedBefore(primary, cutoff);
    },

    async prune(cutoff) {
      return prune(maintenance(), schema, cutoff, partitions);
    },
  };
  const bounded = withDeadlines(store, timeoutMs, MAINTENANCE);
  return { ...bounded, outboxStats: latestStats(bounded) };
}

type OutboxStats = Awaited<ReturnType<Store['outboxStats']>>;

/**
 * `outboxStats` for the metrics scrape, which must never stall on the database (CONTRACT §11). One count query
 * runs at a time, under the store's deadline. A scrape that starts one waits for it at most
 * {@link STATS_WAIT_MS}; a scrape that finds one still running, or comes after one failed, does not wait at
 * all (it starts the next in the background). Without fresh counts a scrape takes those of the last query
 * that finished, or fails when there are none, and the metrics keep their last values. So during an outage
 * one connection at most waits on these counts, and after it the gauges are fresh again a scrape later.
 */
function latestStats(store: Store): () => Promise<OutboxStats> {
  let last: OutboxStats | undefined;
  let lastFailed = false;
  let running: Promise<OutboxStats> | undefined;
  const start = () => {
    const query = store.outboxStats();
    query.then(
      (stats) => {
        last = stats;
        lastFailed = false;
        running = undefined;
      },
      () => {
        lastFailed = true;
        running = undefined;
      },
    );
    return query;
  };
  return async () => {
    const waitMs = running === undefined && !lastFailed ? STATS_WAIT_MS : 0;
    running ??= start();
    if (waitMs > 0) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<undefined>((resolve) => {
        timer = setTimeout(resolve, waitMs, undefined);
      });
      try {
        const fresh = await Promise.race([running, late]);
        if (fresh !== undefined) return fresh;
      } finally {
        clearTimeout(timer);
      }
    }
    if (last !== undefined) return last;
    throw new StoreUnavailableError('no queue counts yet: the database has not answered');
  };
}

/**
 * Seals the callback secrets still stored in clear, current and previous. The rows are locked as they are
 * read, so a rotation or a second instance sealing at the same start waits, and the second then finds nothing
 * left in clear.
 */
async function sealCallbackSecrets(pool: pg.Pool, seal: (clear: string) => string): Promise<number> {
  const sealIfClear = (value: string | null) =>
    value === null || value.startsWith('sealed:') ? value : seal(value);
  return inTransaction(pool, async (client) => {
    const clear = await client.query<{
      id: string;
      callback_secret: string;
      previous_callback_secret: string | null;
    }>(
      `SELECT id, callback_secret, previous_callback_secret FROM accounts
       WHERE callback_secret NOT LIKE 'sealed:%' OR previous_callback_secret NOT LIKE 'sealed:%'
       ORDER BY id
       FOR UPDATE`,
    );
    if (clear.rows.length > 0) {
      await client.query(
        `UPDATE accounts a SET callback_secret = u.current, previous_callback_secret = u.previous
         FROM unnest($1::uuid[], $2::text[], $3::text[]) AS u (id, current, previous)
         WHERE a.id = u.id`,
        [
          clear.rows.map((r) => r.id),
          clear.rows.map((r) => sealIfClear(r.callback_secret)),
          clear.rows.map((r) => sealIfClear(r.previous_callback_secret)),
        ],
      );
    }
    return { commit: true, value: clear.rows.length };
  });
}

/**
 * The keyset query for one shape of history request. Each shape (contact or campaign, with or without the
 * other filters, first page or next) is its own named statement, so each gets a plan that walks its index
 * backwards from the cursor: one generic statement with `$n IS NULL OR …` would let a generic plan filter
 * instead, and deep pages would then cost their depth.
 */
function historyStatement(accountId: string, query: HistoryQuery): pg.QueryConfig {
  const values: unknown[] = [accountId];
  const param = (value: unknown): string => {
    values.push(value);
    return `$${values.length}`;
  };
  const where = ['m.account_id = $1'];
  const shape: string[] = [];
  if (query.contactId !== undefined) {
    if (query.channel === undefined) throw new Error('a contact history query needs a channel');
    shape.push('contact');
    where.push(
      `m.conversation_id = (SELECT c.id FROM conversations c WHERE c.account_id = $1 AND c.contact_id = ${param(query.contactId)}::uuid AND c.channel = ${param(query.channel)})`,
    );
  } else if (query.campaignId === undefined) {
    throw new Error('a history query needs a contactId or a campaignId');
  } else if (query.channel !== undefined) {
    shape.push('channel');
    where.push(`m.channel = ${param(query.channel)}`);
  }
  if (query.campaignId !== undefined) {
    shape.push('campaign');
    where.push(`m.campaign_id = ${param(query.campaignId)}`);
  }
  if (query.before !== undefined) {
    shape.push('before');
    const at = param(query.before.createdAt.toISOString());
    // The plain bound on created_at lets PostgreSQL skip newer month partitions; the row comparison is the
    // exact keyset.
    where.push(
      `m.created_at <= ${at}::timestamptz`,
      `(m.created_at, m.id, m.channel_user_id) < (${at}::timestamptz, ${param(query.before.id)}, ${param(query.before.channelUserId)})`,
    );
  }
  const limit = param(query.limit);
  return {
    name: `wb_history_${shape.join('_')}`,
    text: `SELECT ${MESSAGE_COLUMNS} FROM messages m WHERE ${where.join(' AND ')}
           ORDER BY m.created_at DESC, m.id DESC, m.channel_user_id DESC LIMIT ${limit}`,
    values,
  };
}

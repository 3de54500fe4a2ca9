import type pg from 'pg';
import { isUuid } from '../../domain/formats.js';
import type { Account, AccountPatch, NewAccount } from '../../domain/records.js';
import type { Channel } from '../../domain/vocabulary.js';
import { DuplicateKeyError, type HistoryQuery, type Store } from '../store.js';
import { ingestMessagesOnce } from './ingest-messages.js';
import { ingestReceiptsOnce } from './ingest-receipts.js';
import { migrate } from './migrations.js';
import { ensurePartitions } from './partitions.js';
import { checkSchemaName, createPool, inTransaction, isUniqueViolation } from './pool.js';
import { prune } from './prune.js';
import {
  ACCOUNT_COLUMNS,
  type AccountRow,
  accountFromRow,
  accountWithSecretFromRow,
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
}

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
  const poolOptions = { poolSize: options.poolSize, statementTimeoutMs: options.statementTimeoutMs, schema };
  const primary = createPool({ ...poolOptions, url: options.url });
  const replica =
    options.readUrl === undefined ? primary : createPool({ ...poolOptions, url: options.readUrl });
  // Month partitions this process knows exist; see ensurePartitions.
  const partitions = new Set<string>();

  const accountQuery = async (name: string, text: string, values: unknown[], pool = primary) =>
    (await pool.query<AccountRow>({ name, text, values })).rows[0];

  let closed = false;
  return {
    engine: 'postgres',

    async migrate() {
      await migrate(primary, schema);
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
    },

    async createAccount(account: NewAccount): Promise<Account> {
      try {
        const row = await accountQuery(
          'wb_insert_account',
          `INSERT INTO accounts (id, name, key, secret_hash, callback_secret, ip_whitelist, dlr_query_enabled,
             balance, credit_limit, callback_url, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
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
    async getCallbackSecret(id) {
      if (!isUuid(id)) return null;
      const result = await primary.query<{ callback_secret: string }>({
        name: 'wb_callback_secret',
        text: 'SELECT callback_secret FROM accounts WHERE id = $1',
        values: [id],
      });
      return result.rows[0]?.callback_secret ?? null;
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
           callback_url = CASE WHEN $7::boolean THEN $8::text ELSE callback_url END
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
      const dryRun = options?.dryRun === true;
      return inTransaction(primary, (client) => ingestMessagesOnce(client, accountId, items, now, dryRun));
    },
    async ingestReceipts(accountId, items, _now, options) {
      const dryRun = options?.dryRun === true;
      return inTransaction(primary, (client) => ingestReceiptsOnce(client, accountId, items, dryRun));
    },

    async findDlr(accountId, messageId) {
      if (!isUuid(accountId)) return [];
      const result = await replica.query<MessageRow>({
        name: 'wb_dlr',
        text: `SELECT ${MESSAGE_COLUMNS}
               FROM message_keys k
               ${joinRecord('k')}
               WHERE k.account_id = $1 AND k.id = $2 AND m.sms_status IS NOT NULL
               ORDER BY k.seq`,
        values: [accountId, messageId],
      });
      return result.rows.map(messageFromRow);
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

    async prune(cutoff) {
      return prune(primary, schema, cutoff, partitions);
    },
  };
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

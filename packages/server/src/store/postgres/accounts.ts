import type pg from 'pg';
import { isUuid } from '../../domain/formats.js';
import type { Account, AccountPatch, NewAccount } from '../../domain/records.js';
import type { AccountRow, CallbackSecretRow } from '../rows.js';
import { type AccountStore, DuplicateKeyError } from '../store.js';
import { inTransaction, isUniqueViolation } from './pool.js';
import { ACCOUNT_COLUMNS, type Columns, fromRow } from './rows.js';

/** The tables holding an account's data (deleteAccount). */
const ACCOUNT_TABLES = [
  'delivery_attempts',
  'deliveries',
  'receipt_events',
  'parked_receipts',
  'carrier_ids',
  'message_keys',
  'messages',
  'identities',
  'conversations',
  'contacts',
  'review_counts',
  'review_latency',
] as const;

/**
 * Accounts on PostgreSQL, all on the primary. The lookup by key decides access (a secret, a lockout, an account
 * just created or rotated): a replica a few seconds behind would refuse a correct new secret and count it
 * toward a lockout, so it never reads one. The account cache (auth/account-cache.ts) keeps its load to about
 * one read per key per WAYBILL_ACCOUNT_CACHE_MS.
 */
export function accounts(primary: pg.Pool): AccountStore {
  const accountQuery = async (name: string, text: string, values: unknown[]) =>
    (await primary.query<AccountRow<Columns>>({ name, text, values })).rows[0];

  return {
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
        return fromRow.account(row);
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
    async searchAccounts(text, limit) {
      const result = await primary.query<AccountRow<Columns>>({
        name: 'wb_search_accounts',
        text: `SELECT ${ACCOUNT_COLUMNS} FROM accounts
               WHERE $1::text IS NULL OR strpos(lower(name), lower($1)) > 0 OR key = $1 OR id::text = $1
               ORDER BY name COLLATE "C", id LIMIT $2`,
        values: [text, limit],
      });
      return result.rows.map((row) => fromRow.account(row));
    },
    async getAccount(id) {
      if (!isUuid(id)) return null;
      const row = await accountQuery('wb_account', `SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = $1`, [
        id,
      ]);
      return row ? fromRow.account(row) : null;
    },
    async getAccountByKey(key) {
      const row = await accountQuery(
        'wb_account_by_key',
        `SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE key = $1`,
        [key],
      );
      return row ? fromRow.accountWithSecret(row) : null;
    },
    async getCallbackSecrets(id) {
      if (!isUuid(id)) return null;
      const result = await primary.query<CallbackSecretRow<Columns>>({
        name: 'wb_callback_secrets',
        text: `SELECT callback_secret, previous_callback_secret, previous_callback_secret_until
               FROM accounts WHERE id = $1`,
        values: [id],
      });
      const row = result.rows[0];
      return row ? fromRow.callbackSecrets(row) : null;
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
      return row ? fromRow.account(row) : null;
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
      return row ? fromRow.account(row) : null;
    },
    async setSecretHash(id, secretHash) {
      if (!isUuid(id)) return null;
      const row = await accountQuery(
        'wb_set_secret_hash',
        `UPDATE accounts SET secret_hash = $2 WHERE id = $1 RETURNING ${ACCOUNT_COLUMNS}`,
        [id, secretHash],
      );
      return row ? fromRow.account(row) : null;
    },
    async deleteAccount(id) {
      if (!isUuid(id)) return false;
      return inTransaction(primary, async (client) => {
        // The account row is locked first, FOR UPDATE: every ingest batch holds it FOR KEY SHARE from its first
        // statement to its commit (lockAccount), so this waits for the batches under way, and those that come
        // later wait for this and then find no account. Nothing can write a row of the account while its rows
        // are deleted here.
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

import Database from 'better-sqlite3';
import type { Account, AccountPatch, NewAccount } from '../../domain/records.js';
import type { AccountRow, CallbackSecretRow } from '../rows.js';
import { type AccountStore, DuplicateKeyError } from '../store.js';
import { refOf } from './account-ref.js';
import { preparer } from './database.js';
import { ACCOUNT_COLUMNS, type Columns, fromRow } from './rows.js';

type NewAccountParams = Omit<AccountRow<Columns>, 'secret_hash'> & {
  secret_hash: Buffer;
  callback_secret: string;
};

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

/** The statements of the account methods, prepared once when the store opens. */
export function prepareAccounts(db: Database.Database) {
  const prepare = preparer(db);
  return {
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
      'carrier_ids',
      'messages',
      'identities',
      'conversations',
      'contacts',
      'review_counts',
      'review_latency',
    ].map((table) => prepare<[string]>(`DELETE FROM ${table} WHERE account_id = ${refOf('?')}`)),
    deleteAccountRow: prepare<[string]>('DELETE FROM accounts WHERE id = ?'),
    searchAccounts: prepare<[{ q: string | null; limit: number }], AccountRow<Columns>>(
      `SELECT ${ACCOUNT_COLUMNS} FROM accounts
       WHERE @q IS NULL OR instr(lower(name), lower(@q)) > 0 OR key = @q OR id = @q
       ORDER BY name, id LIMIT @limit`,
    ),
    anyAccount: prepare<[], { one: number }>('SELECT 1 AS one FROM accounts LIMIT 1'),
    accountById: prepare<[string], AccountRow<Columns>>(
      `SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = ?`,
    ),
    accountByKey: prepare<[string], AccountRow<Columns>>(
      `SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE key = ?`,
    ),
    callbackSecrets: prepare<[string], CallbackSecretRow<Columns>>(
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
    rotateCallbackSecret: prepare<[number, string, string], AccountRow<Columns>>(
      `UPDATE accounts SET previous_callback_secret = callback_secret, previous_callback_secret_until = ?,
         callback_secret = ?
       WHERE id = ? RETURNING ${ACCOUNT_COLUMNS}`,
    ),
    // One statement for every PATCH shape: NULL means "not given", except callbackUrl, where NULL clears.
    updateAccount: prepare<[AccountPatchParams], AccountRow<Columns>>(
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
    setSecretHash: prepare<[Buffer, string], AccountRow<Columns>>(
      `UPDATE accounts SET secret_hash = ? WHERE id = ? RETURNING ${ACCOUNT_COLUMNS}`,
    ),
  };
}

export type AccountStatements = ReturnType<typeof prepareAccounts>;

/**
 * Accounts on SQLite. Deleting one is a single IMMEDIATE transaction: SQLite has one writer, so no ingest batch
 * of the account can run while it deletes (a batch that comes after it finds no account).
 */
export function accounts(db: Database.Database, sql: AccountStatements): AccountStore {
  const deleteAccount = db.transaction((id: string) => {
    if (!sql.accountById.get(id)) return false;
    for (const statement of sql.deleteAccountData) statement.run(id);
    return sql.deleteAccountRow.run(id).changes > 0;
  });
  const sealCallbackSecrets = db.transaction((seal: (clear: string) => string) => {
    const sealIfClear = (value: string) => (value.startsWith('sealed:') ? value : seal(value));
    const rows = sql.clearCallbackSecrets.all();
    for (const row of rows) {
      const previous = row.previous_callback_secret;
      sql.setCallbackSecrets.run(
        sealIfClear(row.callback_secret),
        previous === null ? null : sealIfClear(previous),
        row.id,
      );
    }
    return rows.length;
  });

  return {
    async createAccount(account: NewAccount): Promise<Account> {
      try {
        sql.insertAccount.run({
          id: account.id,
          name: account.name,
          key: account.key,
          secret_hash: account.secretHash,
          callback_secret: account.callbackSecret,
          ip_whitelist: JSON.stringify(account.ipWhitelist),
          dlr_query_enabled: account.dlrQueryEnabled ? 1 : 0,
          balance: account.balance,
          credit_limit: account.creditLimit,
          callback_url: account.callbackUrl,
          callback_enabled: account.callbackEnabled ? 1 : 0,
          created_at: account.createdAt.getTime(),
        });
      } catch (error) {
        if (isUniqueViolation(error, 'accounts.key'))
          throw new DuplicateKeyError(`account key ${account.key} is taken`);
        throw error;
      }
      const row = sql.accountById.get(account.id);
      if (!row) throw new Error(`account ${account.id} vanished after insert`);
      return fromRow.account(row);
    },
    async hasAccounts() {
      return sql.anyAccount.get() !== undefined;
    },
    async searchAccounts(text, limit) {
      return sql.searchAccounts.all({ q: text, limit }).map((row) => fromRow.account(row));
    },
    async getAccount(id) {
      const row = sql.accountById.get(id);
      return row ? fromRow.account(row) : null;
    },
    async getAccountByKey(key) {
      const row = sql.accountByKey.get(key);
      return row ? fromRow.accountWithSecret(row) : null;
    },
    async getCallbackSecrets(id) {
      const row = sql.callbackSecrets.get(id);
      return row ? fromRow.callbackSecrets(row) : null;
    },
    async sealCallbackSecrets(seal) {
      return sealCallbackSecrets.immediate(seal);
    },
    async rotateCallbackSecret(id, sealed, previousUntil) {
      const row = sql.rotateCallbackSecret.get(previousUntil.getTime(), sealed, id);
      return row ? fromRow.account(row) : null;
    },
    async updateAccount(id: string, patch: AccountPatch) {
      const row = sql.updateAccount.get({
        id,
        name: patch.name ?? null,
        ip_whitelist: patch.ipWhitelist ? JSON.stringify(patch.ipWhitelist) : null,
        dlr_query_enabled: patch.dlrQueryEnabled === undefined ? null : patch.dlrQueryEnabled ? 1 : 0,
        balance: patch.balance ?? null,
        credit_limit: patch.creditLimit ?? null,
        set_callback_url: patch.callbackUrl === undefined ? 0 : 1,
        callback_url: patch.callbackUrl ?? null,
        callback_enabled: patch.callbackEnabled === undefined ? null : patch.callbackEnabled ? 1 : 0,
      });
      return row ? fromRow.account(row) : null;
    },
    async setSecretHash(id, secretHash) {
      const row = sql.setSecretHash.get(secretHash, id);
      return row ? fromRow.account(row) : null;
    },
    async deleteAccount(id) {
      return deleteAccount.immediate(id);
    },
  };
}

function isUniqueViolation(error: unknown, column: string): boolean {
  return (
    error instanceof Database.SqliteError &&
    error.code === 'SQLITE_CONSTRAINT_UNIQUE' &&
    error.message.includes(column)
  );
}

import type pg from 'pg';
import { isUuid } from '../../domain/formats.js';
import type { ConsoleSession, SessionStore } from '../store.js';

interface SessionRow {
  token_hash: Buffer;
  account_id: string | null;
  created_at: Date;
  expires_at: Date;
}

const sessionOf = (row: SessionRow): ConsoleSession => ({
  tokenHash: row.token_hash,
  accountId: row.account_id,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
});

const COLUMNS = 'token_hash, account_id, created_at, expires_at';

/** The store calls of console sessions (the table of migration 8). */
export function sessionCalls(pool: pg.Pool): SessionStore {
  return {
    async createSession(session, now) {
      // One statement: the expired rows go in the same round trip as the new one arrives.
      await pool.query({
        name: 'wb_create_session',
        text: `WITH dropped AS (DELETE FROM console_sessions WHERE expires_at <= $5)
               INSERT INTO console_sessions (${COLUMNS}) VALUES ($1, $2, $3, $4)`,
        values: [session.tokenHash, session.accountId, session.createdAt, session.expiresAt, now],
      });
    },
    async findSession(tokenHash, now) {
      const result = await pool.query<SessionRow>({
        name: 'wb_find_session',
        text: `SELECT ${COLUMNS} FROM console_sessions WHERE token_hash = $1 AND expires_at > $2`,
        values: [tokenHash, now],
      });
      const row = result.rows[0];
      return row ? sessionOf(row) : null;
    },
    async touchSession(tokenHash, now, expiresAt) {
      const result = await pool.query<SessionRow>({
        name: 'wb_touch_session',
        text: `UPDATE console_sessions SET expires_at = $3 WHERE token_hash = $1 AND expires_at > $2
               RETURNING ${COLUMNS}`,
        values: [tokenHash, now, expiresAt],
      });
      const row = result.rows[0];
      return row ? sessionOf(row) : null;
    },
    async deleteSession(tokenHash) {
      await pool.query({
        name: 'wb_delete_session',
        text: 'DELETE FROM console_sessions WHERE token_hash = $1',
        values: [tokenHash],
      });
    },
    async deleteAccountSessions(accountId) {
      if (!isUuid(accountId)) return 0;
      const result = await pool.query({
        name: 'wb_delete_account_sessions',
        text: 'DELETE FROM console_sessions WHERE account_id = $1',
        values: [accountId],
      });
      return result.rowCount ?? 0;
    },
  };
}

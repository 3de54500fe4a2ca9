import type { Database } from 'better-sqlite3';
import type { ConsoleSession, SessionStore } from '../store.js';

interface SessionRow {
  token_hash: Buffer;
  account_id: string | null;
  created_at: number;
  expires_at: number;
}

const sessionOf = (row: SessionRow): ConsoleSession => ({
  tokenHash: row.token_hash,
  accountId: row.account_id,
  createdAt: new Date(row.created_at),
  expiresAt: new Date(row.expires_at),
});

/** The store calls of console sessions (the table of migration 8). */
export function sessionCalls(db: Database): SessionStore {
  const insert = db.prepare<[Buffer, string | null, number, number]>(
    'INSERT INTO console_sessions (token_hash, account_id, created_at, expires_at) VALUES (?, ?, ?, ?)',
  );
  const dropExpired = db.prepare<[number]>('DELETE FROM console_sessions WHERE expires_at <= ?');
  const find = db.prepare<[Buffer, number], SessionRow>(
    `SELECT token_hash, account_id, created_at, expires_at FROM console_sessions
     WHERE token_hash = ? AND expires_at > ?`,
  );
  const touch = db.prepare<[number, Buffer, number], SessionRow>(
    `UPDATE console_sessions SET expires_at = ? WHERE token_hash = ? AND expires_at > ?
     RETURNING token_hash, account_id, created_at, expires_at`,
  );
  const remove = db.prepare<[Buffer]>('DELETE FROM console_sessions WHERE token_hash = ?');
  const removeOfAccount = db.prepare<[string]>('DELETE FROM console_sessions WHERE account_id = ?');
  const create = db.transaction((session: ConsoleSession, now: Date) => {
    dropExpired.run(now.getTime());
    insert.run(
      session.tokenHash,
      session.accountId,
      session.createdAt.getTime(),
      session.expiresAt.getTime(),
    );
  });
  return {
    async createSession(session, now) {
      create.immediate(session, now);
    },
    async findSession(tokenHash, now) {
      const row = find.get(tokenHash, now.getTime());
      return row ? sessionOf(row) : null;
    },
    async touchSession(tokenHash, now, expiresAt) {
      const row = touch.get(expiresAt.getTime(), tokenHash, now.getTime());
      return row ? sessionOf(row) : null;
    },
    async deleteSession(tokenHash) {
      remove.run(tokenHash);
    },
    async deleteAccountSessions(accountId) {
      return removeOfAccount.run(accountId).changes;
    },
  };
}

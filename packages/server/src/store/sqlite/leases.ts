import type { Database } from 'better-sqlite3';
import type { BindLease, BindStatusRecord, LeaseStore } from '../store.js';

interface LeaseRow {
  holder: string;
  expires_at: number;
  state: string;
  since: number | null;
  last_error: string | null;
}

/** The store calls of SMPP bind leases (the table of migration 6), by this machine's clock. */
export function leaseCalls(db: Database): LeaseStore {
  const take = db.prepare<{
    route: string;
    holder: string;
    now: number;
    expires: number;
    state: string;
    since: number | null;
    error: string | null;
  }>(
    `INSERT INTO bind_leases (route, holder, expires_at, state, since, last_error)
     VALUES (@route, @holder, @expires, @state, @since, @error)
     ON CONFLICT (route) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at,
       state = excluded.state, since = excluded.since, last_error = excluded.last_error
     WHERE bind_leases.holder = excluded.holder OR bind_leases.expires_at <= @now`,
  );
  const release = db.prepare<[string, string]>('DELETE FROM bind_leases WHERE route = ? AND holder = ?');
  const read = db.prepare<[string, number], LeaseRow>(
    'SELECT holder, expires_at, state, since, last_error FROM bind_leases WHERE route = ? AND expires_at > ?',
  );
  return {
    async takeBindLease(route, holder, ttlMs, status: BindStatusRecord) {
      const now = Date.now();
      const { changes } = take.run({
        route,
        holder,
        now,
        expires: now + ttlMs,
        state: status.state,
        since: status.since?.getTime() ?? null,
        error: status.lastError,
      });
      return changes > 0;
    },
    async releaseBindLease(route, holder) {
      release.run(route, holder);
    },
    async getBindLease(route): Promise<BindLease | null> {
      const row = read.get(route, Date.now());
      if (!row) return null;
      return {
        holder: row.holder,
        expiresAt: new Date(row.expires_at),
        state: row.state as BindLease['state'],
        since: row.since === null ? null : new Date(row.since),
        lastError: row.last_error,
      };
    },
  };
}

import type pg from 'pg';
import type { BindLease, LeaseStore } from '../store.js';

interface LeaseRow {
  holder: string;
  expires_at: Date;
  state: string;
  since: Date | null;
  last_error: string | null;
}

/**
 * The store calls of SMPP bind leases (the table of migration 6). Expiry is measured by the database's clock:
 * instances whose clocks disagree still agree on who holds a bind.
 */
export function leaseCalls(pool: pg.Pool): LeaseStore {
  return {
    async takeBindLease(route, holder, ttlMs, status) {
      const result = await pool.query({
        name: 'wb_take_bind_lease',
        text: `INSERT INTO bind_leases (route, holder, expires_at, state, since, last_error)
               VALUES ($1, $2, clock_timestamp() + $3 * interval '1 millisecond', $4, $5, $6)
               ON CONFLICT (route) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at,
                 state = excluded.state, since = excluded.since, last_error = excluded.last_error
               WHERE bind_leases.holder = excluded.holder OR bind_leases.expires_at <= clock_timestamp()
               RETURNING holder`,
        values: [route, holder, ttlMs, status.state, status.since, status.lastError],
      });
      return (result.rowCount ?? 0) > 0;
    },
    async releaseBindLease(route, holder) {
      await pool.query({
        name: 'wb_release_bind_lease',
        text: 'DELETE FROM bind_leases WHERE route = $1 AND holder = $2',
        values: [route, holder],
      });
    },
    async getBindLease(route): Promise<BindLease | null> {
      const result = await pool.query<LeaseRow>({
        name: 'wb_bind_lease',
        text: `SELECT holder, expires_at, state, since, last_error FROM bind_leases
               WHERE route = $1 AND expires_at > clock_timestamp()`,
        values: [route],
      });
      const row = result.rows[0];
      if (!row) return null;
      return {
        holder: row.holder,
        expiresAt: row.expires_at,
        state: row.state as BindLease['state'],
        since: row.since,
        lastError: row.last_error,
      };
    },
  };
}

import type pg from 'pg';
import type { PepperFingerprint, Store } from '../store.js';

interface FingerprintRow {
  fingerprint: string;
  origin: string;
  recorded_at: Date;
}

const fromRow = (row: FingerprintRow): PepperFingerprint => ({
  fingerprint: row.fingerprint,
  origin: row.origin,
  recordedAt: row.recorded_at,
});

/**
 * The store calls that read and record the pepper fingerprint (the one-row table of migration 3), and the sample
 * that tests a pepper against accounts from before it.
 */
export function pepperFingerprintCalls(
  pool: pg.Pool,
): Pick<Store, 'pepperFingerprint' | 'claimPepperFingerprint' | 'sealedCallbackSecret'> {
  const read = async () =>
    (
      await pool.query<FingerprintRow>(
        'SELECT fingerprint, origin, recorded_at FROM pepper_fingerprint WHERE id = 1',
      )
    ).rows[0];
  return {
    async pepperFingerprint() {
      const row = await read();
      return row ? fromRow(row) : null;
    },
    async sealedCallbackSecret() {
      const result = await pool.query<{ callback_secret: string }>(
        "SELECT callback_secret FROM accounts WHERE callback_secret LIKE 'sealed:%' LIMIT 1",
      );
      return result.rows[0]?.callback_secret ?? null;
    },
    async claimPepperFingerprint(candidate) {
      // The insert either writes the row or finds the one a concurrent start committed first, which then wins.
      const inserted = await pool.query<FingerprintRow>(
        `INSERT INTO pepper_fingerprint (id, fingerprint, origin, recorded_at) VALUES (1, $1, $2, $3)
         ON CONFLICT (id) DO NOTHING
         RETURNING fingerprint, origin, recorded_at`,
        [candidate.fingerprint, candidate.origin, candidate.recordedAt],
      );
      const row = inserted.rows[0] ?? (await read());
      if (!row) throw new Error('the pepper fingerprint vanished after its insert');
      return fromRow(row);
    },
  };
}

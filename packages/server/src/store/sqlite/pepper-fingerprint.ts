import type { Database } from 'better-sqlite3';
import type { PepperFingerprint, Store } from '../store.js';

interface FingerprintRow {
  fingerprint: string;
  origin: string;
  recorded_at: number;
}

/**
 * The store calls that read and record the pepper fingerprint (the one-row table of migration 3), and the sample
 * that tests a pepper against accounts from before it.
 */
export function pepperFingerprintCalls(
  db: Database,
): Pick<Store, 'pepperFingerprint' | 'claimPepperFingerprint' | 'sealedCallbackSecret'> {
  const read = db.prepare<[], FingerprintRow>(
    'SELECT fingerprint, origin, recorded_at FROM pepper_fingerprint WHERE id = 1',
  );
  const insert = db.prepare<[string, string, number]>(
    `INSERT INTO pepper_fingerprint (id, fingerprint, origin, recorded_at) VALUES (1, ?, ?, ?)
     ON CONFLICT (id) DO NOTHING`,
  );
  const sealed = db.prepare<[], { callback_secret: string }>(
    "SELECT callback_secret FROM accounts WHERE callback_secret LIKE 'sealed:%' LIMIT 1",
  );
  const stored = (): PepperFingerprint | null => {
    const row = read.get();
    return row
      ? { fingerprint: row.fingerprint, origin: row.origin, recordedAt: new Date(row.recorded_at) }
      : null;
  };
  return {
    async pepperFingerprint() {
      return stored();
    },
    async sealedCallbackSecret() {
      return sealed.get()?.callback_secret ?? null;
    },
    async claimPepperFingerprint(candidate) {
      // One IMMEDIATE transaction: of two processes starting at once, the second reads the first's row.
      return db
        .transaction(() => {
          insert.run(candidate.fingerprint, candidate.origin, candidate.recordedAt.getTime());
          return stored() ?? candidate;
        })
        .immediate();
    },
  };
}

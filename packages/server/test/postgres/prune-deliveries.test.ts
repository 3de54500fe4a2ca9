import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/store.js';
import {
  at,
  claimRequest,
  ingest,
  ingestReceipts,
  newAccount,
  receipt,
  sms,
} from '../conformance/fixtures.js';
import { dropSchema, freshSchema, openStore, POSTGRES_URL, sql } from './harness.js';

/**
 * Retention takes a callback delivery and its attempt log with their event (prune.ts): the deliveries carry no
 * time of their own since migration 14, so nothing else would ever remove them.
 */
describe.skipIf(!POSTGRES_URL)('PostgreSQL prune of callback deliveries', () => {
  let schema: string;
  let store: Store;
  beforeEach(async () => {
    schema = freshSchema();
    store = openStore(schema);
    await store.migrate();
  });
  afterEach(async () => {
    await store.close();
    await dropSchema(schema);
  });

  it('removes an expired record’s deliveries and their attempts with its events, and keeps the rest', async () => {
    const { id: a } = await store.createAccount(newAccount({ callbackUrl: 'https://hooks.example/dlr' }));
    await ingest(store, a, [
      sms('old', '447700900001', { createdAt: new Date('2026-01-10T00:00:00Z') }),
      sms('new', '447700900002'),
    ]);
    await ingestReceipts(store, a, [receipt('old', 'delivered', at(1)), receipt('new', 'delivered', at(1))]);
    const claimed = await store.claimDeliveries(claimRequest({ now: at(10) }));
    expect(claimed).toHaveLength(2);
    await store.finishAttempts(
      claimed.map((claim) => ({
        claim,
        outcome: {
          attempt: { at: at(11), httpStatus: 500, error: 'HTTP 500', durationMs: 3 },
          next: { state: 'pending' as const, at: at(60) },
        },
      })),
    );
    const rows = async () =>
      (
        await sql<{ table: string; message_id: string }>(
          schema,
          `SELECT 'event' AS table, message_id FROM receipt_events
           UNION ALL SELECT 'delivery', message_id FROM deliveries
           UNION ALL SELECT 'attempt', d.message_id FROM delivery_attempts x
             JOIN deliveries d ON d.account_id = x.account_id AND d.seq = x.seq
           UNION ALL SELECT 'orphan attempt', '' FROM delivery_attempts x
             WHERE NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.account_id = x.account_id AND d.seq = x.seq)
           ORDER BY 1, 2`,
        )
      ).map((r) => `${r.table} ${r.message_id}`);
    expect(await rows()).toStrictEqual([
      'attempt new',
      'attempt old',
      'delivery new',
      'delivery old',
      'event new',
      'event old',
    ]);

    expect(await store.prune(new Date('2026-06-01T00:00:00Z'))).toBe(1);

    expect(await rows()).toStrictEqual(['attempt new', 'delivery new', 'event new']);
    expect((await store.listDeliveries(a, { limit: 10 })).map((d) => d.messageId)).toStrictEqual(['new']);
  });
});

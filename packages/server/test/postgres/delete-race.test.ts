import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MessageUpsert } from '../../src/domain/ingest/precedence.js';
import type { Account } from '../../src/domain/records.js';
import { type Store, UnknownAccountError } from '../../src/store/store.js';
import { NOW, newAccount, receipt, sms } from '../conformance/fixtures.js';
import { dropSchema, freshSchema, openStore, POSTGRES_URL, sql } from './harness.js';

/** Every table that holds an account's rows, and how many it holds of `accountId`. */
async function rowsOf(schema: string, accountId: string): Promise<Record<string, number>> {
  const tables = [
    'accounts',
    'contacts',
    'identities',
    'conversations',
    'message_keys',
    'messages',
    'receipt_events',
    'deliveries',
    'delivery_attempts',
    'parked_receipts',
  ];
  const counts: Record<string, number> = {};
  for (const table of tables) {
    const column = table === 'accounts' ? 'id' : 'account_id';
    const [row] = await sql<{ n: number }>(
      schema,
      `SELECT count(*)::int AS n FROM ${table} WHERE ${column} = $1`,
      [accountId],
    );
    counts[table] = row?.n ?? -1;
  }
  return counts;
}

/**
 * Deleting an account while its messages are being ingested: the delete must not fail on a row an ingest wrote
 * meanwhile (it did, 500 on a foreign key), and no ingest may leave rows behind a deleted account.
 */
describe.skipIf(!POSTGRES_URL)('PostgreSQL account delete racing ingest', () => {
  let schema: string;
  let store: Store;
  let account: Account;
  const contactId = '0b9a4c3e-5d6f-4a1b-8c2d-3e4f5a6b7c8d';

  beforeEach(async () => {
    schema = freshSchema();
    // Enough connections for every racer to be inside its transaction at once.
    store = openStore(schema, { poolSize: 24 });
    await store.migrate();
    account = await store.createAccount(newAccount({ callbackUrl: 'https://hooks.example.com/dlr' }));
    // An existing contact with an SMS conversation: most racers write into it.
    const seeded = await store.ingestMessages(
      account.id,
      [sms('seed', '447700900001', { contactId, createdAt: NOW })],
      NOW,
    );
    expect(seeded.ok).toBe(true);
  });
  afterEach(async () => {
    await store.close();
    await dropSchema(schema);
  });

  /** One racer's batch: into the existing conversation, onto a new channel of the same contact, or new contacts. */
  function batch(n: number): MessageUpsert[] {
    const createdAt = new Date(NOW.getTime() + n * 1000);
    switch (n % 4) {
      case 0:
        return [sms(`m-${n}`, '447700900001', { createdAt })];
      case 1:
        return [
          {
            id: `w-${n}`,
            channel: 'WHATSAPP',
            channelUserId: `wa-${n}`,
            contactId,
            createdAt,
            text: 'hello',
          },
        ];
      case 2:
        return [sms(`m-${n}`, `4477009${n.toString().padStart(5, '0')}`, { createdAt })];
      default:
        return [sms('seed', '447700900001', { contactId, createdAt: NOW, text: `edit ${n}` })];
    }
  }

  it('deletes cleanly while ingests race it: each ingest applies or finds the account gone', {
    timeout: 60_000,
  }, async () => {
    for (let round = 0; round < 8; round++) {
      if (round > 0) {
        account = await store.createAccount(newAccount({ callbackUrl: 'https://hooks.example.com/dlr' }));
        await store.ingestMessages(
          account.id,
          [sms('seed', '447700900001', { contactId, createdAt: NOW })],
          NOW,
        );
      }
      const id = account.id;
      const racers: Promise<unknown>[] = [];
      for (let n = 0; n < 20; n++) {
        racers.push(store.ingestMessages(id, batch(n), NOW));
        if (n % 5 === 4) racers.push(store.ingestReceipts(id, [receipt('seed', 'delivered', NOW)], NOW));
        // The delete starts among the racers, at another place each round.
        if (n === 4 + round) racers.push(store.deleteAccount(id).then((deleted) => ({ deleted })));
      }
      const settled = await Promise.allSettled(racers);
      const failures = settled.flatMap((s) =>
        s.status === 'rejected' && !(s.reason instanceof UnknownAccountError) ? [s.reason] : [],
      );
      expect(failures).toEqual([]);
      expect(settled).toContainEqual({ status: 'fulfilled', value: { deleted: true } });
      expect(await store.getAccount(id)).toBeNull();
      expect(await rowsOf(schema, id)).toEqual({
        accounts: 0,
        contacts: 0,
        identities: 0,
        conversations: 0,
        message_keys: 0,
        messages: 0,
        receipt_events: 0,
        deliveries: 0,
        delivery_attempts: 0,
        parked_receipts: 0,
      });
    }
  });

  it('answers UnknownAccountError to an ingest of an account that is gone', async () => {
    expect(await store.deleteAccount(account.id)).toBe(true);
    await expect(store.ingestMessages(account.id, batch(0), NOW)).rejects.toBeInstanceOf(UnknownAccountError);
    await expect(
      store.ingestReceipts(account.id, [receipt('seed', 'delivered', NOW)], NOW),
    ).rejects.toBeInstanceOf(UnknownAccountError);
    expect(await rowsOf(schema, account.id)).toMatchObject({
      messages: 0,
      message_keys: 0,
      parked_receipts: 0,
    });
  });
});

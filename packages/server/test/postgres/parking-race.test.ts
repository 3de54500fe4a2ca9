import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ReceiptInput } from '../../src/domain/ingest/precedence.js';
import type { Store } from '../../src/store/store.js';
import { at, NOW, newAccount, sms } from '../conformance/fixtures.js';
import { dropSchema, freshSchema, openStore, POSTGRES_URL } from './harness.js';

/**
 * A receipt racing its own message (CONTRACT §9 "Early receipts") on two instances: whichever commits first,
 * the receipt ends up applied to its recipient, never parked beside a recipient that already exists.
 */

const TO = '447700900123';
const ROUNDS = 30;
const IDS_PER_ROUND = 5;

describe.skipIf(!POSTGRES_URL)('PostgreSQL receipts racing their messages', () => {
  let schema: string;
  let one: Store;
  let two: Store;

  beforeEach(async () => {
    schema = freshSchema();
    one = openStore(schema);
    two = openStore(schema);
    await one.migrate();
  });
  afterEach(async () => {
    await Promise.all([one.close(), two.close()]);
    await dropSchema(schema);
  });

  it('applies every receipt, parked or not, whichever batch commits first', { timeout: 60_000 }, async () => {
    const { id: account } = await one.createAccount(newAccount({ callbackUrl: 'https://hooks.example/cb' }));
    const ids: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const mine = Array.from({ length: IDS_PER_ROUND }, (_, i) => `r${round}-m${i}`);
      ids.push(...mine);
      const receipts = mine.map(
        (id): ReceiptInput => ({
          messageId: id,
          to: TO,
          drStatuscode: 'delivered',
          drErrcode: '0',
          drTime: at(1),
        }),
      );
      const [r, m] = await Promise.all([
        two.ingestReceipts(account, receipts, NOW),
        one.ingestMessages(
          account,
          mine.map((id) => sms(id, TO)),
          NOW,
        ),
      ]);
      expect(r.ok && m.ok).toBe(true);
    }
    const missed: string[] = [];
    for (const id of ids) {
      const [recipient] = await one.findDlr(account, id);
      if (recipient?.sms?.receipt?.drStatuscode !== 'delivered') missed.push(id);
    }
    expect(missed).toStrictEqual([]);
    expect((await one.outboxStats()).parked).toBe(0);
    // One event (and one pending delivery) per receipt, whichever way it was applied.
    expect(await one.listReceiptEvents(account, 0, 1000)).toHaveLength(ids.length);
    expect((await one.outboxStats()).pending).toBe(ids.length);
  });
});

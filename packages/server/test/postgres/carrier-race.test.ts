import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CarrierReceiptInput, MessageUpsert } from '../../src/domain/ingest/precedence.js';
import type { Store } from '../../src/store/store.js';
import { at, NOW, newAccount, sms } from '../conformance/fixtures.js';
import { dropSchema, freshSchema, openStore, POSTGRES_URL } from './harness.js';

/**
 * Carrier pairs on two instances (CONTRACT §12 "Correlation"): a route's receipt racing the message batch that
 * claims its pair is applied whichever commits first, never left parked beside its recipient; and two accounts
 * racing for one pair end with one holder and one item error.
 */

const TO = '447700900123';
const ROUTE = 'smsc-1';
const ROUNDS = 30;
const PER_ROUND = 5;

const sent = (id: string, carrierId: string): MessageUpsert =>
  sms(id, TO, { sms: { status: '0', carrier: { route: ROUTE, messageId: carrierId } } });

describe.skipIf(!POSTGRES_URL)('PostgreSQL carrier ids under concurrency', () => {
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

  it('applies every carrier receipt, parked or not, whichever batch commits first', {
    timeout: 60_000,
  }, async () => {
    const { id: account } = await one.createAccount(newAccount({ callbackUrl: 'https://hooks.example/cb' }));
    const ids: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const mine = Array.from({ length: PER_ROUND }, (_, i) => `r${round}-m${i}`);
      ids.push(...mine);
      const receipts = mine.map(
        (id): CarrierReceiptInput => ({
          carrierId: `c-${id}`,
          drStatuscode: 'delivered',
          drErrcode: '0',
          drTime: at(1),
        }),
      );
      const [results, m] = await Promise.all([
        two.ingestCarrierReceipts(ROUTE, receipts, NOW),
        one.ingestMessages(
          account,
          mine.map((id) => sent(id, `c-${id}`)),
          NOW,
        ),
      ]);
      expect(m.ok).toBe(true);
      expect(results.every((r) => r.outcome === 'applied' || r.outcome === 'parked')).toBe(true);
    }
    const missed: string[] = [];
    for (const id of ids) {
      const [recipient] = await one.findDlr(account, id);
      if (recipient?.sms?.receipt?.drStatuscode !== 'delivered') missed.push(id);
    }
    expect(missed).toStrictEqual([]);
    expect((await one.outboxStats()).parked).toBe(0);
    expect(await one.listReceiptEvents(account, 0, 1000)).toHaveLength(ids.length);
  });

  it('gives a pair two accounts race for to exactly one of them', { timeout: 60_000 }, async () => {
    const a = (await one.createAccount(newAccount())).id;
    const b = (await one.createAccount(newAccount())).id;
    for (let round = 0; round < ROUNDS; round++) {
      const [first, second] = await Promise.all([
        one.ingestMessages(a, [sent(`m-${round}`, `c-${round}`)], NOW),
        two.ingestMessages(b, [sent(`m-${round}`, `c-${round}`)], NOW),
      ]);
      expect([first.ok, second.ok].filter(Boolean)).toHaveLength(1);
      const refused = first.ok ? second : first;
      expect(refused.ok === false && refused.errors[0]?.detail).toBe(
        `carrier id "c-${round}" on route ${ROUTE} already belongs to a recipient of another account`,
      );
    }
  });
});

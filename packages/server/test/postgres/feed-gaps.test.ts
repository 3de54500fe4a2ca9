import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ReceiptEvent } from '../../src/domain/deliveries/events.js';
import type { ReceiptInput } from '../../src/domain/ingest/precedence.js';
import type { Store } from '../../src/store/store.js';
import { NOW, newAccount, sms } from '../conformance/fixtures.js';
import { dropSchema, freshSchema, openStore, POSTGRES_URL } from './harness.js';

/**
 * The receipt feed (CONTRACT §10) while many ingests commit at once: eight instances (stores with pools of
 * their own) apply receipt batches to one account side by side, and a reader polls the feed with the position
 * it last saw, as a customer does. An event may become visible only after every earlier position is: the
 * reader must never find a hole, see a position twice, or miss one.
 */

const WRITERS = 8;
const RECIPIENTS_PER_WRITER = 6;
const ROUNDS = 12;
const PER_BATCH = 4;
const TO = '447700900123';

/**
 * Final codes of equal rank: each receipt of a recipient is later than its last and has the other code, so every
 * one applies.
 */
const CODES = ['failed', 'expired'] as const;

const messageId = (writer: number, n: number) => `w${writer}-m${n}`;

/** A writer's receipts go round its recipients: the j-th is the (j / recipients)-th visit of one of them. */
function batchOf(writer: number, round: number): ReceiptInput[] {
  return Array.from({ length: PER_BATCH }, (_, i) => {
    const j = round * PER_BATCH + i;
    return {
      messageId: messageId(writer, j % RECIPIENTS_PER_WRITER),
      drStatuscode: CODES[Math.floor(j / RECIPIENTS_PER_WRITER) % 2] as (typeof CODES)[number],
      drErrcode: '0',
      drTime: new Date(NOW.getTime() + (j + 1) * 1000),
    };
  });
}

describe.skipIf(!POSTGRES_URL)('PostgreSQL receipt feed under concurrent ingest', () => {
  let schema: string;
  let writers: Store[];
  let reader: Store;

  beforeEach(async () => {
    schema = freshSchema();
    reader = openStore(schema);
    await reader.migrate();
    writers = Array.from({ length: WRITERS }, () => openStore(schema, { poolSize: 2 }));
  });
  afterEach(async () => {
    await Promise.all([reader, ...writers].map((s) => s.close()));
    await dropSchema(schema);
  });

  it('shows every event exactly once, in position order, with no hole ever visible', {
    timeout: 120_000,
  }, async () => {
    // Callbacks on, so each batch also supersedes and queues deliveries under the same lock.
    const { id: account } = await reader.createAccount(
      newAccount({ callbackUrl: 'https://hooks.example/cb' }),
    );
    const messages = Array.from({ length: WRITERS }, (_, w) =>
      Array.from({ length: RECIPIENTS_PER_WRITER }, (_, n) => sms(messageId(w, n), TO)),
    ).flat();
    expect((await reader.ingestMessages(account, messages, NOW)).ok).toBe(true);
    const expected = WRITERS * ROUNDS * PER_BATCH;

    let writing = true;
    const written = Promise.all(
      writers.map(async (store, w) => {
        for (let round = 0; round < ROUNDS; round++) {
          const outcome = await store.ingestReceipts(account, batchOf(w, round), NOW);
          if (!outcome.ok || outcome.value.applied !== PER_BATCH) {
            throw new Error(`writer ${w} round ${round}: ${JSON.stringify(outcome)}`);
          }
        }
      }),
    ).then(
      () => null,
      (error: unknown) => error,
    );
    void written.finally(() => {
      writing = false;
    });

    const seen: ReceiptEvent[] = [];
    const problems: string[] = [];
    let after = 0;
    let polls = 0;
    while (seen.length < expected && (writing || polls < 10_000)) {
      polls++;
      const page = await reader.listReceiptEvents(account, after, 37);
      const hole = page.findIndex((event, i) => event.seq !== after + i + 1);
      if (hole >= 0)
        problems.push(`after ${after} the feed showed position ${page[hole]?.seq} at index ${hole}`);
      seen.push(...page);
      after = page.at(-1)?.seq ?? after;
      if (page.length === 0 && !writing) break;
    }
    const failure = await written;
    if (failure) throw failure;
    // Whatever the reader's last poll raced with is there now.
    seen.push(...(await reader.listReceiptEvents(account, after, expected)));

    expect(problems).toStrictEqual([]);
    expect(polls).toBeGreaterThan(1);
    expect(seen.map((e) => e.seq)).toStrictEqual(Array.from({ length: expected }, (_, i) => i + 1));
    expect(new Set(seen.map((e) => e.id)).size).toBe(expected);
    // Every applied receipt is there once: each writer's rounds, per recipient in the order they applied.
    for (let w = 0; w < WRITERS; w++) {
      const mine = seen.filter((e) => e.item.messageid.startsWith(`w${w}-`));
      expect(mine).toHaveLength(ROUNDS * PER_BATCH);
      for (let n = 0; n < RECIPIENTS_PER_WRITER; n++) {
        const times = mine.filter((e) => e.item.messageid === messageId(w, n)).map((e) => e.item.drTime);
        expect(times).toStrictEqual([...(times as string[])].sort());
      }
    }
    // The feed matches the table: no position was taken twice or skipped by the writers themselves.
    expect((await reader.listReceiptEvents(account, 0, expected + 10)).length).toBe(expected);
  });
});

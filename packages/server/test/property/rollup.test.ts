import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CarrierReceiptInput, MessageUpsert, ReceiptInput } from '../../src/domain/ingest/precedence.js';
import type { StoredMessage } from '../../src/domain/records.js';
import type { ReviewRows } from '../../src/domain/review.js';
import { LATENCY_BOUNDS_MS } from '../../src/domain/rollup.js';
import type { DrErrcode, DrStatuscode } from '../../src/domain/vocabulary.js';
import type { Store } from '../../src/store/store.js';
import { NOW, newAccount } from '../conformance/fixtures.js';
import { runsFrom } from '../support/checks.js';
import { engines } from '../support/engines.js';

/**
 * The review rollup (docs/review.md) against a count made straight from the records: random sequences over two
 * accounts of message ingests (new recipients, and updates that move a recipient to another campaign or
 * network), receipts in any order (replayed, older than the one held, early ones parked and applied when their
 * message comes), receipts from a route by carrier id, prune, and account deletion. After every step, the
 * rollup of each account (summed, and of each campaign) equals what its stored records add up to, counted here
 * from `findMessagesByIds` without the domain's rollup code, and a deleted account has no rollup left.
 *
 * `WAYBILL_TEST_ROLLUP_RUNS` sets the number of sequences per engine.
 */

const SEQUENCES = runsFrom('WAYBILL_TEST_ROLLUP_RUNS', 30);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const IDS = ['m1', 'm2', 'm3', 'm4'] as const;
const PHONES = ['447700900001', '447700900002'] as const;
const CAMPAIGNS = [null, 'spring', 'autumn'] as const;
const NETWORKS = [undefined, '23415', '310260'] as const;
const CODES: readonly DrStatuscode[] = ['delivered', 'accepted', 'rejected', 'failed', 'expired', 'unknown'];
const ERRCODES: readonly DrErrcode[] = ['0', '1', '3', '99'];
const ROUTE = 'r1';
const CARRIER_IDS = ['k1', 'k2', 'k3'] as const;
/** Records are dated over five UTC days around NOW (10:00), so keys fall on several days. */
const createdAt = (hours: number) => new Date(NOW.getTime() + hours * HOUR);

type Step =
  | { kind: 'messages'; account: number; items: MessageUpsert[] }
  | { kind: 'receipts'; account: number; items: ReceiptInput[] }
  | { kind: 'carrier'; items: CarrierReceiptInput[] }
  | { kind: 'prune'; hours: number }
  | { kind: 'delete'; account: number };

const message = fc.record({
  id: fc.constantFrom(...IDS),
  to: fc.constantFrom(...PHONES),
  campaign: fc.constantFrom(...CAMPAIGNS),
  network: fc.constantFrom(...NETWORKS),
  hours: fc.integer({ min: -60, max: 40 }),
  status: fc.constantFrom('0', '1', '400'),
  carrier: fc.option(fc.constantFrom(...CARRIER_IDS), { nil: undefined }),
});

const receiptFields = fc.record({
  code: fc.constantFrom(...CODES),
  errcode: fc.constantFrom(...ERRCODES),
  // Minutes after NOW - 60 h: before, at or long after the sending (up to three days), and out of order.
  minutes: fc.integer({ min: 0, max: 8_000 }),
});

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('messages' as const),
      account: fc.integer({ min: 0, max: 1 }),
      items: fc.array(message, { minLength: 1, maxLength: 3 }).map((list) =>
        list.map(
          (m): MessageUpsert => ({
            id: m.id,
            channel: 'SMS',
            channelUserId: m.to,
            campaignId: m.campaign,
            createdAt: createdAt(m.hours),
            sms: {
              status: m.status as '0' | '1' | '400',
              ...(m.network === undefined ? {} : { network: m.network }),
              ...(m.carrier === undefined ? {} : { carrier: { route: ROUTE, messageId: m.carrier } }),
            },
          }),
        ),
      ),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('receipts' as const),
      account: fc.integer({ min: 0, max: 1 }),
      items: fc
        .array(
          fc.record({
            id: fc.constantFrom(...IDS),
            to: fc.option(fc.constantFrom(...PHONES), { nil: undefined }),
            fields: receiptFields,
          }),
          { minLength: 1, maxLength: 4 },
        )
        .map((list) =>
          list.map(
            (r): ReceiptInput => ({
              messageId: r.id,
              ...(r.to === undefined ? {} : { to: r.to }),
              drStatuscode: r.fields.code,
              drErrcode: r.fields.errcode,
              drTime: new Date(createdAt(-60).getTime() + r.fields.minutes * 60_000),
            }),
          ),
        ),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('carrier' as const),
      items: fc
        .array(fc.record({ id: fc.constantFrom(...CARRIER_IDS), fields: receiptFields }), {
          minLength: 1,
          maxLength: 3,
        })
        .map((list) =>
          list.map(
            (r): CarrierReceiptInput => ({
              carrierId: r.id,
              drStatuscode: r.fields.code,
              drErrcode: r.fields.errcode,
              drTime: new Date(createdAt(-60).getTime() + r.fields.minutes * 60_000),
            }),
          ),
        ),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('prune' as const),
      // Within the records' days (PostgreSQL deletes rows), or past the end of their month (it drops the month).
      hours: fc.oneof(fc.integer({ min: -62, max: 0 }), fc.constant(10 * 24)),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('delete' as const), account: fc.integer({ min: 0, max: 1 }) }),
  },
);

/** The rollup of some records as the review query sums it, counted here from the records themselves. */
function countOf(records: readonly StoredMessage[], campaign: string | null | undefined): ReviewRows {
  const counts = new Map<string, ReviewRows['counts'][number]>();
  const latency = new Map<number, number>();
  for (const r of records) {
    if (!r.sms) continue;
    if (campaign !== undefined && r.campaignId !== campaign) continue;
    const day = Math.floor(r.createdAt.getTime() / DAY);
    const receipt = r.sms.receipt;
    const row = {
      day,
      network: r.sms.network ?? '',
      state: receipt?.drStatuscode ?? '',
      errcode: receipt?.drErrcode ?? '',
    };
    const key = JSON.stringify(row);
    counts.set(key, { ...row, n: (counts.get(key)?.n ?? 0) + 1 });
    if (receipt && receipt.drStatuscode !== 'accepted') {
      const ms = receipt.drTime.getTime() - r.createdAt.getTime();
      const found = LATENCY_BOUNDS_MS.findIndex((bound) => ms < bound);
      const bucket = found === -1 ? LATENCY_BOUNDS_MS.length : found;
      latency.set(bucket, (latency.get(bucket) ?? 0) + 1);
    }
  }
  return sorted({
    counts: [...counts.values()],
    latency: [...latency].map(([bucket, n]) => ({ bucket, n })),
  });
}

function sorted(rows: ReviewRows): ReviewRows {
  const key = (r: ReviewRows['counts'][number]) => JSON.stringify([r.day, r.network, r.state, r.errcode]);
  return {
    counts: rows.counts.map((r) => ({ ...r })).sort((a, b) => (key(a) < key(b) ? -1 : 1)),
    latency: rows.latency.map((r) => ({ ...r })).sort((a, b) => a.bucket - b.bucket),
  };
}

const EVERY_DAY = { from: new Date(0), to: new Date(NOW.getTime() + 365 * DAY) };

async function check(store: Store, accounts: readonly string[], deleted: readonly string[]): Promise<void> {
  for (const account of accounts) {
    const records = await store.findMessagesByIds(account, IDS);
    for (const campaign of [undefined, ...CAMPAIGNS]) {
      // The review query names a campaign by its id; recipients of no campaign are only in the sum.
      if (campaign === null) continue;
      const period = campaign === undefined ? EVERY_DAY : { ...EVERY_DAY, campaignId: campaign };
      const actual = sorted(await store.reviewSummary(account, period));
      expect(actual, `account ${account}, campaign ${campaign ?? '(all)'}`).toStrictEqual(
        countOf(records, campaign),
      );
    }
  }
  for (const account of deleted) {
    expect(await store.reviewSummary(account, EVERY_DAY)).toStrictEqual({ counts: [], latency: [] });
  }
}

describe.each(engines())('review rollup ($name)', (engine) => {
  it('always equals the count of the stored records', { timeout: 600_000 }, async () => {
    const store = await engine.open();
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 25 }), async (steps) => {
          const accounts = [
            (await store.createAccount(newAccount())).id,
            (await store.createAccount(newAccount())).id,
          ];
          const deleted: string[] = [];
          try {
            let now = NOW.getTime();
            for (const s of steps) {
              now += 60_000;
              const at = new Date(now);
              switch (s.kind) {
                case 'messages':
                  // A batch may be refused as a whole (a carrier id given twice): then nothing may move.
                  await store.ingestMessages(accounts[s.account] as string, s.items, at);
                  break;
                case 'receipts':
                  await store.ingestReceipts(accounts[s.account] as string, s.items, at);
                  break;
                case 'carrier':
                  await store.ingestCarrierReceipts(ROUTE, s.items, at, { accounts: null });
                  break;
                case 'prune':
                  await store.prune(createdAt(s.hours));
                  break;
                case 'delete': {
                  const gone = accounts[s.account] as string;
                  expect(await store.deleteAccount(gone)).toBe(true);
                  deleted.push(gone);
                  accounts[s.account] = (await store.createAccount(newAccount())).id;
                  break;
                }
              }
              await check(store, accounts, deleted);
            }
          } finally {
            for (const account of accounts) await store.deleteAccount(account);
          }
        }),
        { numRuns: SEQUENCES },
      );
    } finally {
      await store.close();
    }
  });
});

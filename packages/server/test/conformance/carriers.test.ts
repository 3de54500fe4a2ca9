import { describe, expect, it } from 'vitest';
import type { CarrierReceiptInput, MessageUpsert } from '../../src/domain/ingest/precedence.js';
import type { DrStatuscode } from '../../src/domain/vocabulary.js';
import type { Store } from '../../src/store/store.js';
import { engines } from '../support/engines.js';
import { at, ingest, NOW, newAccount, sms, useStore } from './fixtures.js';

const TO = '447700900123';
const TO2 = '447700900124';
const ROUTE = 'smsc-1';

async function account(store: Store, callbacks = false): Promise<string> {
  const created = await store.createAccount(
    newAccount(callbacks ? { callbackUrl: 'https://hooks.example/dlr' } : {}),
  );
  return created.id;
}

/** An outbound SMS whose recipient the route `ROUTE` (or `route`) knows as `carrierId`. */
const sent = (id: string, to: string, carrierId: string, route = ROUTE): MessageUpsert =>
  sms(id, to, { sms: { status: '0', carrier: { route, messageId: carrierId } } });

const dr = (
  carrierId: string,
  drStatuscode: DrStatuscode,
  drTime: Date,
  extra: Partial<CarrierReceiptInput> = {},
): CarrierReceiptInput => ({ carrierId, drStatuscode, drErrcode: '0', drTime, ...extra });

const events = (store: Store, accountId: string) => store.listReceiptEvents(accountId, 0, 1000);

describe.each(engines())('$name store: carrier ids (CONTRACT §12 "Correlation")', (engine) => {
  const store = useStore(engine);

  describe('claiming a pair', () => {
    it('matches a receipt from the route to the recipient that claimed the pair', async () => {
      const a = await account(store(), true);
      await ingest(store(), a, [sent('m-1', TO, 'c-1'), sent('m-1', TO2, 'c-2')]);
      const results = await store().ingestCarrierReceipts(
        ROUTE,
        [dr('c-2', 'delivered', at(3), { network: '23410' })],
        NOW,
      );
      expect(results).toStrictEqual([{ outcome: 'applied', accountId: a, messageId: 'm-1', to: TO2 }]);
      const dlr = await store().findDlr(a, 'm-1');
      expect(dlr.map((d) => d.sms?.receipt?.drStatuscode ?? null)).toStrictEqual([null, 'delivered']);
      expect(dlr[1]?.sms?.network).toBe('23410');
      const list = await events(store(), a);
      expect(list.map((e) => e.item)).toStrictEqual([
        expect.objectContaining({ messageid: 'm-1', to: TO2, drStatuscode: 'delivered', network: '23410' }),
      ]);
      // The account has callbacks on: the event queued its delivery.
      const deliveries = await store().listDeliveries(a, { limit: 10 });
      expect(deliveries.map((d) => d.id)).toStrictEqual([list[0]?.id]);
    });

    it('goes through the precedence rule: an older or lower receipt is ignored', async () => {
      const a = await account(store());
      await ingest(store(), a, [sent('m-1', TO, 'c-1')]);
      const results = await store().ingestCarrierReceipts(
        ROUTE,
        [dr('c-1', 'delivered', at(2)), dr('c-1', 'accepted', at(3)), dr('c-1', 'delivered', at(2))],
        NOW,
      );
      expect(results.map((r) => r.outcome)).toStrictEqual(['applied', 'ignored', 'ignored']);
      expect(await events(store(), a)).toHaveLength(1);
    });

    it('is idempotent: re-ingesting the recipient with its pair changes nothing of the pair', async () => {
      const a = await account(store());
      await ingest(store(), a, [sent('m-1', TO, 'c-1')]);
      await ingest(store(), a, [sent('m-1', TO, 'c-1'), sent('m-1', TO, 'c-1')]);
      await ingest(store(), a, [sms('m-1', TO, { text: 'no carrier given keeps the pair' })]);
      const results = await store().ingestCarrierReceipts(ROUTE, [dr('c-1', 'delivered', at(1))], NOW);
      expect(results[0]).toMatchObject({ outcome: 'applied', messageId: 'm-1', to: TO });
    });

    it('refuses a pair held by another recipient, naming the pair, and writes nothing of the batch', async () => {
      const a = await account(store());
      await ingest(store(), a, [sent('m-1', TO, 'c-1')]);
      const outcome = await store().ingestMessages(a, [sms('m-9', TO2), sent('m-2', TO2, 'c-1')], NOW);
      expect(outcome).toStrictEqual({
        ok: false,
        errors: [
          {
            index: 1,
            param: 'sms.carrier',
            detail: `carrier id "c-1" on route ${ROUTE} already belongs to message m-1 to ${TO}`,
          },
        ],
      });
      expect(await store().findDlr(a, 'm-9')).toStrictEqual([]);
    });

    it('refuses a pair held in another account without naming that account’s message', async () => {
      const a = await account(store());
      const b = await account(store());
      await ingest(store(), a, [sent('m-1', TO, 'c-1')]);
      const outcome = await store().ingestMessages(b, [sent('m-1', TO, 'c-1')], NOW);
      expect(outcome).toStrictEqual({
        ok: false,
        errors: [
          {
            index: 0,
            param: 'sms.carrier',
            detail: `carrier id "c-1" on route ${ROUTE} already belongs to a recipient of another account`,
          },
        ],
      });
      // The same carrier id on another route is another pair.
      await ingest(store(), b, [sent('m-1', TO, 'c-1', 'smsc-2')]);
    });

    it('judges each item against the items before it in the batch', async () => {
      const a = await account(store());
      const outcome = await store().ingestMessages(a, [sent('m-1', TO, 'c-1'), sent('m-2', TO, 'c-1')], NOW);
      expect(outcome.ok).toBe(false);
      if (!outcome.ok) expect(outcome.errors.map((e) => e.index)).toStrictEqual([1]);
    });

    it('replaces a recipient’s pair with a new one, which frees the old pair', async () => {
      const a = await account(store());
      await ingest(store(), a, [sent('m-1', TO, 'c-1')]);
      // In one batch: m-1 moves to c-2, then m-2 takes the c-1 it gave up.
      await ingest(store(), a, [sent('m-1', TO, 'c-2'), sent('m-2', TO2, 'c-1')]);
      const results = await store().ingestCarrierReceipts(
        ROUTE,
        [dr('c-1', 'failed', at(1)), dr('c-2', 'delivered', at(1))],
        NOW,
      );
      expect(results).toStrictEqual([
        { outcome: 'applied', accountId: a, messageId: 'm-2', to: TO2 },
        { outcome: 'applied', accountId: a, messageId: 'm-1', to: TO },
      ]);
    });

    it('lets the pairs of a deleted account, and of pruned records, be claimed again', async () => {
      const a = await account(store());
      await ingest(store(), a, [sent('m-1', TO, 'c-1')]);
      expect(await store().deleteAccount(a)).toBe(true);
      const b = await account(store());
      await ingest(store(), b, [sent('m-1', TO, 'c-1')]);
      expect(await store().prune(at(1))).toBe(1);
      await ingest(store(), b, [sent('m-2', TO, 'c-1')]);
    });
  });

  describe('receipts before their pair is claimed', () => {
    it('parks the receipt and applies it when a recipient claims the pair, with its event', async () => {
      const a = await account(store(), true);
      const results = await store().ingestCarrierReceipts(ROUTE, [dr('c-1', 'delivered', at(3))], NOW);
      expect(results).toStrictEqual([{ outcome: 'parked' }]);
      expect(await store().outboxStats()).toMatchObject({ parked: 1 });
      const outcome = await store().ingestMessages(a, [sent('m-1', TO, 'c-1')], at(10));
      expect(outcome).toStrictEqual({ ok: true, value: { accepted: 1, events: 1 } });
      const [m] = await store().findDlr(a, 'm-1');
      expect(m?.sms?.receipt).toStrictEqual({ drStatuscode: 'delivered', drErrcode: '0', drTime: at(3) });
      const list = await events(store(), a);
      expect(list.map((e) => e.item)).toStrictEqual([
        expect.objectContaining({ messageid: 'm-1', to: TO, drStatuscode: 'delivered' }),
      ]);
      expect((await store().listDeliveries(a, { limit: 10 })).map((d) => d.id)).toStrictEqual([list[0]?.id]);
      // Consumed: nothing stays parked, and claiming again applies nothing more.
      expect(await store().outboxStats()).toMatchObject({ parked: 0 });
      await ingest(store(), a, [sent('m-1', TO, 'c-1')]);
      expect(await events(store(), a)).toHaveLength(1);
    });

    it('applies parked receipts of the pair oldest drTime first, beside those parked by message id', async () => {
      const a = await account(store());
      await store().ingestCarrierReceipts(
        ROUTE,
        [dr('c-1', 'delivered', at(5)), dr('c-1', 'accepted', at(7))],
        NOW,
      );
      const byId = await store().ingestReceipts(
        a,
        [{ messageId: 'm-1', drStatuscode: 'accepted', drErrcode: '0', drTime: at(1) }],
        NOW,
      );
      expect(byId.ok).toBe(true);
      await ingest(store(), a, [sent('m-1', TO, 'c-1')]);
      // accepted@1 (by id) applies, delivered@5 applies, accepted@7 is of lower rank and ignored.
      expect((await events(store(), a)).map((e) => e.item.drStatuscode)).toStrictEqual([
        'accepted',
        'delivered',
      ]);
    });

    it('applies a parked receipt to an existing recipient that claims the pair later', async () => {
      const a = await account(store());
      await ingest(store(), a, [sms('m-1', TO, { sms: { status: '0' } })]);
      await store().ingestCarrierReceipts(ROUTE, [dr('c-1', 'failed', at(2), { drErrcode: '3' })], NOW);
      await ingest(store(), a, [sent('m-1', TO, 'c-1')]);
      const [m] = await store().findDlr(a, 'm-1');
      expect(m?.sms?.receipt).toStrictEqual({ drStatuscode: 'failed', drErrcode: '3', drTime: at(2) });
    });

    it('parks a replayed receipt once', async () => {
      const a = await account(store());
      const r = dr('c-1', 'delivered', at(1), { network: '23410' });
      expect(await store().ingestCarrierReceipts(ROUTE, [r, r], NOW)).toStrictEqual([
        { outcome: 'parked' },
        { outcome: 'parked' },
      ]);
      await store().ingestCarrierReceipts(ROUTE, [r], at(1));
      expect(await store().outboxStats()).toMatchObject({ parked: 1 });
      await ingest(store(), a, [sent('m-1', TO, 'c-1')]);
      expect(await events(store(), a)).toHaveLength(1);
    });

    it('keeps receipts of one carrier id on different routes apart', async () => {
      const a = await account(store());
      await store().ingestCarrierReceipts('smsc-2', [dr('c-1', 'failed', at(1))], NOW);
      await ingest(store(), a, [sent('m-1', TO, 'c-1')]);
      expect((await store().findDlr(a, 'm-1'))[0]?.sms?.receipt).toBeNull();
      expect(await store().outboxStats()).toMatchObject({ parked: 1 });
    });

    it('applies a parked receipt only while it is live, and drops expired ones', async () => {
      const a = await account(store());
      await store().ingestCarrierReceipts(ROUTE, [dr('c-1', 'delivered', at(1))], NOW);
      const outcome = await store().ingestMessages(a, [sent('m-1', TO, 'c-1')], at(100), {
        parkedSince: at(60),
      });
      expect(outcome).toStrictEqual({ ok: true, value: { accepted: 1, events: 0 } });
      expect((await store().findDlr(a, 'm-1'))[0]?.sms?.receipt).toBeNull();
      await store().ingestCarrierReceipts(ROUTE, [dr('c-9', 'delivered', at(1))], NOW);
      expect(await store().dropParkedBefore(NOW)).toBe(0);
      expect(await store().dropParkedBefore(at(1))).toBe(2);
      expect(await store().outboxStats()).toMatchObject({ parked: 0 });
    });

    it('writes nothing of a dry run of the claiming batch', async () => {
      const a = await account(store());
      await store().ingestCarrierReceipts(ROUTE, [dr('c-1', 'delivered', at(1))], NOW);
      const dry = await store().ingestMessages(a, [sent('m-1', TO, 'c-1')], NOW, { dryRun: true });
      expect(dry).toStrictEqual({ ok: true, value: { accepted: 1, events: 1 } });
      expect(await store().outboxStats()).toMatchObject({ parked: 1 });
      expect(await store().findDlr(a, 'm-1')).toStrictEqual([]);
    });
  });

  describe("a route's accounts", () => {
    it('never touches a recipient of an account the route may not reach', async () => {
      const a = await account(store());
      const b = await account(store());
      await ingest(store(), a, [sent('m-1', TO, 'c-1')]);
      const results = await store().ingestCarrierReceipts(ROUTE, [dr('c-1', 'delivered', at(1))], NOW, {
        accounts: [b],
      });
      expect(results).toStrictEqual([{ outcome: 'forbidden' }]);
      expect((await store().findDlr(a, 'm-1'))[0]?.sms?.receipt).toBeNull();
      expect(await events(store(), a)).toStrictEqual([]);
      const allowed = await store().ingestCarrierReceipts(ROUTE, [dr('c-1', 'delivered', at(1))], NOW, {
        accounts: [b, a],
      });
      expect(allowed[0]).toMatchObject({ outcome: 'applied', accountId: a });
    });

    it('applies a parked receipt only to a recipient of an account the route could reach', async () => {
      const a = await account(store());
      const b = await account(store());
      await store().ingestCarrierReceipts(ROUTE, [dr('c-1', 'delivered', at(1))], NOW, { accounts: [b] });
      await ingest(store(), a, [sent('m-1', TO, 'c-1')]);
      expect((await store().findDlr(a, 'm-1'))[0]?.sms?.receipt).toBeNull();
      await store().ingestCarrierReceipts(ROUTE, [dr('c-2', 'delivered', at(1))], NOW, { accounts: [b] });
      await ingest(store(), b, [sent('m-1', TO, 'c-2')]);
      expect((await store().findDlr(b, 'm-1'))[0]?.sms?.receipt?.drStatuscode).toBe('delivered');
    });
  });
});

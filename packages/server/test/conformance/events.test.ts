import { describe, expect, it } from 'vitest';
import { EVENT_ID } from '../../src/domain/deliveries/events.js';
import type { Store } from '../../src/store/store.js';
import { engines } from '../support/engines.js';
import {
  at,
  claimRequest,
  ingest,
  ingestReceipts,
  NOW,
  newAccount,
  receipt,
  sms,
  useStore,
} from './fixtures.js';

const TO = '447700900123';
const TO2 = '447700900124';

async function account(store: Store, callbacks = false): Promise<string> {
  const created = await store.createAccount(
    newAccount(callbacks ? { callbackUrl: 'https://hooks.example/dlr' } : {}),
  );
  return created.id;
}

/** The /dlr item of m-1 to TO after a receipt, sent at `sms`'s price on its network. */
const m1Item = (
  drStatuscode: string,
  drStatus: 0 | 400,
  drTime: string,
  sms = { price: 0.05, network: '23410' },
) => ({
  type: 'dlr',
  messageid: 'm-1',
  to: TO,
  status: '0',
  price: sms.price,
  counts: 1,
  network: sms.network,
  drStatus,
  drStatuscode,
  drErrcode: '0',
  drTime,
});

const events = (store: Store, accountId: string, after = 0, limit = 1000) =>
  store.listReceiptEvents(accountId, after, limit);

describe.each(engines())('$name store: receipt events and early receipts', (engine) => {
  const store = useStore(engine);

  it('records one event per applied receipt, numbered 1, 2, 3… with the /dlr item after it', async () => {
    const a = await account(store());
    await ingest(store(), a, [sms('m-1', TO, { sms: { network: '23410', price: 0.05 } })]);
    await ingestReceipts(store(), a, [receipt('m-1', 'accepted', at(1)), receipt('m-1', 'delivered', at(2))]);
    const list = await events(store(), a);
    expect(list.map((e) => e.seq)).toStrictEqual([1, 2]);
    for (const e of list) {
      expect(e.id).toMatch(EVENT_ID);
      expect(e.recordedAt).toStrictEqual(NOW);
    }
    expect(list[0]?.item).toStrictEqual(m1Item('accepted', 0, '2026-11-22 10:00:01.000'));
    expect(list[1]?.item).toMatchObject({ drStatuscode: 'delivered', drTime: '2026-11-22 10:00:02.000' });
    expect(new Set(list.map((e) => e.id)).size).toBe(2);
  });

  it('records nothing for ignored receipts, identical replays or message writes', async () => {
    const a = await account(store());
    await ingest(store(), a, [sms('m-1', TO)]);
    await ingestReceipts(store(), a, [receipt('m-1', 'delivered', at(2))]);
    const outcome = await ingestReceipts(store(), a, [
      receipt('m-1', 'delivered', at(2)),
      receipt('m-1', 'accepted', at(5)),
      receipt('m-1', 'delivered', at(9)),
    ]);
    expect(outcome).toStrictEqual({ applied: 0, ignored: 3, unknown: [] });
    await ingest(store(), a, [sms('m-1', TO, { text: 'edited', sms: { price: 2 } })]);
    expect((await events(store(), a)).map((e) => e.seq)).toStrictEqual([1]);
  });

  it('pages the feed by position and keeps accounts apart', async () => {
    const a = await account(store());
    const b = await account(store());
    await ingest(store(), a, [sms('m-1', TO), sms('m-2', TO)]);
    await ingest(store(), b, [sms('m-1', TO)]);
    await ingestReceipts(store(), a, [receipt('m-1', 'accepted', at(1)), receipt('m-2', 'accepted', at(1))]);
    await ingestReceipts(store(), b, [receipt('m-1', 'failed', at(1))]);
    await ingestReceipts(store(), a, [receipt('m-1', 'delivered', at(2))]);
    expect((await events(store(), a, 0, 2)).map((e) => e.seq)).toStrictEqual([1, 2]);
    expect((await events(store(), a, 2, 2)).map((e) => [e.seq, e.item.messageid])).toStrictEqual([
      [3, 'm-1'],
    ]);
    expect(await events(store(), a, 3, 2)).toStrictEqual([]);
    const other = await events(store(), b);
    expect(other.map((e) => [e.seq, e.item.drStatuscode])).toStrictEqual([[1, 'failed']]);
  });

  it('parks a receipt that comes before its message and applies it when the message arrives', async () => {
    const a = await account(store());
    const outcome = await ingestReceipts(store(), a, [receipt('m-1', 'delivered', at(3), { to: TO })]);
    expect(outcome).toStrictEqual({ applied: 0, ignored: 0, unknown: [{ messageId: 'm-1', to: TO }] });
    expect(await events(store(), a)).toStrictEqual([]);
    await ingest(store(), a, [sms('m-1', TO, { sms: { status: '0' } })]);
    const [m] = await store().findDlr(a, 'm-1');
    expect(m?.sms?.receipt).toStrictEqual({ drStatuscode: 'delivered', drErrcode: '0', drTime: at(3) });
    const list = await events(store(), a);
    expect(list).toHaveLength(1);
    expect(list[0]?.item).toMatchObject({ messageid: 'm-1', to: TO, status: '0', drStatuscode: 'delivered' });
    // Consumed: ingesting the message again applies nothing more.
    await ingest(store(), a, [sms('m-1', TO)]);
    expect(await events(store(), a)).toHaveLength(1);
  });

  it('applies parked receipts oldest drTime first through the precedence rule', async () => {
    const a = await account(store());
    await ingestReceipts(store(), a, [
      receipt('m-1', 'delivered', at(5)),
      receipt('m-1', 'accepted', at(1)),
      receipt('m-1', 'accepted', at(7)),
    ]);
    await ingest(store(), a, [sms('m-1', TO)]);
    const list = await events(store(), a);
    // accepted@1 applies, delivered@5 applies, accepted@7 is of lower rank and ignored.
    expect(list.map((e) => e.item.drStatuscode)).toStrictEqual(['accepted', 'delivered']);
    const [m] = await store().findDlr(a, 'm-1');
    expect(m?.sms?.receipt?.drStatuscode).toBe('delivered');
  });

  it('waits for the named recipient, and gives a receipt without `to` to the first recipient', async () => {
    const a = await account(store());
    await ingestReceipts(store(), a, [
      receipt('m-1', 'failed', at(1), { to: TO2 }),
      receipt('m-2', 'delivered', at(1)),
    ]);
    await ingest(store(), a, [sms('m-1', TO), sms('m-2', TO), sms('m-2', TO2)]);
    expect((await store().findDlr(a, 'm-1'))[0]?.sms?.receipt).toBeNull();
    const m2 = await store().findDlr(a, 'm-2');
    expect(m2.map((m) => m.sms?.receipt?.drStatuscode ?? null)).toStrictEqual(['delivered', null]);
    await ingest(store(), a, [sms('m-1', TO2)]);
    const m1 = await store().findDlr(a, 'm-1');
    expect(m1.map((m) => m.sms?.receipt?.drStatuscode ?? null)).toStrictEqual([null, 'failed']);
    expect((await events(store(), a)).map((e) => [e.item.messageid, e.item.to])).toStrictEqual([
      ['m-2', TO],
      ['m-1', TO2],
    ]);
  });

  it('parks a replayed receipt once', async () => {
    const a = await account(store());
    const r = receipt('m-1', 'delivered', at(1), { to: TO, network: '23410' });
    await ingestReceipts(store(), a, [r, r]);
    await ingestReceipts(store(), a, [r]);
    await ingest(store(), a, [sms('m-1', TO)]);
    expect(await events(store(), a)).toHaveLength(1);
  });

  it('applies a parked receipt only while it is live', async () => {
    const a = await account(store());
    await ingestReceipts(store(), a, [receipt('m-1', 'delivered', at(1))]);
    const outcome = await store().ingestMessages(a, [sms('m-1', TO)], NOW, { parkedSince: at(60) });
    expect(outcome.ok).toBe(true);
    expect((await store().findDlr(a, 'm-1'))[0]?.sms?.receipt).toBeNull();
    expect(await events(store(), a)).toStrictEqual([]);
  });

  it('restarts the park time of a replayed receipt, even one expired but not yet dropped', async () => {
    const a = await account(store());
    const r = receipt('m-1', 'delivered', at(1));
    await ingestReceipts(store(), a, [r]);
    expect((await store().ingestReceipts(a, [r], at(100))).ok).toBe(true);
    await store().ingestMessages(a, [sms('m-1', TO)], at(101), { parkedSince: at(50) });
    expect((await store().findDlr(a, 'm-1'))[0]?.sms?.receipt?.drStatuscode).toBe('delivered');
  });

  it('drops parked receipts older than a cutoff', async () => {
    const a = await account(store());
    await ingestReceipts(store(), a, [
      receipt('m-1', 'delivered', at(1)),
      receipt('m-2', 'delivered', at(1)),
    ]);
    // They were parked at NOW (the ingest time given to the store).
    expect(await store().dropParkedBefore(NOW)).toBe(0);
    expect(await store().dropParkedBefore(at(1))).toBe(2);
    await ingest(store(), a, [sms('m-1', TO)]);
    expect(await events(store(), a)).toStrictEqual([]);
  });

  it('writes nothing of a dry run: no event, no parked receipt', async () => {
    const a = await account(store(), true);
    await ingest(store(), a, [sms('m-1', TO)]);
    const dry = await store().ingestReceipts(
      a,
      [receipt('m-1', 'delivered', at(1)), receipt('m-9', 'failed', at(1))],
      NOW,
      {
        dryRun: true,
      },
    );
    expect(dry).toStrictEqual({
      ok: true,
      value: { applied: 1, ignored: 0, unknown: [{ messageId: 'm-9', to: null }] },
    });
    expect(await events(store(), a)).toStrictEqual([]);
    expect(await store().listDeliveries(a, { limit: 10 })).toStrictEqual([]);
    await ingest(store(), a, [sms('m-9', TO)]);
    expect(await events(store(), a)).toStrictEqual([]);
  });

  it('writes nothing when a batch is refused', async () => {
    const a = await account(store(), true);
    await ingest(store(), a, [sms('m-1', TO), sms('m-2', TO), sms('m-2', TO2)]);
    const refused = await store().ingestReceipts(
      a,
      [receipt('m-1', 'delivered', at(1)), receipt('m-2', 'delivered', at(1))],
      NOW,
    );
    expect(refused.ok).toBe(false);
    expect(await events(store(), a)).toStrictEqual([]);
    expect((await store().findDlr(a, 'm-1'))[0]?.sms?.receipt).toBeNull();
  });

  it('changes only the SMS and receipt fields of a record when a receipt applies', async () => {
    const a = await account(store());
    await ingest(store(), a, [sms('m-1', TO, { text: 'Hello', content: { k: [1, 2] }, campaignId: 'c-1' })]);
    await ingestReceipts(store(), a, [receipt('m-1', 'delivered', at(1), { price: 0.5 })]);
    const [m] = await store().findMessagesByIds(a, ['m-1']);
    expect(m).toMatchObject({ text: 'Hello', content: { k: [1, 2] }, campaignId: 'c-1', createdAt: NOW });
    expect(m?.sms).toMatchObject({ status: '0', price: 0.5 });
  });

  it('keeps each event’s item as recorded when its record changes after it', async () => {
    const a = await account(store(), true);
    await ingest(store(), a, [sms('m-1', TO, { sms: { network: '23410', price: 0.05 } }), sms('m-2', TO2)]);
    // Two receipts for one recipient in one batch, then a message write that changes what /dlr shows.
    await ingestReceipts(store(), a, [
      receipt('m-1', 'accepted', at(1)),
      receipt('m-1', 'delivered', at(2)),
      receipt('m-2', 'failed', at(1)),
    ]);
    await ingest(store(), a, [sms('m-1', TO, { sms: { network: '310260', price: 2 } })]);
    expect((await store().findDlr(a, 'm-1'))[0]?.sms).toMatchObject({ network: '310260', price: 2 });
    const first = m1Item('accepted', 0, '2026-11-22 10:00:01.000');
    const second = m1Item('delivered', 0, '2026-11-22 10:00:02.000');
    expect((await events(store(), a)).map((e) => e.item)).toStrictEqual([
      first,
      second,
      expect.objectContaining({ messageid: 'm-2', drStatuscode: 'failed' }),
    ]);
    expect((await store().listMessageEvents(a, 'm-1')).map((e) => e.item)).toStrictEqual([first, second]);
    const deliveries = await store().listMessageDeliveries(a, 'm-1');
    expect(deliveries.map((d) => d.payload)).toStrictEqual([first, second]);
    // A later receipt records the record as it stands now, and the earlier events keep theirs.
    await ingestReceipts(store(), a, [receipt('m-1', 'failed', at(3))]);
    const after = await events(store(), a);
    expect(after.map((e) => e.item)).toStrictEqual([
      first,
      second,
      expect.objectContaining({ messageid: 'm-2' }),
      m1Item('failed', 400, '2026-11-22 10:00:03.000', { price: 2, network: '310260' }),
    ]);
    // What a callback sends is the item's JSON as recorded.
    const claimed = await store().claimDeliveries(claimRequest({ now: at(10) }));
    expect(claimed.map((c) => JSON.parse(c.body))).toContainEqual(after[3]?.item);
  });

  it('removes events with their message records on prune', async () => {
    const a = await account(store(), true);
    await ingest(store(), a, [
      sms('old', TO, { createdAt: new Date('2026-01-10T00:00:00Z') }),
      sms('new', TO),
    ]);
    await ingestReceipts(store(), a, [
      receipt('old', 'delivered', at(1)),
      receipt('new', 'delivered', at(1)),
    ]);
    expect(await store().prune(new Date('2026-06-01T00:00:00Z'))).toBe(1);
    const list = await events(store(), a);
    expect(list.map((e) => e.item.messageid)).toStrictEqual(['new']);
    expect((await store().listDeliveries(a, { limit: 10 })).map((d) => d.messageId)).toStrictEqual(['new']);
  });
});

import { describe, expect, it } from 'vitest';
import { engines } from '../support/engines.js';
import {
  at,
  createAccount,
  ingest,
  ingestReceipts,
  NOW,
  receipt,
  record,
  sms,
  useStore,
} from './fixtures.js';

const TO = '447700900123';

describe.each(engines())('$name store: receipts', (engine) => {
  const store = useStore(engine);

  async function accountWithMessage(): Promise<string> {
    const { id } = await createAccount(store());
    await ingest(store(), id, [sms('m-1', TO, { sms: { network: '23410', price: 0.05, counts: 2 } })]);
    return id;
  }

  it('applies a receipt, sets the send status to "0", and updates the SMS fields it gives', async () => {
    const account = await accountWithMessage();
    const outcome = await ingestReceipts(store(), account, [
      receipt('m-1', 'accepted', at(1), { network: '23415', price: 0.06 }),
    ]);
    expect(outcome).toStrictEqual({ applied: 1, ignored: 0, unknown: [] });
    expect((await record(store(), account, 'm-1', TO)).sms).toStrictEqual({
      status: '0',
      network: '23415',
      price: 0.06,
      counts: 2,
      receipt: { drStatuscode: 'accepted', drErrcode: '0', drTime: at(1) },
    });
  });

  it('lets a final code follow accepted', async () => {
    const account = await accountWithMessage();
    await ingestReceipts(store(), account, [receipt('m-1', 'accepted', at(1))]);
    const outcome = await ingestReceipts(store(), account, [
      receipt('m-1', 'delivered', at(2), { counts: 3 }),
    ]);
    expect(outcome).toStrictEqual({ applied: 1, ignored: 0, unknown: [] });
    const m = await record(store(), account, 'm-1', TO);
    expect(m.sms?.receipt).toStrictEqual({ drStatuscode: 'delivered', drErrcode: '0', drTime: at(2) });
    expect(m.sms?.counts).toBe(3);
  });

  it('ignores accepted after a final code and changes nothing', async () => {
    const account = await accountWithMessage();
    await ingestReceipts(store(), account, [receipt('m-1', 'delivered', at(1))]);
    const before = await record(store(), account, 'm-1', TO);
    const outcome = await ingestReceipts(store(), account, [
      receipt('m-1', 'accepted', at(5), { network: '99999', price: 9, counts: 9 }),
    ]);
    expect(outcome).toStrictEqual({ applied: 0, ignored: 1, unknown: [] });
    expect(await record(store(), account, 'm-1', TO)).toStrictEqual(before);
  });

  describe('at equal rank', () => {
    it('applies a strictly later receipt with another code', async () => {
      const account = await accountWithMessage();
      await ingestReceipts(store(), account, [receipt('m-1', 'delivered', at(1))]);
      expect(
        await ingestReceipts(store(), account, [receipt('m-1', 'failed', at(2), { drErrcode: '2' })]),
      ).toMatchObject({
        applied: 1,
      });
      expect((await record(store(), account, 'm-1', TO)).sms?.receipt).toStrictEqual({
        drStatuscode: 'failed',
        drErrcode: '2',
        drTime: at(2),
      });
    });

    it('applies a strictly later receipt with the same code and another error code', async () => {
      const account = await accountWithMessage();
      await ingestReceipts(store(), account, [receipt('m-1', 'failed', at(1), { drErrcode: '2' })]);
      expect(
        await ingestReceipts(store(), account, [receipt('m-1', 'failed', at(2), { drErrcode: '3' })]),
      ).toMatchObject({
        applied: 1,
      });
      expect((await record(store(), account, 'm-1', TO)).sms?.receipt?.drErrcode).toBe('3');
    });

    it.each([
      ['the same time, another code', 'failed', 0],
      ['an earlier time, another code', 'failed', -1],
      ['a later time, the same codes', 'delivered', 5],
    ] as const)('ignores a receipt at %s', async (_, code, offset) => {
      const account = await accountWithMessage();
      await ingestReceipts(store(), account, [receipt('m-1', 'delivered', at(1))]);
      const before = await record(store(), account, 'm-1', TO);
      const outcome = await ingestReceipts(store(), account, [
        receipt('m-1', code, at(1 + offset), { price: 1 }),
      ]);
      expect(outcome).toStrictEqual({ applied: 0, ignored: 1, unknown: [] });
      expect(await record(store(), account, 'm-1', TO)).toStrictEqual(before);
    });

    it('applies a later accepted with another error code over accepted', async () => {
      const account = await accountWithMessage();
      await ingestReceipts(store(), account, [receipt('m-1', 'accepted', at(1))]);
      expect(
        await ingestReceipts(store(), account, [receipt('m-1', 'accepted', at(2), { drErrcode: '1' })]),
      ).toMatchObject({
        applied: 1,
      });
    });
  });

  it('applies the items of one batch in order', async () => {
    const account = await accountWithMessage();
    await ingest(store(), account, [sms('m-2', TO)]);
    const outcome = await ingestReceipts(store(), account, [
      receipt('m-1', 'accepted', at(1)),
      receipt('m-1', 'delivered', at(2)),
      receipt('m-2', 'delivered', at(1)),
      receipt('m-2', 'accepted', at(2)),
    ]);
    expect(outcome).toStrictEqual({ applied: 3, ignored: 1, unknown: [] });
    expect((await record(store(), account, 'm-1', TO)).sms?.receipt?.drStatuscode).toBe('delivered');
    expect((await record(store(), account, 'm-2', TO)).sms?.receipt?.drStatuscode).toBe('delivered');
  });

  it('keeps the send status "0" that a receipt set when the message is re-sent', async () => {
    const account = await accountWithMessage();
    await ingestReceipts(store(), account, [receipt('m-1', 'delivered', at(1))]);
    await ingest(store(), account, [sms('m-1', TO, { sms: { status: '1' }, text: 'again' })]);
    const m = await record(store(), account, 'm-1', TO);
    expect(m.sms?.status).toBe('0');
    expect(m.sms?.receipt?.drStatuscode).toBe('delivered');
  });

  it('returns receipts without an outbound SMS recipient as unknown', async () => {
    const { id: account } = await createAccount(store());
    await ingest(store(), account, [
      sms('m-1', TO),
      { id: 'w-1', channel: 'WHATSAPP', channelUserId: 'wa:alice' },
      { id: 'in-1', channel: 'SMS', channelUserId: TO, direction: 'inbound' },
    ]);
    const outcome = await ingestReceipts(store(), account, [
      receipt('nope', 'delivered', at(1)),
      receipt('w-1', 'delivered', at(1)),
      receipt('in-1', 'delivered', at(1), { to: TO }),
      receipt('m-1', 'delivered', at(1), { to: '447700900999' }),
      receipt('m-1', 'delivered', at(1), { to: TO }),
    ]);
    expect(outcome).toStrictEqual({
      applied: 1,
      ignored: 0,
      unknown: [
        { messageId: 'nope', to: null },
        { messageId: 'w-1', to: null },
        { messageId: 'in-1', to: TO },
        { messageId: 'm-1', to: '447700900999' },
      ],
    });
  });

  describe('a message with several recipients', () => {
    async function accountWithBulk(): Promise<string> {
      const { id } = await createAccount(store());
      await ingest(store(), id, [sms('bulk', '447700900001'), sms('bulk', '447700900002'), sms('solo', TO)]);
      return id;
    }

    it('applies a receipt to the recipient named by `to` only', async () => {
      const account = await accountWithBulk();
      const outcome = await ingestReceipts(store(), account, [
        receipt('bulk', 'delivered', at(1), { to: '447700900002' }),
      ]);
      expect(outcome.applied).toBe(1);
      const [first, second] = await store().findDlr(account, 'bulk');
      expect(first?.sms?.receipt).toBeNull();
      expect(first?.sms?.status).toBe('1');
      expect(second?.sms?.receipt?.drStatuscode).toBe('delivered');
    });

    it('refuses a receipt without `to`, and the whole batch with it', async () => {
      const account = await accountWithBulk();
      const outcome = await store().ingestReceipts(
        account,
        [
          receipt('solo', 'delivered', at(1)),
          receipt('bulk', 'delivered', at(1)),
          receipt('bulk', 'delivered', at(1), { to: '447700900001' }),
          receipt('bulk', 'accepted', at(1)),
        ],
        NOW,
      );
      expect(outcome.ok).toBe(false);
      if (outcome.ok) return;
      expect(outcome.errors.map((e) => e.index)).toStrictEqual([1, 3]);
      expect(outcome.errors[0]?.detail).toContain('to is required');
      const all = await store().findMessagesByIds(account, ['bulk', 'solo']);
      expect(all).toHaveLength(3);
      for (const m of all) expect(m.sms).toMatchObject({ status: '1', receipt: null });
    });
  });

  it('keeps receipts inside their account', async () => {
    const a = await accountWithMessage();
    const { id: b } = await createAccount(store());
    const outcome = await ingestReceipts(store(), b, [receipt('m-1', 'delivered', at(1), { to: TO })]);
    expect(outcome).toStrictEqual({ applied: 0, ignored: 0, unknown: [{ messageId: 'm-1', to: TO }] });
    expect((await record(store(), a, 'm-1', TO)).sms?.receipt).toBeNull();
  });

  it('keeps the receipt time to the millisecond', async () => {
    const account = await accountWithMessage();
    const when = new Date('2026-11-22T10:00:01.987Z');
    await ingestReceipts(store(), account, [receipt('m-1', 'delivered', when)]);
    expect((await record(store(), account, 'm-1', TO)).sms?.receipt?.drTime.toISOString()).toBe(
      when.toISOString(),
    );
  });
});

import { describe, expect, it } from 'vitest';
import { dayOf } from '../../src/domain/rollup.js';
import { engines } from '../support/engines.js';
import { at, createAccount, ingest, ingestReceipts, NOW, receipt, sms, useStore } from './fixtures.js';

const DAY_S = 86_400;

describe.each(engines())('$name store: review rollup', (engine) => {
  const store = useStore(engine);

  it('reads whole UTC days from the day of `from` through the day of `to`, of one account and campaign', async () => {
    const { id } = await createAccount(store());
    const other = await createAccount(store());
    await ingest(store(), id, [
      sms('d0', '447700900001', { createdAt: at(-DAY_S), campaignId: 'spring', sms: { network: '23415' } }),
      sms('d1', '447700900001', { createdAt: NOW, campaignId: 'spring', sms: { network: '23415' } }),
      sms('d1b', '447700900002', { createdAt: NOW, sms: { network: '23415' } }),
      sms('d2', '447700900001', { createdAt: at(DAY_S), campaignId: 'spring' }),
    ]);
    await ingest(store(), other.id, [sms('d1', '447700900001', { createdAt: NOW })]);
    await ingestReceipts(store(), id, [
      receipt('d1', 'accepted', at(10)),
      receipt('d1', 'delivered', at(70)),
    ]);
    const day = dayOf(NOW);
    // NOW is 10:00 UTC: a period from 00:00 to 00:01 of the same day still reads the whole day.
    const today = { from: new Date(day * DAY_S * 1000), to: new Date(day * DAY_S * 1000 + 60_000) };

    expect(await store().reviewSummary(id, today)).toStrictEqual({
      counts: expect.arrayContaining([
        { day, network: '23415', state: 'delivered', errcode: '0', n: 1 },
        { day, network: '23415', state: '', errcode: '', n: 1 },
      ]),
      latency: [{ bucket: 7, n: 1 }],
    });
    expect((await store().reviewSummary(id, today)).counts).toHaveLength(2);
    expect(await store().reviewSummary(id, { ...today, campaignId: 'spring' })).toStrictEqual({
      counts: [{ day, network: '23415', state: 'delivered', errcode: '0', n: 1 }],
      latency: [{ bucket: 7, n: 1 }],
    });
    const threeDays = await store().reviewSummary(id, { from: at(-DAY_S), to: at(DAY_S) });
    expect(threeDays.counts.reduce((sum, r) => sum + r.n, 0)).toBe(4);
    expect(await store().reviewSummary(id, { from: at(2 * DAY_S), to: at(9 * DAY_S) })).toStrictEqual({
      counts: [],
      latency: [],
    });
  });
});

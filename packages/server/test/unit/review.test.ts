import { describe, expect, it } from 'vitest';
import { networkName } from '../../src/domain/networks.js';
import type { StoredMessage } from '../../src/domain/records.js';
import { reviewFigures } from '../../src/domain/review.js';
import { dayOf, latencyBucket, rollupDelta } from '../../src/domain/rollup.js';

const sent = new Date('2026-11-20T23:59:00.000Z');
const recipient = (
  receipt: { code: 'accepted' | 'delivered' | 'failed'; after: number } | null,
): StoredMessage => ({
  id: 'm1',
  channel: 'SMS',
  direction: 'outbound',
  contactId: 'c',
  channelUserId: '447700900001',
  conversationId: 'v',
  campaignId: 'spring',
  text: null,
  content: null,
  status: null,
  sms: {
    status: '0',
    network: '23415',
    price: 0,
    counts: 1,
    receipt: receipt && {
      drStatuscode: receipt.code,
      drErrcode: receipt.code === 'failed' ? '3' : '0',
      drTime: new Date(sent.getTime() + receipt.after),
    },
  },
  createdAt: sent,
});

describe('network names', () => {
  it('names an MCC+MNC by country and operator from the dataset, the MCC’s own country first', () => {
    expect(networkName('23415')).toEqual({ country: 'United Kingdom', operator: 'Vodafone' });
    expect(networkName('310260')).toEqual({ country: 'United States of America', operator: 'T-Mobile US' });
    expect(networkName('00000')).toBeNull();
  });
});

describe('rollup delta', () => {
  it('moves one count when a recipient goes from accepted to delivered, and adds its time to final', () => {
    const delta = rollupDelta([
      [recipient({ code: 'accepted', after: 5_000 }), recipient({ code: 'delivered', after: 90_000 })],
    ]);
    const day = dayOf(sent);
    expect(delta.counts).toEqual([
      { day, campaignId: 'spring', network: '23415', state: 'accepted', errcode: '0', n: -1 },
      { day, campaignId: 'spring', network: '23415', state: 'delivered', errcode: '0', n: 1 },
    ]);
    expect(delta.latency).toEqual([{ day, campaignId: 'spring', bucket: latencyBucket(90_000), n: 1 }]);
  });

  it('adds nothing for a write that changes no key (a replayed receipt)', () => {
    const r = recipient({ code: 'delivered', after: 1 });
    expect(rollupDelta([[r, { ...r }]])).toEqual({ counts: [], latency: [] });
  });

  it('counts the UTC day of sending, and buckets before sending and past two days at the ends', () => {
    expect(dayOf(sent)).toBe(Math.floor(Date.UTC(2026, 10, 20) / 86_400_000));
    expect(latencyBucket(-5)).toBe(0);
    expect(latencyBucket(999)).toBe(0);
    expect(latencyBucket(1_000)).toBe(1);
    expect(latencyBucket(10 * 86_400_000)).toBe(19);
  });
});

describe('review figures', () => {
  it('sums sent, receipts, delivery rate, errcodes with meanings, networks with names, days and quantiles', () => {
    const figures = reviewFigures({
      counts: [
        { day: 20_000, network: '23415', state: 'delivered', errcode: '0', n: 6 },
        { day: 20_000, network: '23415', state: 'failed', errcode: '3', n: 2 },
        { day: 20_001, network: '', state: '', errcode: '', n: 2 },
      ],
      latency: [
        { bucket: 2, n: 5 },
        { bucket: 6, n: 3 },
      ],
    });
    expect(figures.sent).toBe(10);
    expect(figures.receipts).toMatchObject({ delivered: 6, failed: 2, none: 2, accepted: 0 });
    expect(figures.deliveryRate).toBeCloseTo(0.6);
    expect(figures.errcodes).toEqual([
      { errcode: '0', meaning: 'Normal', n: 6 },
      { errcode: '3', meaning: 'Number deactivated or invalid', n: 2 },
    ]);
    expect(figures.byNetwork.map((n) => [n.network, n.name?.operator ?? null, n.sent])).toEqual([
      ['23415', 'Vodafone', 8],
      [null, null, 2],
    ]);
    expect(figures.byDay.map((d) => [d.day, d.sent, d.deliveryRate])).toEqual([
      ['2024-10-04', 8, 0.75],
      ['2024-10-05', 2, 0],
    ]);
    // 8 finals: the 4th is in bucket 2 (< 5 s), the 8th (p90: rank 8) in bucket 6 (< 60 s).
    expect(figures.timeToFinal).toMatchObject({ finals: 8, medianMs: 5_000, p90Ms: 60_000 });
  });

  it('has no quantiles without a final receipt', () => {
    expect(reviewFigures({ counts: [], latency: [] }).timeToFinal).toMatchObject({
      finals: 0,
      medianMs: null,
      p90Ms: null,
    });
  });
});

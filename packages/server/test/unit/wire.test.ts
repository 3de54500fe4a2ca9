import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { StoredMessage } from '../../src/domain/records.js';
import { drStatusOf, formatDrTime, parseRfc3339, parseTimestamp, toDlrItem } from '../../src/domain/wire.js';

describe('parseTimestamp', () => {
  it.each([
    ['2026-11-22 10:00:05.007', '2026-11-22T10:00:05.007Z'],
    ['2024-02-29 23:59:59.999', '2024-02-29T23:59:59.999Z'],
    ['2026-11-22T10:00:05Z', '2026-11-22T10:00:05.000Z'],
    ['2026-11-22T10:00:05.1Z', '2026-11-22T10:00:05.100Z'],
    ['2026-11-22t10:00:05.123z', '2026-11-22T10:00:05.123Z'],
    ['2026-11-22T12:00:05.123+02:00', '2026-11-22T10:00:05.123Z'],
    ['2026-11-22T00:30:00-01:30', '2026-11-22T02:00:00.000Z'],
    ['2026-11-22T10:00:05.123456789Z', '2026-11-22T10:00:05.123Z'],
  ])('reads %s as %s', (input, iso) => {
    expect(parseTimestamp(input)?.toISOString()).toBe(iso);
  });

  it.each([
    '2026-02-30 10:00:00.000',
    '2026-02-30T10:00:00Z',
    '2025-02-29T10:00:00Z',
    '2026-13-01 10:00:00.000',
    '2026-11-22 24:00:00.000',
    '2026-11-22 10:60:00.000',
    '2026-11-22 10:00:00',
    '2026-11-22 10:00:00.12',
    '2026-11-22T10:00:00',
    '2026-11-22',
    '1795341600000',
    'yesterday',
    '',
    ' 2026-11-22T10:00:00Z',
  ])('refuses %j', (input) => {
    expect(parseTimestamp(input)).toBeNull();
  });

  it('refuses a non-date in RFC 3339 form', () => {
    expect(parseRfc3339('2026-04-31T00:00:00Z')).toBeNull();
    expect(parseRfc3339('2026-04-30T25:00:00Z')).toBeNull();
  });
});

describe('formatDrTime', () => {
  it('writes yyyy-MM-dd HH:mm:ss.SSS in UTC', () => {
    expect(formatDrTime(new Date('2026-01-02T03:04:05.006Z'))).toBe('2026-01-02 03:04:05.006');
    expect(formatDrTime(new Date('2026-11-22T23:30:00+05:00'))).toBe('2026-11-22 18:30:00.000');
  });

  it('writes what toISOString writes, with a space for the T, at every millisecond from 1970 to 9999', () => {
    const iso = (d: Date) => d.toISOString().replace('T', ' ').slice(0, 23);
    const edges = [0, 1, 86_399_999, 86_400_000, 951_782_400_000, 4_107_542_399_999, 253_402_300_799_999];
    for (const t of edges) expect(formatDrTime(new Date(t))).toBe(iso(new Date(t)));
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 253_402_300_799_999 }), (t) => {
        expect(formatDrTime(new Date(t))).toBe(iso(new Date(t)));
      }),
      { numRuns: 20_000 },
    );
  });

  it('falls back to toISOString outside those years, and throws on an invalid date as it does', () => {
    for (const t of [-1, -62_198_755_200_000, 253_402_300_800_000, 8.64e15]) {
      expect(formatDrTime(new Date(t))).toBe(new Date(t).toISOString().replace('T', ' ').slice(0, 23));
    }
    expect(() => formatDrTime(new Date(Number.NaN))).toThrow(RangeError);
  });

  it('round-trips with parseTimestamp', () => {
    const d = new Date('2026-11-22T10:00:05.007Z');
    expect(parseTimestamp(formatDrTime(d))).toStrictEqual(d);
  });
});

describe('toDlrItem', () => {
  const base: StoredMessage = {
    id: 'm-1',
    channel: 'SMS',
    direction: 'outbound',
    contactId: 'c',
    channelUserId: '447700900123',
    conversationId: 'v',
    campaignId: null,
    text: 'Hi',
    content: null,
    status: null,
    sms: { status: '1', network: null, price: 0.05, counts: 2, receipt: null },
    createdAt: new Date(0),
  };

  it('has only the send fields before a receipt and omits an unknown network', () => {
    expect(toDlrItem(base)).toStrictEqual({
      type: 'dlr',
      messageid: 'm-1',
      to: '447700900123',
      status: '1',
      price: 0.05,
      counts: 2,
    });
  });

  it('adds the receipt fields and network once known', () => {
    const m: StoredMessage = {
      ...base,
      sms: {
        status: '0',
        network: '23410',
        price: 0.05,
        counts: 2,
        receipt: { drStatuscode: 'expired', drErrcode: '6', drTime: new Date('2026-11-22T10:00:05.007Z') },
      },
    };
    expect(toDlrItem(m)).toStrictEqual({
      type: 'dlr',
      messageid: 'm-1',
      to: '447700900123',
      status: '0',
      price: 0.05,
      counts: 2,
      network: '23410',
      drStatus: 400,
      drStatuscode: 'expired',
      drErrcode: '6',
      drTime: '2026-11-22 10:00:05.007',
    });
  });

  it.each([
    ['delivered', 0],
    ['accepted', 0],
    ['rejected', 400],
    ['failed', 400],
    ['expired', 400],
    ['deleted', 400],
    ['unknown', 400],
  ] as const)('drStatusOf(%s) is %i', (code, status) => {
    expect(drStatusOf(code)).toBe(status);
  });
});

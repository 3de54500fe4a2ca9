import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DlrItem } from '../../src/domain/wire.js';
import { itemJsonOf, itemOf, storedItem } from '../../src/store/event-item.js';

const text = fc.string({ unit: 'binary', maxLength: 24 });
/** Items of every shape toDlrItem makes: with or without a network, with or without a receipt. */
const item = fc
  .record({
    messageid: text,
    to: text,
    status: fc.constantFrom('0', '1', '400'),
    price: fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constantFrom(0, -0, 0.035, 1e21)),
    counts: fc.integer({ min: 1, max: 20 }),
    network: fc.option(text, { nil: undefined }),
    receipt: fc.option(
      fc.record({
        drStatus: fc.constantFrom(0 as const, 400 as const),
        drStatuscode: fc.constantFrom('delivered', 'accepted', 'failed', 'expired'),
        drErrcode: fc.constantFrom('0', '001', '1234'),
        drTime: fc.constant('2026-08-03 00:00:19.497'),
      }),
      { nil: undefined },
    ),
  })
  .map(({ network, receipt, ...r }): DlrItem => {
    const out: Record<string, unknown> = {
      type: 'dlr',
      messageid: r.messageid,
      to: r.to,
      status: r.status,
      price: r.price,
      counts: r.counts,
    };
    if (network !== undefined) out.network = network;
    if (receipt !== undefined) Object.assign(out, receipt);
    return out as unknown as DlrItem;
  });

describe('stored event items', () => {
  it('give back the very JSON of the item, from its row’s message id and recipient', () => {
    fc.assert(
      fc.property(item, (i) => {
        const stored = storedItem(i, i.messageid, i.to);
        expect(stored.startsWith('[')).toBe(true);
        expect(itemJsonOf(i.messageid, i.to, stored)).toBe(JSON.stringify(i));
        expect(itemOf(i.messageid, i.to, stored)).toStrictEqual(JSON.parse(JSON.stringify(i)));
      }),
      { numRuns: 5000 },
    );
  });

  it('hold about a quarter of the bytes of the whole item', () => {
    const i: DlrItem = {
      type: 'dlr',
      messageid: 'ab73b0ad-2cc0-4a8a-a6ce-c4d345f24514',
      to: '447030169375',
      status: '0',
      price: 0.035,
      counts: 1,
      network: '26201',
      drStatus: 0,
      drStatuscode: 'delivered',
      drErrcode: '0',
      drTime: '2026-08-03 00:00:19.497',
    };
    const stored = storedItem(i, i.messageid, i.to);
    expect(stored).toBe('["0",0.035,1,"26201",0,"delivered","0","2026-08-03 00:00:19.497"]');
    expect(stored.length / JSON.stringify(i).length).toBeLessThan(0.3);
  });

  it('keep an item of any other shape whole, and read back every item as it was', () => {
    const base = JSON.parse(
      '{"type":"dlr","messageid":"m","to":"4470","status":"0","price":1,"counts":1,"drStatus":0,"drStatuscode":"delivered","drErrcode":"0","drTime":"2026-01-01 00:00:00.000"}',
    ) as DlrItem;
    const odd = [
      { ...base, extra: 1 },
      // A value that is not a scalar, in its place: kept compact, and spliced back whole.
      JSON.parse(
        '{"type":"dlr","messageid":"m","to":"4470","status":"0","price":1,"counts":1,"network":{"a":["],\\"[",1],"b":"\\\\"},"drStatus":0,"drStatuscode":"delivered","drErrcode":"0","drTime":"2026-01-01 00:00:00.000"}',
      ),
      Object.assign({ to: base.to }, base),
      { ...base, network: null },
      base,
    ] as unknown as DlrItem[];
    // The last: its row's recipient is not the item's.
    const rows = [
      ['m', '4470'],
      ['m', '4470'],
      ['m', '4470'],
      ['m', '4470'],
      ['m', '4471'],
    ] as const;
    odd.forEach((i, n) => {
      const [messageId, to] = rows[n] ?? ['', ''];
      const stored = storedItem(i, messageId, to);
      // Nested values are the one odd shape kept compact.
      if (n === 1) expect(stored.startsWith('[')).toBe(true);
      else expect(stored).toBe(JSON.stringify(i));
      expect(itemJsonOf(messageId, to, stored)).toBe(JSON.stringify(i));
    });
  });
});

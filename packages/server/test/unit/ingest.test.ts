import { describe, expect, it } from 'vitest';
import { applyReceipt, type ReceiptInput } from '../../src/domain/ingest/precedence.js';
import type { SmsState } from '../../src/domain/records.js';
import type { DrErrcode, DrStatuscode } from '../../src/domain/vocabulary.js';

const T0 = Date.parse('2026-11-22T10:00:00.000Z');
const at = (s: number) => new Date(T0 + s * 1000);

const state = (held?: { code: DrStatuscode; err?: DrErrcode; t: number }): SmsState => ({
  status: held ? '0' : '1',
  network: '23410',
  price: 0.05,
  counts: 1,
  receipt: held ? { drStatuscode: held.code, drErrcode: held.err ?? '0', drTime: at(held.t) } : null,
});

const receipt = (code: DrStatuscode, t: number, over: Partial<ReceiptInput> = {}): ReceiptInput => ({
  messageId: 'm-1',
  drStatuscode: code,
  drErrcode: '0',
  drTime: at(t),
  ...over,
});

const FINALS = ['delivered', 'rejected', 'failed', 'expired', 'deleted', 'unknown'] as const;

describe('applyReceipt precedence', () => {
  it.each(['accepted', ...FINALS] as const)('applies %s over no receipt, at any time', (code) => {
    const next = applyReceipt(state(), receipt(code, -100));
    expect(next?.receipt).toStrictEqual({ drStatuscode: code, drErrcode: '0', drTime: at(-100) });
    expect(next?.status).toBe('0');
  });

  it.each(FINALS)('applies final %s over accepted, even with an earlier drTime', (code) => {
    expect(applyReceipt(state({ code: 'accepted', t: 10 }), receipt(code, 5))?.receipt?.drStatuscode).toBe(
      code,
    );
  });

  it.each(FINALS)('ignores accepted after final %s, even when later', (code) => {
    expect(applyReceipt(state({ code, t: 10 }), receipt('accepted', 20))).toBeNull();
  });

  // Equal rank: only a strictly later receipt whose code or error code differs applies.
  it.each([
    ['final → other final, later', { code: 'failed', t: 10 }, receipt('delivered', 11), true],
    ['final → other final, same time', { code: 'failed', t: 10 }, receipt('delivered', 10), false],
    ['final → other final, earlier', { code: 'failed', t: 10 }, receipt('delivered', 9), false],
    ['final → same final, later', { code: 'failed', t: 10 }, receipt('failed', 11), false],
    [
      'final → same final with another errcode, later',
      { code: 'failed', t: 10 },
      receipt('failed', 11, { drErrcode: '5' }),
      true,
    ],
    [
      'final → same final with another errcode, same time',
      { code: 'failed', t: 10 },
      receipt('failed', 10, { drErrcode: '5' }),
      false,
    ],
    ['accepted → accepted, later', { code: 'accepted', t: 10 }, receipt('accepted', 11), false],
    [
      'accepted → accepted with another errcode, later',
      { code: 'accepted', t: 10 },
      receipt('accepted', 11, { drErrcode: '1' }),
      true,
    ],
  ] as const)('%s: applies=%s', (_name, held, incoming, applies) => {
    const next = applyReceipt(state(held), incoming);
    expect(next !== null).toBe(applies);
  });

  it('updates the SMS fields the receipt gives and keeps the others', () => {
    const next = applyReceipt(state(), receipt('delivered', 1, { network: '310260', counts: 3 }));
    expect(next).toStrictEqual({
      status: '0',
      network: '310260',
      price: 0.05,
      counts: 3,
      receipt: { drStatuscode: 'delivered', drErrcode: '0', drTime: at(1) },
    });
  });

  it('sets the send status to "0" over "400"', () => {
    const failedSend: SmsState = { ...state(), status: '400' };
    expect(applyReceipt(failedSend, receipt('failed', 1))?.status).toBe('0');
  });

  it('does not modify the state it was given', () => {
    const held = state({ code: 'accepted', t: 1 });
    const copy = structuredClone(held);
    applyReceipt(held, receipt('delivered', 2, { price: 1 }));
    expect(held).toStrictEqual(copy);
  });
});

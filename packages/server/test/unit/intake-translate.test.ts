import { describe, expect, it } from 'vitest';
import {
  fromJasmin,
  fromKannel,
  fromSmppReceipt,
  isReceiptEsmClass,
  type Translation,
} from '../../src/domain/intake/translate.js';

const arrivedAt = new Date('2026-11-22T12:00:00.000Z');
const route = { timezone: 'UTC', errorMap: {} };
const FULL =
  'id:1A2B3C sub:001 dlvrd:001 submit date:2611221000 done date:2611221001 stat:DELIVRD err:000 text:Hello';

/** The receipt's verdict without the raw sources, for compact expectations. */
function verdict(t: Translation) {
  if (t.kind !== 'receipt') return t;
  const { raw: _raw, ...rest } = t;
  return rest;
}

describe('fromSmppReceipt', () => {
  it('reads a deliver_sm receipt from its text', () => {
    const t = fromSmppReceipt({ esmClass: 0x04, shortMessage: FULL, arrivedAt, route });
    expect(verdict(t)).toEqual({
      kind: 'receipt',
      carrierId: '1A2B3C',
      drStatuscode: 'delivered',
      drErrcode: '0',
      drTime: new Date('2026-11-22T10:01:00Z'),
    });
    expect(t.kind === 'receipt' && t.raw).toMatchObject({
      text: FULL,
      state: 'stat DELIVRD',
      error: { raw: '000' },
    });
  });

  it('decodes the text from bytes', () => {
    const t = fromSmppReceipt({
      esmClass: 0x04,
      shortMessage: new TextEncoder().encode(FULL),
      arrivedAt,
      route,
    });
    expect(t).toMatchObject({ kind: 'receipt', carrierId: '1A2B3C', drStatuscode: 'delivered' });
  });

  it('prefers TLVs: receipted_message_id, message_state, network_error_code', () => {
    const t = fromSmppReceipt({
      esmClass: 0x04,
      tlvs: { receiptedMessageId: 'tlv-id', messageState: 5, networkErrorCode: Uint8Array.of(3, 0, 1) },
      shortMessage: 'id:text-id stat:DELIVRD err:027 done date:2611221001',
      arrivedAt,
      route,
    });
    expect(verdict(t)).toEqual({
      kind: 'receipt',
      carrierId: 'tlv-id',
      drStatuscode: 'failed',
      drErrcode: '3',
      drTime: new Date('2026-11-22T10:01:00Z'),
    });
    expect(t.kind === 'receipt' && t.raw.state).toBe('message_state 5');
  });

  it('needs no text when the TLVs say it all, and then takes the arrival time', () => {
    const t = fromSmppReceipt({
      esmClass: 0x04,
      tlvs: { receiptedMessageId: 'abc', messageState: 2 },
      shortMessage: null,
      arrivedAt,
      route,
    });
    expect(verdict(t)).toEqual({
      kind: 'receipt',
      carrierId: 'abc',
      drStatuscode: 'delivered',
      drErrcode: '0',
      drTime: arrivedAt,
    });
  });

  it('falls back to stat: when the TLV state is outside 1–8', () => {
    const t = fromSmppReceipt({
      esmClass: 0x04,
      tlvs: { messageState: 0 },
      shortMessage: 'id:1 stat:EXPIRED',
      arrivedAt,
      route,
    });
    expect(t).toMatchObject({ kind: 'receipt', drStatuscode: 'expired', drErrcode: '99' });
  });

  it('reads done date in the route time zone, and takes arrival time for a missing or impossible one', () => {
    const zoned = { timezone: 'Asia/Kolkata', errorMap: {} };
    expect(fromSmppReceipt({ esmClass: 4, shortMessage: FULL, arrivedAt, route: zoned })).toMatchObject({
      drTime: new Date('2026-11-22T04:31:00Z'),
    });
    expect(
      fromSmppReceipt({ esmClass: 4, shortMessage: 'id:1 stat:DELIVRD', arrivedAt, route }),
    ).toMatchObject({
      drTime: arrivedAt,
    });
    const impossible = 'id:1 stat:DELIVRD done date:2613011000';
    expect(fromSmppReceipt({ esmClass: 4, shortMessage: impossible, arrivedAt, route })).toMatchObject({
      drTime: arrivedAt,
    });
  });

  it('maps the error through the route errorMap first', () => {
    const t = fromSmppReceipt({
      esmClass: 4,
      shortMessage: 'id:1 stat:UNDELIV err:027',
      arrivedAt,
      route: { timezone: 'UTC', errorMap: { '027': '8' } },
    });
    expect(t).toMatchObject({ drStatuscode: 'failed', drErrcode: '8' });
    expect(
      fromSmppReceipt({ esmClass: 4, shortMessage: 'id:1 stat:UNDELIV err:027', arrivedAt, route }),
    ).toMatchObject({ drErrcode: '2' });
  });

  it('takes intermediate notifications, whatever the other esm_class bits', () => {
    expect(isReceiptEsmClass(0x04)).toBe(true);
    expect(isReceiptEsmClass(0x20)).toBe(true);
    expect(isReceiptEsmClass(0x04 | 0x40 | 0x03)).toBe(true);
    const t = fromSmppReceipt({ esmClass: 0x20, shortMessage: 'id:9 stat:ENROUTE', arrivedAt, route });
    expect(t).toMatchObject({ kind: 'receipt', carrierId: '9', drStatuscode: 'accepted', drErrcode: '0' });
  });

  it('ignores what esm_class marks as no receipt (MO, SME acknowledgements)', () => {
    for (const esmClass of [0x00, 0x08, 0x10, 0x18, 0x40, 0x3c, -1, 1.5, 0x104]) {
      expect(isReceiptEsmClass(esmClass), `esm_class ${esmClass}`).toBe(false);
      const t = fromSmppReceipt({ esmClass, shortMessage: FULL, arrivedAt, route });
      expect(t.kind, `esm_class ${esmClass}`).toBe('ignored');
    }
  });

  it('calls a receipt garbled when it has no carrier id or no state that maps', () => {
    const cases = [
      'stat:DELIVRD err:000',
      'id:1 err:000',
      'id:1 stat:WHATEVER',
      'hello',
      '',
      `id:${'x'.repeat(65)}`,
    ];
    for (const shortMessage of cases) {
      const t = fromSmppReceipt({ esmClass: 4, shortMessage, arrivedAt, route });
      expect(t.kind, shortMessage).toBe('garbled');
      expect(t.kind === 'garbled' && t.reason.length).toBeGreaterThan(0);
    }
    expect(
      fromSmppReceipt({ esmClass: 4, tlvs: { messageState: 9 }, shortMessage: 'id:1', arrivedAt, route }),
    ).toEqual({
      kind: 'garbled',
      reason: 'no state that maps to a drStatuscode (message_state 9, no stat:)',
    });
  });
});

describe('fromKannel', () => {
  it('reads the type=8 ACK fetch as accepted, with no carrier id of its own', () => {
    expect(verdict(fromKannel({ type: '8', reply: 'ACK/', arrivedAt, route }))).toEqual({
      kind: 'receipt',
      carrierId: null,
      drStatuscode: 'accepted',
      drErrcode: '0',
      drTime: arrivedAt,
    });
  });

  it('reads the type=1 fetch from its receipt text', () => {
    expect(verdict(fromKannel({ type: 1, reply: FULL, arrivedAt, route }))).toEqual({
      kind: 'receipt',
      carrierId: '1A2B3C',
      drStatuscode: 'delivered',
      drErrcode: '0',
      drTime: new Date('2026-11-22T10:01:00Z'),
    });
  });

  it('lets a state in the receipt text win over type', () => {
    const t = fromKannel({ type: '1', reply: 'id:5 stat:UNDELIV err:001', arrivedAt, route });
    expect(t).toMatchObject({ drStatuscode: 'failed', drErrcode: '3' });
    expect(t.kind === 'receipt' && t.raw.state).toBe('stat UNDELIV');
    const typeOnly = fromKannel({ type: '2', reply: 'id:5 err:001', arrivedAt, route });
    expect(typeOnly).toMatchObject({ drStatuscode: 'failed', drErrcode: '3' });
    expect(typeOnly.kind === 'receipt' && typeOnly.raw.state).toBe('type 2');
  });

  it('maps every Kannel type of the table', () => {
    const expected = { 1: 'delivered', 2: 'failed', 4: 'accepted', 8: 'accepted', 16: 'rejected' };
    for (const [type, drStatuscode] of Object.entries(expected)) {
      expect(fromKannel({ type, arrivedAt, route }), `type ${type}`).toMatchObject({
        kind: 'receipt',
        drStatuscode,
      });
    }
  });

  it('reads a NACK reply command status as the error', () => {
    const t = fromKannel({
      type: 16,
      reply: 'NACK/0x0000000b/Invalid Destination Address',
      arrivedAt,
      route,
    });
    expect(verdict(t)).toMatchObject({ drStatuscode: 'rejected', drErrcode: '3' });
    expect(fromKannel({ type: 16, reply: 'NACK/0x0000000a/x', arrivedAt, route })).toMatchObject({
      drErrcode: '10',
    });
    expect(fromKannel({ type: 16, reply: 'NACK/', arrivedAt, route })).toMatchObject({ drErrcode: '99' });
  });

  it('takes the carrierId parameter over the text id', () => {
    expect(fromKannel({ type: 1, reply: FULL, carrierId: 'param-id', arrivedAt, route })).toMatchObject({
      carrierId: 'param-id',
    });
  });

  it('calls it garbled when neither the text nor type gives a state', () => {
    expect(fromKannel({ type: '3', reply: 'id:1 stat:NOPE', arrivedAt, route })).toEqual({
      kind: 'garbled',
      reason: 'no state that maps to a drStatuscode (stat NOPE, type 3)',
    });
    expect(fromKannel({ type: undefined, arrivedAt, route }).kind).toBe('garbled');
  });
});

describe('fromJasmin', () => {
  it('reads a level-2 receipt with its done date and error', () => {
    const t = fromJasmin({
      id: 'carrier-7',
      message_status: 'UNDELIV',
      level: '2',
      subdate: '2611221000',
      donedate: '2611221005',
      err: '027',
      sub: '001',
      dlvrd: '000',
      text: 'Hello: there',
      arrivedAt,
      route: { timezone: 'Europe/Berlin', errorMap: {} },
    });
    expect(verdict(t)).toEqual({
      kind: 'receipt',
      carrierId: 'carrier-7',
      drStatuscode: 'failed',
      drErrcode: '2',
      drTime: new Date('2026-11-22T09:05:00Z'),
    });
    expect(t.kind === 'receipt' && t.raw.fields).toMatchObject({
      submitDate: '2611221000',
      submittedAt: new Date('2026-11-22T09:00:00Z'),
      text: 'Hello: there',
      stat: 'UNDELIV',
    });
  });

  it('reads level 1 as the answer to the submission', () => {
    expect(
      verdict(fromJasmin({ id: 'x', message_status: 'ESME_ROK', level: '1', arrivedAt, route })),
    ).toEqual({
      kind: 'receipt',
      carrierId: 'x',
      drStatuscode: 'accepted',
      drErrcode: '0',
      drTime: arrivedAt,
    });
    expect(
      fromJasmin({ id: 'x', message_status: 'ESME_RINVDSTADR', level: 1, arrivedAt, route }),
    ).toMatchObject({
      drStatuscode: 'rejected',
      drErrcode: '3',
    });
    expect(
      fromJasmin({
        id: 'x',
        message_status: 'ESME_RTHROTTLED',
        level: 1,
        arrivedAt,
        route: { errorMap: { ESME_RTHROTTLED: '6' } },
      }),
    ).toMatchObject({ drStatuscode: 'rejected', drErrcode: '6' });
  });

  it('maps every Jasmin status of the table', () => {
    const expected = {
      DELIVRD: 'delivered',
      EXPIRED: 'expired',
      DELETED: 'deleted',
      UNDELIV: 'failed',
      REJECTD: 'rejected',
      UNKNOWN: 'unknown',
      ACCEPTD: 'accepted',
    };
    for (const [message_status, drStatuscode] of Object.entries(expected)) {
      expect(
        fromJasmin({ id: 'x', message_status, level: '2', arrivedAt, route }),
        message_status,
      ).toMatchObject({
        drStatuscode,
      });
    }
  });

  it('falls back to arrival time for an impossible donedate, and leaves the carrier id null when absent', () => {
    const t = fromJasmin({ message_status: 'DELIVRD', level: '2', donedate: '2600001000', arrivedAt, route });
    expect(t).toMatchObject({ kind: 'receipt', carrierId: null, drTime: arrivedAt });
  });

  it('calls an unknown status garbled', () => {
    expect(fromJasmin({ id: 'x', message_status: 'SENT', level: '2', arrivedAt, route })).toEqual({
      kind: 'garbled',
      reason: 'no state that maps to a drStatuscode (message_status SENT at level 2)',
    });
    expect(fromJasmin({ id: 'x', message_status: undefined, arrivedAt, route }).kind).toBe('garbled');
  });
});

import { PDU } from 'smpp';
import { describe, expect, it } from 'vitest';
import { fromSmppReceipt } from '../../src/domain/intake/translate.js';
import {
  CMD,
  encodeResponse,
  PduFramer,
  readHeader,
  readIncomingMessage,
} from '../../src/intake/smpp-pdu.js';

const TEXT = 'id:ab_1 submit_date:2611221000 done date:2611221001 stat:DELIVRD err:000 text:@home';
const pdu = (command: string, fields: Record<string, unknown>) =>
  new PDU(command, { sequence_number: 7, ...fields }).toBuffer();

describe('SMPP PDUs as the bind reads them', () => {
  it('cuts PDUs off a stream however it is split, and refuses a length that cannot be', () => {
    const one = pdu('enquire_link', {});
    const two = pdu('deliver_sm', { esm_class: 4, short_message: Buffer.from(TEXT, 'latin1') });
    const stream = Buffer.concat([one, two]);
    const framer = new PduFramer();
    const out: Buffer[] = [];
    for (let i = 0; i < stream.length; i += 5) out.push(...framer.push(stream.subarray(i, i + 5)));
    expect(out.map((b) => readHeader(b).commandId)).toEqual([CMD.enquire_link, CMD.deliver_sm]);
    expect(() => new PduFramer().push(Buffer.from([0, 0, 0, 8, 1, 2, 3, 4]))).toThrow(/not SMPP/);
    expect(() => new PduFramer().push(Buffer.from([0, 0x10, 0, 1]))).toThrow(/not SMPP/);
  });

  it('reads a deliver_sm receipt text as its bytes, not as GSM 03.38', () => {
    const message = readIncomingMessage(
      pdu('deliver_sm', { esm_class: 4, short_message: Buffer.from(TEXT, 'latin1') }),
    );
    expect(message).not.toBeNull();
    const translated = fromSmppReceipt({
      esmClass: message?.esmClass ?? 0,
      shortMessage: message?.text ?? null,
      arrivedAt: new Date(),
      route: {},
    });
    expect(translated).toMatchObject({ kind: 'receipt', carrierId: 'ab_1', drStatuscode: 'delivered' });
    expect(Buffer.from(message?.text as Uint8Array).toString('latin1')).toBe(TEXT);
  });

  it('reads data_sm with message_payload and TLVs, a user data header, and UCS-2', () => {
    const data = readIncomingMessage(
      pdu('data_sm', {
        esm_class: 4,
        data_coding: 0,
        message_payload: Buffer.from('stat:DELIVRD', 'latin1'),
        receipted_message_id: 'r-9',
        message_state: 2,
        network_error_code: Buffer.from([3, 0, 27]),
      }),
    );
    expect(data).toMatchObject({ esmClass: 4, receiptedMessageId: 'r-9', messageState: 2 });
    expect(Buffer.from(data?.networkErrorCode ?? []).toString('hex')).toBe('03001b');
    expect(Buffer.from(data?.text as Uint8Array).toString('latin1')).toBe('stat:DELIVRD');

    const udh = Buffer.from([5, 0, 3, 1, 2, 1]);
    const withUdh = readIncomingMessage(
      pdu('deliver_sm', {
        esm_class: 0x44,
        short_message: Buffer.concat([udh, Buffer.from('id:1 stat:DELIVRD')]),
      }),
    );
    expect(Buffer.from(withUdh?.text as Uint8Array).toString('latin1')).toBe('id:1 stat:DELIVRD');

    const ucs2 = Buffer.from('id:ü1 stat:DELIVRD', 'utf16le').swap16();
    const wide = readIncomingMessage(
      pdu('deliver_sm', { esm_class: 4, data_coding: 8, short_message: ucs2 }),
    );
    expect(wide?.text).toBe('id:ü1 stat:DELIVRD');
  });

  it('calls a malformed body malformed, never throws', () => {
    const whole = pdu('deliver_sm', { esm_class: 4, short_message: Buffer.from(TEXT, 'latin1') });
    for (let cut = 16; cut < whole.length; cut += 3) {
      const truncated = Buffer.from(whole.subarray(0, cut));
      truncated.writeUInt32BE(cut, 0);
      expect(() => readIncomingMessage(truncated)).not.toThrow();
    }
    const bad = Buffer.from(whole.subarray(0, 20));
    bad.writeUInt32BE(20, 0);
    expect(readIncomingMessage(bad)).toBeNull();
  });

  it('answers with the status given, in the response of the command', () => {
    const nack = encodeResponse(CMD.deliver_sm, 42, 0x64);
    expect(readHeader(nack)).toEqual({
      length: 16,
      commandId: CMD.deliver_sm_resp,
      status: 0x64,
      sequence: 42,
    });
    const ok = encodeResponse(CMD.data_sm, 43, 0);
    expect(readHeader(ok)).toMatchObject({ commandId: CMD.data_sm_resp, status: 0, sequence: 43 });
    expect(readHeader(encodeResponse(0x1234, 44, 3))).toMatchObject({
      commandId: CMD.generic_nack,
      status: 3,
    });
  });
});

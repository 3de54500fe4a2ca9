import { PDU } from 'smpp';

/**
 * SMPP 3.4 framing and the few PDUs an ESME receiver needs. What Waybill sends is encoded by the `smpp`
 * package; what it receives is read here from the raw bytes, bounds-checked, because a receipt must be kept
 * exactly as it came: the package decodes `short_message` of data_coding 0 as GSM 03.38 (which turns the `_` of
 * `submit_date:` and an `@` into other letters) and leaves its session stuck on a PDU it cannot parse.
 */

export const CMD = {
  generic_nack: 0x80000000,
  bind_receiver: 0x00000001,
  bind_receiver_resp: 0x80000001,
  bind_transceiver: 0x00000009,
  bind_transceiver_resp: 0x80000009,
  deliver_sm: 0x00000005,
  deliver_sm_resp: 0x80000005,
  data_sm: 0x00000103,
  data_sm_resp: 0x80000103,
  unbind: 0x00000006,
  unbind_resp: 0x80000006,
  enquire_link: 0x00000015,
  enquire_link_resp: 0x80000015,
} as const;

export const STATUS = {
  ESME_ROK: 0x00000000,
  ESME_RINVCMDID: 0x00000003,
  /** "Retry later": the SMSC delivers the PDU again. */
  ESME_RX_T_APPNACK: 0x00000064,
  /** Permanent refusal: the SMSC does not deliver it again. */
  ESME_RX_P_APPNACK: 0x00000065,
} as const;

/** Past this a PDU is refused and the link dropped (SMPP PDUs are small; this bounds memory per link). */
export const MAX_PDU_BYTES = 64 * 1024;
const HEADER = 16;

export interface PduHeader {
  length: number;
  commandId: number;
  status: number;
  sequence: number;
}

export function readHeader(pdu: Buffer): PduHeader {
  return {
    length: pdu.readUInt32BE(0),
    commandId: pdu.readUInt32BE(4),
    status: pdu.readUInt32BE(8),
    sequence: pdu.readUInt32BE(12),
  };
}

/**
 * Cuts whole PDUs off a byte stream. `push` returns the complete PDUs so far; it throws on a length that cannot
 * be (under 16 bytes or over {@link MAX_PDU_BYTES}): the stream cannot be re-synchronised, so the link goes.
 */
export class PduFramer {
  private buffered: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): Buffer[] {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    const pdus: Buffer[] = [];
    while (this.buffered.length >= 4) {
      const length = this.buffered.readUInt32BE(0);
      if (length < HEADER || length > MAX_PDU_BYTES) {
        throw new Error(`a PDU announced ${length} bytes: the stream is not SMPP`);
      }
      if (this.buffered.length < length) break;
      pdus.push(Buffer.from(this.buffered.subarray(0, length)));
      this.buffered = this.buffered.subarray(length);
    }
    return pdus;
  }
}

/** What a `deliver_sm` or `data_sm` carries that the receipt translation reads. */
export interface IncomingMessage {
  esmClass: number;
  dataCoding: number;
  /** `short_message`, else TLV `message_payload`, without a user data header; decoded (UCS2) or raw bytes. */
  text: string | Uint8Array;
  receiptedMessageId?: string;
  messageState?: number;
  networkErrorCode?: Uint8Array;
}

const TLV_RECEIPTED_MESSAGE_ID = 0x001e;
const TLV_NETWORK_ERROR_CODE = 0x0423;
const TLV_MESSAGE_PAYLOAD = 0x0424;
const TLV_MESSAGE_STATE = 0x0427;
const ESM_UDHI = 0x40;
const UCS2 = 0x08;
const utf16be = (bytes: Uint8Array) => {
  const swapped = Buffer.from(bytes.subarray(0, bytes.length & ~1));
  swapped.swap16();
  return swapped.toString('utf16le');
};

/** A reader over one PDU's body that throws when a field runs past the end. */
class Cursor {
  constructor(
    private readonly pdu: Buffer,
    public offset: number,
  ) {}
  get left() {
    return this.pdu.length - this.offset;
  }
  byte(): number {
    if (this.left < 1) throw new RangeError('the PDU ends inside a field');
    return this.pdu.readUInt8(this.offset++);
  }
  cstring(max: number): string {
    const end = this.pdu.indexOf(0, this.offset);
    if (end < 0 || end - this.offset > max) throw new RangeError('a C-octet string has no end');
    const value = this.pdu.toString('latin1', this.offset, end);
    this.offset = end + 1;
    return value;
  }
  bytes(length: number): Buffer {
    if (this.left < length) throw new RangeError('the PDU ends inside a field');
    const value = this.pdu.subarray(this.offset, this.offset + length);
    this.offset += length;
    return value;
  }
}

/** Reads a `deliver_sm` or `data_sm`; null when its body is malformed (then it is garbled, with its hex). */
export function readIncomingMessage(pdu: Buffer): IncomingMessage | null {
  try {
    const { commandId } = readHeader(pdu);
    const at = new Cursor(pdu, HEADER);
    at.cstring(5); // service_type
    at.byte();
    at.byte();
    at.cstring(64); // source_addr (20 by the book; SMSCs send longer)
    at.byte();
    at.byte();
    at.cstring(64); // destination_addr
    const esmClass = at.byte();
    let dataCoding: number;
    let short: Buffer = Buffer.alloc(0);
    if (commandId === CMD.deliver_sm) {
      at.byte(); // protocol_id
      at.byte(); // priority_flag
      at.cstring(16); // schedule_delivery_time
      at.cstring(16); // validity_period
      at.byte(); // registered_delivery
      at.byte(); // replace_if_present_flag
      dataCoding = at.byte();
      at.byte(); // sm_default_msg_id
      short = at.bytes(at.byte());
    } else {
      at.byte(); // registered_delivery
      dataCoding = at.byte();
    }
    const message: IncomingMessage = { esmClass, dataCoding, text: '' };
    let payload: Buffer | null = null;
    while (at.left >= 4) {
      const tag = (at.byte() << 8) | at.byte();
      const value = at.bytes((at.byte() << 8) | at.byte());
      if (tag === TLV_RECEIPTED_MESSAGE_ID) {
        message.receiptedMessageId = value.toString('latin1').replace(/\0+$/, '');
      } else if (tag === TLV_MESSAGE_STATE && value.length === 1) {
        message.messageState = value.readUInt8(0);
      } else if (tag === TLV_NETWORK_ERROR_CODE) {
        message.networkErrorCode = value;
      } else if (tag === TLV_MESSAGE_PAYLOAD) {
        payload = value;
      }
    }
    if (at.left !== 0) return null;
    let body: Buffer = short.length > 0 ? short : (payload ?? short);
    if (esmClass & ESM_UDHI && body.length > 0)
      body = body.subarray(Math.min(body.length, body.readUInt8(0) + 1));
    message.text = (dataCoding & 0x0f) === UCS2 ? utf16be(body) : body;
    return message;
  } catch {
    return null;
  }
}

/** An encoded request or response of the ESME. */
export function encode(command: string, sequence: number, fields: Record<string, unknown> = {}): Buffer {
  return new PDU(command, { ...fields, sequence_number: sequence }).toBuffer();
}

/** A response that carries only a status (and, for `deliver_sm_resp`/`data_sm_resp`, an empty message id). */
export function encodeResponse(commandId: number, sequence: number, status: number): Buffer {
  const command =
    commandId === CMD.deliver_sm
      ? 'deliver_sm_resp'
      : commandId === CMD.data_sm
        ? 'data_sm_resp'
        : commandId === CMD.enquire_link
          ? 'enquire_link_resp'
          : commandId === CMD.unbind
            ? 'unbind_resp'
            : 'generic_nack';
  return encode(command, sequence, { command_status: status });
}

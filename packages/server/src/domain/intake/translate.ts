import type { DrErrcode, DrStatuscode } from '../vocabulary.js';
import {
  type CarrierError,
  carrierErrorFromCommandStatus,
  carrierErrorFromText,
  carrierErrorFromTlv,
  type ErrorMap,
  mapCarrierError,
} from './errors.js';
import { parseReceiptText, type ReceiptText, receiptDateToInstant } from './receipt-text.js';
import {
  firstMapped,
  stateFromJasmin,
  stateFromKannelType,
  stateFromMessageState,
  stateFromStat,
  UNMAPPED,
} from './states.js';

/**
 * One entry point per source (SMPP, Kannel, Jasmin) turning what arrived into a receipt for the planners
 * (CONTRACT §12). Pure: the binds and HTTP adapters read the wire, correlate and store; these only translate.
 */

/** What of a route the translation needs. */
export interface IntakeRoute {
  /** IANA zone of the dates inside receipts (default `"UTC"`). */
  timezone?: string | undefined;
  /** Carrier error → spec `drErrcode`; consulted before the default tables. */
  errorMap?: ErrorMap | undefined;
}

/** Where the parts of a receipt came from, kept for logs and the operator's garbled list. */
export interface ReceiptSources {
  /** The receipt text as received (SMPP `short_message`, Kannel `reply`), if any. */
  text: string | null;
  /** Its fields, when the text reads as a receipt. */
  fields: ReceiptText | null;
  /** The state as the source gave it: `message_state 2`, `stat DELIVRD`, `type 8`, `message_status ESME_ROK`. */
  state: string;
  /** The carrier error the `drErrcode` was derived from. */
  error: CarrierError | null;
}

export interface TranslatedReceipt {
  kind: 'receipt';
  /** The carrier's message id on the route; null when the source gave none (HTTP may name the recipient). */
  carrierId: string | null;
  drStatuscode: DrStatuscode;
  drErrcode: DrErrcode;
  /** `done date` read in the route's zone, else the arrival time. */
  drTime: Date;
  raw: ReceiptSources;
}

export interface Garbled {
  kind: 'garbled';
  /** One sentence for the operator. */
  reason: string;
}

export interface Ignored {
  kind: 'ignored';
  reason: string;
}

export type Translation = TranslatedReceipt | Garbled | Ignored;

const garbled = (reason: string): Garbled => ({ kind: 'garbled', reason });

/** SMPP 3.4 §5.2.12: bits 2–5 of `esm_class` give the message type. */
const ESM_TYPE_MASK = 0x3c;
const ESM_SMSC_DELIVERY_RECEIPT = 0x04;
const ESM_INTERMEDIATE_NOTIFICATION = 0x20;

/**
 * Whether an `esm_class` marks a delivery receipt: an SMSC delivery receipt or an intermediate delivery
 * notification. Everything else (a mobile-originated message, SME acknowledgements) is not one.
 */
export function isReceiptEsmClass(esmClass: number): boolean {
  if (!Number.isInteger(esmClass) || esmClass < 0 || esmClass > 0xff) return false;
  const type = esmClass & ESM_TYPE_MASK;
  return type === ESM_SMSC_DELIVERY_RECEIPT || type === ESM_INTERMEDIATE_NOTIFICATION;
}

const latin1 = new TextDecoder('latin1');

function asText(value: string | Uint8Array | null | undefined): string | null {
  if (typeof value === 'string') return value;
  if (value instanceof Uint8Array) return latin1.decode(value);
  return null;
}

/** A carrier id as the contract allows it (1–64 printable ASCII), trimmed; null otherwise. */
function carrierIdOf(value: string | null | undefined): string | null {
  if (typeof value !== 'string') return null;
  const id = value.trim();
  return /^[\x21-\x7e]{1,64}$/.test(id) ? id : null;
}

function drTimeOf(fields: ReceiptText | null, arrivedAt: Date): Date {
  return fields?.doneAt ?? arrivedAt;
}

const zoneOf = (route: IntakeRoute) => route.timezone ?? 'UTC';

export interface SmppReceiptInput {
  esmClass: number;
  tlvs?: {
    /** TLV 0x001E `receipted_message_id`. */
    receiptedMessageId?: string | undefined;
    /** TLV 0x0427 `message_state`. */
    messageState?: number | undefined;
    /** TLV 0x0423 `network_error_code`: 3 bytes (or their hex). */
    networkErrorCode?: Uint8Array | string | undefined;
  };
  /** `short_message` (or `message_payload`), as bytes or already decoded. */
  shortMessage: string | Uint8Array | null;
  arrivedAt: Date;
  route: IntakeRoute;
}

/**
 * A `deliver_sm` or `data_sm` from an SMSC. Not a receipt by its `esm_class` → `ignored`. Carrier id from TLV
 * `receipted_message_id`, else the text's `id:`; state from TLV `message_state`, else the text's `stat:` (a TLV
 * state outside 1–8 falls back to the text); error from TLV `network_error_code`, else `err:`. No carrier id or
 * no state that maps → `garbled`.
 *
 * @example fromSmppReceipt({ esmClass: 0x04, shortMessage: 'id:7 stat:DELIVRD err:000', arrivedAt, route: {} })
 * // { kind: 'receipt', carrierId: '7', drStatuscode: 'delivered', drErrcode: '0', drTime: arrivedAt, raw: … }
 */
export function fromSmppReceipt(input: SmppReceiptInput): Translation {
  if (!isReceiptEsmClass(input.esmClass)) {
    return { kind: 'ignored', reason: `esm_class 0x${hex(input.esmClass)} is not a delivery receipt` };
  }
  const text = asText(input.shortMessage);
  const fields = text === null ? null : parseReceiptText(text, zoneOf(input.route));
  const tlvs = input.tlvs ?? {};
  const carrierId = carrierIdOf(tlvs.receiptedMessageId) ?? carrierIdOf(fields?.id);
  if (carrierId === null) return garbled('no carrier message id: neither receipted_message_id nor id:');
  const fromTlv = stateFromMessageState(tlvs.messageState);
  const state = firstMapped(fromTlv, stateFromStat(fields?.stat));
  if (state === UNMAPPED)
    return garbled(unmappedReason([messageStateSeen(tlvs.messageState), statSeen(fields)]));
  const error = carrierErrorFromTlv(tlvs.networkErrorCode) ?? carrierErrorFromText(fields?.err);
  return receipt(carrierId, state, error, input.route, fields, input.arrivedAt, {
    text,
    state: fromTlv !== UNMAPPED ? `message_state ${tlvs.messageState}` : `stat ${fields?.stat}`,
  });
}

export interface KannelInput {
  /** `type` (%d): 1, 2, 4, 8 or 16. */
  type: string | number | undefined;
  /** `reply` (%A): the SMSC's receipt text, `ACK/`, or `NACK/0x…/reason`. */
  reply?: string | undefined;
  /** `carrierId`, when the dlr-url names the message that way. */
  carrierId?: string | undefined;
  arrivedAt: Date;
  route: IntakeRoute;
}

/** Kannel's `NACK/<command status>/<reason>` for a submission the SMSC refused. */
const NACK = /^NACK\/([^/]*)/i;

/**
 * What Kannel's `dlr-url` fetched. The state is the reply text's `stat:` when it has one (it wins over
 * `type`), else `type`. The error is the text's `err:`, or the command status of a `NACK/…` reply. The carrier
 * id is the `carrierId` parameter, else the text's `id:`, else null (the adapter may have
 * `account`/`messageid`/`to` instead).
 *
 * @example fromKannel({ type: '8', reply: 'ACK/', arrivedAt, route: {} })
 * // { kind: 'receipt', carrierId: null, drStatuscode: 'accepted', drErrcode: '0', … }
 */
export function fromKannel(input: KannelInput): Translation {
  const reply = typeof input.reply === 'string' ? input.reply : null;
  const nack = reply === null ? null : NACK.exec(reply.trim());
  const fields = reply === null || nack ? null : parseReceiptText(reply, zoneOf(input.route));
  const fromText = stateFromStat(fields?.stat);
  const state = firstMapped(fromText, stateFromKannelType(input.type));
  if (state === UNMAPPED) return garbled(unmappedReason([statSeen(fields), `type ${String(input.type)}`]));
  const error = nack ? carrierErrorFromCommandStatus(nack[1]) : carrierErrorFromText(fields?.err);
  const carrierId = carrierIdOf(input.carrierId) ?? carrierIdOf(fields?.id);
  return receipt(carrierId, state, error, input.route, fields, input.arrivedAt, {
    text: reply,
    state: fromText !== UNMAPPED ? `stat ${fields?.stat}` : `type ${String(input.type)}`,
  });
}

/** Jasmin's HTTP DLR, its parameters as sent (all text). */
export interface JasminInput {
  /** The message id; on a route, the carrier id. */
  id?: string | undefined;
  message_status: string | undefined;
  level?: string | number | undefined;
  /** `YYMMDDhhmm[ss]` in the route's zone (level 2 and 3 only). */
  donedate?: string | undefined;
  subdate?: string | undefined;
  err?: string | undefined;
  sub?: string | undefined;
  dlvrd?: string | undefined;
  text?: string | undefined;
  connector?: string | undefined;
  id_smsc?: string | undefined;
  arrivedAt: Date;
  route: IntakeRoute;
}

/**
 * Jasmin's DLR: level 1 is the SMSC's answer to the submission (`ESME_ROK` → `accepted`, another `ESME_R…` →
 * `rejected`, that status being the error), level 2 the terminal receipt (`message_status` is its `stat:`,
 * `err` its error, `donedate` its time).
 *
 * @example fromJasmin({ id: 'x', message_status: 'DELIVRD', level: '2', donedate: '2611221001', err: '000', arrivedAt, route: {} })
 * // { kind: 'receipt', carrierId: 'x', drStatuscode: 'delivered', drErrcode: '0', drTime: 2026-11-22T10:01:00Z, … }
 */
export function fromJasmin(input: JasminInput): Translation {
  const state = stateFromJasmin(input.message_status, input.level);
  if (state === UNMAPPED) {
    return garbled(
      unmappedReason([`message_status ${String(input.message_status)} at level ${String(input.level)}`]),
    );
  }
  const status = String(input.message_status).trim();
  const error = status.toUpperCase().startsWith('ESME_')
    ? status.toUpperCase() === 'ESME_ROK'
      ? null
      : carrierErrorFromCommandStatus(status)
    : carrierErrorFromText(input.err);
  const fields = jasminFields(input, zoneOf(input.route));
  return receipt(carrierIdOf(input.id), state, error, input.route, fields, input.arrivedAt, {
    text: null,
    state: `message_status ${status}`,
  });
}

/** Jasmin's parameters are a receipt text's fields, already split. */
function jasminFields(input: JasminInput, timeZone: string): ReceiptText {
  const fields: ReceiptText = {};
  const put = (key: 'id' | 'sub' | 'dlvrd' | 'submitDate' | 'doneDate' | 'err' | 'text', v: unknown) => {
    if (typeof v === 'string' && v.trim() !== '') fields[key] = key === 'text' ? v : v.trim();
  };
  put('id', input.id_smsc);
  put('sub', input.sub);
  put('dlvrd', input.dlvrd);
  put('submitDate', input.subdate);
  put('doneDate', input.donedate);
  put('err', input.err);
  put('text', input.text);
  if (typeof input.message_status === 'string') fields.stat = input.message_status.trim();
  const submittedAt = fields.submitDate ? receiptDateToInstant(fields.submitDate, timeZone) : null;
  if (submittedAt) fields.submittedAt = submittedAt;
  const doneAt = fields.doneDate ? receiptDateToInstant(fields.doneDate, timeZone) : null;
  if (doneAt) fields.doneAt = doneAt;
  return fields;
}

function receipt(
  carrierId: string | null,
  drStatuscode: DrStatuscode,
  error: CarrierError | null,
  route: IntakeRoute,
  fields: ReceiptText | null,
  arrivedAt: Date,
  seen: { text: string | null; state: string },
): TranslatedReceipt {
  return {
    kind: 'receipt',
    carrierId,
    drStatuscode,
    drErrcode: mapCarrierError(error, drStatuscode, route.errorMap),
    drTime: drTimeOf(fields, arrivedAt),
    raw: { text: seen.text, fields, state: seen.state, error },
  };
}

const messageStateSeen = (value: unknown) =>
  value === undefined ? 'no message_state' : `message_state ${String(value)}`;
const statSeen = (fields: ReceiptText | null) => (fields?.stat ? `stat ${fields.stat}` : 'no stat:');

function unmappedReason(seen: string[]): string {
  return `no state that maps to a drStatuscode (${seen.join(', ')})`;
}

function hex(n: number): string {
  return Number.isInteger(n) ? n.toString(16).padStart(2, '0') : String(n);
}

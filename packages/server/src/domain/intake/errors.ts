import { DR_ERRCODES, type DrErrcode, type DrStatuscode } from '../vocabulary.js';

/**
 * Carrier errors onto the spec's `drErrcode` (CONTRACT §12): the route's `errorMap` entry first, else the
 * default tables below, else `"0"` for `delivered`/`accepted` and `"99"` for the rest.
 */

/** A route's overrides: the carrier's error, as it spells it, to a spec `drErrcode`. */
export type ErrorMap = Readonly<Record<string, string>>;

/** Which default table can read a carrier error's number. */
export type ErrorFamily = 'gsm-map' | 'smpp-status' | 'other';

/** A carrier error as a receipt carried it. */
export interface CarrierError {
  /** As sent (`"027"`, `"0x1B"`, `"ESME_RINVDSTADR"`); looked up in the route's `errorMap`. */
  raw: string;
  /** Its number when it reads as one. */
  code: number | null;
  family: ErrorFamily;
}

/**
 * GSM MAP error causes (3GPP TS 29.002 §17.6.6) onto `drErrcode`: the number most SMSCs put in `err:` and in
 * `network_error_code`. Every entry says why, and docs/intake.md shows the same table.
 */
export const GSM_MAP_ERRORS: Readonly<Record<number, { name: string; drErrcode: DrErrcode; why: string }>> =
  Object.freeze({
    1: { name: 'unknownSubscriber', drErrcode: '3', why: 'the HLR has no such number' },
    5: {
      name: 'unidentifiedSubscriber',
      drErrcode: '3',
      why: 'the visited network does not know the subscriber',
    },
    6: { name: 'absentSubscriberSM', drErrcode: '2', why: 'handset off or out of coverage for SMS' },
    8: {
      name: 'roamingNotAllowed',
      drErrcode: '5',
      why: 'the home operator bars the network the phone is in',
    },
    9: {
      name: 'illegalSubscriber',
      drErrcode: '5',
      why: 'the network refused the SIM (failed authentication)',
    },
    11: {
      name: 'teleserviceNotProvisioned',
      drErrcode: '5',
      why: 'the subscription has no SMS service: the operator refuses it',
    },
    12: { name: 'illegalEquipment', drErrcode: '5', why: 'the network refused the handset (IMEI barred)' },
    13: {
      name: 'callBarred',
      drErrcode: '5',
      why: 'barring by the operator (or the subscriber, via the operator)',
    },
    21: {
      name: 'facilityNotSupported',
      drErrcode: '5',
      why: 'the visited network does not offer SMS delivery',
    },
    27: { name: 'absentSubscriber', drErrcode: '2', why: 'handset off, no signal, or detached' },
    31: { name: 'subscriberBusyForMT-SMS', drErrcode: '2', why: 'the handset cannot take a message now' },
    32: {
      name: 'sm-DeliveryFailure',
      drErrcode: '2',
      why: 'the handset did not take the message (most often its memory is full)',
    },
    33: {
      name: 'messageWaitingListFull',
      drErrcode: '2',
      why: 'absent, and the waiting list for it is full',
    },
    34: { name: 'systemFailure', drErrcode: '99', why: 'a fault inside the network' },
    35: { name: 'dataMissing', drErrcode: '99', why: 'a malformed exchange inside the network' },
    36: { name: 'unexpectedDataValue', drErrcode: '99', why: 'a malformed exchange inside the network' },
    44: { name: 'numberChanged', drErrcode: '3', why: 'the number is no longer in service' },
  });

/** SMPP command statuses an SMSC answers a submission with (Kannel's `NACK/…`, Jasmin's level 1). */
export const SMPP_STATUS_ERRORS: Readonly<
  Record<number, { name: string; drErrcode: DrErrcode; why: string }>
> = Object.freeze({
  10: { name: 'ESME_RINVSRCADR', drErrcode: '10', why: 'invalid source address: the sender ID' },
  11: { name: 'ESME_RINVDSTADR', drErrcode: '3', why: 'invalid destination address: the number' },
});

const SMPP_STATUS_BY_NAME: ReadonlyMap<string, number> = new Map(
  Object.entries(SMPP_STATUS_ERRORS).map(([code, { name }]) => [name, Number(code)]),
);

/**
 * A carrier error's number: decimal (`"027"`, leading zeros ignored), or hexadecimal when it says so (`0x1B`,
 * or any of `a`–`f` in it: `"1B"`). Null for anything else.
 *
 * @example readErrorNumber('001') // 1
 * @example readErrorNumber('0x1b') // 27
 */
export function readErrorNumber(value: string): number | null {
  if (typeof value !== 'string') return null;
  const text = value.trim();
  if (/^\d{1,9}$/.test(text)) return Number(text);
  const hex = /^(?:0x)?([0-9a-f]{1,8})$/i.exec(text);
  if (hex?.[1] && (/^0x/i.test(text) || /[a-f]/i.test(hex[1]))) return Number.parseInt(hex[1], 16);
  return null;
}

/**
 * A receipt text's `err:` (usually three decimal digits, read as a GSM MAP cause); null when empty.
 *
 * @example carrierErrorFromText('027') // { raw: '027', code: 27, family: 'gsm-map' }
 */
export function carrierErrorFromText(err: string | undefined): CarrierError | null {
  if (typeof err !== 'string' || err.trim() === '') return null;
  return { raw: err.trim(), code: readErrorNumber(err), family: 'gsm-map' };
}

/** SMPP 3.4 §5.3.2.31 network types. */
export const NETWORK_TYPES: Readonly<Record<number, string>> = Object.freeze({
  1: 'ANSI-136 Access Denied Reason',
  2: 'IS-95 Access Denied Reason',
  3: 'GSM',
  4: 'ANSI 136 Cause Code',
  5: 'IS 95 Cause Code',
  6: 'ANSI-41 Error',
  7: 'SMPP Error',
  8: 'Message Center Specific',
});

export interface NetworkErrorCode {
  /** 1–8, see {@link NETWORK_TYPES}; 3 is GSM. */
  networkType: number;
  /** The 2-byte error code, big-endian. */
  code: number;
}

/**
 * Decodes TLV `network_error_code` (0x0423): 3 bytes, the network type then a 2-byte big-endian code. Accepts
 * the bytes or their hex text (`"03001b"`); null for any other length or shape.
 *
 * @example decodeNetworkErrorCode(Uint8Array.of(3, 0, 27)) // { networkType: 3, code: 27 }
 */
export function decodeNetworkErrorCode(value: Uint8Array | string): NetworkErrorCode | null {
  let bytes: number[];
  if (typeof value === 'string') {
    const hex = value.trim().replace(/^0x/i, '');
    if (!/^[0-9a-f]{6}$/i.test(hex)) return null;
    bytes = [0, 2, 4].map((at) => Number.parseInt(hex.slice(at, at + 2), 16));
  } else if (value instanceof Uint8Array && value.length === 3) {
    bytes = [...value];
  } else {
    return null;
  }
  const [networkType = 0, high = 0, low = 0] = bytes;
  return { networkType, code: (high << 8) | low };
}

/**
 * TLV `network_error_code` as a carrier error: GSM codes read as MAP causes, SMPP errors as command statuses.
 * Its `raw` is the code in decimal, the key a route's `errorMap` uses for it.
 *
 * @example carrierErrorFromTlv(Uint8Array.of(3, 0, 1)) // { raw: '1', code: 1, family: 'gsm-map' }
 */
export function carrierErrorFromTlv(value: Uint8Array | string | undefined): CarrierError | null {
  if (value === undefined) return null;
  const decoded = decodeNetworkErrorCode(value);
  if (!decoded) return null;
  const family: ErrorFamily =
    decoded.networkType === 3 ? 'gsm-map' : decoded.networkType === 7 ? 'smpp-status' : 'other';
  return { raw: String(decoded.code), code: decoded.code, family };
}

/**
 * An SMPP command status by name (`ESME_RINVDSTADR`) or number (`0x0000000b`), as Jasmin's level-1 receipts and
 * Kannel's `NACK/0x0000000b/…` replies give it.
 */
export function carrierErrorFromCommandStatus(value: string | undefined): CarrierError | null {
  if (typeof value !== 'string' || value.trim() === '') return null;
  const raw = value.trim();
  const code = SMPP_STATUS_BY_NAME.get(raw.toUpperCase()) ?? readErrorNumber(raw);
  return { raw, code, family: 'smpp-status' };
}

const isDrErrcode = (value: string): value is DrErrcode => Object.hasOwn(DR_ERRCODES, value);

/**
 * The route's `errorMap` entry for this error: the key as sent first (case and outer spaces ignored), then any
 * key naming the same number (`"1"`, `"001"` and `"0x01"` are one error; an SMPP command status matches only its
 * name or a `0x` key). An entry whose value is not a spec code is skipped.
 */
export function errorMapEntry(errorMap: ErrorMap | undefined, error: CarrierError): DrErrcode | null {
  if (!errorMap) return null;
  const entries = Object.entries(errorMap).flatMap(([key, value]): [string, DrErrcode][] => {
    const code = String(value).trim();
    return isDrErrcode(code) ? [[key, code]] : [];
  });
  const wanted = error.raw.toLowerCase();
  const exact = entries.find(([key]) => key.trim().toLowerCase() === wanted);
  if (exact) return exact[1];
  if (error.code === null) return null;
  const numberOf = error.family === 'smpp-status' ? commandStatusNumber : readErrorNumber;
  return entries.find(([key]) => numberOf(key) === error.code)?.[1] ?? null;
}

/**
 * A key naming an SMPP command status: its name, or a `0x` number. A bare decimal key is left to the carrier's
 * own error numbers, so `"11"` (MAP teleserviceNotProvisioned) never catches `ESME_RINVDSTADR` (0x0B).
 */
function commandStatusNumber(key: string): number | null {
  const name = SMPP_STATUS_BY_NAME.get(key.trim().toUpperCase());
  if (name !== undefined) return name;
  return /^\s*0x/i.test(key) ? readErrorNumber(key) : null;
}

/** The default table's answer for this error, if it has one. */
export function defaultErrcode(error: CarrierError): DrErrcode | null {
  if (error.code === null) return null;
  if (error.family === 'gsm-map') return GSM_MAP_ERRORS[error.code]?.drErrcode ?? null;
  if (error.family === 'smpp-status') return SMPP_STATUS_ERRORS[error.code]?.drErrcode ?? null;
  return null;
}

const isNormal = (state: DrStatuscode) => state === 'delivered' || state === 'accepted';

/**
 * `drErrcode` for a receipt: the route's `errorMap` entry, else the default table, else `"0"` for
 * `delivered`/`accepted` and `"99"` for the rest. The default tables name failures, so they are not consulted
 * for a `delivered` or `accepted` receipt (a stray `err:001` on a delivery is not "number invalid"); the
 * route's own `errorMap` always is.
 *
 * @example mapCarrierError(carrierErrorFromText('027'), 'failed') // '2'
 * @example mapCarrierError(carrierErrorFromText('027'), 'failed', { '27': '8' }) // '8'
 */
export function mapCarrierError(
  error: CarrierError | null,
  state: DrStatuscode,
  errorMap?: ErrorMap,
): DrErrcode {
  if (error) {
    const mapped = errorMapEntry(errorMap, error);
    if (mapped) return mapped;
    if (!isNormal(state)) {
      const known = defaultErrcode(error);
      if (known) return known;
    }
  }
  return isNormal(state) ? '0' : '99';
}

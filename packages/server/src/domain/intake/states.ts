import type { DrStatuscode } from '../vocabulary.js';

/**
 * Receipt states of SMPP, Kannel and Jasmin onto `drStatuscode` (CONTRACT §12's table). Each mapper answers
 * {@link UNMAPPED} for a value the table does not know; whether that makes the receipt garbled is the
 * caller's decision (another source of the state may still speak).
 */

export const UNMAPPED = 'unmapped' as const;
export type MappedState = DrStatuscode | typeof UNMAPPED;

/** SMPP 3.4 §5.2.28 `message_state` (TLV 0x0427, also the numbers behind `stat:`). */
export const MESSAGE_STATES: Readonly<Record<number, { name: string; drStatuscode: DrStatuscode }>> =
  Object.freeze({
    1: { name: 'ENROUTE', drStatuscode: 'accepted' },
    2: { name: 'DELIVERED', drStatuscode: 'delivered' },
    3: { name: 'EXPIRED', drStatuscode: 'expired' },
    4: { name: 'DELETED', drStatuscode: 'deleted' },
    5: { name: 'UNDELIVERABLE', drStatuscode: 'failed' },
    6: { name: 'ACCEPTED', drStatuscode: 'accepted' },
    7: { name: 'UNKNOWN', drStatuscode: 'unknown' },
    8: { name: 'REJECTED', drStatuscode: 'rejected' },
  });

/**
 * `stat:` values: the short forms of SMPP 3.4 Appendix B, and — because SMSCs send them too — the long
 * `message_state` names.
 */
export const STAT_TEXTS: Readonly<Record<string, DrStatuscode>> = Object.freeze({
  ENROUTE: 'accepted',
  ACCEPTD: 'accepted',
  ACCEPTED: 'accepted',
  DELIVRD: 'delivered',
  DELIVERED: 'delivered',
  EXPIRED: 'expired',
  DELETED: 'deleted',
  UNDELIV: 'failed',
  UNDELIVERABLE: 'failed',
  REJECTD: 'rejected',
  REJECTED: 'rejected',
  UNKNOWN: 'unknown',
});

/** Kannel's DLR `type` (%d): one bit of its dlr-mask per fetch. */
export const KANNEL_TYPES: Readonly<Record<number, { name: string; drStatuscode: DrStatuscode }>> =
  Object.freeze({
    1: { name: 'delivered', drStatuscode: 'delivered' },
    2: { name: 'not delivered', drStatuscode: 'failed' },
    4: { name: 'buffered', drStatuscode: 'accepted' },
    8: { name: 'SMSC accepted', drStatuscode: 'accepted' },
    16: { name: 'SMSC rejected', drStatuscode: 'rejected' },
  });

/** A whole number given as a number or as decimal digits (HTTP parameters arrive as text). */
function wholeNumber(value: unknown): number | null {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? value : null;
  if (typeof value === 'string' && /^\s*\d{1,9}\s*$/.test(value)) return Number(value);
  return null;
}

/**
 * TLV `message_state` (1–8) onto `drStatuscode`.
 *
 * @example stateFromMessageState(2) // 'delivered'
 */
export function stateFromMessageState(value: unknown): MappedState {
  const n = wholeNumber(value);
  return (n !== null && MESSAGE_STATES[n]?.drStatuscode) || UNMAPPED;
}

/**
 * A receipt text's `stat:` onto `drStatuscode`, in any case, spaces around it ignored.
 *
 * @example stateFromStat('delivrd') // 'delivered'
 */
export function stateFromStat(value: unknown): MappedState {
  if (typeof value !== 'string') return UNMAPPED;
  const key = value.trim().toUpperCase();
  return Object.hasOwn(STAT_TEXTS, key) ? (STAT_TEXTS[key] ?? UNMAPPED) : UNMAPPED;
}

/**
 * Kannel's `type` (1, 2, 4, 8 or 16) onto `drStatuscode`; a combination of bits or any other value is unmapped.
 *
 * @example stateFromKannelType('8') // 'accepted'
 */
export function stateFromKannelType(value: unknown): MappedState {
  const n = wholeNumber(value);
  return (n !== null && KANNEL_TYPES[n]?.drStatuscode) || UNMAPPED;
}

/** Jasmin's `level`: 1 is the SMSC's answer to the submission, 2 (and 3 for "both") a terminal receipt. */
function jasminLevel(value: unknown): 1 | 2 | 3 | null {
  const n = wholeNumber(value);
  return n === 1 || n === 2 || n === 3 ? n : null;
}

/**
 * Jasmin's `message_status` (with its `level`) onto `drStatuscode`. At level 1 the status is the
 * `submit_sm_resp` command status: `ESME_ROK` is `accepted`, any other `ESME_R…` is `rejected`. Otherwise it is
 * the receipt's `stat:`. An `ESME_…` status claimed at level 2 or 3 contradicts itself and is unmapped; a
 * missing level is inferred from the status.
 *
 * @example stateFromJasmin('ESME_RINVDSTADR', '1') // 'rejected'
 */
export function stateFromJasmin(messageStatus: unknown, level?: unknown): MappedState {
  if (typeof messageStatus !== 'string') return UNMAPPED;
  const status = messageStatus.trim().toUpperCase();
  const lvl = jasminLevel(level);
  if (status.startsWith('ESME_')) {
    if (lvl !== null && lvl !== 1) return UNMAPPED;
    if (status === 'ESME_ROK') return 'accepted';
    return /^ESME_R[A-Z0-9_]+$/.test(status) ? 'rejected' : UNMAPPED;
  }
  return stateFromStat(status);
}

/**
 * The first state that maps, in the order given — the precedence rule of §12 ("a state in the receipt text
 * wins over Kannel's `type`", "TLV `message_state`, else the text's `stat:`") is the order of the arguments.
 *
 * @example firstMapped(stateFromStat('UNDELIV'), stateFromKannelType(1)) // 'failed'
 */
export function firstMapped(...states: MappedState[]): MappedState {
  return states.find((s) => s !== UNMAPPED) ?? UNMAPPED;
}

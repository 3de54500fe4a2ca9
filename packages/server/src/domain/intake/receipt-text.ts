import { type WallClock, zonedWallClockToInstant } from './wall-clock.js';

/**
 * The fields of a de-facto SMPP receipt text (SMPP 3.4 Appendix B, as SMSCs really send it):
 * `id:… sub:… dlvrd:… submit date:YYMMDDhhmm[ss] done date:YYMMDDhhmm[ss] stat:… err:… text:…`.
 * A field is here only when the text carries it with a non-empty value; raw values are kept as sent.
 */
export interface ReceiptText {
  /** The SMSC's message id (hex or decimal, as sent). */
  id?: string;
  sub?: string;
  dlvrd?: string;
  /** `submit date` as sent. */
  submitDate?: string;
  /** `done date` as sent. */
  doneDate?: string;
  /** `submit date` read in the route's time zone; absent when it is not a real date. */
  submittedAt?: Date;
  /** `done date` read in the route's time zone; absent when it is not a real date. */
  doneAt?: Date;
  stat?: string;
  err?: string;
  /** The first characters of the message; may hold colons and spaces, runs to the end of its line. */
  text?: string;
}

export type ReceiptTextField = 'id' | 'sub' | 'dlvrd' | 'submitDate' | 'doneDate' | 'stat' | 'err' | 'text';

/**
 * A key: at the start or after white space, its words separated by spaces or `_` or nothing, then `:` (spaces
 * around it allowed). `sub` needs its colon, so `submit date` is never read as `sub`.
 */
const KEY = /(?<=^|\s)(id|sub|dlvrd|submit[ _]*date|done[ _]*date|stat|err|text)[ \t]*:/gi;

function fieldOf(key: string): ReceiptTextField {
  const k = key.toLowerCase().replace(/[ _]/g, '');
  if (k === 'submitdate') return 'submitDate';
  if (k === 'donedate') return 'doneDate';
  return k as ReceiptTextField;
}

/**
 * `YYMMDDhhmm` or `YYMMDDhhmmss` (years 2000–2099) as a wall clock; null for other shapes. The date may still be
 * impossible (month 13): {@link zonedWallClockToInstant} refuses those.
 */
export function parseReceiptDate(value: string): WallClock | null {
  if (!/^(?:\d{10}|\d{12})$/.test(value)) return null;
  const two = (at: number) => Number(value.slice(at, at + 2));
  return {
    year: 2000 + two(0),
    month: two(2),
    day: two(4),
    hour: two(6),
    minute: two(8),
    second: value.length === 12 ? two(10) : 0,
  };
}

/** A receipt date read in `timeZone`; null when it is malformed, impossible, or the zone is unknown. */
export function receiptDateToInstant(value: string, timeZone: string): Date | null {
  const wall = parseReceiptDate(value);
  return wall ? zonedWallClockToInstant(wall, timeZone) : null;
}

/**
 * Reads a receipt text. Keys match in any case and any order, with spaces around the colon; a field may be
 * missing; the first occurrence of a key wins. A value other than `text` ends at the first white space (what
 * follows up to the next key is ignored). `text` takes the rest of its line, colons included; reading goes on at
 * the next line. Dates are read in `timeZone` (default UTC).
 *
 * Never throws. Returns null when no field other than `text` is found: that is no receipt.
 *
 * @example parseReceiptText('id:0A1B sub:001 dlvrd:001 submit date:2611221000 done date:2611221001 stat:DELIVRD err:000 text:Hi')
 * // { id: '0A1B', sub: '001', dlvrd: '001', submitDate: '2611221000', doneDate: '2611221001', stat: 'DELIVRD',
 * //   err: '000', text: 'Hi', submittedAt: 2026-11-22T10:00:00Z, doneAt: 2026-11-22T10:01:00Z }
 */
export function parseReceiptText(input: string, timeZone = 'UTC'): ReceiptText | null {
  if (typeof input !== 'string') return null;
  try {
    return readFields(input, timeZone);
  } catch {
    return null;
  }
}

function readFields(input: string, timeZone: string): ReceiptText | null {
  const found: Partial<Record<ReceiptTextField, string>> = {};
  const keys = [...input.matchAll(KEY)];
  let resumeAt = 0;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i];
    if (key?.index === undefined || key.index < resumeAt) continue;
    const field = fieldOf(key[1] ?? '');
    const start = key.index + key[0].length;
    if (field === 'text') {
      const lineEnd = input.slice(start).search(/[\r\n]/);
      const end = lineEnd === -1 ? input.length : start + lineEnd;
      if (found.text === undefined) {
        const value = input.slice(start, end).replace(/^[ \t]+/, '');
        if (value !== '') found.text = value;
      }
      resumeAt = end;
      continue;
    }
    const segment = input.slice(start, keys[i + 1]?.index ?? input.length);
    const value = segment.trim().split(/\s+/, 1)[0] ?? '';
    if (value !== '' && found[field] === undefined) found[field] = value;
  }
  const result: ReceiptText = {};
  let any = false;
  for (const [field, value] of Object.entries(found) as [ReceiptTextField, string][]) {
    result[field] = value;
    if (field !== 'text') any = true;
  }
  if (!any) return null;
  if (result.submitDate !== undefined) {
    const at = receiptDateToInstant(result.submitDate, timeZone);
    if (at) result.submittedAt = at;
  }
  if (result.doneDate !== undefined) {
    const at = receiptDateToInstant(result.doneDate, timeZone);
    if (at) result.doneAt = at;
  }
  return result;
}

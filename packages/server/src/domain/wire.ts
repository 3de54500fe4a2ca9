import type { DlrRecipient, ListedMessage } from './records.js';
import type { Channel, Direction, DrErrcode, DrStatuscode, MessageStatus, SendStatus } from './vocabulary.js';

/** A delivery-receipt item exactly as `GET /dlr` and callbacks carry it (CONTRACT §2). */
export interface DlrItem {
  type: 'dlr';
  messageid: string;
  to: string;
  status: SendStatus;
  price: number;
  counts: number;
  network?: string;
  drStatus?: 0 | 400;
  drStatuscode?: DrStatuscode;
  drErrcode?: DrErrcode;
  drTime?: string;
}

/** A message record of the contact-message endpoints (CONTRACT §3). */
export interface MessageRecord {
  id: string;
  channel: Channel;
  direction: Direction;
  contactId: string;
  channelUserId: string;
  conversationId: string;
  campaignId: string | null;
  text: string | null;
  content: Record<string, unknown> | null;
  status: MessageStatus;
  createdAt: string;
}

/** `delivered`/`accepted` are normal (0); every other detailed code is abnormal (400). */
export const drStatusOf = (code: DrStatuscode): 0 | 400 =>
  code === 'delivered' || code === 'accepted' ? 0 : 400;

const DAY_MS = 86_400_000;
/** 10000-01-01T00:00:00Z: from here on `toISOString` writes a six-digit year with a sign. */
const YEAR_10000_MS = 253_402_300_800_000;
const pad2 = (n: number): string => (n < 10 ? `0${n}` : `${n}`);

/**
 * The spec's report-time format, `yyyy-MM-dd HH:mm:ss.SSS` in UTC: what `toISOString()` writes, with a space
 * for the `T`. Worked out with integer arithmetic for the years 1970–9999 (every item of `/dlr`, history and
 * the feed carries one: `toISOString`, `replace` and `slice` were 2% of a `/dlr` request); other times, and an
 * invalid date (which throws), go through `toISOString`.
 */
export function formatDrTime(d: Date): string {
  const t = d.getTime();
  if (!(t >= 0 && t < YEAR_10000_MS)) return d.toISOString().replace('T', ' ').slice(0, 23);
  const days = Math.floor(t / DAY_MS);
  let rest = t - days * DAY_MS;
  const ms = rest % 1000;
  rest = (rest - ms) / 1000;
  const seconds = rest % 60;
  rest = (rest - seconds) / 60;
  const minutes = rest % 60;
  const hours = (rest - minutes) / 60;
  // The civil date of a day number (days since 1970-01-01), after Howard Hinnant's `civil_from_days`, for
  // days >= 0 only (so every division is of non-negative numbers).
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor(
    (doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365,
  );
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  const msText = ms < 10 ? `00${ms}` : ms < 100 ? `0${ms}` : `${ms}`;
  return `${year}-${pad2(month)}-${pad2(day)} ${pad2(hours)}:${pad2(minutes)}:${pad2(seconds)}.${msText}`;
}

const SPEC_TIME = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{3})$/;

/** Parses a time in the spec format (taken as UTC) or RFC 3339; null when it is neither or not a real date. */
export function parseTimestamp(value: string): Date | null {
  const spec = SPEC_TIME.exec(value);
  if (spec) {
    const [, y, mo, d, h, mi, s, ms] = spec.map(Number) as number[];
    const date = new Date(Date.UTC(y as number, (mo as number) - 1, d, h, mi, s, ms));
    return formatDrTime(date) === value ? date : null;
  }
  return parseRfc3339(value);
}

const RFC3339_PARTS =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

const daysInMonth = (year: number, month: number): number =>
  month === 2
    ? year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
      ? 29
      : 28
    : month === 4 || month === 6 || month === 9 || month === 11
      ? 30
      : 31;

/**
 * Parses an RFC 3339 date-time (with `Z` or an offset); null when malformed or not a real calendar date.
 *
 * Every item of an ingest batch carries one (`createdAt`, a receipt's `drTime`): the common case, a year from
 * 1000 and every field in its range, is worked out from the fields (a third of the cost: docs/benchmarks.md,
 * "Twelfth pass"). Anything else (hour 24, a leap second, an offset of 24 hours) is left to {@link
 * parseRfc3339ByDate}, which decides what the fields cannot; test/unit/wire-times.test.ts holds both to the
 * same answers.
 */
export function parseRfc3339(value: string): Date | null {
  const parts = RFC3339_PARTS.exec(value);
  if (parts === null) return null;
  const [, y, mo, d, h, mi, s, fraction, sign, oh, om] = parts;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hours = Number(h);
  const minutes = Number(mi);
  const seconds = Number(s);
  const offsetHours = oh === undefined ? 0 : Number(oh);
  const offsetMinutes = om === undefined ? 0 : Number(om);
  if (
    year < 1000 ||
    month < 1 ||
    month > 12 ||
    day < 1 ||
    day > daysInMonth(year, month) ||
    hours > 23 ||
    minutes > 59 ||
    seconds > 59 ||
    offsetHours > 23 ||
    offsetMinutes > 59
  ) {
    return parseRfc3339ByDate(value);
  }
  // Milliseconds are the fraction's first three digits (Date() drops the rest).
  const ms = fraction === undefined ? 0 : Number(fraction.slice(0, 3).padEnd(3, '0'));
  const offset = (sign === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000;
  return new Date(Date.UTC(year, month - 1, day, hours, minutes, seconds, ms) - offset);
}

/** {@link parseRfc3339} by Date()'s own parser, with the calendar check it lacks: slower, and decides every case. */
export function parseRfc3339ByDate(value: string): Date | null {
  if (!RFC3339_PARTS.test(value)) return null;
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) return null;
  // Date() rolls 2026-02-30 over into March; a real calendar date must read back the same day.
  const [datePart] = value.split(/[Tt]/);
  const offsetless = new Date(`${datePart}T00:00:00Z`);
  if (Number.isNaN(offsetless.getTime()) || offsetless.toISOString().slice(0, 10) !== datePart) return null;
  return date;
}

export function toDlrItem(m: DlrRecipient): DlrItem {
  const sms = m.sms ?? { status: '1' as const, network: null, price: 0, counts: 1, receipt: null };
  const item: DlrItem = {
    type: 'dlr',
    messageid: m.id,
    to: m.channelUserId,
    status: sms.status,
    price: sms.price,
    counts: sms.counts,
  };
  if (sms.network !== null) item.network = sms.network;
  if (sms.receipt) {
    item.drStatus = drStatusOf(sms.receipt.drStatuscode);
    item.drStatuscode = sms.receipt.drStatuscode;
    item.drErrcode = sms.receipt.drErrcode;
    item.drTime = formatDrTime(sms.receipt.drTime);
  }
  return item;
}

export function toMessageRecord(m: ListedMessage): MessageRecord {
  return {
    id: m.id,
    channel: m.channel,
    direction: m.direction,
    contactId: m.contactId,
    channelUserId: m.channelUserId,
    conversationId: m.conversationId,
    campaignId: m.campaignId,
    text: m.text,
    content: m.content,
    status: m.status,
    createdAt: m.createdAt.toISOString(),
  };
}

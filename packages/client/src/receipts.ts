import type { DeliveredDlrItem, DlrItem, DlrItemWithReceipt, DrErrcode } from './types.js';

/** Operator error codes and their meaning (spec §2.1). */
export const DR_ERRCODES: Readonly<Record<DrErrcode, string>> = {
  '0': 'Normal',
  '1': 'Unknown error',
  '2': 'Message unreachable (suspended, powered off, no signal, etc.)',
  '3': 'Number deactivated or invalid',
  '4': 'User rejected SMS',
  '5': 'Rejected by operator',
  '6': 'Operator timeout',
  '7': 'Deleted by operator',
  '8': 'User do not disturb (DND)',
  '10': 'Invalid title / sender ID',
  '11': 'Invalid template',
  '12': 'Entity ID mismatch',
  '99': 'Other operator error',
};

/**
 * The meaning of an operator error code (`drErrcode`), or `undefined` for a code the spec does not list.
 *
 * @example
 * ```ts
 * describeErrcode('8'); // 'User do not disturb (DND)'
 * describeErrcode(3); // 'Number deactivated or invalid'
 * ```
 */
export function describeErrcode(code: DrErrcode): string;
export function describeErrcode(code: string | number): string | undefined;
export function describeErrcode(code: string | number): string | undefined {
  const key = String(code).trim();
  return Object.hasOwn(DR_ERRCODES, key) ? DR_ERRCODES[key as DrErrcode] : undefined;
}

/**
 * True once a delivery receipt has been recorded for this recipient; narrows the item's type.
 *
 * @example
 * ```ts
 * for (const item of await client.dlr.get('m-1')) {
 *   if (hasReceipt(item)) console.log(item.to, item.drStatuscode, item.drTimeDate.toISOString());
 * }
 * ```
 */
export function hasReceipt(item: DlrItem): item is DlrItemWithReceipt {
  return item.drStatus !== undefined;
}

/**
 * True when the operator reported the SMS delivered to the handset (`drStatuscode` `delivered`).
 * `accepted` (taken by the operator, not yet delivered) is not delivered. It narrows to
 * {@link DeliveredDlrItem}; when false, the item may still have a receipt (check with `hasReceipt`).
 *
 * @example
 * ```ts
 * for (const item of await client.dlr.get('demo-sms-multi')) {
 *   if (isDelivered(item)) console.log(item.to, 'delivered at', item.drTimeDate.toISOString());
 *   else if (hasReceipt(item)) console.log(item.to, item.drStatuscode, item.drErrcode);
 *   else console.log(item.to, 'no receipt yet');
 * }
 * const delivered = (await client.dlr.get('demo-sms-multi')).filter(isDelivered).map((item) => item.to);
 * ```
 */
export function isDelivered(item: DlrItem): item is DeliveredDlrItem {
  return item.drStatuscode === 'delivered';
}

const DR_TIME = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:Z|[+-]00:?00)?$/;

/**
 * Parses a `drTime` (`yyyy-MM-dd HH:mm:ss.SSS`, UTC) into a `Date`. RFC 3339 is accepted too; anything else
 * gives an invalid `Date` (check with `Number.isNaN(date.getTime())`).
 *
 * @example
 * ```ts
 * parseDrTime('2026-11-22 10:00:05.120').toISOString(); // '2026-11-22T10:00:05.120Z'
 * ```
 */
export function parseDrTime(value: string): Date {
  const match = DR_TIME.exec(value.trim());
  if (!match) return new Date(Date.parse(value));
  const [, year, month, day, hour, minute, second, fraction = '0'] = match;
  const ms = Number(fraction.padEnd(3, '0').slice(0, 3));
  const time = Date.UTC(
    Number(year),
    Number(month) - 1,
    Number(day),
    Number(hour),
    Number(minute),
    Number(second),
    ms,
  );
  const date = new Date(time);
  // Date.UTC rolls 2026-02-31 over into March; a field out of range is unreadable, not a different day.
  return date.getUTCDate() === Number(day) && date.getUTCHours() === Number(hour)
    ? date
    : new Date(Number.NaN);
}

import type { DlrItem } from '../domain/wire.js';

/**
 * How a receipt event's item is stored (`receipt_events.item`, both engines): the values of the item after its
 * `type`, `messageid` and `to`, as a JSON array in the item's own key order, `null` for a key the item does not
 * carry — `["0",0.035,1,"26201",0,"delivered","0","2026-08-03 00:00:19.497"]`, about 65 bytes. The event's row
 * already holds the message id and the recipient, so the item's keys and those two were a second copy: the full
 * JSON was about 230 of an event's 410 bytes (docs/benchmarks.md, where the disk goes).
 *
 * An item that does not have exactly this shape (another key, another order, a message id or recipient other
 * than its row's) is stored as its whole JSON, as every item was before, and {@link itemJsonOf} reads both.
 * On SQLite an event that is its record's current item stores none at all (sqlite/current-item.ts).
 */
const VALUE_KEYS = [
  'status',
  'price',
  'counts',
  'network',
  'drStatus',
  'drStatuscode',
  'drErrcode',
  'drTime',
] as const;

/** The text to store for `item`, the item of an event whose row holds `messageId` and `to`. */
export function storedItem(item: DlrItem, messageId: string, to: string): string {
  const keys = Object.keys(item);
  const sameRow = item.type === 'dlr' && item.messageid === messageId && item.to === to;
  if (!sameRow || keys[0] !== 'type' || keys[1] !== 'messageid' || keys[2] !== 'to')
    return JSON.stringify(item);
  const values: unknown[] = [];
  let k = 3;
  for (const key of VALUE_KEYS) {
    if (keys[k] !== key) {
      values.push(null);
      continue;
    }
    const value = (item as unknown as Record<string, unknown>)[key];
    // null stands for a key the item lacks: one that is there may not be null (it never is: DlrItem).
    if (value === null) return JSON.stringify(item);
    values.push(value);
    k++;
  }
  return k === keys.length ? JSON.stringify(values) : JSON.stringify(item);
}

/**
 * The item's JSON, byte for byte what `JSON.stringify(item)` wrote when the event was recorded (callbacks send
 * it as their body; the feed splices it), from the stored text and its row's message id and recipient. Each
 * stored value is spliced as it is: `JSON.stringify` wrote it as it writes it inside the item, and one pass
 * over the text finds where each ends (a feed page rebuilds a hundred; parsing and writing each value again
 * cost the feed a third of its lead over the lean reference).
 */
export function itemJsonOf(messageId: string, to: string, stored: string): string {
  // `{`: stored whole (written before the compact form, or not of its shape).
  if (stored.charCodeAt(0) === 123) return stored;
  let json = `{"type":"dlr","messageid":${JSON.stringify(messageId)},"to":${JSON.stringify(to)}`;
  let key = 0;
  let start = 1;
  let depth = 0;
  let inString = false;
  for (let i = 1; i < stored.length; i++) {
    const c = stored.charCodeAt(i);
    if (inString) {
      if (c === 92) {
        i++; // a backslash: the next character is escaped
      } else if (c === 34) {
        inString = false;
      }
    } else if (c === 34) {
      inString = true;
    } else if (c === 91 || c === 123) {
      depth++;
    } else if (depth > 0) {
      if (c === 93 || c === 125) depth--;
    } else if (c === 44 || c === 93) {
      // A value ends at a comma or at the array's closing bracket.
      const value = stored.slice(start, i);
      if (value !== 'null') json += `,"${VALUE_KEYS[key]}":${value}`;
      key++;
      start = i + 1;
    }
  }
  if (key !== VALUE_KEYS.length) throw new Error(`a stored receipt item of ${key} values: ${stored}`);
  return `${json}}`;
}

/** The item itself, for those who read its fields (the console's timeline, a delivery's detail). */
export const itemOf = (messageId: string, to: string, stored: string): DlrItem =>
  JSON.parse(itemJsonOf(messageId, to, stored)) as DlrItem;

/**
 * Wall-clock times in an IANA time zone, turned into instants with `Intl` alone (no Temporal in Node yet).
 * Receipts carry local times of the carrier's SMSC with no offset; the route names the zone (CONTRACT §12).
 */

export interface WallClock {
  year: number;
  /** 1–12 */
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** One formatter per zone: building one costs far more than using it. Null for a name Intl does not know. */
function formatterFor(timeZone: string): Intl.DateTimeFormat | null {
  const known = formatters.get(timeZone);
  if (known) return known;
  try {
    const formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      era: 'short',
    });
    formatters.set(timeZone, formatter);
    return formatter;
  } catch {
    return null;
  }
}

/**
 * Whether `name` is a time zone this runtime knows (`UTC`, `Europe/Berlin`, …).
 *
 * @example isTimeZone('Asia/Kolkata') // true
 */
export const isTimeZone = (name: string): boolean => typeof name === 'string' && formatterFor(name) !== null;

const MS_PER_DAY = 86_400_000;

/** The zone's offset from UTC at `instant`, in milliseconds (wall clock minus UTC). */
function offsetAt(formatter: Intl.DateTimeFormat, instant: number): number {
  const parts: Record<string, string> = {};
  for (const part of formatter.formatToParts(new Date(instant))) parts[part.type] = part.value;
  const year = Number(parts.year) * (parts.era === 'BC' || parts.era === 'B' ? -1 : 1);
  const wall = Date.UTC(
    year,
    Number(parts.month) - 1,
    Number(parts.day),
    Number(parts.hour),
    Number(parts.minute),
    Number(parts.second),
  );
  // Date.UTC maps years 0–99 to 1900–1999; receipts never reach them, but be exact anyway.
  const fixed = year >= 0 && year < 100 ? new Date(wall).setUTCFullYear(year) : wall;
  return fixed - (instant - (((instant % 1000) + 1000) % 1000));
}

/** Whether the fields name a real calendar date and time (no month 13, no 31 February, no 24:00). */
export function isRealWallClock(w: WallClock): boolean {
  const values = [w.year, w.month, w.day, w.hour, w.minute, w.second];
  if (!values.every(Number.isInteger)) return false;
  if (w.month < 1 || w.month > 12 || w.day < 1 || w.hour > 23 || w.minute > 59 || w.second > 59) return false;
  if (w.hour < 0 || w.minute < 0 || w.second < 0) return false;
  const probe = new Date(Date.UTC(2000, w.month - 1, w.day));
  probe.setUTCFullYear(w.year);
  return probe.getUTCDate() === w.day && probe.getUTCMonth() === w.month - 1;
}

/**
 * The instant at which clocks in `timeZone` showed `wall`; null for an impossible date or an unknown zone.
 *
 * Around a DST change it decides as Temporal's `'compatible'` disambiguation does: a time shown twice (clocks
 * going back) is the earlier instant; a time never shown (clocks going forward) is moved forward by the gap,
 * so 02:30 on a spring-forward night in Europe/Berlin is 03:30 CEST.
 *
 * @example zonedWallClockToInstant({ year: 2026, month: 7, day: 1, hour: 12, minute: 0, second: 0 }, 'Europe/Berlin')
 * // 2026-07-01T10:00:00.000Z
 */
export function zonedWallClockToInstant(wall: WallClock, timeZone: string): Date | null {
  // Receipts arriving together carry the same few done dates (minutes, mostly), and each conversion costs three
  // or four Intl.formatToParts calls — the largest share of an SMPP receipt's CPU before this memo (profiled in
  // docs/benchmarks.md, "Receipt intake"). The answer depends on the inputs alone, so it is kept per input.
  const key = `${timeZone} ${wall.year} ${wall.month} ${wall.day} ${wall.hour} ${wall.minute} ${wall.second}`;
  const known = instants.get(key);
  if (known !== undefined) return known === null ? null : new Date(known);
  const instant = convert(wall, timeZone);
  if (instants.size >= MAX_REMEMBERED) instants.clear();
  instants.set(key, instant === null ? null : instant.getTime());
  return instant;
}

/** Conversions remembered, by zone and wall clock: the instant (ms) or null. */
const instants = new Map<string, number | null>();
const MAX_REMEMBERED = 4096;

function convert(wall: WallClock, timeZone: string): Date | null {
  if (!isRealWallClock(wall)) return null;
  const formatter = formatterFor(timeZone);
  if (!formatter) return null;
  const asUtc = new Date(Date.UTC(2000, wall.month - 1, wall.day, wall.hour, wall.minute, wall.second));
  asUtc.setUTCFullYear(wall.year);
  const local = asUtc.getTime();
  if (!Number.isFinite(local)) return null;
  try {
    const before = offsetAt(formatter, local - MS_PER_DAY);
    const after = offsetAt(formatter, local + MS_PER_DAY);
    const candidates = [local - before, local - after].filter(
      (instant) => offsetAt(formatter, instant) === local - instant,
    );
    if (candidates.length > 0) return new Date(Math.min(...candidates));
    // Never shown on the clocks (a gap): read it with the offset in force before the change.
    return new Date(local - before);
  } catch {
    return null;
  }
}

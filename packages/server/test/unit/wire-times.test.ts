import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseRfc3339, parseRfc3339ByDate } from '../../src/domain/wire.js';

/** RFC 3339 times (domain/wire.ts): the parse from the fields answers what Date()'s parser answers. */

const digits = (n: number, max = 10 ** n - 1) =>
  fc.integer({ min: 0, max }).map((v) => String(v).padStart(n, '0'));

/** Times shaped like RFC 3339, every field drawn over its whole width: real ones, and ones out of range. */
const shaped = fc
  .tuple(
    fc.oneof(digits(4), fc.integer({ min: 1970, max: 2100 }).map(String)),
    fc.oneof(
      digits(2),
      fc.integer({ min: 1, max: 12 }).map((m) => String(m).padStart(2, '0')),
    ),
    fc.oneof(
      digits(2),
      fc.integer({ min: 1, max: 31 }).map((m) => String(m).padStart(2, '0')),
    ),
    fc.constantFrom('T', 't', ' '),
    digits(2, 25),
    digits(2, 61),
    digits(2, 61),
    fc.oneof(
      fc.constant(''),
      fc.integer({ min: 1, max: 10 }).chain((n) => digits(n).map((f) => `.${f}`)),
    ),
    fc.oneof(
      fc.constantFrom('Z', 'z', '', '+00:00', '-00:00'),
      fc.tuple(fc.constantFrom('+', '-'), digits(2, 25), digits(2, 61)).map(([s, h, m]) => `${s}${h}:${m}`),
    ),
  )
  .map(([y, mo, d, t, h, mi, s, f, z]) => `${y}-${mo}-${d}${t}${h}:${mi}:${s}${f}${z}`);

const answer = (date: Date | null) => (date === null ? null : date.getTime());

describe('RFC 3339 times', () => {
  it('parse to the instant Date() gives, or to null where it does, for any time so shaped', () => {
    fc.assert(
      fc.property(shaped, (value) => {
        expect(answer(parseRfc3339(value))).toBe(answer(parseRfc3339ByDate(value)));
      }),
      { numRuns: 20_000 },
    );
  });

  it('parse the edges each way', () => {
    const cases: [string, string | null][] = [
      ['2026-11-29T01:02:03.456Z', '2026-11-29T01:02:03.456Z'],
      ['2026-11-29T01:02:03Z', '2026-11-29T01:02:03.000Z'],
      ['2026-11-29t01:02:03.5+01:30', '2026-11-28T23:32:03.500Z'],
      ['2026-11-29T01:02:03.123456789-05:00', '2026-11-29T06:02:03.123Z'],
      ['2024-02-29T00:00:00Z', '2024-02-29T00:00:00.000Z'],
      ['2026-02-29T00:00:00Z', null],
      ['2100-02-29T00:00:00Z', null],
      ['2026-04-31T00:00:00Z', null],
      ['2026-01-01T24:00:00Z', '2026-01-02T00:00:00.000Z'],
      ['2026-12-31T23:59:60Z', null],
      ['2026-01-01T00:00:00+24:00', null],
      ['0099-01-01T00:00:00Z', '0099-01-01T00:00:00.000Z'],
      ['2026-01-01 00:00:00Z', null],
      ['2026-01-01T00:00:00', null],
    ];
    for (const [value, expected] of cases) {
      expect([value, parseRfc3339(value)?.toISOString() ?? null]).toEqual([value, expected]);
    }
  });
});

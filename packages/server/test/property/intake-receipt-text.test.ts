import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseReceiptText, type ReceiptTextField } from '../../src/domain/intake/receipt-text.js';
import { fromJasmin, fromKannel, fromSmppReceipt } from '../../src/domain/intake/translate.js';
import { zonedWallClockToInstant } from '../../src/domain/intake/wall-clock.js';
import { DR_ERRCODES, DR_STATUSCODES } from '../../src/domain/vocabulary.js';
import { runsFrom } from '../support/checks.js';

/**
 * Generated receipt texts in the shapes SMSCs send (any key case, any field order, fields missing, extra
 * spaces, 10- or 12-digit dates, text with colons last, junk around): the parser never throws and finds every
 * field the text holds, with its value. `WAYBILL_TEST_FUZZ_RUNS` and `WAYBILL_TEST_FUZZ_SEED` as elsewhere.
 */

const RUNS = runsFrom('WAYBILL_TEST_FUZZ_RUNS', 2000);
const SEED = process.env.WAYBILL_TEST_FUZZ_SEED ? Number(process.env.WAYBILL_TEST_FUZZ_SEED) : undefined;
const options = { numRuns: RUNS, ...(SEED === undefined ? {} : { seed: SEED }) };

type Field = Exclude<ReceiptTextField, 'text'>;

/** The words of each key; their separator is generated (`submit date`, `submit_date`, `submitdate`). */
const KEY_WORDS: Record<Field, string[]> = {
  id: ['id'],
  sub: ['sub'],
  dlvrd: ['dlvrd'],
  submitDate: ['submit', 'date'],
  doneDate: ['done', 'date'],
  stat: ['stat'],
  err: ['err'],
};

/** Anything that could be read as a key: junk must not hold one, or it would be a field of its own. */
const KEYISH = /(?:^|\s)(?:id|sub|dlvrd|submit[ _]*date|done[ _]*date|stat|err|text)[ \t]*:/i;

const randomCase = (word: string) =>
  fc
    .array(fc.boolean(), { minLength: word.length, maxLength: word.length })
    .map((upper) => [...word].map((c, i) => (upper[i] ? c.toUpperCase() : c)).join(''));

const keySpelling = (field: Field) =>
  fc
    .tuple(
      fc.tuple(...KEY_WORDS[field].map(randomCase)),
      fc.constantFrom(' ', '_', '', '  ', ' _'),
      fc.constantFrom('', ' ', '\t', '  '),
      fc.constantFrom('', ' ', '  ', '\t'),
    )
    .map(([words, join, beforeColon, afterColon]) => `${words.join(join)}${beforeColon}:${afterColon}`);

const pad = (n: number) => String(n).padStart(2, '0');

/** A date as a receipt writes it, with the instant it means in UTC when it is a real one. */
const receiptDate = fc.oneof(
  fc
    .tuple(
      fc.date({
        min: new Date('2000-01-01T00:00:00Z'),
        max: new Date('2099-12-31T23:59:59Z'),
        noInvalidDate: true,
      }),
      fc.boolean(),
    )
    .map(([d, seconds]) => {
      const digits =
        pad(d.getUTCFullYear() % 100) +
        pad(d.getUTCMonth() + 1) +
        pad(d.getUTCDate()) +
        pad(d.getUTCHours()) +
        pad(d.getUTCMinutes()) +
        (seconds ? pad(d.getUTCSeconds()) : '');
      const instant = new Date(d);
      instant.setUTCMilliseconds(0);
      if (!seconds) instant.setUTCSeconds(0);
      return { raw: digits, instant: instant as Date | null };
    }),
  // Random digits: often impossible (month 13, day 45), sometimes real.
  fc
    .stringMatching(/^(?:\d{10}|\d{12})$/)
    .map((raw) => ({ raw, instant: undefined as Date | null | undefined })),
  // Not a date shape at all: kept raw, never read.
  fc.stringMatching(/^\d{1,9}$|^\d{13,14}$|^\d{6}-\d{4}$/).map((raw) => ({ raw, instant: null })),
);

const token = fc.stringMatching(/^[!-~]{1,16}$/).filter((s) => !KEYISH.test(` ${s}`));
const threeDigits = fc.stringMatching(/^\d{3}$/);

const value: Record<Field, fc.Arbitrary<{ raw: string; instant?: Date | null | undefined }>> = {
  id: fc
    .oneof(fc.stringMatching(/^[0-9a-fA-F]{1,32}$/), fc.stringMatching(/^\d{1,20}$/), token)
    .map((raw) => ({ raw })),
  sub: fc.oneof(threeDigits, token).map((raw) => ({ raw })),
  dlvrd: fc.oneof(threeDigits, token).map((raw) => ({ raw })),
  submitDate: receiptDate,
  doneDate: receiptDate,
  stat: fc
    .oneof(
      fc.constantFrom('DELIVRD', 'UNDELIV', 'ACCEPTD', 'ENROUTE', 'EXPIRED', 'DELETED', 'REJECTD', 'UNKNOWN'),
      token,
    )
    .map((raw) => ({ raw })),
  err: fc.oneof(threeDigits, fc.stringMatching(/^0x[0-9a-fA-F]{1,4}$/), token).map((raw) => ({ raw })),
};

const space = fc.constantFrom(' ', '  ', '\t', ' \t ', '   ');
/** Junk between fields or before the first: printable or not, never a key, always ended by white space. */
const junk = fc
  .oneof(fc.string({ maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 12 }))
  .filter((s) => s.trim() !== '' && !KEYISH.test(s) && !/[\r\n]/.test(s));

const FIELDS = Object.keys(KEY_WORDS) as Field[];

/** The message's first characters: anything, colons and key-like words included (they stay text). */
const messageText = fc.oneof(
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }),
  fc
    .array(
      fc.constantFrom('id:9', ' stat:FAKE', ':', 'Text:', ' ', 'code: 1234', ' done date:2611221000', 'é'),
      {
        minLength: 1,
        maxLength: 8,
      },
    )
    .map((parts) => parts.join('')),
);

const generatedReceipt = fc
  .record({
    fields: fc.shuffledSubarray(FIELDS),
    text: fc.option(messageText, { nil: undefined }),
    textKey: fc.tuple(randomCase('text'), fc.constantFrom('', ' ', '\t'), fc.constantFrom('', ' ', '  ')),
    prefix: fc.option(junk, { nil: undefined }),
  })
  .chain(({ fields, text, textKey, prefix }) =>
    fc
      .tuple(
        ...fields.map((field) =>
          fc.record({
            key: keySpelling(field),
            value: value[field],
            before: space,
            junk: fc.option(junk, { nil: undefined }),
          }),
        ),
      )
      .map((parts) => {
        let out = prefix ?? '';
        const expected: Partial<Record<Field, { raw: string; instant?: Date | null | undefined }>> = {};
        parts.forEach((part, i) => {
          const field = fields[i] as Field;
          out += `${out === '' ? '' : part.before}${part.key}${part.value.raw}`;
          if (part.junk !== undefined) out += ` ${part.junk}`;
          expected[field] = part.value;
        });
        const cleanText = text?.replace(/[\r\n]/g, ' ').replace(/^[ \t]+/, '');
        if (cleanText) out += `${out === '' ? '' : ' '}${textKey[0]}${textKey[1]}:${textKey[2]}${cleanText}`;
        return { text: out, expected, expectedText: cleanText || undefined };
      }),
  );

const utcDigits = (d: Date, length: number) =>
  (
    pad(d.getUTCFullYear() % 100) +
    pad(d.getUTCMonth() + 1) +
    pad(d.getUTCDate()) +
    pad(d.getUTCHours()) +
    pad(d.getUTCMinutes()) +
    pad(d.getUTCSeconds())
  ).slice(0, length);

describe('receipt texts as SMSCs send them (property)', () => {
  it('finds every field present with its value, and nothing else', () => {
    fc.assert(
      fc.property(generatedReceipt, ({ text, expected, expectedText }) => {
        const parsed = parseReceiptText(text);
        const fields = Object.keys(expected) as Field[];
        if (fields.length === 0) {
          expect(parsed).toBeNull();
          return;
        }
        expect(parsed).not.toBeNull();
        if (!parsed) return;
        for (const field of fields) expect(parsed[field], field).toBe(expected[field]?.raw);
        expect(parsed.text).toBe(expectedText);
        const allowed = new Set<string>([...fields, 'submittedAt', 'doneAt', 'text']);
        for (const key of Object.keys(parsed)) expect(allowed.has(key), `unexpected ${key}`).toBe(true);
        for (const [field, parsedKey] of [
          ['submitDate', 'submittedAt'],
          ['doneDate', 'doneAt'],
        ] as const) {
          const want = expected[field];
          const got = parsed[parsedKey];
          if (!want) expect(got).toBeUndefined();
          else if (want.instant === null) expect(got).toBeUndefined();
          else if (want.instant) expect(got).toEqual(want.instant);
          else if (got) expect(utcDigits(got, want.raw.length)).toBe(want.raw);
        }
      }),
      options,
    );
  });

  it('never throws on any text in any zone', () => {
    const fragments = fc.constantFrom(
      'id:',
      'ID :',
      'stat:',
      'err:',
      'text:',
      'done date:',
      'submit_date:',
      ' ',
      '\n',
      ':',
    );
    const anyText = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 200 }),
      fc.array(fc.oneof(fragments, fc.string({ maxLength: 8 })), { maxLength: 30 }).map((a) => a.join('')),
    );
    const zone = fc.constantFrom(
      'UTC',
      'Europe/Berlin',
      'America/St_Johns',
      'Asia/Kathmandu',
      'Bogus/Zone',
      '',
    );
    fc.assert(
      fc.property(anyText, zone, (text, timeZone) => {
        const parsed = parseReceiptText(text, timeZone);
        if (parsed === null) return;
        for (const [key, v] of Object.entries(parsed)) {
          if (key === 'submittedAt' || key === 'doneAt')
            expect(v instanceof Date && !Number.isNaN(v.getTime())).toBe(true);
          else expect(typeof v === 'string' && v !== '', key).toBe(true);
        }
      }),
      options,
    );
  });
});

describe('translation never throws and answers only in the vocabulary (property)', () => {
  const arrivedAt = new Date('2026-11-22T12:00:00Z');
  const route = fc.record({
    timezone: fc.constantFrom('UTC', 'Europe/Berlin', 'Nowhere/Zone'),
    errorMap: fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 3 }), { maxKeys: 4 }),
  });
  const loose = fc.oneof(fc.string({ maxLength: 20 }), fc.constant(undefined));

  function checkAnswer(t: ReturnType<typeof fromKannel>) {
    if (t.kind === 'receipt') {
      expect(DR_STATUSCODES).toContain(t.drStatuscode);
      expect(Object.keys(DR_ERRCODES)).toContain(t.drErrcode);
      expect(Number.isNaN(t.drTime.getTime())).toBe(false);
    } else {
      expect(t.reason.length).toBeGreaterThan(0);
    }
  }

  it('for SMPP, Kannel and Jasmin', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -1, max: 300 }),
        fc.oneof(
          fc.string({ unit: 'binary', maxLength: 120 }),
          generatedReceipt.map((g) => g.text),
          fc.constant(null),
        ),
        fc.record(
          {
            receiptedMessageId: loose,
            messageState: fc.integer({ min: -1, max: 10 }),
            networkErrorCode: fc.oneof(fc.uint8Array({ maxLength: 4 }), fc.string({ maxLength: 8 })),
          },
          { requiredKeys: [] },
        ),
        route,
        loose,
        (esmClass, shortMessage, tlvs, r, other) => {
          checkAnswer(fromSmppReceipt({ esmClass, tlvs, shortMessage, arrivedAt, route: r }));
          checkAnswer(fromKannel({ type: other, reply: shortMessage ?? undefined, arrivedAt, route: r }));
          checkAnswer(
            fromJasmin({
              id: other,
              message_status: other,
              level: other,
              donedate: other,
              err: other,
              arrivedAt,
              route: r,
            }),
          );
        },
      ),
      options,
    );
  });
});

function wallClockIn(instant: Date, timeZone: string) {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    })
      .formatToParts(instant)
      .map((p) => [p.type, Number(p.value)]),
  );
  return {
    year: parts.year ?? 0,
    month: parts.month ?? 0,
    day: parts.day ?? 0,
    hour: parts.hour ?? 0,
    minute: parts.minute ?? 0,
    second: parts.second ?? 0,
  };
}

/** Within two hours of an EU clock change (last Sunday of March or October, 01:00 UTC): gaps and repeats. */
const nearEuropeanChange = fc
  .tuple(fc.integer({ min: 2000, max: 2098 }), fc.constantFrom(2, 9), fc.integer({ min: -7200, max: 7200 }))
  .map(([year, month, offsetSeconds]) => {
    const lastDay = new Date(Date.UTC(year, month, 31, 1));
    return new Date(lastDay.getTime() - lastDay.getUTCDay() * 86_400_000 + offsetSeconds * 1000);
  });

describe('wall clock to instant (property)', () => {
  it('gives back an instant showing the same wall clock: the same one, or the earlier of a repeated hour', () => {
    const zones = [
      'Europe/Berlin',
      'Europe/London',
      'America/New_York',
      'Australia/Lord_Howe',
      'Asia/Kolkata',
      'America/Santiago',
    ];
    fc.assert(
      fc.property(
        fc.oneof(
          fc.date({
            min: new Date('2000-01-01T00:00:00Z'),
            max: new Date('2099-12-31T00:00:00Z'),
            noInvalidDate: true,
          }),
          nearEuropeanChange,
        ),
        fc.constantFrom(...zones),
        (date, timeZone) => {
          const instant = new Date(Math.floor(date.getTime() / 1000) * 1000);
          const wall = wallClockIn(instant, timeZone);
          const back = zonedWallClockToInstant(wall, timeZone);
          expect(back).not.toBeNull();
          if (!back) return;
          expect(wallClockIn(back, timeZone)).toEqual(wall);
          expect(back.getTime()).toBeLessThanOrEqual(instant.getTime());
          // Earlier only by a repeated stretch (at most two hours anywhere), and then nothing earlier shows it.
          expect(instant.getTime() - back.getTime()).toBeLessThanOrEqual(2 * 3600_000);
          if (back.getTime() < instant.getTime()) {
            expect(
              wallClockIn(new Date(back.getTime() - (instant.getTime() - back.getTime())), timeZone),
            ).not.toEqual(wall);
          }
        },
      ),
      options,
    );
  });
});

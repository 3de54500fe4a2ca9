import { createRequire } from 'node:module';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { arrayLiteral, withArrayLiterals } from '../../src/store/postgres/array-params.js';

/** pg's own writer of a parameter, the reference: what it sends for an array is the literal it builds. */
const { prepareValue } = createRequire(import.meta.url)('pg/lib/utils') as {
  prepareValue: (value: unknown) => unknown;
};

const element = fc.oneof(
  fc.string({ unit: 'binary' }),
  fc.constantFrom('', '"', '\\', '\\"', 'NULL', 'a,b', '{x}', ' padded ', '{"to":"447700900123"}'),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.bigInt(),
  fc.constant(null),
  fc.constant(undefined),
);

describe('array parameters written as literals', () => {
  it('writes exactly what pg writes, for any array of strings, numbers, booleans and nulls', () => {
    fc.assert(
      fc.property(fc.array(element, { maxLength: 30 }), (values) => {
        expect(arrayLiteral(values)).toBe(prepareValue(values));
      }),
      { numRuns: 2000 },
    );
  });

  it('leaves to pg an array holding anything else, whole, and every value that is no array', () => {
    const when = new Date('2026-11-29T01:00:00.000Z');
    const values = [
      'acc',
      ['a', when],
      [Buffer.from('x')],
      [['nested']],
      [{ json: true }],
      ['b"\\', 2, null],
      7,
      null,
    ];
    const written = withArrayLiterals(values);
    expect(written.slice(0, 5)).toEqual(values.slice(0, 5));
    expect(written[1]).toBe(values[1]);
    expect(written[5]).toBe('{"b\\"\\\\","2",NULL}');
    expect(written.slice(6)).toEqual([7, null]);
    expect(written[5]).toBe(prepareValue(values[5]));
  });
});

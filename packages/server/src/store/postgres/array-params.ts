/**
 * Array parameters written as PostgreSQL array literals, the text `pg` would write, at a fraction of its cost.
 *
 * Every batch statement passes its rows as arrays (`unnest`), a thousand elements each. `pg` writes every element
 * through two regular-expression replacements (backslashes, then quotes) whether it holds either or not, a tenth
 * of the server's CPU in ingest. Here an element is searched for either character and replaced only when it
 * holds one: a third of the time for ids, numbers and times; the same for JSON, which holds quotes (docs/
 * benchmarks.md, "Twelfth pass").
 *
 * Only arrays of strings, numbers, booleans and nulls are written here; any other array (of dates, buffers,
 * nested arrays, objects) is left to `pg` as it is, whole. test/unit/array-params.test.ts holds the output to
 * `pg`'s own for any such array.
 */

/** An element's text with its backslashes and quotes escaped (a string search each, the cheapest test). */
function escaped(value: string): string {
  const backslash = value.includes('\\');
  if (!backslash && !value.includes('"')) return value;
  return (backslash ? value.replaceAll('\\', '\\\\') : value).replaceAll('"', '\\"');
}

/** The literal `pg` writes for `values`, or undefined when an element is of a kind left to `pg`. */
export function arrayLiteral(values: readonly unknown[]): string | undefined {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ',';
    const value = values[i];
    if (value === null || value === undefined) {
      out += 'NULL';
    } else if (typeof value === 'string') {
      out += `"${escaped(value)}"`;
    } else if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
      // What pg writes for these: their toString(), quoted like any element.
      out += `"${String(value)}"`;
    } else {
      return undefined;
    }
  }
  return `${out}}`;
}

/** `values` with each array among them written as its literal where {@link arrayLiteral} can. */
export function withArrayLiterals(values: readonly unknown[]): unknown[] {
  return values.map((value) => (Array.isArray(value) ? (arrayLiteral(value) ?? value) : value));
}

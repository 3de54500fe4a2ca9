/**
 * CSV as RFC 4180 writes it (comma, CRLF, double quotes doubled), for the console's downloads. Text cells are
 * guarded against formula injection: a spreadsheet runs a cell starting with = + - @ (or a tab or carriage
 * return, which some read past) as a formula, so such a cell gets a leading '. Numbers are written as numbers.
 */

export type CsvCell = string | number | null;

const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

/** One cell as it goes into the file. */
export function csvCell(value: CsvCell): string {
  if (value === null) return '';
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : '';
  const guarded = FORMULA_START.test(value) ? `'${value}` : value;
  return NEEDS_QUOTES.test(guarded) ? `"${guarded.replaceAll('"', '""')}"` : guarded;
}

/** A whole file: a header line, then one line per row, every line ending with CRLF. */
export function toCsv(header: readonly string[], rows: readonly (readonly CsvCell[])[]): string {
  return [header, ...rows].map((row) => `${row.map(csvCell).join(',')}\r\n`).join('');
}

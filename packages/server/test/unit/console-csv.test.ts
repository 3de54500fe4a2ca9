import { describe, expect, it } from 'vitest';
import { csvCell, toCsv } from '../../src/console/csv.js';

describe('console CSV', () => {
  it('quotes a cell holding a comma, a double quote or a line break, doubling the quotes', () => {
    expect(csvCell('plain')).toBe('plain');
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('two\nlines')).toBe('"two\nlines"');
    expect(csvCell('cr\rlf')).toBe('"cr\rlf"');
  });

  it('puts a quote mark before a text cell a spreadsheet would run as a formula', () => {
    expect(csvCell('=HYPERLINK("http://x")')).toBe(`"'=HYPERLINK(""http://x"")"`);
    expect(csvCell('+1')).toBe("'+1");
    expect(csvCell('-2+3')).toBe("'-2+3");
    expect(csvCell('@SUM(A1)')).toBe("'@SUM(A1)");
    expect(csvCell('\t=1')).toBe("'\t=1");
    expect(csvCell('\r=1')).toBe(`"'\r=1"`);
    // Only at the start: inside a cell these are plain characters.
    expect(csvCell('a=b-c')).toBe('a=b-c');
  });

  it('writes numbers as numbers (never guarded), null and non-finite numbers as empty cells', () => {
    expect(csvCell(0)).toBe('0');
    expect(csvCell(0.25)).toBe('0.25');
    expect(csvCell(-1)).toBe('-1');
    expect(csvCell(null)).toBe('');
    expect(csvCell(Number.NaN)).toBe('');
  });

  it('ends every line, the last included, with CRLF', () => {
    expect(
      toCsv(
        ['a', 'b'],
        [
          [1, 'x,y'],
          [null, '=z'],
        ],
      ),
    ).toBe('a,b\r\n1,"x,y"\r\n,\'=z\r\n');
    expect(toCsv(['only'], [])).toBe('only\r\n');
  });
});

import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GSM_MAP_ERRORS, SMPP_STATUS_ERRORS } from '../../src/domain/intake/errors.js';
import { KANNEL_TYPES, MESSAGE_STATES, STAT_TEXTS } from '../../src/domain/intake/states.js';
import { DR_ERRCODES, DR_STATUSCODES } from '../../src/domain/vocabulary.js';

const doc = readFileSync(resolve(import.meta.dirname, '../../../../docs/intake.md'), 'utf8');

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** A table row whose consecutive cells hold these texts, whatever the padding. */
const row = (...cells: string[]) =>
  new RegExp(`\\|\\s*${cells.map(escapeRegExp).join('\\s*\\|\\s*')}\\s*\\|`);

/** The state table's row for one drStatuscode, split into its cells. */
function stateRow(code: string): string[] {
  const rows = doc
    .split('\n')
    .filter((line) => line.startsWith('|'))
    .map((line) => line.split('|').map((cell) => cell.trim()));
  const found = rows.find((cells) => cells.length === 7 && cells[5] === `\`${code}\``);
  expect(found, `state table row for ${code}`).toBeDefined();
  return found ?? [];
}

describe('docs/intake.md stays true to the code', () => {
  it('shows every default GSM MAP cause with its drErrcode and the spec meaning', () => {
    for (const [cause, { name, drErrcode }] of Object.entries(GSM_MAP_ERRORS)) {
      const meaning = DR_ERRCODES[drErrcode].split(' (')[0] ?? '';
      expect(doc, `MAP ${cause}`).toMatch(row(cause, name, drErrcode, meaning));
    }
  });

  it('shows every default SMPP command status', () => {
    for (const [code, { name, drErrcode }] of Object.entries(SMPP_STATUS_ERRORS)) {
      const hex = `0x${Number(code).toString(16).toUpperCase().padStart(8, '0')}`;
      expect(doc, name).toMatch(row(hex, name, drErrcode));
    }
  });

  it('shows every state the maps know in the row of its drStatuscode', () => {
    for (const code of DR_STATUSCODES) {
      const [, smpp = '', stat = '', kannel = ''] = stateRow(code);
      for (const [n, s] of Object.entries(MESSAGE_STATES)) {
        if (s.drStatuscode === code) expect(smpp, `message_state ${n}`).toContain(`${n} ${s.name}`);
      }
      for (const [text, c] of Object.entries(STAT_TEXTS)) {
        if (c === code) expect(stat, `stat ${text}`).toContain(`\`${text}\``);
      }
      for (const [n, t] of Object.entries(KANNEL_TYPES)) {
        if (t.drStatuscode === code) expect(kannel, `type ${n}`).toContain(`${n} ${t.name}`);
      }
    }
  });
});

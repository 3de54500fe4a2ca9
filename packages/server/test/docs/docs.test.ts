import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { flagName } from '../../src/cli/options.js';
import { ENV_NAMES } from '../../src/config.js';
import { DLR_FAILURES, PROBLEMS } from '../../src/domain/errors.js';

const doc = (name: string) => readFileSync(resolve(import.meta.dirname, '../../../../docs', name), 'utf8');

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** A table row whose consecutive cells hold these texts (the last one may go on), whatever the padding. */
const row = (...cells: string[]) => new RegExp(`\\|\\s*${cells.map(escapeRegExp).join('\\s*\\|\\s*')}[\\s|]`);

describe('documentation stays true to the code', () => {
  it('documents every problem code and every status-query failure code', () => {
    const errors = doc('errors.md');
    for (const [code, { status }] of Object.entries(PROBLEMS)) {
      expect(errors, code).toMatch(row(`\`${code}\``, String(status)));
    }
    for (const [code, { descr, status }] of Object.entries(DLR_FAILURES)) {
      expect(errors, `dlr ${code}`).toMatch(row(`\`${code}\``, descr, String(status)));
    }
  });

  it('documents every configuration variable with its flag', () => {
    const config = doc('configuration.md');
    for (const [field, variable] of Object.entries(ENV_NAMES)) {
      expect(config, variable).toMatch(row(`\`${variable}\``, `\`--${flagName(field)}\``));
    }
  });
});

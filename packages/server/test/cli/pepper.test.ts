import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { pepperFingerprint } from '../../src/auth/pepper.js';
import { POSTGRES_URL, scratchDatabase } from '../postgres/harness.js';
import { killAll, run, serve } from '../support/processes.js';

/**
 * A database remembers the fingerprint of the pepper it was set up with: a start with another pepper, or with
 * none where one existed, is refused in one sentence (exit 3) naming the pepper expected and where it came
 * from, instead of silently turning every secret, cursor and sealed callback secret invalid (issue 18).
 */

/** Each test starts several real processes, one after another: seconds each on a busy machine. */
const PROCESS_TIMEOUT_MS = 60_000;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'waybill-pepper-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(killAll);

const FIRST = 'first-pepper-0123456789abcdef';
const SECOND = 'second-pepper-0123456789abcdef';
const fingerprintOf = (pepper: string) => pepperFingerprint(Buffer.from(pepper, 'utf8'));
const fileFingerprint = (file: string) =>
  pepperFingerprint(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64'));

/** A one-line sentence on stderr, nothing on stdout, no stack trace. */
function refusal(result: { code: number; stdout: string; stderr: string }): string {
  expect(result.code, result.stderr).toBe(3);
  expect(result.stdout).toBe('');
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines, result.stderr).toHaveLength(1);
  return lines[0] as string;
}

const startOnce = (env: Record<string, string>, cwd?: string) =>
  run(['serve', '--port', '0', '--no-demo'], env, cwd ? { cwd } : {});

describe('the pepper fingerprint on SQLite', () => {
  it(
    'refuses another pepper, naming the one expected, and takes the right one again',
    async () => {
      const env = { DATABASE_URL: `sqlite:${join(dir, 'mismatch', 'waybill.db')}` };
      const first = await serve(['--no-demo'], { ...env, WAYBILL_PEPPER: FIRST });
      expect(first.output()).toContain('recorded the fingerprint of the server pepper');
      await first.stop();

      const line = refusal(await startOnce({ ...env, WAYBILL_PEPPER: SECOND }));
      expect(line).toContain(`the server pepper of WAYBILL_PEPPER (fingerprint ${fingerprintOf(SECOND)})`);
      expect(line).toContain(`fingerprint ${fingerprintOf(FIRST)} from WAYBILL_PEPPER on host ${hostname()}`);
      expect(line).toContain('set WAYBILL_PEPPER to that pepper');
      expect(line).not.toContain(FIRST);
      expect(line).not.toContain(SECOND);
      // The commands that hash secrets with the pepper are refused alike; the others do not need it.
      refusal(await run(['accounts', 'create', '--name', 'X'], { ...env, WAYBILL_PEPPER: SECOND }));
      expect((await run(['migrate'], { ...env, WAYBILL_PEPPER: SECOND })).code).toBe(0);

      const again = await serve(['--no-demo'], { ...env, WAYBILL_PEPPER: FIRST });
      expect(again.output()).not.toContain('recorded the fingerprint');
      await again.stop();
    },
    PROCESS_TIMEOUT_MS,
  );

  it(
    'never generates a pepper for a database whose pepper file is gone',
    async () => {
      const database = join(dir, 'lost', 'waybill.db');
      const file = join(dir, 'lost', 'waybill.pepper');
      const env = { DATABASE_URL: `sqlite:${database}` };
      const first = await serve([], env); // generates the pepper and loads the demo account
      await first.stop();
      const fingerprint = fileFingerprint(file);
      renameSync(file, `${file}.moved`);

      const line = refusal(await startOnce(env));
      expect(line).toContain(
        `no server pepper was given (WAYBILL_PEPPER is unset and there is no pepper file ${file})`,
      );
      expect(line).toContain(`fingerprint ${fingerprint} from the pepper file ${file} on host ${hostname()}`);
      expect(line).toContain(`copy that file to ${file}`);
      expect(existsSync(file)).toBe(false);
      refusal(await run(['accounts', 'create', '--name', 'X'], env));
      expect(existsSync(file)).toBe(false);
      const migrated = await run(['migrate'], env);
      expect(migrated.code, migrated.stderr).toBe(0);
      expect(existsSync(file)).toBe(false);

      renameSync(`${file}.moved`, file);
      const back = await serve([], env);
      expect(back.output()).toContain('secret=DEMOSECR');
      await back.stop();
    },
    PROCESS_TIMEOUT_MS,
  );

  it(
    'records the pepper in use on the first start of a database from before fingerprints',
    async () => {
      const database = join(dir, 'upgrade', 'waybill.db');
      const env = { DATABASE_URL: `sqlite:${database}` };
      const old = await serve([], { ...env, WAYBILL_PEPPER: FIRST }); // the demo account: a database in use
      await old.stop();
      // Back to the schema before fingerprints: accounts, and no fingerprint.
      const sqlite = new Database(database);
      sqlite.exec('DROP TABLE pepper_fingerprint; DELETE FROM schema_migrations WHERE version = 3');
      sqlite.close();

      // Without its pepper it is refused too: a new one would lock out the accounts.
      const line = refusal(await startOnce(env));
      expect(line).toContain('this database already holds accounts');
      expect(line).toContain('set WAYBILL_PEPPER to it or copy its pepper file to');
      expect(existsSync(join(dir, 'upgrade', 'waybill.pepper'))).toBe(false);
      // Nor with a pepper that is not theirs: it would be recorded in place of theirs.
      const stray = refusal(await startOnce({ ...env, WAYBILL_PEPPER: SECOND }));
      expect(stray).toContain("does not open the callback secrets of this database's accounts");

      const upgraded = await serve([], { ...env, WAYBILL_PEPPER: FIRST });
      expect(upgraded.output()).toContain('recorded the fingerprint of the server pepper');
      expect(upgraded.output()).toContain('secret=DEMOSECR');
      await upgraded.stop();
      const reader = new Database(database, { readonly: true });
      expect(reader.prepare('SELECT fingerprint FROM pepper_fingerprint').all()).toEqual([
        { fingerprint: fingerprintOf(FIRST) },
      ]);
      reader.close();
      refusal(await startOnce({ ...env, WAYBILL_PEPPER: SECOND }));
    },
    PROCESS_TIMEOUT_MS,
  );
});

describe.skipIf(!POSTGRES_URL)('the pepper fingerprint on PostgreSQL', () => {
  const database = scratchDatabase('wb_pepper');
  beforeAll(database.create);
  afterAll(database.drop);

  it(
    'refuses a start from another working directory instead of generating a second pepper',
    async () => {
      const env = { DATABASE_URL: database.url };
      const here = join(dir, 'pg-here');
      const there = join(dir, 'pg-there');
      mkdirSync(here);
      mkdirSync(there);
      const first = await serve([], env, { cwd: here }); // generates ./data/waybill.pepper, loads the demo
      await first.stop();
      const file = join(here, 'data', 'waybill.pepper');

      const line = refusal(await startOnce(env, there));
      expect(line).toContain(join(there, 'data', 'waybill.pepper'));
      expect(line).toContain(`fingerprint ${fileFingerprint(file)} from the pepper file ${file} on host`);
      expect(line).toContain(`copy that file to ${join(there, 'data', 'waybill.pepper')}`);
      expect(existsSync(join(there, 'data'))).toBe(false);
      refusal(await run(['accounts', 'create', '--name', 'X'], env, { cwd: there }));
      const migrated = await run(['migrate'], env, { cwd: there });
      expect(migrated.code, migrated.stderr).toBe(0);
      expect(existsSync(join(there, 'data'))).toBe(false);

      // With the pepper file copied, the second directory serves the same accounts.
      mkdirSync(join(there, 'data'));
      copyFileSync(file, join(there, 'data', 'waybill.pepper'));
      const second = await serve([], env, { cwd: there });
      expect(second.output()).toContain('secret=DEMOSECR');
      await second.stop();
    },
    PROCESS_TIMEOUT_MS,
  );
});

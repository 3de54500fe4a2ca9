import { createHmac, randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { Config } from '../config.js';
import { openSecret } from '../domain/secret-box.js';
import type { PepperFingerprint, Store } from '../store/store.js';

export interface Pepper {
  value: Buffer;
  /** Where a generated pepper lives, or null when it came from WAYBILL_PEPPER or lives only in memory. */
  file: string | null;
  /** This start wrote the pepper file. */
  generated: boolean;
  /** This start recorded the pepper's fingerprint in the database (a new database, or one from before). */
  recorded: boolean;
}

/** The pepper file's place: beside the SQLite database, or ./data for PostgreSQL. */
export function pepperPath(databaseUrl: string): string | null {
  if (databaseUrl === 'sqlite::memory:') return null;
  if (databaseUrl.startsWith('sqlite:'))
    return join(dirname(resolve(databaseUrl.slice('sqlite:'.length))), 'waybill.pepper');
  return resolve('data', 'waybill.pepper');
}

/**
 * A keyed hash that tells peppers apart without revealing anything of them: 64 bits are plenty to notice the
 * wrong one, and too few to be any use against it.
 */
export function pepperFingerprint(value: Buffer): string {
  return createHmac('sha256', value).update('waybill pepper fingerprint').digest('hex').slice(0, 16);
}

/**
 * A start that would break every secret of the database: the message is one sentence naming the pepper the
 * database expects, where it came from, and the fix. The CLI prints it and exits 3.
 */
export class PepperRefusedError extends Error {
  override readonly name = 'PepperRefusedError';
}

/**
 * The server pepper, checked against the fingerprint the database keeps (the store must be migrated):
 * WAYBILL_PEPPER when given, else a 32-byte key read from a 0600 file, generated into it only for a database
 * that has neither accounts nor a fingerprint. The first start records the pepper's fingerprint, and every later
 * one, from any host or directory, must bring the same pepper: another one would silently turn every key's
 * secret, every cursor and every sealed callback secret invalid. A database from before fingerprints gets the
 * fingerprint of the pepper it is started with, once that pepper is shown to open its accounts' sealed callback
 * secrets (AES-GCM: the wrong key fails authentication), so a stray pepper is not recorded in its place.
 */
export async function resolvePepper(
  config: Pick<Config, 'pepper' | 'databaseUrl'>,
  store: Pick<Store, 'pepperFingerprint' | 'claimPepperFingerprint' | 'hasAccounts' | 'sealedCallbackSecret'>,
  now: Date = new Date(),
): Promise<Pepper> {
  const file = config.pepper === null ? pepperPath(config.databaseUrl) : null;
  let found = config.pepper !== null ? Buffer.from(config.pepper, 'utf8') : file && readPepperFile(file);
  let generated = false;
  const expected = await store.pepperFingerprint();
  if (!found) {
    if (expected !== null || (await store.hasAccounts())) {
      const given = `no server pepper was given (WAYBILL_PEPPER is unset and there is no pepper file ${file})`;
      throw new PepperRefusedError(
        expected === null
          ? `${given} but this database already holds accounts, whose secrets only the pepper they were created with verifies: set WAYBILL_PEPPER to it or copy its pepper file to ${file} (docs/operations.md)`
          : `${given} but this database expects ${described(expected)}: ${fix(expected, config)}`,
      );
    }
    ({ value: found, generated } =
      file === null ? { value: randomBytes(32), generated: true } : createPepperFile(file));
  }
  const origin =
    config.pepper !== null
      ? `WAYBILL_PEPPER on host ${hostname()}`
      : file === null
        ? `a pepper generated in memory on host ${hostname()}`
        : `the pepper file ${file} on host ${hostname()}`;
  const candidate: PepperFingerprint = { fingerprint: pepperFingerprint(found), origin, recordedAt: now };
  const ours = config.pepper !== null ? 'WAYBILL_PEPPER' : `the pepper file ${file}`;
  if (expected === null && !generated) {
    const sample = await store.sealedCallbackSecret();
    if (sample !== null && !opens(found, sample)) {
      throw new PepperRefusedError(
        `the server pepper of ${ours} (fingerprint ${candidate.fingerprint}) does not open the callback secrets of this database's accounts, so they were created with another pepper: set WAYBILL_PEPPER to that one or copy its pepper file to ${pepperPath(config.databaseUrl)} (docs/operations.md)`,
      );
    }
  }
  const recorded = await store.claimPepperFingerprint(candidate);
  if (recorded.fingerprint !== candidate.fingerprint) {
    // Only a start that raced another one on an empty database gets here with a file it generated: it lost, and
    // its pepper must not linger to be picked up later.
    if (generated && file !== null) unlinkSync(file);
    throw new PepperRefusedError(
      `the server pepper of ${ours} (fingerprint ${candidate.fingerprint}) is not the one this database was set up with, ${described(recorded)}: ${fix(recorded, config)}`,
    );
  }
  const isOurs = recorded.origin === origin && recorded.recordedAt.getTime() === now.getTime();
  return { value: found, file, generated, recorded: isOurs };
}

/** True when `sealed` opens under `pepper`: AES-GCM refuses a wrong key. */
function opens(pepper: Buffer, sealed: string): boolean {
  try {
    openSecret(pepper, sealed);
    return true;
  } catch {
    return false;
  }
}

const described = (expected: PepperFingerprint) =>
  `the pepper with fingerprint ${expected.fingerprint} from ${expected.origin} (recorded ${expected.recordedAt.toISOString()})`;

/**
 * The end of a refusal: how to give the database the pepper it expects (never a new one: docs/operations.md).
 * A pepper file holds the key in base64, which is not what WAYBILL_PEPPER takes, so a file is copied.
 */
function fix(expected: PepperFingerprint, config: Pick<Config, 'pepper' | 'databaseUrl'>): string {
  if (expected.origin.startsWith('WAYBILL_PEPPER'))
    return 'set WAYBILL_PEPPER to that pepper (docs/operations.md)';
  const unset = config.pepper === null ? '' : 'unset WAYBILL_PEPPER and ';
  return `${unset}copy that file to ${pepperPath(config.databaseUrl)} (docs/operations.md)`;
}

function readPepperFile(file: string): Buffer | null {
  try {
    const existing = readFileSync(file, 'utf8').trim();
    return existing === '' ? null : Buffer.from(existing, 'base64');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

/** Writes a new 0600 pepper file, or reads the one another process created meanwhile ('wx' fails then). */
function createPepperFile(file: string): { value: Buffer; generated: boolean } {
  mkdirSync(dirname(file), { recursive: true });
  const value = randomBytes(32);
  try {
    writeFileSync(file, `${value.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
    chmodSync(file, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    const theirs = readPepperFile(file);
    if (theirs) return { value: theirs, generated: false };
    throw error;
  }
  return { value, generated: true };
}

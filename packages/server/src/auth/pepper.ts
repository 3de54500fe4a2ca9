import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { Config } from '../config.js';

export interface Pepper {
  value: Buffer;
  /** Where a generated pepper lives, or null when it came from WAYBILL_PEPPER or lives only in memory. */
  file: string | null;
  generated: boolean;
}

/** The pepper file's place: beside the SQLite database, or ./data for PostgreSQL. */
export function pepperPath(databaseUrl: string): string | null {
  if (databaseUrl === 'sqlite::memory:') return null;
  if (databaseUrl.startsWith('sqlite:'))
    return join(dirname(resolve(databaseUrl.slice('sqlite:'.length))), 'waybill.pepper');
  return resolve('data', 'waybill.pepper');
}

/**
 * WAYBILL_PEPPER when given; otherwise a 32-byte key read from (or generated into) a 0600 file, so that a
 * restarted single instance keeps accepting its accounts' secrets and cursors.
 */
export function resolvePepper(config: Pick<Config, 'pepper' | 'databaseUrl'>): Pepper {
  if (config.pepper !== null)
    return { value: Buffer.from(config.pepper, 'utf8'), file: null, generated: false };
  const file = pepperPath(config.databaseUrl);
  if (file === null) return { value: randomBytes(32), file: null, generated: true };
  try {
    const existing = readFileSync(file, 'utf8').trim();
    if (existing !== '') return { value: Buffer.from(existing, 'base64'), file, generated: false };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(dirname(file), { recursive: true });
  const value = randomBytes(32);
  // 'wx' fails if another process created the file meanwhile; then its key is the one to use.
  try {
    writeFileSync(file, `${value.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
    chmodSync(file, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return resolvePepper(config);
    throw error;
  }
  return { value, file, generated: true };
}

import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PepperRefusedError, pepperFingerprint, resolvePepper } from '../../src/auth/pepper.js';
import { createAccount } from '../../src/operations/accounts.js';
import type { Store } from '../../src/store/store.js';
import { engines } from '../support/engines.js';

/**
 * resolvePepper against the fingerprint a real database keeps, on every engine: the first pepper is recorded
 * and wins, another one is refused naming it, and no pepper is generated for a database that has one.
 */

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'waybill-pepper-unit-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const FIRST = 'first-pepper-0123456789abcdef';
const SECOND = 'second-pepper-0123456789abcdef';
const NOW = new Date('2026-11-25T12:00:00Z');
const fromEnv = (pepper: string) => ({ pepper, databaseUrl: 'sqlite::memory:' });
let fileCount = 0;
/** A configuration without WAYBILL_PEPPER whose pepper file is in a directory of its own. */
const fromFile = () => {
  const databaseUrl = `sqlite:${join(dir, `f${fileCount++}`, 'waybill.db')}`;
  return { pepper: null, databaseUrl, file: join(dir, `f${fileCount - 1}`, 'waybill.pepper') };
};

describe.each(engines())('$name pepper fingerprint', (engine) => {
  let store: Store;
  beforeEach(async () => {
    store = await engine.open();
  });
  afterEach(() => store.close());

  it('records the first pepper and takes it again, from anywhere', async () => {
    expect(await store.pepperFingerprint()).toBeNull();
    const first = await resolvePepper(fromEnv(FIRST), store, NOW);
    expect(first).toMatchObject({ file: null, generated: false, recorded: true });
    expect(await store.pepperFingerprint()).toEqual({
      fingerprint: pepperFingerprint(Buffer.from(FIRST)),
      origin: expect.stringMatching(/^WAYBILL_PEPPER on host /),
      recordedAt: NOW,
    });
    const again = await resolvePepper(fromEnv(FIRST), store, new Date(NOW.getTime() + 1000));
    expect(again).toMatchObject({ recorded: false });
    expect(again.value.equals(first.value)).toBe(true);
  });

  it('refuses another pepper, naming the recorded one and never the peppers', async () => {
    await resolvePepper(fromEnv(FIRST), store, NOW);
    const refused = resolvePepper(fromEnv(SECOND), store);
    await expect(refused).rejects.toBeInstanceOf(PepperRefusedError);
    const message = await refused.catch((error: Error) => error.message);
    expect(message).toContain(`fingerprint ${pepperFingerprint(Buffer.from(FIRST))} from WAYBILL_PEPPER`);
    expect(message).toContain(`(recorded ${NOW.toISOString()})`);
    expect(message).not.toContain(FIRST);
    expect(message).not.toContain(SECOND);
  });

  it('lets exactly one of two different peppers starting at once on a new database win', async () => {
    const results = await Promise.allSettled([
      resolvePepper(fromEnv(FIRST), store),
      resolvePepper(fromEnv(SECOND), store),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const winner = results.findIndex((r) => r.status === 'fulfilled');
    expect((await store.pepperFingerprint())?.fingerprint).toBe(
      pepperFingerprint(Buffer.from(winner === 0 ? FIRST : SECOND)),
    );
  });

  it('generates a pepper file only for a database with neither accounts nor a fingerprint', async () => {
    const fresh = fromFile();
    const generated = await resolvePepper(fresh, store);
    expect(generated).toMatchObject({ file: fresh.file, generated: true, recorded: true });
    expect(Buffer.from(readFileSync(fresh.file, 'utf8').trim(), 'base64').equals(generated.value)).toBe(true);

    const elsewhere = fromFile();
    await expect(resolvePepper(elsewhere, store)).rejects.toThrow(
      `but this database expects the pepper with fingerprint ${pepperFingerprint(generated.value)} from the pepper file ${fresh.file}`,
    );
    expect(existsSync(elsewhere.file)).toBe(false);
  });

  it('refuses to generate a pepper for accounts from before fingerprints, and records only the one they use', async () => {
    await createAccount(store, Buffer.from(FIRST), { name: 'Before fingerprints' }, NOW);
    const noPepper = fromFile();
    await expect(resolvePepper(noPepper, store)).rejects.toThrow('this database already holds accounts');
    expect(existsSync(noPepper.file)).toBe(false);
    expect(await store.pepperFingerprint()).toBeNull();
    // A stray pepper is not recorded in place of theirs: it cannot open their sealed callback secrets.
    await expect(resolvePepper(fromEnv(SECOND), store)).rejects.toThrow(
      `the server pepper of WAYBILL_PEPPER (fingerprint ${pepperFingerprint(Buffer.from(SECOND))}) does not open the callback secrets of this database's accounts`,
    );
    expect(await store.pepperFingerprint()).toBeNull();

    expect(await resolvePepper(fromEnv(FIRST), store, NOW)).toMatchObject({ recorded: true });
    await expect(resolvePepper(fromEnv(SECOND), store)).rejects.toBeInstanceOf(PepperRefusedError);
  });

  it('removes the pepper file it generated when another start recorded its pepper first', async () => {
    await resolvePepper(fromEnv(FIRST), store, NOW);
    // The other start commits between this one's look at the database and its claim: a real race, replayed.
    const late = { ...store, pepperFingerprint: async () => null, hasAccounts: async () => false };
    const loser = fromFile();
    await expect(resolvePepper(loser, late)).rejects.toBeInstanceOf(PepperRefusedError);
    expect(existsSync(loser.file)).toBe(false);
  });
});

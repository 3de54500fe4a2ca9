import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Account } from '../../src/domain/records.js';
import type { Store } from '../../src/store/store.js';
import { NOW, newAccount, sms } from '../conformance/fixtures.js';
import { dropSchema, freshSchema, openStore, POSTGRES_URL, sql } from './harness.js';

/**
 * Making a month's partition next to a long reader of `messages` (a report, `pg_dump`): attaching needs an
 * exclusive lock on the default partition, which the reader holds off. Ingest must not wait for it.
 */

const DEADLINE_MS = 3_000;
const day = (iso: string): Date => new Date(`${iso}T12:00:00.000Z`);

describe.skipIf(!POSTGRES_URL)('PostgreSQL partition creation behind a long reader', () => {
  let schema: string;
  let store: Store;
  let account: Account;
  let reader: pg.Client | undefined;

  beforeEach(async () => {
    schema = freshSchema();
    store = openStore(schema, { timeoutMs: DEADLINE_MS });
    await store.migrate();
    account = await store.createAccount(newAccount());
  });
  afterEach(async () => {
    await reader?.end().catch(() => {});
    reader = undefined;
    await store.close();
    await dropSchema(schema);
  });

  const placement = async (): Promise<Record<string, string>> =>
    Object.fromEntries(
      (
        await sql<{ id: string; part: string }>(
          schema,
          'SELECT id, tableoid::regclass::text AS part FROM messages ORDER BY id',
        )
      ).map((r) => [r.id, r.part]),
    );

  it('puts a new month in the default partition meanwhile, and makes the month once the reader is done', async () => {
    reader = new pg.Client({ connectionString: POSTGRES_URL });
    reader.on('error', () => {});
    await reader.connect();
    await reader.query(`SET search_path TO ${schema}`);
    await reader.query('BEGIN');
    await reader.query('SELECT count(*) FROM messages');

    const started = performance.now();
    for (const id of ['a', 'b', 'c']) {
      const outcome = await store.ingestMessages(
        account.id,
        [sms(id, '447700900001', { createdAt: day('2026-10-05') })],
        NOW,
      );
      expect(outcome.ok).toBe(true);
    }
    // Three batches, none of them held up for the reader (it keeps going well past the deadline).
    expect(performance.now() - started).toBeLessThan(DEADLINE_MS);
    expect(await placement()).toEqual({
      a: 'messages_default',
      b: 'messages_default',
      c: 'messages_default',
    });

    await reader.query('COMMIT');
    // The month is tried again a moment later, by the next batch that has a record in it.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await store.ingestMessages(account.id, [sms('d', '447700900001', { createdAt: day('2026-10-06') })], NOW);
    expect(await placement()).toEqual({
      a: 'messages_p202610',
      b: 'messages_p202610',
      c: 'messages_p202610',
      d: 'messages_p202610',
    });
    expect((await store.findMessagesByIds(account.id, ['a', 'b', 'c', 'd'])).map((m) => m.id)).toEqual([
      'a',
      'b',
      'c',
      'd',
    ]);
  }, 30_000);
});

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Account } from '../../src/domain/records.js';
import type { Store } from '../../src/store/store.js';
import { NOW, newAccount, sms } from '../conformance/fixtures.js';
import { dropSchema, freshSchema, openStore, POSTGRES_URL, sql } from './harness.js';

const day = (iso: string): Date => new Date(`${iso}T12:00:00.000Z`);

describe.skipIf(!POSTGRES_URL)('PostgreSQL month partitions and prune', () => {
  let schema: string;
  let store: Store;
  let account: Account;

  beforeEach(async () => {
    schema = freshSchema();
    store = openStore(schema);
    await store.migrate();
    account = await store.createAccount(newAccount());
  });
  afterEach(async () => {
    await store.close();
    await dropSchema(schema);
  });

  const partitions = async (): Promise<string[]> =>
    (
      await sql<{ name: string }>(
        schema,
        `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent = 'messages'::regclass ORDER BY 1`,
      )
    ).map((r) => r.name);

  /** Which partition holds each record, as `id → partition`. */
  const placement = async (): Promise<Record<string, string>> =>
    Object.fromEntries(
      (
        await sql<{ id: string; part: string }>(
          schema,
          'SELECT id, tableoid::regclass::text AS part FROM messages ORDER BY id',
        )
      ).map((r) => [r.id, r.part]),
    );

  /** Each partition's fillfactor, as `partition → setting` (null where none is set). */
  const fillfactors = async (): Promise<Record<string, string | null>> =>
    Object.fromEntries(
      (
        await sql<{ name: string; fillfactor: string | null }>(
          schema,
          `SELECT c.relname AS name,
             (SELECT split_part(o, '=', 2) FROM unnest(c.reloptions) AS o WHERE o LIKE 'fillfactor=%') AS fillfactor
           FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
           WHERE i.inhparent = 'messages'::regclass`,
        )
      ).map((r) => [r.name, r.fillfactor]),
    );

  it('leaves room on every partition’s pages for receipts, made at ingest or before migration 9', async () => {
    const months = [day('2026-09-30'), day('2026-10-01'), NOW];
    await store.ingestMessages(
      account.id,
      months.map((createdAt, n) => sms(`m-${n}`, '447700900001', { createdAt })),
      NOW,
    );
    const every = {
      messages_default: '85',
      messages_p202609: '85',
      messages_p202610: '85',
      messages_p202611: '85',
    };
    expect(await fillfactors()).toEqual(every);
    // Partitions as migration 8 left them: migration 9 gives each the setting.
    for (const name of Object.keys(every)) await sql(schema, `ALTER TABLE ${name} RESET (fillfactor)`);
    await sql(schema, 'DELETE FROM schema_migrations WHERE version = 9');
    expect(Object.values(await fillfactors())).toEqual([null, null, null, null]);
    expect(await store.migrate()).toEqual([{ version: 9, name: 'room on record pages for receipts' }]);
    expect(await fillfactors()).toEqual(every);
  });

  it('creates one partition per month at ingest, and keeps far-away dates in the default one', async () => {
    await store.ingestMessages(
      account.id,
      [
        sms('sep', '447700900001', { createdAt: day('2026-09-30') }),
        sms('oct', '447700900001', { createdAt: day('2026-10-01') }),
        sms('nov', '447700900001', { createdAt: new Date('2026-11-30T23:59:59.999Z') }),
        sms('old', '447700900001', { createdAt: day('1999-01-01') }),
      ],
      NOW,
    );
    expect(await partitions()).toEqual([
      'messages_default',
      'messages_p202609',
      'messages_p202610',
      'messages_p202611',
    ]);
    expect(await placement()).toEqual({
      nov: 'messages_p202611',
      oct: 'messages_p202610',
      old: 'messages_default',
      sep: 'messages_p202609',
    });
  });

  it('prune drops whole months older than the cutoff and deletes the rest row by row', async () => {
    await store.ingestMessages(
      account.id,
      [
        sms('sep-1', '447700900001', { createdAt: day('2026-09-02') }),
        sms('sep-2', '447700900002', { createdAt: day('2026-09-20') }),
        sms('oct-1', '447700900001', { createdAt: day('2026-10-05') }),
        sms('oct-2', '447700900001', { createdAt: day('2026-10-25') }),
        sms('nov-1', '447700900001', { createdAt: day('2026-11-01') }),
        sms('old', '447700900001', { createdAt: day('1999-01-01') }),
      ],
      NOW,
    );
    // Cutoff mid-October: September goes whole, October keeps its second record.
    expect(await store.prune(day('2026-10-15'))).toBe(4);
    expect(await partitions()).toEqual(['messages_default', 'messages_p202610', 'messages_p202611']);
    const left = await store.findMessagesByIds(account.id, [
      'sep-1',
      'sep-2',
      'oct-1',
      'oct-2',
      'nov-1',
      'old',
    ]);
    expect(left.map((m) => m.id)).toEqual(['oct-2', 'nov-1']);
    const keys = await sql<{ id: string }>(schema, 'SELECT id FROM message_keys ORDER BY id');
    expect(keys.map((k) => k.id)).toEqual(['nov-1', 'oct-2']);

    // A pruned record ingested again is a new record, in a partition made again for its month.
    await store.ingestMessages(
      account.id,
      [sms('sep-1', '447700900001', { createdAt: day('2026-09-03'), text: 'again' })],
      NOW,
    );
    expect((await placement())['sep-1']).toBe('messages_p202609');
    expect((await store.findMessagesByIds(account.id, ['sep-1'])).map((m) => m.createdAt)).toEqual([
      day('2026-09-03'),
    ]);
    expect(await store.findDlr(account.id, 'sep-1')).toHaveLength(1);
  });

  it('makes a month again that another instance pruned while this one kept running', async () => {
    const other = openStore(schema);
    try {
      // This instance has written to August, so it has seen the partition.
      await store.ingestMessages(
        account.id,
        [sms('a', '447700900001', { createdAt: day('2026-08-10') })],
        NOW,
      );
      expect(await other.prune(day('2026-09-01'))).toBe(1);
      expect(await partitions()).not.toContain('messages_p202608');
      // Its next August record goes into a new August partition, not the default one.
      await store.ingestMessages(
        account.id,
        [sms('b', '447700900001', { createdAt: day('2026-08-11') })],
        NOW,
      );
      expect(await placement()).toEqual({ b: 'messages_p202608' });
      await other.ingestMessages(
        account.id,
        [sms('c', '447700900001', { createdAt: day('2026-08-12') })],
        NOW,
      );
      expect(await partitions()).toContain('messages_p202608');
      expect(await placement()).toEqual({ b: 'messages_p202608', c: 'messages_p202608' });
      expect((await store.findMessagesByIds(account.id, ['a', 'b', 'c'])).map((m) => m.id)).toEqual([
        'b',
        'c',
      ]);
    } finally {
      await other.close();
    }
  });

  it('moves the records of a month from the default partition when it makes that month', async () => {
    await store.ingestMessages(account.id, [sms('a', '447700900001', { createdAt: day('2026-06-10') })], NOW);
    // What a batch racing a prune leaves behind: a June record in the default partition, June gone.
    await sql(
      schema,
      `BEGIN;
       ALTER TABLE messages DETACH PARTITION messages_p202606;
       INSERT INTO messages SELECT * FROM messages_p202606;
       DROP TABLE messages_p202606;
       COMMIT`,
    );
    expect(await placement()).toEqual({ a: 'messages_default' });
    await store.ingestMessages(account.id, [sms('b', '447700900001', { createdAt: day('2026-06-11') })], NOW);
    expect(await placement()).toEqual({ a: 'messages_p202606', b: 'messages_p202606' });
    expect((await store.findMessagesByIds(account.id, ['a', 'b'])).map((m) => m.id)).toEqual(['a', 'b']);
  });

  it('creates a month only once when instances ingest into it at the same time', async () => {
    const others = Array.from({ length: 3 }, () => openStore(schema));
    try {
      const outcomes = await Promise.all(
        [store, ...others].map((s, n) =>
          s.ingestMessages(
            account.id,
            [sms(`m-${n}`, '447700900001', { createdAt: day('2026-07-15') })],
            NOW,
          ),
        ),
      );
      expect(outcomes.every((o) => o.ok)).toBe(true);
      expect(await partitions()).toContain('messages_p202607');
      expect(Object.values(await placement())).toEqual(Array(4).fill('messages_p202607'));
    } finally {
      await Promise.all(others.map((s) => s.close()));
    }
  });
});

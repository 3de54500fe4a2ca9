import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Account } from '../../src/domain/records.js';
import { openPostgresStore } from '../../src/store/postgres/store.js';
import type { Store } from '../../src/store/store.js';
import { newAccount, sms } from '../conformance/fixtures.js';
import { run } from '../support/processes.js';
import { POSTGRES_URL, scratchDatabase } from './harness.js';

/**
 * `waybill prune` as a process of its own, against a database a running instance keeps using: it reports
 * waiting for a long reader and finishes after it, and the instance then makes the pruned month again for
 * its next record of that month instead of filling the default partition. The CLI works on the `public`
 * schema, so this test gets a database of its own.
 */

const DAY_MS = 86_400_000;

describe.skipIf(!POSTGRES_URL)('waybill prune on PostgreSQL, beside a running instance', () => {
  const database = scratchDatabase('wb_test');
  let store: Store | undefined;
  let account: Account;

  beforeAll(async () => {
    await database.create();
    store = openPostgresStore({ url: database.url, poolSize: 4, statementTimeoutMs: 30_000 });
    await store.migrate();
    account = await store.createAccount(newAccount());
  });
  afterAll(async () => {
    await store?.close();
    await database.drop();
  });

  it('waits for a reader, saying so on stderr, then prunes; the instance makes the month again', async () => {
    const now = new Date();
    // A month wholly older than the cutoff (100 days ago) whatever today is.
    const old = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 6, 10, 12));
    const month = `messages_p${old.getUTCFullYear()}${String(old.getUTCMonth() + 1).padStart(2, '0')}`;
    await store?.ingestMessages(
      account.id,
      [sms('old-1', '447700900001', { createdAt: old }), sms('old-2', '447700900002', { createdAt: old })],
      now,
    );

    const reader = new pg.Client({ connectionString: database.url });
    reader.on('error', () => {});
    await reader.connect();
    let pruned: Awaited<ReturnType<typeof run>>;
    try {
      await reader.query('BEGIN');
      await reader.query(`SELECT count(*) FROM ${month}`);
      // The reader holds its lock until prune says it waits for it, however long the process takes to start
      // (a fixed pause was too short on a slow machine: prune came after the reader had gone).
      let saidWaiting: () => void = () => {};
      const waiting = new Promise<void>((resolve) => {
        saidWaiting = resolve;
      });
      const pruning = run(
        ['prune', '--older-than', '100', '--database-url', database.url],
        {},
        {
          onStderr: (soFar) => {
            if (soFar.includes(' is locked by another session')) saidWaiting();
          },
        },
      );
      await Promise.race([waiting, pruning]);
      await reader.query('COMMIT');
      pruned = await pruning;
    } finally {
      await reader.end();
    }
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stdout).toMatch(/^removed 2 message record\(s\) created before \S+\n$/);
    expect(pruned.stderr).toContain(`waybill prune: ${month} is locked by another session`);

    const placement = async () => {
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      try {
        const result = await client.query<{ id: string; part: string }>(
          'SELECT id, tableoid::regclass::text AS part FROM messages WHERE id LIKE $1 ORDER BY id',
          ['old-%'],
        );
        return Object.fromEntries(result.rows.map((r) => [r.id, r.part]));
      } finally {
        await client.end();
      }
    };
    expect(await placement()).toEqual({});
    await store?.ingestMessages(
      account.id,
      [sms('old-3', '447700900003', { createdAt: new Date(old.getTime() + DAY_MS) })],
      now,
    );
    expect(await placement()).toEqual({ 'old-3': month });
  }, 60_000);
});

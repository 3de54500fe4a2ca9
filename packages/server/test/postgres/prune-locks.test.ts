import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Account } from '../../src/domain/records.js';
import { PruneGaveUpError, type PruneProgress, type Store } from '../../src/store/store.js';
import { NOW, newAccount, sms } from '../conformance/fixtures.js';
import { dropSchema, freshSchema, openStore, POSTGRES_URL, sql } from './harness.js';

/**
 * `prune` next to a long reader (a report, `pg_dump`) that keeps a month it must drop open: ingest goes on
 * within its deadline the whole time, and prune either finishes once the reader is done or gives up, saying why.
 */

const day = (iso: string): Date => new Date(`${iso}T12:00:00.000Z`);

/** WAYBILL_DB_TIMEOUT_MS of the serving store: no ingest may take longer. */
const DEADLINE_MS = 3_000;
/** How long the reader keeps its transaction open: well past the deadline, so a stalled ingest would fail. */
const READER_MS = 5_000;
const WRITERS = 3;

interface Timings {
  latencies: number[];
  failures: unknown[];
}

/** Ingests small batches into the current month from `WRITERS` loops until `until` resolves. */
async function ingestUntil(store: Store, account: Account, until: Promise<unknown>): Promise<Timings> {
  const timings: Timings = { latencies: [], failures: [] };
  let done = false;
  void until.finally(() => {
    done = true;
  });
  let n = 0;
  const writer = async (w: number) => {
    while (!done) {
      const started = performance.now();
      try {
        const id = `live-${w}-${n++}`;
        const outcome = await store.ingestMessages(account.id, [sms(id, `4477009${w}0001`)], NOW);
        if (!outcome.ok) timings.failures.push(outcome);
      } catch (error) {
        timings.failures.push(error);
      }
      timings.latencies.push(performance.now() - started);
    }
  };
  await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
  return timings;
}

const percentile = (values: number[], p: number): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!POSTGRES_URL)('PostgreSQL prune behind a long reader', () => {
  let schema: string;
  let store: Store;
  let account: Account;
  let reader: pg.Client | undefined;

  beforeEach(async () => {
    schema = freshSchema();
    store = openStore(schema, { timeoutMs: DEADLINE_MS });
    await store.migrate();
    account = await store.createAccount(newAccount());
    await store.ingestMessages(
      account.id,
      [
        sms('aug-1', '447700900001', { createdAt: day('2026-08-03') }),
        sms('aug-2', '447700900002', { createdAt: day('2026-08-20') }),
        sms('sep-1', '447700900001', { createdAt: day('2026-09-10') }),
        // The month the writers below write to exists already: making a partition is another matter.
        sms('nov-1', '447700900001'),
      ],
      NOW,
    );
  });
  afterEach(async () => {
    // Ending the reader's session rolls its transaction back; the store's connections go before the schema.
    await reader?.end().catch(() => {});
    reader = undefined;
    await store.close();
    await dropSchema(schema);
  });

  /** A session that has read `from` in a transaction it keeps open, holding its ACCESS SHARE lock. */
  async function openReader(from: string): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: POSTGRES_URL, application_name: 'long-reader' });
    client.on('error', () => {});
    await client.connect();
    reader = client;
    await client.query(`SET search_path TO ${schema}`);
    await client.query('BEGIN');
    await client.query(`SELECT count(*) FROM ${from}`);
    return client;
  }

  const partitions = async (): Promise<string[]> =>
    (
      await sql<{ name: string }>(
        schema,
        `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent = 'messages'::regclass ORDER BY 1`,
      )
    ).map((r) => r.name);

  const report = (label: string, timings: Timings) => {
    const { latencies } = timings;
    console.info(
      `${label}: ${latencies.length} ingests, p50 ${percentile(latencies, 50).toFixed(0)} ms, ` +
        `p99 ${percentile(latencies, 99).toFixed(0)} ms, max ${Math.max(...latencies).toFixed(0)} ms`,
    );
  };

  it.each([
    ['the month partition', 'messages_p202608'],
    ['the whole table, like pg_dump', 'messages'],
  ])(
    'ingest stays within its deadline while prune waits for a reader of %s, and prune finishes after it',
    async (_, from) => {
      const held = await openReader(from);
      const progress: PruneProgress[] = [];
      const pruning = store.prune(day('2026-09-01'), { onProgress: (p) => progress.push(p) });
      pruning.catch(() => {});
      const readerDone = sleep(READER_MS).then(() => held.query('COMMIT'));
      const timings = await ingestUntil(store, account, readerDone);
      const removed = await pruning;
      report(`reader on ${from}`, timings);

      expect(timings.failures).toEqual([]);
      expect(timings.latencies.length).toBeGreaterThan(WRITERS);
      expect(Math.max(...timings.latencies)).toBeLessThan(DEADLINE_MS);
      // Prune waited for the reader, and said so, rather than queueing every writer behind it.
      expect(progress).toContainEqual(
        expect.objectContaining({ kind: 'waiting', target: 'messages_p202608' }),
      );

      // Then it did what it promises: August is gone, with its keys; September and the new records stay.
      expect(removed).toBe(2);
      expect(await partitions()).not.toContain('messages_p202608');
      expect(
        (await store.findMessagesByIds(account.id, ['aug-1', 'aug-2', 'sep-1'])).map((m) => m.id),
      ).toEqual(['sep-1']);
      const keys = await sql<{ n: number }>(
        schema,
        `SELECT count(*)::int AS n FROM message_keys WHERE id LIKE 'aug-%'`,
      );
      expect(keys[0]?.n).toBe(0);
      expect(await store.findMessagesByIds(account.id, ['live-0-0'])).toHaveLength(1);
    },
    60_000,
  );

  it('gives up after its bound with a message saying why, and a later run finishes the job', async () => {
    const held = await openReader('messages_p202608');
    const progress: PruneProgress[] = [];
    const pruning = store.prune(day('2026-09-01'), {
      giveUpAfterMs: 1_500,
      onProgress: (p) => progress.push(p),
    });
    pruning.catch(() => {});
    const timings = await ingestUntil(
      store,
      account,
      pruning.catch(() => {}),
    );
    report('until prune gives up', timings);

    const failure = await pruning.then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(PruneGaveUpError);
    expect((failure as Error).message).toMatch(/locks on messages_p202608.*run prune again/);
    expect(progress.filter((p) => p.kind === 'waiting').length).toBeGreaterThan(0);
    expect(timings.failures).toEqual([]);
    expect(Math.max(...timings.latencies)).toBeLessThan(DEADLINE_MS);
    expect(await partitions()).toContain('messages_p202608');

    await held.query('COMMIT');
    expect(await store.prune(day('2026-09-01'))).toBe(2);
    expect(await partitions()).not.toContain('messages_p202608');
  }, 60_000);
});

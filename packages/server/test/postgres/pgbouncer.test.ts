import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, inTransaction } from '../../src/store/postgres/pool.js';
import { openPostgresStore } from '../../src/store/postgres/store.js';
import { type Receiver, startReceiver } from '../callbacks/receiver.js';
import { createAccount } from '../conformance/fixtures.js';
import { type PgBouncer, pgbouncerTestsEnabled, startPgBouncer } from '../support/pgbouncer.js';
import { killAll, run, type Served, serve } from '../support/processes.js';
import { POSTGRES_URL } from './harness.js';

/**
 * Waybill behind a real PgBouncer in transaction pooling mode (WAYBILL_PG_TRANSACTION_POOLING=on): named
 * statements are sent unnamed, no session state is set (nor leaks to PgBouncer's other clients), transactions
 * carry their settings with SET LOCAL, the schema comes from the role's search_path (and a wrong one is refused
 * with the fix), migrations' transaction-scoped advisory lock serializes concurrent runs, and a real
 * `waybill serve` ingests, answers /dlr, history and the feed, relays a callback, and prunes and migrates from
 * the CLI, all through PgBouncer.
 */

const ADMIN = 'pgbouncer-admin-token';
const PEPPER = 'pgbouncer-test-pepper-0123456789';

async function onServer<T extends pg.QueryResultRow>(
  text: string,
  database?: string,
  values: unknown[] = [],
): Promise<T[]> {
  const url = new URL(POSTGRES_URL);
  if (database) url.pathname = `/${database}`;
  const client = new pg.Client({ connectionString: url.href });
  await client.connect();
  try {
    return (await client.query<T>(text, values)).rows;
  } finally {
    await client.end();
  }
}

describe.skipIf(!POSTGRES_URL || !pgbouncerTestsEnabled())(
  'Waybill behind PgBouncer in transaction mode',
  () => {
    let bouncer: PgBouncer | undefined;
    const databases: string[] = [];
    let cwd: string;

    async function freshDatabase(): Promise<string> {
      const name = `wb_pgb_${randomBytes(5).toString('hex')}`;
      await onServer(`CREATE DATABASE ${name}`);
      databases.push(name);
      return name;
    }

    beforeAll(async () => {
      cwd = await mkdtemp(join(tmpdir(), 'waybill-pgbouncer-cwd-'));
      const target = new URL(POSTGRES_URL);
      // Two server connections per database: several clients share each, so a statement prepared on one
      // connection is soon run on the other.
      bouncer = await startPgBouncer({
        target: { host: target.hostname, port: Number(target.port || 5432) },
        poolSize: 2,
      });
    }, 60_000);

    afterAll(async () => {
      killAll();
      await bouncer?.stop();
      for (const name of databases)
        await onServer(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
      await rm(cwd, { recursive: true, force: true });
    }, 60_000);

    const through = (database: string) => (bouncer as PgBouncer).url(database);

    describe('the store', () => {
      let database: string;
      const schema = 'wb_bounced';

      beforeAll(async () => {
        database = await freshDatabase();
        // What docs/operations.md tells the operator to do: the schema and the timeout on the role.
        await onServer(`ALTER ROLE postgres IN DATABASE ${database} SET search_path = ${schema}`);
        await onServer(`ALTER ROLE postgres IN DATABASE ${database} SET statement_timeout = '7s'`);
      }, 60_000);

      const poolOptions = () => ({
        url: through(database),
        poolSize: 8,
        statementTimeoutMs: 30_000,
        schema,
        connectTimeoutMs: 10_000,
        queryTimeoutMs: 30_000,
        transactionPooling: true,
      });

      it('migrates from two stores at once (the advisory lock is transaction-scoped) and serves named statements', async () => {
        const open = () =>
          openPostgresStore({
            url: through(database),
            poolSize: 8,
            statementTimeoutMs: 30_000,
            schema,
            timeoutMs: 20_000,
            transactionPooling: true,
          });
        const [a, b] = [open(), open()];
        try {
          const [first, second] = await Promise.all([a.migrate(), b.migrate()]);
          // Every step applied exactly once, by one or the other.
          expect(first.length + second.length).toBeGreaterThan(0);
          const versions = [...first, ...second].map((m) => m.version);
          expect(new Set(versions).size).toBe(versions.length);
          const recorded = await onServer<{ n: number }>(
            `SELECT count(*)::int AS n FROM ${schema}.schema_migrations`,
            database,
          );
          expect(recorded[0]?.n).toBe(versions.length);
          expect(await a.migrate()).toStrictEqual([]);

          const account = await createAccount(a);
          // Many concurrent calls of the hot, named queries over 2 server connections: with the names kept,
          // PgBouncer 1.18 fails these with "prepared statement … does not exist".
          const calls = Array.from({ length: 200 }, (_, i) =>
            (i % 2 ? a : b).findDlr(account.id, `missing-${i}`),
          );
          const found = await Promise.all(calls);
          for (const rows of found) expect(rows).toStrictEqual([]);
          await a.ping();
        } finally {
          await Promise.all([a.close(), b.close()]);
        }
      }, 120_000);

      it('sends named query configs unnamed, and sets no session state that another client would inherit', async () => {
        const pool = createPool(poolOptions());
        try {
          const answers = await Promise.all(
            Array.from({ length: 100 }, (_, i) =>
              pool.query<{ n: number }>({
                name: 'wb_pgbouncer_probe',
                text: 'SELECT $1::int AS n',
                values: [i],
              }),
            ),
          );
          expect(answers.map((r) => r.rows[0]?.n)).toStrictEqual(Array.from({ length: 100 }, (_, i) => i));
          // Outside a transaction the role's settings hold, on every server connection.
          for (let i = 0; i < 10; i++) {
            const shown = await pool.query<{ statement_timeout: string; search_path: string }>(
              "SELECT current_setting('statement_timeout') AS statement_timeout, current_setting('search_path') AS search_path",
            );
            expect(shown.rows[0]).toStrictEqual({ statement_timeout: '7s', search_path: schema });
          }
          // A transaction carries the configured statement_timeout, and it ends with the transaction.
          const inside = await inTransaction(pool, async (client) => {
            const r = await client.query<{ t: string; p: string }>(
              "SELECT current_setting('statement_timeout') AS t, current_setting('search_path') AS p",
            );
            return { commit: true, value: r.rows[0] };
          });
          expect(inside).toStrictEqual({ t: '30s', p: schema });
        } finally {
          await pool.end();
        }
        // Another client of PgBouncer, on the same server connections, sees only the role's settings.
        const other = new pg.Client({ connectionString: through(database) });
        await other.connect();
        try {
          for (let i = 0; i < 6; i++) {
            const r = await other.query<{ t: string }>("SELECT current_setting('statement_timeout') AS t");
            expect(r.rows[0]?.t).toBe('7s');
          }
        } finally {
          await other.end();
        }
      }, 60_000);

      it('refuses a connection whose role search_path is not the schema, naming the fix', async () => {
        const pool = createPool({ ...poolOptions(), schema: 'wb_elsewhere' });
        try {
          await expect(pool.query('SELECT 1')).rejects.toThrow(
            /WAYBILL_PG_TRANSACTION_POOLING is on but the role's search_path is "wb_bounced", not the schema "wb_elsewhere": run ALTER ROLE "postgres" IN DATABASE "wb_pgb_\w+" SET search_path = "wb_elsewhere"/,
          );
        } finally {
          await pool.end();
        }
      }, 60_000);
    });

    describe('waybill serve', () => {
      let database: string;
      let receiver: Receiver;
      let server: Served | undefined;

      beforeAll(async () => {
        // A database of its own in the default schema (public), which the role's default search_path names.
        database = await freshDatabase();
        receiver = await startReceiver();
      }, 60_000);
      afterAll(async () => {
        await server?.stop();
        await receiver?.close();
      }, 60_000);

      const env = () => ({
        DATABASE_URL: through(database),
        WAYBILL_PG_TRANSACTION_POOLING: 'on',
        WAYBILL_PEPPER: PEPPER,
        WAYBILL_ADMIN_TOKEN: ADMIN,
        WAYBILL_ACCESS_LOG: 'off',
        WAYBILL_RATE_PER_SECOND: '0',
        WAYBILL_CALLBACK_ALLOW_PRIVATE: 'true',
        WAYBILL_DB_TIMEOUT_MS: '20000',
      });
      const admin = (path: string, body: unknown) =>
        fetch(`${(server as Served).url}/admin/v1${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });

      it('migrates, ingests, answers /dlr, history and the feed, relays a callback, and prunes', async () => {
        const migrated = await run(['migrate', '--database-url', through(database)], {
          WAYBILL_PG_TRANSACTION_POOLING: 'on',
          WAYBILL_PEPPER: PEPPER,
        });
        expect(migrated.code, migrated.stderr).toBe(0);

        server = await serve(['--no-demo'], env(), { cwd });
        const created = await admin('/accounts', { name: 'Bounced', callbackUrl: `${receiver.url}/dlr` });
        expect(created.status).toBe(201);
        const { id, key, secret } = (await created.json()) as { id: string; key: string; secret: string };

        const now = Date.now();
        const batch = Array.from({ length: 60 }, (_, i) => ({
          id: `pgb-${i}`,
          channel: 'SMS',
          channelUserId: `4477009${String(i % 6).padStart(5, '0')}`,
          createdAt: new Date(now - 60_000 + i * 100).toISOString(),
          text: `message ${i}`,
          sms: { status: '0' },
        }));
        // The same batch four times at once: one copy.
        const ingested = await Promise.all(
          [1, 2, 3, 4].map(async () => {
            const res = await admin(`/accounts/${id}/messages`, { messages: batch });
            return { status: res.status, body: await res.json() };
          }),
        );
        for (const r of ingested) expect(r).toEqual({ status: 200, body: { accepted: 60 } });
        const receipts = batch.map((m) => ({
          messageId: m.id,
          drStatuscode: 'delivered',
          drTime: new Date(now).toISOString().replace('T', ' ').replace('Z', ''),
        }));
        const applied = await admin(`/accounts/${id}/receipts`, { receipts });
        expect(applied.status).toBe(200);
        expect(await applied.json()).toMatchObject({ applied: 60 });

        const base = (server as Served).url;
        const dlr = await (await fetch(`${base}/dlr?key=${key}&secret=${secret}&messageid=pgb-7`)).json();
        expect(dlr).toMatchObject([{ messageid: 'pgb-7', status: '0', drStatuscode: 'delivered' }]);

        const auth = { authorization: `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}` };
        const seen: string[] = [];
        for (let u = 0; u < 6; u++) {
          let cursor: string | null = null;
          do {
            const query = `channel=SMS&channelUserId=4477009${String(u).padStart(5, '0')}&size=4${cursor ? `&cursor=${cursor}` : ''}`;
            const res = await fetch(`${base}/messages?${query}`, { headers: auth });
            expect(res.status).toBe(200);
            const page = (await res.json()) as { messages: { id: string }[]; nextCursor: string | null };
            seen.push(...page.messages.map((m) => m.id));
            cursor = page.nextCursor;
          } while (cursor);
        }
        expect(new Set(seen).size).toBe(60);
        expect(seen).toHaveLength(60);

        const feed: string[] = [];
        let after: string | null = null;
        for (;;) {
          const res = await fetch(
            `${base}/receipts?limit=7${after ? `&after=${encodeURIComponent(after)}` : ''}`,
            { headers: auth },
          );
          expect(res.status).toBe(200);
          const page = (await res.json()) as {
            receipts: { id: string }[];
            nextCursor: string;
            hasMore: boolean;
          };
          feed.push(...page.receipts.map((r) => r.id));
          after = page.nextCursor;
          if (!page.hasMore) break;
        }
        expect(new Set(feed).size).toBe(60);

        // The relay delivers the receipts' callbacks to the receiver, through PgBouncer's connections.
        const deadline = Date.now() + 60_000;
        while (
          new Set(receiver.received.map((r) => r.headers['webhook-id'])).size < 60 &&
          Date.now() < deadline
        ) {
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
        expect(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size).toBe(60);

        // Prune and migrate as processes of their own, beside the running instance, through PgBouncer.
        const pruned = await run(['prune', '--older-than', '1', '--database-url', through(database)], {
          WAYBILL_PG_TRANSACTION_POOLING: 'on',
          WAYBILL_PEPPER: PEPPER,
        });
        expect(pruned.code, pruned.stderr).toBe(0);
        expect(pruned.stdout).toMatch(/^removed 0 message record\(s\) created before /);
        const again = await run(['migrate', '--database-url', through(database)], {
          WAYBILL_PG_TRANSACTION_POOLING: 'on',
          WAYBILL_PEPPER: PEPPER,
        });
        expect(again.code, again.stderr).toBe(0);
        expect((await fetch(`${base}/readyz`)).status).toBe(200);
        expect((server as Served).output()).not.toMatch(/prepared statement|does not exist/);
      }, 180_000);
    });
  },
);

import { randomInt } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../src/store/postgres/store.js';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import type { Store } from '../../src/store/store.js';
import { POSTGRES_URL, scratchDatabase } from '../postgres/harness.js';
import { killAll, serve } from '../support/processes.js';

/**
 * Durability: batches are ingested while the server is killed with SIGKILL at random moments. Every batch the
 * server acknowledged must be complete afterwards, and every batch in flight at the kill all-or-nothing.
 * `WAYBILL_TEST_KILL_CYCLES` sets the number of kills (5 by default; 20 for the long run).
 *
 * On SQLite the checkpointer's thread copies the log into the database file every 200 ms while the writers
 * write, so kills land inside its checkpoints too; the second SQLite target bounds the log at 1 MiB, so that
 * they also land inside the bounding checkpoints that hold writes back, and checks that the bound held.
 */

const CYCLES = Number(process.env.WAYBILL_TEST_KILL_CYCLES ?? 5);
const ADMIN = 'kill-test-admin-token';
const PEPPER = 'kill-test-pepper-0123456789';
const BATCH = 100;

interface Batch {
  kind: 'messages' | 'receipts';
  ids: string[];
  acked: boolean;
}

interface Target {
  name: string;
  /** Settings of `waybill serve` beyond the database. */
  serveEnv?: Record<string, string>;
  /** The environment of `waybill serve`, and a store on the same database to check it afterwards. */
  setup(): Promise<{
    env: Record<string, string>;
    open: () => Store;
    check?: () => void;
    cleanup: () => Promise<void>;
  }>;
}

const sqlite = (name: string, walMaxMb: number | null): Target => ({
  name,
  ...(walMaxMb === null ? {} : { serveEnv: { WAYBILL_SQLITE_WAL_MAX_MB: String(walMaxMb) } }),
  async setup() {
    const dir = mkdtempSync(join(tmpdir(), 'waybill-kill-'));
    const path = join(dir, 'waybill.db');
    return {
      env: { DATABASE_URL: `sqlite:${path}` },
      open: () => {
        // Before anything opens the file again: the log as the last kill left it.
        const wal = statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0;
        console.log(`${name}: the log held ${(wal / 2 ** 20).toFixed(1)} MiB at the last kill`);
        // The bound plus what two writers may append between two of the checkpointer's ticks on a fast machine;
        // unchecked, the log would hold every batch of every cycle (about 0.8 MiB each).
        if (walMaxMb !== null) expect(wal).toBeLessThan((walMaxMb + 64) * 2 ** 20);
        return openSqliteStore({ path, cacheMb: 16 });
      },
      check: () => {
        const db = new Database(path, { readonly: true });
        try {
          expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
        } finally {
          db.close();
        }
      },
      cleanup: async () => rmSync(dir, { recursive: true, force: true }),
    };
  },
});

const targets: Target[] = [sqlite('sqlite', null), sqlite('sqlite, log bounded at 1 MiB', 1)];
if (POSTGRES_URL) {
  targets.push({
    name: 'postgres',
    async setup() {
      const database = scratchDatabase('wb_kill');
      await database.create();
      return {
        env: { DATABASE_URL: database.url },
        open: () => openPostgresStore({ url: database.url, poolSize: 2, statementTimeoutMs: 30_000 }),
        cleanup: database.drop,
      };
    },
  });
}

afterAll(() => killAll());

describe.each(targets)('$name: SIGKILL during ingest', (target) => {
  it(
    `keeps every acknowledged batch whole and every other one all-or-nothing over ${CYCLES} kills`,
    async () => {
      const { env, open, check, cleanup } = await target.setup();
      const serveEnv = {
        ...env,
        ...target.serveEnv,
        WAYBILL_ADMIN_TOKEN: ADMIN,
        WAYBILL_PEPPER: PEPPER,
        WAYBILL_ACCESS_LOG: 'off',
        WAYBILL_CALLBACK_RELAY: 'off',
      };
      const batches: Batch[] = [];
      const delivered: string[] = [];
      let accountId = '';
      let counter = 0;
      try {
        for (let cycle = 0; cycle < CYCLES; cycle++) {
          const server = await serve(['--no-demo'], serveEnv);
          const post = (path: string, body: unknown) =>
            fetch(`${server.url}/admin/v1${path}`, {
              method: 'POST',
              headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
              body: JSON.stringify(body),
            });
          if (!accountId) {
            const res = await post('/accounts', { name: 'kill test' });
            accountId = ((await res.json()) as { id: string }).id;
          }
          let killed = false;
          const writer = async () => {
            while (!killed) {
              // Receipts for messages acknowledged earlier, or a batch of new messages.
              const receiptIds =
                delivered.length >= BATCH && randomInt(2) === 0 ? delivered.splice(0, BATCH) : null;
              const batch: Batch = receiptIds
                ? { kind: 'receipts', ids: receiptIds, acked: false }
                : {
                    kind: 'messages',
                    ids: Array.from({ length: BATCH }, () => `k-${counter++}`),
                    acked: false,
                  };
              batches.push(batch);
              const body =
                batch.kind === 'messages'
                  ? {
                      messages: batch.ids.map((id) => ({
                        id,
                        channel: 'SMS',
                        channelUserId: '447700900123',
                      })),
                    }
                  : { receipts: batch.ids.map((messageId) => ({ messageId, drStatuscode: 'delivered' })) };
              try {
                const res = await post(`/accounts/${accountId}/${batch.kind}`, body);
                if (res.status !== 200) throw new Error(`batch answered ${res.status}: ${await res.text()}`);
                await res.arrayBuffer();
                batch.acked = true;
                if (batch.kind === 'messages') delivered.push(...batch.ids);
              } catch (error) {
                if (!killed) throw error;
                return;
              }
            }
          };
          const writers = [writer(), writer()];
          await new Promise((resolve) => setTimeout(resolve, 300 + randomInt(1200)));
          killed = true;
          killAll();
          await Promise.all(writers);
        }

        const store = open();
        try {
          let acked = 0;
          let torn = 0;
          for (const batch of batches) {
            const found = await store.findMessagesByIds(
              accountId,
              batch.ids.slice(0, 20).concat(batch.ids.slice(-20)),
            );
            const present = (r: (typeof found)[number]) =>
              batch.kind === 'messages' ? true : r.sms?.receipt?.drStatuscode === 'delivered';
            // Sampled from both ends of the batch: all there, or (unacknowledged only) none.
            const count = found.filter(present).length;
            if (batch.acked) {
              acked++;
              expect(count, `acknowledged ${batch.kind} batch incomplete`).toBe(40);
            } else if (count !== 0 && count !== 40) {
              torn++;
            }
          }
          expect(torn).toBe(0);
          expect(acked).toBeGreaterThan(CYCLES);
          console.log(
            `${target.name}: ${CYCLES} kills, ${batches.length} batches, ${acked} acknowledged, 0 lost, 0 torn`,
          );
        } finally {
          await store.close();
        }
        check?.();
      } finally {
        killAll();
        await cleanup();
      }
    },
    60_000 + CYCLES * 10_000,
  );
});

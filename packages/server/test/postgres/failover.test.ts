import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostName, parseDatabaseUrl } from '../../src/store/postgres/connection-string.js';
import { HostResolver } from '../../src/store/postgres/host-resolver.js';
import { openPostgresStore } from '../../src/store/postgres/store.js';
import { type Receiver, startReceiver } from '../callbacks/receiver.js';
import { createAccount } from '../conformance/fixtures.js';
import { clusterTestsEnabled, type PgCluster, startCluster } from '../support/pg-cluster.js';
import { killAll, type Served, serve } from '../support/processes.js';

/**
 * A failover under load: two `waybill serve` instances on a multi-host DATABASE_URL
 * (`…/h1,h2/db?target_session_attrs=read-write`) ingest messages and receipts, and relay the receipts'
 * callbacks to a local receiver, while the primary is stopped and its streaming standby promoted. Waybill
 * finds the new primary by itself; no acknowledged write is lost, no event is duplicated, and the relay
 * delivers every event, those written after the failover included.
 */

const ADMIN = 'failover-admin-token';
const PEPPER = 'failover-test-pepper-0123456789';
/** The bound on finding the new primary once the standby accepts writes. */
const FAILOVER_BOUND_MS = 10_000;

interface Writer {
  /** Message ids whose ingest and receipt were both acknowledged (HTTP 200). */
  acknowledged: string[];
  /** When each write was acknowledged (ms since the epoch). */
  ackedAt: number[];
  failures: number;
  stop(): Promise<void>;
}

describe.skipIf(!clusterTestsEnabled())('failover to a promoted standby', () => {
  let cluster: PgCluster | undefined;
  let receiver: Receiver | undefined;
  const servers: Served[] = [];
  let cwd: string;

  beforeAll(async () => {
    cwd = await mkdtemp(join(tmpdir(), 'waybill-failover-'));
    cluster = await startCluster(1);
    receiver = await startReceiver();
  }, 120_000);

  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop().catch(() => {})));
    killAll();
    await receiver?.close();
    await cluster?.destroy();
    await rm(cwd, { recursive: true, force: true });
  }, 60_000);

  it('resolves a multi-host URL by the state of each host: the writable one for read-write, the first reachable for any', async () => {
    const c = cluster as PgCluster;
    const closed = '127.0.0.1:1';
    const resolve = async (hosts: string[], attrs?: string) => {
      const target = parseDatabaseUrl(
        `postgres://postgres@${hosts.join(',')}/postgres${attrs ? `?target_session_attrs=${attrs}` : ''}`,
      );
      return hostName(await new HostResolver(target, { probeTimeoutMs: 5_000 }).pick());
    };
    // The standby first: read-write passes it by, any takes it.
    expect(await resolve([c.standbyName, c.primaryName], 'read-write')).toBe(c.primaryName);
    expect(await resolve([c.standbyName, c.primaryName], 'primary')).toBe(c.primaryName);
    expect(await resolve([c.standbyName, c.primaryName])).toBe(c.standbyName);
    // A host that refuses connections is passed by.
    expect(await resolve([closed, c.primaryName], 'read-write')).toBe(c.primaryName);
    // No writable host: an error naming each host and why, which the store reports as unavailable (503).
    await expect(resolve([closed, c.standbyName], 'read-write')).rejects.toThrow(
      new RegExp(
        `no host of the database URL accepts writes: 127\\.0\\.0\\.1:1 .*; ${c.standbyName} is a standby`,
      ),
    );
    const store = openPostgresStore({
      url: `postgres://postgres@${closed},${c.standbyName}/postgres?target_session_attrs=read-write`,
      poolSize: 2,
      statementTimeoutMs: 5_000,
      timeoutMs: 5_000,
    });
    try {
      await expect(store.ping()).rejects.toMatchObject({ name: 'StoreUnavailableError' });
    } finally {
      await store.close();
    }
    // The store's pool on a list whose primary is not first: it works, on the primary.
    const onPrimary = openPostgresStore({
      url: `postgres://postgres@${c.standbyName},${c.primaryName}/postgres?target_session_attrs=read-write`,
      poolSize: 2,
      statementTimeoutMs: 5_000,
      timeoutMs: 5_000,
      schema: 'wb_resolver',
    });
    try {
      await onPrimary.migrate();
      await onPrimary.ping();
    } finally {
      await onPrimary.close();
      await c.query('primary', 'DROP SCHEMA IF EXISTS wb_resolver CASCADE');
    }
  }, 120_000);

  it('leaves a primary that turned read-only: its writes answer unavailable, then resume once it is writable', async () => {
    const c = cluster as PgCluster;
    const store = openPostgresStore({
      url: `postgres://postgres@${c.primaryName},${c.standbyName}/postgres?target_session_attrs=read-write`,
      poolSize: 2,
      statementTimeoutMs: 5_000,
      timeoutMs: 5_000,
      schema: 'wb_demoted',
    });
    try {
      await store.migrate();
      await createAccount(store);
      // Every session of the primary now refuses writes, as a demoted primary does.
      await c.query('primary', 'ALTER SYSTEM SET default_transaction_read_only = on');
      await c.query('primary', 'SELECT pg_reload_conf()');
      await new Promise((resolve) => setTimeout(resolve, 500));
      for (let i = 0; i < 3; i++) {
        await expect(createAccount(store)).rejects.toMatchObject({ name: 'StoreUnavailableError' });
      }
      await c.query('primary', 'ALTER SYSTEM RESET default_transaction_read_only');
      await c.query('primary', 'SELECT pg_reload_conf()');
      const deadline = Date.now() + 30_000;
      for (;;) {
        const ok = await createAccount(store).then(
          () => true,
          () => false,
        );
        if (ok) break;
        if (Date.now() > deadline)
          throw new Error('writes did not resume once the primary was writable again');
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    } finally {
      await c.query('primary', 'ALTER SYSTEM RESET default_transaction_read_only').catch(() => {});
      await c.query('primary', 'SELECT pg_reload_conf()').catch(() => {});
      await store.close();
      await c.query('primary', 'DROP SCHEMA IF EXISTS wb_demoted CASCADE');
    }
  }, 120_000);

  it('finds the new primary within 10 s, loses no acknowledged write, duplicates no event, and relays on', async () => {
    const c = cluster as PgCluster;
    const r = receiver as Receiver;
    const database = `w_${randomBytes(5).toString('hex')}`;
    await c.query('primary', `CREATE DATABASE ${database}`);
    await c.waitForCatchUp();
    const url = `postgres://postgres@${c.primaryName},${c.standbyName}/${database}?target_session_attrs=read-write`;
    const env = {
      DATABASE_URL: url,
      WAYBILL_PEPPER: PEPPER,
      WAYBILL_ADMIN_TOKEN: ADMIN,
      WAYBILL_ACCESS_LOG: 'off',
      WAYBILL_RATE_PER_SECOND: '0',
      WAYBILL_CALLBACK_ALLOW_PRIVATE: 'true',
      WAYBILL_DB_TIMEOUT_MS: '3000',
    };
    servers.push(await serve(['--no-demo'], env, { cwd }));
    servers.push(await serve(['--no-demo'], env, { cwd }));
    const [a, b] = servers as [Served, Served];

    const admin = (server: Served, path: string, body: unknown) =>
      fetch(`${server.url}/admin/v1${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(15_000),
      });
    const created = await admin(a, '/accounts', { name: 'Failover', callbackUrl: `${r.url}/dlr` });
    expect(created.status).toBe(201);
    const account = (await created.json()) as { id: string; key: string; secret: string };

    /** Writes one message and its receipt at a time, retrying each until acknowledged, until stopped. */
    const write = (server: Served, prefix: string): Writer => {
      const writer: Writer = { acknowledged: [], ackedAt: [], failures: 0, stop: async () => {} };
      let stopping = false;
      const done = (async () => {
        for (let i = 0; !stopping && i < 100_000; i++) {
          const id = `${prefix}-${i}`;
          const message = {
            id,
            channel: 'SMS',
            channelUserId: `4477009${String(i % 50).padStart(5, '0')}`,
            createdAt: new Date().toISOString(),
            text: `message ${id}`,
            sms: { status: '0' },
          };
          const receipt = {
            messageId: id,
            drStatuscode: 'delivered',
            drTime: new Date().toISOString().replace('T', ' ').replace('Z', ''),
          };
          // Each step is idempotent: repeated until acknowledged (a timed-out attempt may have committed).
          for (const [path, body] of [
            [`/accounts/${account.id}/messages`, { messages: [message] }],
            [`/accounts/${account.id}/receipts`, { receipts: [receipt] }],
          ] as const) {
            for (;;) {
              const ok = await admin(server, path, body).then(
                async (res) => {
                  await res.arrayBuffer();
                  return res.status === 200;
                },
                () => false,
              );
              if (ok) break;
              writer.failures++;
              if (stopping) return;
              await new Promise((resolve) => setTimeout(resolve, 100));
            }
          }
          writer.acknowledged.push(id);
          writer.ackedAt.push(Date.now());
        }
      })();
      writer.stop = async () => {
        stopping = true;
        await done;
      };
      return writer;
    };

    const writers = [write(a, 'a'), write(b, 'b')];
    const progress = async (count: number, after = 0) => {
      const deadline = Date.now() + 60_000;
      while (writers.some((w) => w.ackedAt.filter((t) => t > after).length < count)) {
        if (Date.now() > deadline)
          throw new Error(
            `writers made no progress: ${JSON.stringify(writers.map((w) => w.acknowledged.length))}`,
          );
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
    await progress(20);

    const stopAt = Date.now();
    await c.stopPrimary();
    await c.promote(0);
    const promotedAt = Date.now();
    await progress(1, promotedAt);
    // The first write acknowledged on each instance after the standby accepted writes.
    const recoveredAt = Math.max(...writers.map((w) => w.ackedAt.find((t) => t > promotedAt) as number));
    const failoverMs = recoveredAt - promotedAt;
    console.log(
      `failover: primary stopped and standby promoted in ${promotedAt - stopAt} ms; both instances writing again ${failoverMs} ms after the promotion (${recoveredAt - stopAt} ms after the stop); ${writers.map((w) => w.failures).join('+')} failed attempts retried`,
    );
    expect(failoverMs).toBeLessThan(FAILOVER_BOUND_MS);
    await progress(20, promotedAt);
    await Promise.all(writers.map((w) => w.stop()));

    const acknowledged = writers.flatMap((w) => w.acknowledged);
    expect(acknowledged.length).toBeGreaterThanOrEqual(80);

    // Every acknowledged message is on the new primary, with its receipt, once.
    const auth = {
      authorization: `Basic ${Buffer.from(`${account.key}:${account.secret}`).toString('base64')}`,
    };
    for (const id of acknowledged) {
      const res = await fetch(`${b.url}/dlr?key=${account.key}&secret=${account.secret}&messageid=${id}`);
      expect(res.status).toBe(200);
      expect(await res.json(), id).toMatchObject([{ messageid: id, drStatuscode: 'delivered' }]);
    }

    // The feed holds one event per receipt: none lost, none twice.
    const events: { id: string; messageId: string }[] = [];
    let after: string | null = null;
    for (;;) {
      const res = await fetch(
        `${a.url}/receipts?limit=500${after ? `&after=${encodeURIComponent(after)}` : ''}`,
        { headers: auth },
      );
      expect(res.status).toBe(200);
      const page = (await res.json()) as {
        receipts: { id: string; receipt: Record<string, unknown> }[];
        nextCursor: string;
        hasMore: boolean;
      };
      for (const e of page.receipts) {
        events.push({ id: e.id, messageId: String(e.receipt.messageId ?? e.receipt.messageid) });
      }
      after = page.nextCursor;
      if (!page.hasMore) break;
    }
    const eventMessages = events.map((e) => e.messageId);
    expect(new Set(eventMessages).size).toBe(eventMessages.length);
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    for (const id of acknowledged) expect(eventMessages, id).toContain(id);

    // The relay delivers every event, those written after the failover included.
    const delivered = () => new Set(r.received.map((x) => String(x.headers['webhook-id'])));
    const deadline = Date.now() + 90_000;
    while (delivered().size < events.length && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(delivered().size).toBe(events.length);
    expect(r.received.some((x) => x.at > promotedAt)).toBe(true);
  }, 300_000);
});

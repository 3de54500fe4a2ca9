import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../src/store/postgres/store.js';
import type { Store } from '../../src/store/store.js';
import { newAccount, sms } from '../conformance/fixtures.js';
import { TcpProxy } from '../faults/tcp-proxy.js';
import { basic, type CreatedAccount, type Harness, startHarness } from '../support/http.js';
import { clusterTestsEnabled, type PgCluster, startCluster } from '../support/pg-cluster.js';

/**
 * Read replicas against a real streaming standby (pg_basebackup -R): reads are never wrong for longer than
 * WAYBILL_READ_MAX_LAG_MS, access decisions never read the standby, and a standby that lags or stops only takes
 * itself out of the reads.
 */

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it holds, up to `ms`. */
async function eventually(check: () => Promise<boolean> | boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await sleep(25);
  }
}

describe.skipIf(!clusterTestsEnabled())('PostgreSQL read replicas on a real standby', () => {
  let cluster: PgCluster;
  let harness: Harness | undefined;
  const stores: Store[] = [];

  beforeAll(async () => {
    cluster = await startCluster(2);
  }, 120_000);
  afterAll(async () => {
    await cluster?.destroy();
  }, 60_000);
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
    for (const store of stores.splice(0)) await store.close().catch(() => {});
    // Whatever a test did to the standbys, the next one starts on streaming ones.
    for (const i of [0, 1]) {
      await cluster.startStandby(i).catch(() => {});
      await eventually(async () => {
        try {
          await cluster.resumeReplay(i);
          return true;
        } catch {
          return false;
        }
      });
    }
  }, 60_000);

  /** A store as `serve` opens it: primary plus the standby; schema of its own, migrated. */
  const openStore = async (schema: string, readUrls = [cluster.standbyUrl]) => {
    const store = openPostgresStore({
      url: cluster.primaryUrl,
      readUrls,
      poolSize: 4,
      statementTimeoutMs: 30_000,
      timeoutMs: 5000,
      schema,
    });
    stores.push(store);
    return store;
  };

  /** An instance on the cluster, with the standby (or those given) caught up and in use. */
  async function start(readUrls = [cluster.standbyUrl], env: Record<string, string> = {}): Promise<Harness> {
    const schema = `wb_${randomBytes(5).toString('hex')}`;
    const store = await openStore(schema, readUrls);
    await store.migrate();
    await cluster.waitForCatchUp();
    await store.readReplicas?.check();
    harness = await startHarness({ name: 'cluster', open: async () => store }, env);
    return harness;
  }

  const replicaReads = (store: Store) => store.readReplicas?.reads()[cluster.standbyName] ?? 0;

  const request = (h: Harness, account: CreatedAccount, id: string) =>
    h.inject({
      url: `/messages?messageIds=${id}`,
      headers: { authorization: basic(account.key, account.secret) },
    });
  /** The records /messages returns for this id (empty on any failure, which the callers rule out). */
  const messages = async (h: Harness, account: CreatedAccount, id: string) => {
    const res = await request(h, account, id);
    expect(res.statusCode, res.body).toBe(200);
    return (res.json() as { messages: unknown[] }).messages;
  };

  it('a rotated secret works at once while the standby lags, and never locks the key out', async () => {
    const h = await start();
    const account = await h.createAccount();
    await cluster.waitForCatchUp();
    // The account is cached, as on a busy instance, then the standby stops replaying.
    expect((await request(h, account, 'x')).statusCode).toBe(200);
    await cluster.pauseReplay();
    const rotated = await h.admin('POST', `/admin/v1/accounts/${account.id}/secret`);
    expect(rotated.statusCode).toBe(200);
    const { secret } = rotated.json() as { secret: string };
    for (let i = 0; i < 12; i++) {
      const res = await h.inject(`/dlr?key=${account.key}&secret=${secret}&messageid=x`);
      expect(res.statusCode, res.body).toBe(200);
    }
    expect((await request(h, { ...account, secret }, 'x')).statusCode).toBe(200);
  }, 60_000);

  it('an account created while the standby lags can authenticate at once', async () => {
    const h = await start();
    await cluster.pauseReplay();
    const account = await h.createAccount();
    expect((await h.inject(`/dlr?key=${account.key}&secret=${account.secret}&messageid=x`)).statusCode).toBe(
      200,
    );
    expect((await request(h, account, 'x')).statusCode).toBe(200);
  }, 60_000);

  it('reads an acknowledged write back at once, and most reads still go to the standby', async () => {
    const h = await start();
    const account = await h.createAccount();
    const other = await h.createAccount();
    await h.ingest(other.id, [{ id: 'o-1', channel: 'SMS', channelUserId: '447700900009' }]);
    await cluster.waitForCatchUp();
    await h.store.readReplicas?.check();
    let empty = 0;
    for (let i = 0; i < 40; i++) {
      const ingested = await h.ingest(account.id, [
        { id: `m-${i}`, channel: 'SMS', channelUserId: '447700900001' },
      ]);
      expect(ingested.statusCode, ingested.body).toBe(200);
      if ((await messages(h, account, `m-${i}`)).length !== 1) empty++;
    }
    expect(empty).toBe(0);
    // An account this instance has not written to meanwhile reads from the standby.
    const before = replicaReads(h.store);
    for (let i = 0; i < 10; i++) expect(await messages(h, other, 'o-1')).toHaveLength(1);
    expect(replicaReads(h.store)).toBeGreaterThan(before);
  }, 60_000);

  it('a paused standby: reads go to the primary, /readyz and /metrics show the lag, then it is used again', async () => {
    const h = await start();
    const account = await h.createAccount();
    await cluster.waitForCatchUp();
    await cluster.pauseReplay();
    await h.ingest(account.id, [{ id: 'm-1', channel: 'SMS', channelUserId: '447700900001' }]);
    expect(await messages(h, account, 'm-1')).toHaveLength(1);
    await eventually(() => (h.store.readReplicas?.status()[0]?.lagMs ?? 0) > 1000);
    const ready = await h.inject('/readyz');
    expect(ready.statusCode).toBe(200);
    const body = ready.json() as { status: string; replicas: { name: string; up: boolean; lagMs: number }[] };
    expect(body.status).toBe('ok');
    expect(body.replicas).toHaveLength(1);
    expect(body.replicas[0]).toMatchObject({ name: cluster.standbyName, up: true });
    expect(body.replicas[0]?.lagMs).toBeGreaterThan(1000);
    const metrics = (await h.admin('GET', '/metrics')).body;
    expect(metrics).toContain(`waybill_replica_up{replica="${cluster.standbyName}"} 1`);
    expect(metrics).toMatch(
      new RegExp(`waybill_replica_lag_seconds\\{replica="${cluster.standbyName}"\\} [1-9]`),
    );
    const before = replicaReads(h.store);
    for (let i = 0; i < 5; i++) expect(await messages(h, account, 'm-1')).toHaveLength(1);
    expect(replicaReads(h.store)).toBe(before);

    await cluster.resumeReplay();
    await eventually(() => h.store.readReplicas?.status()[0]?.lagMs === 0);
    await eventually(async () => {
      await messages(h, account, 'm-1');
      return replicaReads(h.store) > before;
    });
  }, 60_000);

  it('a stopped standby: every read answers from the primary, /readyz stays ok and reports it down', async () => {
    const h = await start();
    const account = await h.createAccount();
    await h.ingest(account.id, [{ id: 'm-1', channel: 'SMS', channelUserId: '447700900001' }]);
    await cluster.waitForCatchUp();
    await cluster.stopStandby();
    // Straight away, before any probe noticed: the failed replica read is run again on the primary.
    expect(
      (await h.inject(`/dlr?key=${account.key}&secret=${account.secret}&messageid=m-1`)).statusCode,
    ).toBe(200);
    expect(await messages(h, account, 'm-1')).toHaveLength(1);
    await eventually(() => h.store.readReplicas?.status()[0]?.up === false);
    const ready = await h.inject('/readyz');
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toStrictEqual({
      status: 'ok',
      replicas: [{ name: cluster.standbyName, up: false, lagMs: null }],
    });
    expect((await h.admin('GET', '/metrics')).body).toContain(
      `waybill_replica_up{replica="${cluster.standbyName}"} 0`,
    );

    await cluster.startStandby();
    await eventually(() => h.store.readReplicas?.status()[0]?.up === true, 30_000);
  }, 90_000);

  it('another instance’s write is missing from reads for at most about the lag bound (1000 ms)', async () => {
    const schema = `wb_${randomBytes(5).toString('hex')}`;
    const reader = await openStore(schema);
    await reader.migrate();
    // The writer is another instance: this one cannot know of its writes, only the replica's lag.
    const writer = await openStore(schema, []);
    const account = await writer.createAccount(newAccount());
    await cluster.waitForCatchUp();
    await eventually(async () => {
      await reader.findDlr(account.id, 'warm-up');
      return replicaReads(reader) > 0;
    });
    await cluster.pauseReplay();
    let longest = 0;
    for (let i = 0; i < 3; i++) {
      await writer.ingestMessages(account.id, [sms(`s-${i}`, '447700900001')], new Date());
      const written = Date.now();
      await eventually(
        async () => (await reader.findMessagesByIds(account.id, [`s-${i}`])).length === 1,
        10_000,
      );
      longest = Math.max(longest, Date.now() - written);
    }
    console.info(`longest stale read through a paused standby: ${longest} ms (bound 1000 ms)`);
    // The bound plus one probe interval and the polling above; generous for a loaded CI machine.
    expect(longest).toBeLessThan(4000);
  }, 90_000);

  it('several standbys take turns, each judged on its own: a paused one drops out, the other keeps serving', async () => {
    // The load must not hit the per-account rate limit.
    const h = await start(cluster.standbyUrls, {
      WAYBILL_RATE_PER_SECOND: '100000',
      WAYBILL_RATE_BURST: '100000',
    });
    const accounts = [await h.createAccount(), await h.createAccount(), await h.createAccount()];
    for (const [i, account] of accounts.entries()) {
      await h.ingest(account.id, [{ id: 'm-1', channel: 'SMS', channelUserId: `44770090000${i}` }]);
    }
    const [writer, ...readers] = accounts as [CreatedAccount, ...CreatedAccount[]];
    await cluster.waitForCatchUp();
    await eventually(
      async () => (await h.store.readReplicas?.check())?.every((r) => r.up && r.lagMs === 0) ?? false,
    );
    const reads = () => ({ ...h.store.readReplicas?.reads() });
    const delta = (from: Record<string, number>) =>
      Object.fromEntries(Object.entries(reads()).map(([node, n]) => [node, n - (from[node] ?? 0)]));

    // A small mixed load: one account writes a message every 10th request, the others only read.
    const load = async (rounds: number) => {
      const from = reads();
      for (let i = 0; i < rounds; i++) {
        if (i % 10 === 0) {
          const res = await h.ingest(writer.id, [
            { id: `w-${i}-${randomBytes(3).toString('hex')}`, channel: 'SMS', channelUserId: '447700900099' },
          ]);
          expect(res.statusCode).toBe(200);
        }
        const account = i % 10 === 1 ? writer : (readers[i % readers.length] as CreatedAccount);
        expect(await request(h, account, 'm-1').then((r) => r.statusCode)).toBe(200);
      }
      return delta(from);
    };
    const healthy = await load(200);
    console.info(`reads by node, both standbys streaming (200 reads, 20 writes): ${JSON.stringify(healthy)}`);
    const [first, second] = cluster.standbyNames as [string, string];
    expect(healthy[first]).toBeGreaterThan(40);
    expect(healthy[second]).toBeGreaterThan(40);

    await cluster.pauseReplay(1);
    // Enough writes that the paused standby is measurably behind; the other one keeps up.
    await h.ingest(writer.id, [{ id: 'after-pause', channel: 'SMS', channelUserId: '447700900098' }]);
    await eventually(() => (h.store.readReplicas?.status()[1]?.lagMs ?? 0) > 1000);
    const paused = await load(100);
    console.info(`reads by node, second standby paused (100 reads, 10 writes): ${JSON.stringify(paused)}`);
    expect(paused[second]).toBe(0);
    expect(paused[first]).toBeGreaterThan(40);
  }, 90_000);

  it('a replica gone silent (no answer, no reset): every request still succeeds, and the other replica serves', async () => {
    const [host, port] = (cluster.standbyNames[1] as string).split(':') as [string, string];
    const proxy = await TcpProxy.start({ host, port: Number(port) });
    try {
      const silent = `127.0.0.1:${proxy.port}`;
      const h = await start(
        [cluster.standbyUrl, cluster.standbyUrls[1]?.replace(`:${port}/`, `:${proxy.port}/`) ?? ''],
        { WAYBILL_RATE_PER_SECOND: '100000', WAYBILL_RATE_BURST: '100000' },
      );
      const account = await h.createAccount();
      await h.ingest(account.id, [{ id: 'm-1', channel: 'SMS', channelUserId: '447700900001' }]);
      await cluster.waitForCatchUp();
      await eventually(async () => {
        await messages(h, account, 'm-1');
        return (h.store.readReplicas?.reads()[silent] ?? 0) > 0;
      });
      proxy.blackHole();
      const started = Date.now();
      // Reads routed to it before the monitor noticed wait for half the deadline, then run on the primary.
      while (Date.now() - started < 4000) expect(await messages(h, account, 'm-1')).toHaveLength(1);
      await eventually(() => h.store.readReplicas?.status()[1]?.up === false);
      const before = { ...h.store.readReplicas?.reads() };
      for (let i = 0; i < 10; i++) expect(await messages(h, account, 'm-1')).toHaveLength(1);
      const after = h.store.readReplicas?.reads() ?? {};
      expect(after[silent]).toBe(before[silent]);
      expect(after[cluster.standbyName]).toBe((before[cluster.standbyName] ?? 0) + 10);
    } finally {
      await proxy.stop();
    }
  }, 90_000);
});

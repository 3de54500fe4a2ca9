import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/app.js';
import { AccountCache } from '../../src/auth/account-cache.js';
import { loadConfig } from '../../src/config.js';
import { openSqliteStore } from '../../src/store/sqlite/store.js';
import type { Store } from '../../src/store/store.js';
import { dropSchema, freshSchema, openStore, POSTGRES_URL } from '../postgres/harness.js';
import { type EngineFixture, engines } from '../support/engines.js';
import {
  ADMIN_TOKEN,
  basic,
  type CreatedAccount,
  type Harness,
  PEPPER,
  startHarness,
  useHarness,
} from '../support/http.js';

/**
 * The account cache of the authentication path (src/account-cache.ts): a change made through this process
 * applies at once, one made by another process within WAYBILL_ACCOUNT_CACHE_MS, and a cached account is not
 * read again while it is current.
 */

const CALLER = '10.0.0.7';

type Inject = (options: {
  method: 'GET';
  url: string;
  remoteAddress: string;
}) => Promise<LightMyRequestResponse>;

function dlr(app: { inject: Inject }, key: string, secret: string, ip = CALLER) {
  return app.inject({
    method: 'GET',
    url: `/dlr?${new URLSearchParams({ key, secret, messageid: 'm-1' })}`,
    remoteAddress: ip,
  });
}

/** The `/dlr` outcome: 200, or the spec's failure code. */
async function dlrCode(app: { inject: Inject }, key: string, secret: string, ip = CALLER): Promise<number> {
  const res = await dlr(app, key, secret, ip);
  return res.statusCode === 200 ? 200 : (res.json() as { code: number }).code;
}

/** An engine whose stores count their `getAccountByKey` calls. */
function counting(engine: EngineFixture): { engine: EngineFixture; reads: () => number } {
  let reads = 0;
  return {
    reads: () => reads,
    engine: {
      name: engine.name,
      async open() {
        const store = await engine.open();
        return {
          ...store,
          getAccountByKey(key) {
            reads++;
            return store.getAccountByKey(key);
          },
        };
      },
    },
  };
}

describe.each(engines())('$name: changes through this process apply at once', (engine) => {
  // A minute: nothing in these tests can expire, so only the routes' invalidation makes a change visible.
  const harness = useHarness(engine, { WAYBILL_ACCOUNT_CACHE_MS: '60000' });

  async function cachedAccount(body: Record<string, unknown> = {}): Promise<CreatedAccount> {
    const account = await harness().createAccount(body);
    expect(await dlrCode(harness(), account.key, account.secret)).toBe(200);
    return account;
  }

  it('a rotated secret stops working at once, and the new one works', async () => {
    const h = harness();
    const account = await cachedAccount();
    const rotated = await h.admin('POST', `/admin/v1/accounts/${account.id}/secret`);
    const { secret } = rotated.json() as { secret: string };
    expect(await dlrCode(h, account.key, account.secret)).toBe(4);
    expect(await dlrCode(h, account.key, secret)).toBe(200);
    const messages = await h.inject({
      method: 'GET',
      url: '/messages?messageIds=m-1',
      headers: { authorization: basic(account.key, account.secret) },
    });
    expect(messages.statusCode).toBe(401);
  });

  it('a changed whitelist applies at once', async () => {
    const h = harness();
    const account = await cachedAccount();
    await h.admin('PATCH', `/admin/v1/accounts/${account.id}`, { ipWhitelist: ['192.0.2.0/24'] });
    expect(await dlrCode(h, account.key, account.secret)).toBe(5);
    expect(await dlrCode(h, account.key, account.secret, '192.0.2.9')).toBe(200);
    await h.admin('PATCH', `/admin/v1/accounts/${account.id}`, { ipWhitelist: [] });
    expect(await dlrCode(h, account.key, account.secret)).toBe(200);
  });

  it('dlrQueryEnabled, balance and creditLimit apply at once', async () => {
    const h = harness();
    const account = await cachedAccount();
    const patch = (body: object) => h.admin('PATCH', `/admin/v1/accounts/${account.id}`, body);
    await patch({ dlrQueryEnabled: false });
    expect(await dlrCode(h, account.key, account.secret)).toBe(20);
    await patch({ dlrQueryEnabled: true, balance: -5 });
    expect(await dlrCode(h, account.key, account.secret)).toBe(9);
    await patch({ creditLimit: 10 });
    expect(await dlrCode(h, account.key, account.secret)).toBe(200);
    await patch({ creditLimit: 0 });
    expect(await dlrCode(h, account.key, account.secret)).toBe(9);
  });

  it("a deleted account's key answers 401 at once", async () => {
    const h = harness();
    const account = await cachedAccount();
    expect((await h.admin('DELETE', `/admin/v1/accounts/${account.id}`)).statusCode).toBe(204);
    expect(await dlr(h, account.key, account.secret).then((r) => r.statusCode)).toBe(401);
    const receipts = await h.inject({
      method: 'GET',
      url: '/receipts',
      headers: { authorization: basic(account.key, account.secret) },
    });
    expect(receipts.statusCode).toBe(401);
  });

  it('a wrong secret against a cached account still counts towards the lockout', async () => {
    const h = await startHarness(engine, {
      WAYBILL_ACCOUNT_CACHE_MS: '60000',
      WAYBILL_LOCKOUT_FAILURES: '3',
    });
    try {
      const account = await h.createAccount();
      expect(await dlrCode(h, account.key, account.secret)).toBe(200);
      for (let i = 0; i < 3; i++) expect(await dlrCode(h, account.key, 'Wrong000')).toBe(4);
      expect(await dlrCode(h, account.key, account.secret)).toBe(429);
    } finally {
      await h.close();
    }
  });
});

describe.each(engines())('$name: a cached account is not read again', (engine) => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it('reads it once for many requests, on every query endpoint', async () => {
    const { engine: countingEngine, reads } = counting(engine);
    h = await startHarness(countingEngine, { WAYBILL_ACCOUNT_CACHE_MS: '60000' });
    const account = await h.createAccount();
    const auth = { authorization: basic(account.key, account.secret) };
    for (let i = 0; i < 5; i++) expect(await dlrCode(h, account.key, account.secret)).toBe(200);
    for (const url of ['/messages?messageIds=m-1', '/api/v1/contacts/messages?messageIds=m-1', '/receipts']) {
      expect((await h.inject({ method: 'GET', url, headers: auth, remoteAddress: CALLER })).statusCode).toBe(
        200,
      );
    }
    expect(reads()).toBe(1);
  });

  it('reads it on every request with WAYBILL_ACCOUNT_CACHE_MS=0, and never caches an unknown key', async () => {
    const { engine: countingEngine, reads } = counting(engine);
    h = await startHarness(countingEngine, { WAYBILL_ACCOUNT_CACHE_MS: '0' });
    const account = await h.createAccount();
    for (let i = 0; i < 3; i++) expect(await dlrCode(h, account.key, account.secret)).toBe(200);
    expect(reads()).toBe(3);
    for (let i = 0; i < 2; i++) expect(await dlrCode(h, 'Unknown1', account.secret)).toBe(4);
    expect(reads()).toBe(5);
  });

  it('reads an unknown key every time, so an account created meanwhile works at once', async () => {
    const { engine: countingEngine, reads } = counting(engine);
    h = await startHarness(countingEngine, { WAYBILL_ACCOUNT_CACHE_MS: '60000' });
    for (let i = 0; i < 2; i++) expect(await dlrCode(h, 'Unknown1', 'Secret01')).toBe(4);
    expect(reads()).toBe(2);
  });
});

/** Two apps on one database, as two workers or two instances are: a change through one, seen by the other. */
interface Pair {
  a: FastifyInstance;
  b: FastifyInstance;
  close(): Promise<void>;
}

const TTL_MS = 200;

async function pairOn(open: () => Promise<Store>, env: Record<string, string> = {}): Promise<Pair> {
  const config = loadConfig({
    DATABASE_URL: 'sqlite::memory:',
    WAYBILL_ADMIN_TOKEN: ADMIN_TOKEN,
    WAYBILL_LOG_LEVEL: 'silent',
    WAYBILL_ACCOUNT_CACHE_MS: String(TTL_MS),
    ...env,
  });
  const [storeA, storeB] = [await open(), await open()];
  const a = await buildApp({ config, store: storeA, pepper: PEPPER });
  const b = await buildApp({ config, store: storeB, pepper: PEPPER });
  return {
    a,
    b,
    async close() {
      await Promise.all([a.close(), b.close()]);
      await Promise.all([storeA.close(), storeB.close()]);
    },
  };
}

interface SharedDatabase {
  name: string;
  /** Opens another store on the one database of this run; `setup` makes it (migrated, empty). */
  open(): Promise<Store>;
  setup(): Promise<void>;
  teardown(): Promise<void>;
}

function sharedDatabases(): SharedDatabase[] {
  let dir = '';
  const list: SharedDatabase[] = [
    {
      name: 'sqlite',
      async setup() {
        dir = mkdtempSync(join(tmpdir(), 'waybill-account-cache-'));
      },
      async open() {
        const store = openSqliteStore({ path: join(dir, 'shared.db'), cacheMb: 4 });
        await store.migrate();
        return store;
      },
      async teardown() {
        rmSync(dir, { recursive: true, force: true });
      },
    },
  ];
  if (POSTGRES_URL) {
    const schema = freshSchema();
    list.push({
      name: 'postgres',
      async setup() {},
      async open() {
        const store = openStore(schema);
        await store.migrate();
        return store;
      },
      async teardown() {
        await dropSchema(schema);
      },
    });
  }
  return list;
}

describe.each(sharedDatabases())('$name: two apps on one database', (database) => {
  let pair: Pair;
  beforeAll(async () => {
    await database.setup();
    // One failed secret locks the key: a new secret refused by the other app's stale copy would show as a 429.
    pair = await pairOn(() => database.open(), { WAYBILL_LOCKOUT_FAILURES: '1' });
  });
  afterAll(async () => {
    await pair?.close();
    await database.teardown();
  });

  const adminOf =
    (app: FastifyInstance) => (method: 'POST' | 'PATCH' | 'DELETE', url: string, body?: object) =>
      app.inject({
        method,
        url,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        ...(body === undefined ? {} : { payload: body }),
      });

  async function accountSeenByBoth(body: object = {}): Promise<CreatedAccount> {
    const res = await adminOf(pair.a)('POST', '/admin/v1/accounts', { name: 'Pair', ...body });
    expect(res.statusCode).toBe(201);
    const account = res.json() as CreatedAccount;
    // New keys are never cached as unknown: B serves the account at once, and caches it.
    expect(await dlrCode(pair.b, account.key, account.secret)).toBe(200);
    expect(await dlrCode(pair.a, account.key, account.secret)).toBe(200);
    return account;
  }

  /** Waits out the documented bound, with a margin for timers (never a claim about speed). */
  const pastTheBound = () => sleep(TTL_MS + 50);

  it('a rotated secret: the new one works everywhere at once, the old one stops within the bound', async () => {
    const account = await accountSeenByBoth();
    const rotated = await adminOf(pair.a)('POST', `/admin/v1/accounts/${account.id}/secret`);
    const { secret } = rotated.json() as { secret: string };
    expect(await dlrCode(pair.a, account.key, account.secret)).toBe(4);
    // B's cached copy has the old hash; the mismatch is judged on a fresh read, and counts as no failure.
    expect(await dlrCode(pair.b, account.key, secret)).toBe(200);
    expect(await dlrCode(pair.b, account.key, secret)).toBe(200);
    await pastTheBound();
    expect(await dlrCode(pair.b, account.key, account.secret)).toBe(4);
  });

  it('a changed whitelist, dlrQueryEnabled and balance apply in the other app within the bound', async () => {
    const account = await accountSeenByBoth();
    const patch = (body: object) => adminOf(pair.a)('PATCH', `/admin/v1/accounts/${account.id}`, body);
    await patch({ ipWhitelist: ['192.0.2.0/24'] });
    await pastTheBound();
    expect(await dlrCode(pair.b, account.key, account.secret)).toBe(5);
    await patch({ ipWhitelist: [], dlrQueryEnabled: false });
    await pastTheBound();
    expect(await dlrCode(pair.b, account.key, account.secret)).toBe(20);
    await patch({ dlrQueryEnabled: true, balance: -1 });
    await pastTheBound();
    expect(await dlrCode(pair.b, account.key, account.secret)).toBe(9);
    await patch({ balance: 0 });
    await pastTheBound();
    expect(await dlrCode(pair.b, account.key, account.secret)).toBe(200);
  });

  it("a deleted account's key stops working in the other app within the bound", async () => {
    const account = await accountSeenByBoth();
    expect((await adminOf(pair.a)('DELETE', `/admin/v1/accounts/${account.id}`)).statusCode).toBe(204);
    expect(await dlrCode(pair.a, account.key, account.secret)).toBe(4);
    await pastTheBound();
    expect(await dlrCode(pair.b, account.key, account.secret)).toBe(4);
  });
});

describe('AccountCache', () => {
  let store: Store;
  let reads = 0;
  beforeAll(async () => {
    const sqlite = openSqliteStore({ path: ':memory:', cacheMb: 4 });
    await sqlite.migrate();
    store = {
      ...sqlite,
      getAccountByKey(key) {
        reads++;
        return sqlite.getAccountByKey(key);
      },
    };
    for (const [i, key] of ['KEYAAAA1', 'KEYAAAA2', 'KEYAAAA3'].entries()) {
      await sqlite.createAccount({
        id: `018f0000-0000-7000-8000-00000000000${i}`,
        name: key,
        key,
        ipWhitelist: i === 0 ? ['192.0.2.0/24'] : [],
        dlrQueryEnabled: true,
        balance: i,
        creditLimit: 0,
        callbackUrl: null,
        callbackEnabled: true,
        createdAt: new Date(),
        secretHash: Buffer.alloc(32, i),
        callbackSecret: 'whsec_x',
      });
    }
  });
  afterAll(() => store.close());

  let now = 0;
  const cache = (ttlMs: number, maxEntries?: number) =>
    new AccountCache(store, { ttlMs, now: () => now, ...(maxEntries ? { maxEntries } : {}) });

  it('prepares the account once: the whitelist compiled, only what the query path needs, frozen', async () => {
    const c = cache(1000);
    const account = await c.load('KEYAAAA1');
    expect(account).toMatchObject({ dlrQueryEnabled: true, balance: 0, creditLimit: 0 });
    expect(Object.keys(account ?? {}).sort()).toEqual(
      ['allows', 'balance', 'creditLimit', 'dlrQueryEnabled', 'id', 'secretHash'].sort(),
    );
    expect(Object.isFrozen(account)).toBe(true);
    expect(account?.allows('192.0.2.77')).toBe(true);
    expect(account?.allows('::ffff:192.0.2.77')).toBe(true);
    expect(account?.allows('198.51.100.1')).toBe(false);
    expect(c.cached('KEYAAAA1')).toBe(account);
  });

  it('expires an entry after its TTL, on a clock of its own', async () => {
    const c = cache(1000);
    await c.load('KEYAAAA2');
    now += 999;
    expect(c.cached('KEYAAAA2')).toBeDefined();
    now += 1;
    expect(c.cached('KEYAAAA2')).toBeUndefined();
  });

  it('keeps at most maxEntries, dropping the one read longest ago', async () => {
    const c = cache(1000, 2);
    await c.load('KEYAAAA1');
    await c.load('KEYAAAA2');
    await c.load('KEYAAAA3');
    expect(c.size).toBe(2);
    expect(c.cached('KEYAAAA1')).toBeUndefined();
    expect(c.cached('KEYAAAA3')).toBeDefined();
  });

  it('never caches an unknown key, nor anything with a TTL of 0', async () => {
    const c = cache(1000);
    expect(await c.load('NOSUCHK1')).toBeNull();
    expect(c.size).toBe(0);
    const off = cache(0);
    await off.load('KEYAAAA1');
    expect(off.cached('KEYAAAA1')).toBeUndefined();
  });

  it('shares one read between concurrent misses; a fresh load does not join it', async () => {
    const c = cache(1000);
    reads = 0;
    const [x, y] = await Promise.all([c.load('KEYAAAA2'), c.load('KEYAAAA2')]);
    expect(x).toBe(y);
    expect(reads).toBe(1);
    await Promise.all([c.load('KEYAAAA3'), c.load('KEYAAAA3', true)]);
    expect(reads).toBe(3);
  });

  it('a read under way when its key is forgotten fills nothing; the next miss reads again', async () => {
    const c = cache(1000);
    reads = 0;
    // A load fills the cache only once its read resolves, which is never synchronous: this forget comes while
    // the read is under way, as a write's would.
    const early = c.load('KEYAAAA2');
    c.forget('KEYAAAA2');
    expect(await early).not.toBeNull();
    expect(c.cached('KEYAAAA2')).toBeUndefined();
    await c.load('KEYAAAA2');
    expect(c.cached('KEYAAAA2')).toBeDefined();
    expect(reads).toBe(2);
  });

  it('writing forgets the key also when the write fails', async () => {
    const c = cache(1000);
    await c.load('KEYAAAA3');
    await expect(
      c.writing('KEYAAAA3', async () => {
        throw new Error('timed out after the commit, perhaps');
      }),
    ).rejects.toThrow();
    expect(c.cached('KEYAAAA3')).toBeUndefined();
  });
});

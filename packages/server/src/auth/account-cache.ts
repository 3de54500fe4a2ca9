import { performance } from 'node:perf_hooks';
import { allowlistCheck, type CallerCheck } from '../domain/ip-allowlist.js';
import type { AccountWithSecret } from '../domain/records.js';
import type { AccountLookup } from '../store/store.js';

/**
 * An account as the query endpoints use it, prepared once when it is read: its whitelist compiled, nothing the
 * query path does not need (no name, no callback settings: those change behind the cache's back, e.g. when a
 * receiver's 410 turns callbacks off). Frozen, because one object serves every request until it expires.
 */
export interface QueryAccount {
  readonly id: string;
  readonly dlrQueryEnabled: boolean;
  readonly balance: number;
  readonly creditLimit: number;
  /** HMAC of the secret under the pepper (domain/credentials.ts). */
  readonly secretHash: Buffer;
  /** The IP whitelist, compiled: true when this caller address may use the account. */
  readonly allows: CallerCheck;
}

export interface AccountCacheOptions {
  /** How long an account read from the store serves requests; 0 reads it on every request. */
  ttlMs: number;
  /** Accounts kept at most; past it the one read longest ago goes. @default 10_000 */
  maxEntries?: number;
  /** A monotonic clock in milliseconds (never the wall clock: setting it back must not stretch the bound). */
  now?: () => number;
}

interface Entry {
  account: QueryAccount;
  expiresAt: number;
}

function prepare(account: AccountWithSecret): QueryAccount {
  return Object.freeze({
    id: account.id,
    dlrQueryEnabled: account.dlrQueryEnabled,
    balance: account.balance,
    creditLimit: account.creditLimit,
    secretHash: account.secretHash,
    allows: allowlistCheck(account.ipWhitelist),
  });
}

/**
 * The accounts of the authentication path, by key, each for at most `ttlMs` after it was read.
 *
 * A change made through this process takes effect at once: whoever writes an account calls {@link forget} (or
 * runs the write in {@link writing}) with its key. A change made by another process (a worker of
 * `serve --workers`, another instance on the same PostgreSQL, `waybill accounts` on the SQLite file) shows here
 * at most `ttlMs` later: there is no message between processes to wait for, so the bound holds whatever runs
 * beside us. Unknown keys are not remembered, so a new account works at once everywhere.
 *
 * Concurrent misses of one key share one store read. A read that was under way when its key was forgotten may
 * have seen the row as it was, so it fills nothing: a write is never overtaken by an older read.
 */
export class AccountCache {
  readonly #store: AccountLookup;
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  readonly #entries = new Map<string, Entry>();
  readonly #loading = new Map<string, Promise<QueryAccount | null>>();
  /** Moves at every forget: a read that started before it may not fill the cache. */
  #generation = 0;

  constructor(store: AccountLookup, options: AccountCacheOptions) {
    this.#store = store;
    this.#ttlMs = options.ttlMs;
    this.#maxEntries = options.maxEntries ?? 10_000;
    this.#now = options.now ?? (() => performance.now());
  }

  /** The account of this key while its cached copy is current; undefined means "ask {@link load}". */
  cached(key: string): QueryAccount | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (this.#now() < entry.expiresAt) return entry.account;
    this.#entries.delete(key);
    return undefined;
  }

  /**
   * Reads the account of this key from the store (null when there is none) and caches it. `fresh` skips a
   * read already under way: the caller needs a row read after this moment.
   */
  load(key: string, fresh = false): Promise<QueryAccount | null> {
    if (this.#ttlMs <= 0) return this.#read(key);
    if (!fresh) {
      const pending = this.#loading.get(key);
      if (pending) return pending;
    }
    const generation = this.#generation;
    const loading = this.#read(key).then((account) => {
      if (account && generation === this.#generation) this.#remember(key, account);
      return account;
    });
    this.#loading.set(key, loading);
    const done = () => {
      if (this.#loading.get(key) === loading) this.#loading.delete(key);
    };
    loading.then(done, done);
    return loading;
  }

  /** Drops what is known of this key, and makes reads already under way fill nothing. */
  forget(key: string): void {
    this.#generation++;
    this.#entries.delete(key);
    this.#loading.delete(key);
  }

  /**
   * Runs a write that changes the account of this key, then forgets the key — also when the write fails, since
   * a write that timed out may still have committed.
   */
  async writing<T>(key: string, write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } finally {
      this.forget(key);
    }
  }

  /** How many accounts are cached (for tests). */
  get size(): number {
    return this.#entries.size;
  }

  async #read(key: string): Promise<QueryAccount | null> {
    const account = await this.#store.getAccountByKey(key);
    return account ? prepare(account) : null;
  }

  #remember(key: string, account: QueryAccount): void {
    // Re-inserted, so the Map's order is the order of reads and the first key is the one read longest ago:
    // with a TTL every entry is read again at least once per TTL, so that is also the nearest to expiring.
    this.#entries.delete(key);
    if (this.#entries.size >= this.#maxEntries) {
      const oldest = this.#entries.keys().next();
      if (!oldest.done) this.#entries.delete(oldest.value);
    }
    this.#entries.set(key, { account, expiresAt: this.#now() + this.#ttlMs });
  }
}

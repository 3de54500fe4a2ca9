/** Environment (and CLI flags) → one frozen, typed configuration. CONTRACT §7 is the reference. */

import { DEFAULT_RETRY_SCHEDULE } from './domain/deliveries/schedule.js';
import { allowlistEntryProblem } from './domain/ip-allowlist.js';
import { parseDatabaseUrl } from './store/postgres/connection-string.js';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export interface Config {
  /** `sqlite:<path>`, `sqlite::memory:` or `postgres://…`. @default 'sqlite:./data/waybill.db' */
  databaseUrl: string;
  /**
   * PostgreSQL streaming replicas for the query endpoints' reads, comma-separated in DATABASE_READ_URL; each is
   * used only while it is reachable and within `readMaxLagMs`. @default [] (reads go to the primary)
   */
  databaseReadUrl: readonly string[];
  /** A replica serves reads only while its replay lag is at most this, in milliseconds. @default 1000 */
  readMaxLagMs: number;
  /** @default '127.0.0.1' */
  host: string;
  /** @default 8080 */
  port: number;
  /** Enables `/admin/v1` when set. @default null */
  adminToken: string | null;
  /** Server key that hashes secrets and signs cursors. @default null (generated into a 0600 file) */
  pepper: string | null;
  /** Fastify `trustProxy`: whose `X-Forwarded-For` to believe. @default false */
  trustProxy: boolean | number | string[];
  /** The date sent in `Deprecation` on the v1 endpoint. @default 2026-01-01T00:00:00Z */
  v1Deprecated: Date;
  /** From this instant the v1 endpoint answers 410. @default 2027-01-01T00:00:00Z */
  v1Sunset: Date;
  /** Shared rate-limit and lockout counters for several instances. @default null (in-process) */
  redisUrl: string | null;
  /** Per-account token bucket refill; 0 turns rate limiting off. @default 50 */
  ratePerSecond: number;
  /** Per-account token bucket size. @default 100 */
  rateBurst: number;
  /** Failed secrets within the lockout window before a key locks. @default 10 */
  lockoutFailures: number;
  /** Lockout window and duration, in seconds. @default 900 */
  lockoutSeconds: number;
  /** @default 'info' */
  logLevel: LogLevel;
  /** One log line per request. @default true */
  accessLog: boolean;
  /** SQLite page cache in MiB. @default 256 */
  sqliteCacheMb: number;
  /**
   * The bound on SQLite's write-ahead log in MiB: past it the checkpointer empties the log while writes wait.
   * @default 512
   */
  sqliteWalMaxMb: number;
  /** @default 10 */
  pgPoolSize: number;
  /** @default 5000 */
  pgStatementTimeoutMs: number;
  /**
   * PostgreSQL is reached through a transaction-mode pooler (PgBouncer `pool_mode = transaction`): no session
   * SET, the schema from the role's search_path, SET LOCAL in each transaction. @default false
   */
  pgTransactionPooling: boolean;
  /** Named prepared statements. @default true, false when `pgTransactionPooling` is on */
  pgPreparedStatements: boolean;
  /** `serve` processes sharing the port; 0 is one per core. @default 1 */
  workers: number;
  /** The longest a request waits on the database, either engine. @default 5000 */
  dbTimeoutMs: number;
  /**
   * How long the query endpoints may authenticate with an account as this process read it, in milliseconds:
   * the longest a change made elsewhere (another worker or instance, the CLI) goes unseen here. 0 reads the
   * account on every request. @default 1000
   */
  accountCacheMs: number;
  /** How long an early receipt stays parked waiting for its message, in seconds. @default 259200 (72 h) */
  receiptParkSeconds: number;
  /** A callback attempt fails unless a 2xx answer arrives within this. @default 15000 */
  callbackTimeoutMs: number;
  /** Delays between attempts, in seconds (±20% jitter); its length + 1 attempts in all. @default 5,300,…,86400 */
  callbackRetrySchedule: readonly number[];
  /** Callback attempts in flight per process. @default 64 */
  callbackConcurrency: number;
  /** Callback attempts in flight per process to one account. @default 8 */
  callbackEndpointConcurrency: number;
  /**
   * The longest an idle relay waits before it looks for due deliveries again, in milliseconds. Deliveries
   * queued by this process, and on PostgreSQL by any (LISTEN/NOTIFY), wake it sooner. @default 1000
   */
  callbackPollMs: number;
  /** Let callbacks reach loopback, private and other internal addresses (development only). @default false */
  callbackAllowPrivate: boolean;
  /** This instance sends callbacks; off, it still queues them for others. @default true */
  callbackRelay: boolean;
  /** How long the previous callback secret keeps signing after a rotation, in seconds. @default 86400 */
  callbackSecretGraceSeconds: number;
  /**
   * Web origins (`https://app.example`) whose pages may call the query endpoints from a browser (CORS).
   * @default [] (no cross-origin access)
   */
  corsOrigins: readonly string[];
  /** A console session ends after this many hours without a request (CONTRACT §13). @default 8 */
  consoleSessionHours: number;
}

/** A configuration value that cannot be used; the message names the variable. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** The variables of CONTRACT §7, by the Config field they set. */
export const ENV_NAMES: Record<keyof Config, string> = {
  databaseUrl: 'DATABASE_URL',
  databaseReadUrl: 'DATABASE_READ_URL',
  readMaxLagMs: 'WAYBILL_READ_MAX_LAG_MS',
  host: 'HOST',
  port: 'PORT',
  adminToken: 'WAYBILL_ADMIN_TOKEN',
  pepper: 'WAYBILL_PEPPER',
  trustProxy: 'WAYBILL_TRUST_PROXY',
  v1Deprecated: 'WAYBILL_V1_DEPRECATED',
  v1Sunset: 'WAYBILL_V1_SUNSET',
  redisUrl: 'REDIS_URL',
  ratePerSecond: 'WAYBILL_RATE_PER_SECOND',
  rateBurst: 'WAYBILL_RATE_BURST',
  lockoutFailures: 'WAYBILL_LOCKOUT_FAILURES',
  lockoutSeconds: 'WAYBILL_LOCKOUT_SECONDS',
  logLevel: 'WAYBILL_LOG_LEVEL',
  accessLog: 'WAYBILL_ACCESS_LOG',
  sqliteCacheMb: 'WAYBILL_SQLITE_CACHE_MB',
  sqliteWalMaxMb: 'WAYBILL_SQLITE_WAL_MAX_MB',
  pgPoolSize: 'WAYBILL_PG_POOL_SIZE',
  pgStatementTimeoutMs: 'WAYBILL_PG_STATEMENT_TIMEOUT_MS',
  pgTransactionPooling: 'WAYBILL_PG_TRANSACTION_POOLING',
  pgPreparedStatements: 'WAYBILL_PG_PREPARED_STATEMENTS',
  workers: 'WAYBILL_WORKERS',
  dbTimeoutMs: 'WAYBILL_DB_TIMEOUT_MS',
  accountCacheMs: 'WAYBILL_ACCOUNT_CACHE_MS',
  receiptParkSeconds: 'WAYBILL_RECEIPT_PARK_SECONDS',
  callbackTimeoutMs: 'WAYBILL_CALLBACK_TIMEOUT_MS',
  callbackRetrySchedule: 'WAYBILL_CALLBACK_RETRY_SCHEDULE',
  callbackConcurrency: 'WAYBILL_CALLBACK_CONCURRENCY',
  callbackEndpointConcurrency: 'WAYBILL_CALLBACK_ENDPOINT_CONCURRENCY',
  callbackPollMs: 'WAYBILL_CALLBACK_POLL_MS',
  callbackAllowPrivate: 'WAYBILL_CALLBACK_ALLOW_PRIVATE',
  callbackRelay: 'WAYBILL_CALLBACK_RELAY',
  callbackSecretGraceSeconds: 'WAYBILL_CALLBACK_SECRET_GRACE_SECONDS',
  corsOrigins: 'WAYBILL_CORS_ORIGINS',
  consoleSessionHours: 'WAYBILL_CONSOLE_SESSION_HOURS',
};

/** Raw string values by variable name: the environment, with CLI flags already laid over it. */
export type Source = Readonly<Record<string, string | undefined>>;

/** Reads the configuration; every bad value throws a {@link ConfigError} naming its variable. */
export function loadConfig(source: Source): Readonly<Config> {
  const read = (field: keyof Config): string | undefined => {
    const value = source[ENV_NAMES[field]]?.trim();
    return value === '' ? undefined : value;
  };
  const int = (field: keyof Config, fallback: number, min: number, max: number): number => {
    const raw = read(field);
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) {
      throw new ConfigError(`${ENV_NAMES[field]} must be an integer from ${min} to ${max}, got "${raw}"`);
    }
    return n;
  };
  const number = (field: keyof Config, fallback: number): number => {
    const raw = read(field);
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (!Number.isFinite(n) || n < 0)
      throw new ConfigError(`${ENV_NAMES[field]} must be a number >= 0, got "${raw}"`);
    return n;
  };
  const date = (field: keyof Config, fallback: string): Date => {
    const raw = read(field) ?? fallback;
    const d = new Date(raw);
    if (Number.isNaN(d.getTime()))
      throw new ConfigError(`${ENV_NAMES[field]} must be an RFC 3339 date, got "${raw}"`);
    return d;
  };
  const databaseUrl = read('databaseUrl') ?? 'sqlite:./data/waybill.db';
  if (!/^(sqlite:|postgres(ql)?:\/\/)/.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must be sqlite:<path>, sqlite::memory: or postgres://…');
  }
  if (!databaseUrl.startsWith('sqlite:')) {
    // A host list (several hosts, target_session_attrs) is read here, so a bad one stops the start.
    try {
      parseDatabaseUrl(databaseUrl);
    } catch (error) {
      throw new ConfigError(`DATABASE_URL: ${(error as Error).message}`);
    }
  }
  const flag = (field: keyof Config, fallback: boolean): boolean => {
    const raw = read(field);
    if (raw === undefined) return fallback;
    if (['on', 'true', '1'].includes(raw)) return true;
    if (['off', 'false', '0'].includes(raw)) return false;
    throw new ConfigError(`${ENV_NAMES[field]} must be on or off (true or false), got "${raw}"`);
  };
  const logLevel = read('logLevel') ?? 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    throw new ConfigError(`WAYBILL_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}`);
  }
  const accessLog = read('accessLog') ?? 'on';
  if (!['on', 'off', 'true', 'false', '1', '0'].includes(accessLog)) {
    throw new ConfigError('WAYBILL_ACCESS_LOG must be on or off');
  }
  const pepper = read('pepper') ?? null;
  if (pepper !== null && pepper.length < 16)
    throw new ConfigError('WAYBILL_PEPPER must be at least 16 characters');
  // Fractions allowed (0.5 is half an hour); zero would end every session at once, over a year nobody watches it.
  const consoleSessionHours = number('consoleSessionHours', 8);
  if (consoleSessionHours <= 0 || consoleSessionHours > 8760)
    throw new ConfigError('WAYBILL_CONSOLE_SESSION_HOURS must be more than 0 and at most 8760');
  const config: Config = {
    databaseUrl,
    databaseReadUrl: parseReadUrls(read('databaseReadUrl'), databaseUrl),
    readMaxLagMs: int('readMaxLagMs', 1000, 0, 3_600_000),
    host: read('host') ?? '127.0.0.1',
    port: int('port', 8080, 0, 65535),
    adminToken: read('adminToken') ?? null,
    pepper,
    trustProxy: parseTrustProxy(read('trustProxy')),
    v1Deprecated: date('v1Deprecated', '2026-01-01T00:00:00Z'),
    v1Sunset: date('v1Sunset', '2027-01-01T00:00:00Z'),
    redisUrl: read('redisUrl') ?? null,
    ratePerSecond: number('ratePerSecond', 50),
    rateBurst: int('rateBurst', 100, 1, 1_000_000),
    lockoutFailures: int('lockoutFailures', 10, 1, 1_000_000),
    lockoutSeconds: int('lockoutSeconds', 900, 1, 31_536_000),
    logLevel: logLevel as LogLevel,
    accessLog: ['on', 'true', '1'].includes(accessLog),
    sqliteCacheMb: int('sqliteCacheMb', 256, 1, 1_048_576),
    sqliteWalMaxMb: int('sqliteWalMaxMb', 512, 1, 1_048_576),
    pgPoolSize: int('pgPoolSize', 10, 1, 10_000),
    pgStatementTimeoutMs: int('pgStatementTimeoutMs', 5000, 0, 86_400_000),
    pgTransactionPooling: flag('pgTransactionPooling', false),
    pgPreparedStatements: flag('pgPreparedStatements', !flag('pgTransactionPooling', false)),
    workers: int('workers', 1, 0, 256),
    dbTimeoutMs: int('dbTimeoutMs', 5000, 100, 600_000),
    // At most a minute: the bound on how stale authentication may be has to stay short to mean anything.
    accountCacheMs: int('accountCacheMs', 1000, 0, 60_000),
    receiptParkSeconds: int('receiptParkSeconds', 259_200, 0, 31_536_000),
    callbackTimeoutMs: int('callbackTimeoutMs', 15_000, 1, 600_000),
    callbackRetrySchedule: parseSchedule(read('callbackRetrySchedule')),
    callbackConcurrency: int('callbackConcurrency', 64, 1, 10_000),
    callbackEndpointConcurrency: int('callbackEndpointConcurrency', 8, 1, 10_000),
    callbackPollMs: int('callbackPollMs', 1000, 50, 3_600_000),
    callbackAllowPrivate: flag('callbackAllowPrivate', false),
    callbackRelay: flag('callbackRelay', true),
    callbackSecretGraceSeconds: int('callbackSecretGraceSeconds', 86_400, 0, 31_536_000),
    corsOrigins: parseOrigins(read('corsOrigins')),
    consoleSessionHours,
  };
  return Object.freeze(config);
}

/**
 * Comma-separated web origins, each exactly `scheme://host[:port]` as a browser sends it in `Origin`. `*` is
 * refused: an open API key endpoint readable from any web page is not a default anyone should get by accident.
 */
function parseOrigins(raw: string | undefined): readonly string[] {
  if (raw === undefined) return Object.freeze([]);
  const origins = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  for (const origin of origins) {
    let parsed: URL | null = null;
    try {
      parsed = new URL(origin);
    } catch {
      // reported below
    }
    if (!parsed || !['http:', 'https:'].includes(parsed.protocol) || parsed.origin !== origin) {
      throw new ConfigError(
        `WAYBILL_CORS_ORIGINS must list origins such as https://app.example (scheme, host, optional port; no path, no *), got "${origin}"`,
      );
    }
  }
  return Object.freeze([...new Set(origins)]);
}

/** Seconds, comma-separated, each a number > 0 (fractions allowed, so tests can compress the schedule). */
function parseSchedule(raw: string | undefined): readonly number[] {
  if (raw === undefined) return DEFAULT_RETRY_SCHEDULE;
  const delays = raw.split(',').map((s) => Number(s.trim()));
  if (delays.length > 100 || delays.some((d) => !Number.isFinite(d) || d <= 0 || d > 31_536_000)) {
    throw new ConfigError(
      `WAYBILL_CALLBACK_RETRY_SCHEDULE must be comma-separated seconds, each > 0 (at most 100), got "${raw}"`,
    );
  }
  return Object.freeze(delays);
}

function parseTrustProxy(raw: string | undefined): boolean | number | string[] {
  if (raw === undefined || raw === 'false' || raw === 'off') return false;
  if (raw === 'true' || raw === 'on') return true;
  if (/^\d+$/.test(raw)) return Number(raw);
  const entries = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  // Checked here so a typo stops the start with the variable's name, not deep inside Fastify (or not at all).
  for (const entry of entries) {
    if (PROXY_NAMES.includes(entry)) continue;
    const problem = allowlistEntryProblem(entry);
    if (problem) {
      throw new ConfigError(
        `WAYBILL_TRUST_PROXY must be true, a hop count, or addresses/CIDR ranges: ${problem}`,
      );
    }
  }
  return entries;
}

/** proxy-addr's names for well-known ranges. */
const PROXY_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/**
 * WAYBILL_* names that are no server setting but are read by other parts of Waybill: the client commands
 * (WAYBILL_URL, WAYBILL_KEY, WAYBILL_SECRET), the `--workers` supervisor (WAYBILL_WORKER_INDEX), the callback
 * receiver examples (docs/callbacks.md), the benchmarks, and the tests (any WAYBILL_TEST_*). A shell that sets
 * them for those must not be warned about them.
 */
const OTHER_WAYBILL_NAMES: ReadonlySet<string> = new Set([
  'WAYBILL_URL',
  'WAYBILL_KEY',
  'WAYBILL_SECRET',
  'WAYBILL_WORKER_INDEX',
  'WAYBILL_CALLBACK_SECRET',
  'WAYBILL_CALLBACK_SECRET_OLD',
  'WAYBILL_SERVER_DIST',
]);

/** A `WAYBILL_*` variable no part of Waybill reads, with the known name it most likely meant. */
export interface UnknownVariable {
  name: string;
  closest: string;
}

/**
 * Every `WAYBILL_*` variable of `env` that no part of Waybill reads, each with the closest known name: a typo
 * such as WAYBILL_ADMN_TOKEN would otherwise start the server quietly without the setting. A name is also
 * compared without its prefix, so WAYBILL_PORT points at PORT.
 */
export function unknownVariables(env: Source): UnknownVariable[] {
  const settings = Object.values(ENV_NAMES);
  const known = new Set([...settings, ...OTHER_WAYBILL_NAMES]);
  const unknown: UnknownVariable[] = [];
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith('WAYBILL_') || known.has(name) || name.startsWith('WAYBILL_TEST_')) continue;
    const bare = name.slice('WAYBILL_'.length);
    let closest = settings[0] as string;
    let best = Number.POSITIVE_INFINITY;
    for (const candidate of settings) {
      const distance = Math.min(editDistance(name, candidate), editDistance(bare, candidate));
      if (distance < best) [closest, best] = [candidate, distance];
    }
    unknown.push({ name, closest });
  }
  return unknown;
}

/** Levenshtein distance (insertions, deletions, substitutions), two rows at a time. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current[j] = Math.min(substitution, (previous[j] as number) + 1, (current[j - 1] as number) + 1);
    }
    previous = current;
  }
  return previous[b.length] as number;
}

/** DATABASE_READ_URL: PostgreSQL URLs, comma-separated; replicas only make sense beside a PostgreSQL primary. */
function parseReadUrls(raw: string | undefined, databaseUrl: string): string[] {
  if (raw === undefined) return [];
  const urls = raw
    .split(',')
    .map((url) => url.trim())
    .filter((url) => url !== '');
  for (const url of urls) {
    // The URL itself is never echoed: it may hold a password.
    if (!/^postgres(ql)?:\/\//.test(url))
      throw new ConfigError('DATABASE_READ_URL must be postgres://… URLs, separated by commas');
  }
  if (urls.length > 0 && databaseUrl.startsWith('sqlite:'))
    throw new ConfigError('DATABASE_READ_URL needs a PostgreSQL DATABASE_URL (postgres://…)');
  return urls;
}

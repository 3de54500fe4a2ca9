import { describe, expect, it } from 'vitest';
import { ConfigError, ENV_NAMES, editDistance, loadConfig, unknownVariables } from '../../src/config.js';

describe('loadConfig', () => {
  it('has the defaults of CONTRACT §7', () => {
    const config = loadConfig({});
    expect(config).toStrictEqual({
      databaseUrl: 'sqlite:./data/waybill.db',
      databaseReadUrl: [],
      readMaxLagMs: 1000,
      host: '127.0.0.1',
      port: 8080,
      adminToken: null,
      pepper: null,
      trustProxy: false,
      v1Deprecated: new Date('2026-01-01T00:00:00Z'),
      v1Sunset: new Date('2027-01-01T00:00:00Z'),
      redisUrl: null,
      ratePerSecond: 50,
      rateBurst: 100,
      lockoutFailures: 10,
      lockoutSeconds: 900,
      logLevel: 'info',
      accessLog: true,
      sqliteCacheMb: 256,
      sqliteWalMaxMb: 512,
      pgPoolSize: 10,
      pgStatementTimeoutMs: 5000,
      pgTransactionPooling: false,
      pgPreparedStatements: true,
      workers: 1,
      dbTimeoutMs: 5000,
      accountCacheMs: 1000,
      receiptParkSeconds: 259_200,
      callbackTimeoutMs: 15_000,
      callbackRetrySchedule: [5, 300, 1800, 7200, 18000, 36000, 50400, 72000, 86400],
      callbackConcurrency: 64,
      callbackEndpointConcurrency: 8,
      callbackPollMs: 1000,
      callbackAllowPrivate: false,
      callbackRelay: true,
      callbackSecretGraceSeconds: 86_400,
      corsOrigins: [],
      consoleSessionHours: 8,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('treats empty and blank values as unset, and trims values', () => {
    const config = loadConfig({ PORT: '', WAYBILL_ADMIN_TOKEN: '   ', HOST: ' 0.0.0.0 ' });
    expect(config.port).toBe(8080);
    expect(config.adminToken).toBeNull();
    expect(config.host).toBe('0.0.0.0');
  });

  it('reads every variable', () => {
    const config = loadConfig({
      DATABASE_URL: 'postgres://u@h/db',
      PORT: '9000',
      WAYBILL_ADMIN_TOKEN: 'tok',
      WAYBILL_PEPPER: 'p'.repeat(16),
      WAYBILL_V1_SUNSET: '2026-06-01T00:00:00Z',
      WAYBILL_RATE_PER_SECOND: '0',
      WAYBILL_RATE_BURST: '5',
      WAYBILL_LOCKOUT_FAILURES: '3',
      WAYBILL_LOCKOUT_SECONDS: '60',
      WAYBILL_LOG_LEVEL: 'warn',
      WAYBILL_ACCESS_LOG: 'off',
      WAYBILL_RECEIPT_PARK_SECONDS: '60',
      WAYBILL_ACCOUNT_CACHE_MS: '0',
      WAYBILL_CALLBACK_TIMEOUT_MS: '2500',
      WAYBILL_CALLBACK_RETRY_SCHEDULE: '0.5, 2,10',
      WAYBILL_CALLBACK_CONCURRENCY: '4',
      WAYBILL_CALLBACK_ENDPOINT_CONCURRENCY: '2',
      WAYBILL_CALLBACK_ALLOW_PRIVATE: 'true',
      WAYBILL_CALLBACK_RELAY: 'off',
      WAYBILL_CALLBACK_SECRET_GRACE_SECONDS: '0',
      WAYBILL_CORS_ORIGINS: 'https://app.example, http://localhost:5173,https://app.example',
      WAYBILL_CONSOLE_SESSION_HOURS: '0.5',
    });
    expect(config).toMatchObject({
      consoleSessionHours: 0.5,
      receiptParkSeconds: 60,
      accountCacheMs: 0,
      callbackTimeoutMs: 2500,
      callbackRetrySchedule: [0.5, 2, 10],
      callbackConcurrency: 4,
      callbackEndpointConcurrency: 2,
      callbackAllowPrivate: true,
      callbackRelay: false,
      callbackSecretGraceSeconds: 0,
      corsOrigins: ['https://app.example', 'http://localhost:5173'],
      databaseUrl: 'postgres://u@h/db',
      port: 9000,
      adminToken: 'tok',
      v1Sunset: new Date('2026-06-01T00:00:00Z'),
      ratePerSecond: 0,
      rateBurst: 5,
      lockoutFailures: 3,
      lockoutSeconds: 60,
      logLevel: 'warn',
      accessLog: false,
    });
  });

  it.each([
    ['PORT', 'eighty'],
    ['PORT', '65536'],
    ['PORT', '80.5'],
    ['PORT', '-1'],
    ['DATABASE_URL', 'mysql://x'],
    ['WAYBILL_CALLBACK_RETRY_SCHEDULE', '5,,10'],
    ['WAYBILL_CALLBACK_RETRY_SCHEDULE', '5,-1'],
    ['WAYBILL_CALLBACK_RETRY_SCHEDULE', 'soon'],
    ['WAYBILL_CALLBACK_ALLOW_PRIVATE', 'yes please'],
    ['WAYBILL_CALLBACK_CONCURRENCY', '0'],
    ['WAYBILL_CALLBACK_TIMEOUT_MS', '0'],
    ['WAYBILL_RATE_PER_SECOND', '-1'],
    ['WAYBILL_RATE_PER_SECOND', 'fast'],
    ['WAYBILL_RATE_BURST', '0'],
    ['WAYBILL_LOCKOUT_FAILURES', '0'],
    ['WAYBILL_LOCKOUT_SECONDS', '1.5'],
    ['WAYBILL_LOG_LEVEL', 'loud'],
    ['WAYBILL_ACCESS_LOG', 'maybe'],
    ['WAYBILL_PEPPER', 'short'],
    ['WAYBILL_V1_SUNSET', 'someday'],
    ['WAYBILL_V1_DEPRECATED', 'not a date'],
    ['WAYBILL_SQLITE_CACHE_MB', '0'],
    ['WAYBILL_SQLITE_WAL_MAX_MB', '0'],
    ['WAYBILL_PG_POOL_SIZE', 'many'],
    ['WAYBILL_PG_STATEMENT_TIMEOUT_MS', '-5'],
    ['WAYBILL_ACCOUNT_CACHE_MS', '-1'],
    ['WAYBILL_ACCOUNT_CACHE_MS', '60001'],
    ['WAYBILL_ACCOUNT_CACHE_MS', '0.5'],
    ['WAYBILL_TRUST_PROXY', 'garbage'],
    ['WAYBILL_TRUST_PROXY', '10.0.0.0/33'],
    ['WAYBILL_TRUST_PROXY', '10.0.0.1,nonsense'],
    ['WAYBILL_TRUST_PROXY', '-1'],
    ['WAYBILL_CONSOLE_SESSION_HOURS', '0'],
    ['WAYBILL_CONSOLE_SESSION_HOURS', '8761'],
    ['WAYBILL_CONSOLE_SESSION_HOURS', 'all day'],
    ['WAYBILL_CORS_ORIGINS', '*'],
    ['WAYBILL_CORS_ORIGINS', 'app.example'],
    ['WAYBILL_CORS_ORIGINS', 'https://app.example/'],
    ['WAYBILL_CORS_ORIGINS', 'https://app.example/path'],
    ['WAYBILL_CORS_ORIGINS', 'https://App.example'],
    ['WAYBILL_CORS_ORIGINS', 'ftp://files.example'],
    ['WAYBILL_CORS_ORIGINS', 'https://app.example,null'],
  ])('refuses %s=%j with a ConfigError naming it', (name, value) => {
    let error: unknown;
    try {
      loadConfig({ [name]: value });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain(name);
  });

  it.each([
    [undefined, false],
    ['false', false],
    ['off', false],
    ['true', true],
    ['on', true],
    ['2', 2],
    ['10.0.0.1', ['10.0.0.1']],
    ['10.0.0.0/8, 192.168.1.1 ,::1', ['10.0.0.0/8', '192.168.1.1', '::1']],
    ['loopback,2001:db8::/32', ['loopback', '2001:db8::/32']],
  ])('reads WAYBILL_TRUST_PROXY=%j as %j', (raw, expected) => {
    expect(loadConfig(raw === undefined ? {} : { WAYBILL_TRUST_PROXY: raw }).trustProxy).toStrictEqual(
      expected,
    );
  });

  it.each(['on', 'true', '1'])('turns the access log on with %s', (v) => {
    expect(loadConfig({ WAYBILL_ACCESS_LOG: v }).accessLog).toBe(true);
  });
});

describe('unknownVariables', () => {
  it('names every WAYBILL_* variable nothing reads, with the setting it most likely meant', () => {
    expect(
      unknownVariables({
        WAYBILL_ADMN_TOKEN: 'abc',
        WAYBILL_PORT: '9000',
        WAYBILL_RATE_PER_SECONDS: '5',
        WAYBILL_ADMIN_TOKEN: 'set',
      }),
    ).toStrictEqual([
      { name: 'WAYBILL_ADMN_TOKEN', closest: 'WAYBILL_ADMIN_TOKEN' },
      // Compared without the prefix too: the listen port is PORT.
      { name: 'WAYBILL_PORT', closest: 'PORT' },
      { name: 'WAYBILL_RATE_PER_SECONDS', closest: 'WAYBILL_RATE_PER_SECOND' },
    ]);
  });

  it('leaves alone the variables other parts of Waybill read, the tests, and other programs', () => {
    expect(
      unknownVariables({
        WAYBILL_URL: 'http://x',
        WAYBILL_KEY: 'k',
        WAYBILL_SECRET: 's',
        WAYBILL_WORKER_INDEX: '1',
        WAYBILL_TEST_POSTGRES_URL: 'postgres://',
        PATH: '/bin',
        WAYBILLX: '1',
        ...Object.fromEntries(Object.values(ENV_NAMES).map((name) => [name, '1'])),
      }),
    ).toStrictEqual([]);
  });

  it('measures edit distance', () => {
    expect(editDistance('', 'abc')).toBe(3);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('ADMN', 'ADMIN')).toBe(1);
    expect(editDistance('same', 'same')).toBe(0);
  });
});

import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

describe('loadConfig', () => {
  it('has the defaults of CONTRACT §7', () => {
    const config = loadConfig({});
    expect(config).toStrictEqual({
      databaseUrl: 'sqlite:./data/waybill.db',
      databaseReadUrl: null,
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
      pgPoolSize: 10,
      pgStatementTimeoutMs: 5000,
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
    });
    expect(config).toMatchObject({
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
    ['WAYBILL_PG_POOL_SIZE', 'many'],
    ['WAYBILL_PG_STATEMENT_TIMEOUT_MS', '-5'],
    ['WAYBILL_TRUST_PROXY', 'garbage'],
    ['WAYBILL_TRUST_PROXY', '10.0.0.0/33'],
    ['WAYBILL_TRUST_PROXY', '10.0.0.1,nonsense'],
    ['WAYBILL_TRUST_PROXY', '-1'],
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

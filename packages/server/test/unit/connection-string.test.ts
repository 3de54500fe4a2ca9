import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { hostName, needsResolver, parseDatabaseUrl } from '../../src/store/postgres/connection-string.js';

describe('multi-host database URLs', () => {
  it('splits the host list and keeps the rest for each host', () => {
    const target = parseDatabaseUrl(
      'postgres://waybill:p%40ss@db-1:5433,db-2,[::1]:6000/waybill?sslmode=disable&target_session_attrs=read-write&application_name=x',
    );
    expect(target.hosts).toStrictEqual([
      { host: 'db-1', port: 5433 },
      { host: 'db-2', port: 5432 },
      { host: '::1', port: 6000 },
    ]);
    expect(target.targetSessionAttrs).toBe('read-write');
    expect(needsResolver(target)).toBe(true);
    expect(target.urlFor({ host: 'db-2', port: 5432 })).toBe(
      'postgres://waybill:p%40ss@db-2:5432/waybill?sslmode=disable&application_name=x',
    );
    expect(target.urlFor({ host: '::1', port: 6000 })).toBe(
      'postgres://waybill:p%40ss@[::1]:6000/waybill?sslmode=disable&application_name=x',
    );
    expect(hostName({ host: '::1', port: 6000 })).toBe('[::1]:6000');
  });

  it('leaves a one-host URL to node-postgres as it is', () => {
    const target = parseDatabaseUrl('postgresql://u@localhost/db');
    expect(target.hosts).toStrictEqual([{ host: 'localhost', port: 5432 }]);
    expect(target.targetSessionAttrs).toBe('any');
    expect(needsResolver(target)).toBe(false);
    expect(parseDatabaseUrl('postgres://h:1').urlFor({ host: 'h', port: 1 })).toBe('postgres://h:1');
  });

  it('refuses what it cannot honour, without repeating the URL', () => {
    expect(() => parseDatabaseUrl('postgres://u:secret@a,b/db?target_session_attrs=standby')).toThrow(
      /target_session_attrs=standby is not supported/,
    );
    expect(() => parseDatabaseUrl('postgres://u:secret@a:x,b/db')).toThrow(/host list that cannot be read/);
    expect(() => parseDatabaseUrl('postgres://u:secret@a:99999/db')).toThrow(/port outside/);
    try {
      parseDatabaseUrl('postgres://u:secret@a:x/db');
    } catch (error) {
      expect(String(error)).not.toContain('secret');
    }
  });

  it('is checked when the configuration loads, naming DATABASE_URL', () => {
    expect(() =>
      loadConfig({ DATABASE_URL: 'postgres://u:secret@a,b/db?target_session_attrs=prefer-standby' }),
    ).toThrow(/^DATABASE_URL: target_session_attrs=prefer-standby is not supported/);
    expect(
      loadConfig({ DATABASE_URL: 'postgres://u@a:5432,b:5433/db?target_session_attrs=read-write' })
        .databaseUrl,
    ).toBe('postgres://u@a:5432,b:5433/db?target_session_attrs=read-write');
  });
});

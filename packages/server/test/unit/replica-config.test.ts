import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { replicaNames } from '../../src/store/postgres/read-routing.js';

describe('DATABASE_READ_URL and WAYBILL_READ_MAX_LAG_MS', () => {
  const pg = 'postgres://waybill@db1/waybill';

  it('takes a comma-separated list of replicas, and a lag bound of 1000 ms by default', () => {
    const config = loadConfig({
      DATABASE_URL: pg,
      DATABASE_READ_URL: ' postgres://u:p@db2:5433/w, postgresql://db3/w ,',
    });
    expect(config.databaseReadUrl).toEqual(['postgres://u:p@db2:5433/w', 'postgresql://db3/w']);
    expect(config.readMaxLagMs).toBe(1000);
    expect(loadConfig({ DATABASE_URL: pg, WAYBILL_READ_MAX_LAG_MS: '250' }).readMaxLagMs).toBe(250);
  });

  it('refuses what cannot work, without echoing a URL (it may hold a password)', () => {
    const bad = (source: Record<string, string>) => {
      try {
        loadConfig(source);
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as Error).message;
      }
      throw new Error('accepted');
    };
    const message = bad({ DATABASE_URL: pg, DATABASE_READ_URL: 'mysql://u:hunter2@db2/w' });
    expect(message).toContain('DATABASE_READ_URL');
    expect(message).not.toContain('hunter2');
    expect(bad({ DATABASE_URL: 'sqlite:./w.db', DATABASE_READ_URL: pg })).toContain(
      'PostgreSQL DATABASE_URL',
    );
    expect(bad({ DATABASE_URL: pg, WAYBILL_READ_MAX_LAG_MS: '-1' })).toContain('WAYBILL_READ_MAX_LAG_MS');
  });

  it('names replicas by host:port, never by their credentials; an index when there is no host or a clash', () => {
    expect(
      replicaNames([
        'postgres://waybill:s3cret@db2:5433/w',
        'postgres://db3/w',
        'postgres://other:pw@db2:5433/x',
        'postgres:///w?host=/run/postgresql',
      ]),
    ).toEqual(['db2:5433', 'db3', 'replica-3', 'replica-4']);
  });
});

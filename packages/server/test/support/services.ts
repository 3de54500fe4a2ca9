import { Redis } from 'ioredis';
import pg from 'pg';

/**
 * Vitest global setup. Locally, the PostgreSQL and Redis suites run when their variables are set and are left
 * out otherwise. In CI (`CI=true`) leaving them out would let a broken service pass unnoticed, so there both
 * variables must be set and both services must answer, or the run fails before any test.
 */
export default async function checkServices(): Promise<void> {
  if (process.env.CI !== 'true') return;
  const postgresUrl = process.env.WAYBILL_TEST_POSTGRES_URL;
  const redisUrl = process.env.REDIS_URL;
  if (!postgresUrl || !redisUrl) {
    throw new Error(
      'CI=true: WAYBILL_TEST_POSTGRES_URL and REDIS_URL must be set so the PostgreSQL and Redis suites run',
    );
  }
  const client = new pg.Client({ connectionString: postgresUrl, connectionTimeoutMillis: 5000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
  } catch (error) {
    throw new Error(
      `CI=true: PostgreSQL at WAYBILL_TEST_POSTGRES_URL does not answer: ${(error as Error).message}`,
    );
  } finally {
    await client.end().catch(() => {});
  }
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 5000 });
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    throw new Error(`CI=true: Redis at REDIS_URL does not answer: ${(error as Error).message}`);
  } finally {
    redis.disconnect();
  }
}

import { parseArgs } from 'node:util';
import { buildApp } from '../app.js';
import { loadConfig } from '../config.js';
import type { Limits } from '../limits/limits.js';
import { MemoryLimits } from '../limits/memory-limits.js';
import { RedisLimits } from '../limits/redis-limits.js';
import { DEMO_ACCOUNT, demoBanner, loadDemoData } from '../operations/demo-data.js';
import { resolvePepper } from '../pepper.js';
import { openStore } from '../store/open.js';
import { configFlags, configSource, EXIT } from './options.js';

export const SERVE_USAGE = `waybill serve [--port N] [--host H] [--database-url URL] [--no-demo] [--<setting> value]…
  Every variable of docs/configuration.md has a flag: WAYBILL_RATE_PER_SECOND is --rate-per-second.
  On an empty database it loads the demo account and data unless --no-demo is given.`;

/** Runs the service until SIGINT/SIGTERM, then closes connections and the store cleanly. */
export async function serveCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { ...configFlags, 'no-demo': { type: 'boolean' } },
    strict: true,
  });
  const config = loadConfig(configSource(process.env, values));
  const pepper = resolvePepper(config);
  const store = openStore(config);
  await store.migrate();
  const limits: Limits = await openLimits(config);
  const app = await buildApp({ config, store, pepper: pepper.value, limits });

  if (pepper.generated && pepper.file) {
    app.log.warn(
      { file: pepper.file },
      'generated a server pepper; several instances on one database must share one through WAYBILL_PEPPER',
    );
  }
  if (!values['no-demo'] && (await loadDemoData(store, pepper.value, new Date()))) {
    app.log.info('empty database: loaded the demo account and data');
  }

  const stop = async (signal: string) => {
    app.log.info({ signal }, 'shutting down');
    await app.close();
    await limits.close();
    await store.close();
    process.exit(EXIT.ok);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));

  const address = await app.listen({ host: config.host, port: config.port });
  if (await store.getAccountByKey(DEMO_ACCOUNT.key)) {
    const url = new URL(address);
    if (url.hostname === '0.0.0.0' || url.hostname === '[::]') url.hostname = '127.0.0.1';
    process.stdout.write(demoBanner(url.origin));
  }
  return new Promise<number>(() => {});
}

/** Shared counters in Redis when REDIS_URL is set (several instances), else in this process. */
async function openLimits(config: ReturnType<typeof loadConfig>): Promise<Limits> {
  if (!config.redisUrl) return new MemoryLimits(config);
  const limits = new RedisLimits(config.redisUrl, config);
  await limits.ping();
  return limits;
}

import { parseArgs } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../app.js';
import { Relay } from '../callbacks/relay.js';
import { loadConfig } from '../config.js';
import type { Limits } from '../limits/limits.js';
import { MemoryLimits } from '../limits/memory-limits.js';
import { RedisLimits } from '../limits/redis-limits.js';
import { Metrics } from '../metrics.js';
import { sealLegacyCallbackSecrets } from '../operations/accounts.js';
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
  const migrated = await store.migrate();
  const limits: Limits = await openLimits(config);
  const metrics = new Metrics();
  // The relay needs the app's logger, and the app needs to poke the relay: bound once both exist.
  let relay: Relay | null = null;
  const app = await buildApp({
    config,
    store,
    pepper: pepper.value,
    limits,
    metrics,
    deliveriesQueued: () => relay?.poke(),
  });
  if (config.callbackRelay) {
    relay = new Relay({
      store,
      config,
      pepper: pepper.value,
      logger: app.log.child({ component: 'callback-relay' }),
      metrics,
    });
  }

  if (migrated.length > 0) {
    app.log.info({ migrations: migrated.map((m) => `${m.version} ${m.name}`) }, 'applied schema migrations');
  }
  // Callback secrets written before they were sealed at rest (an upgrade) are sealed now, once.
  const sealed = await sealLegacyCallbackSecrets(store, pepper.value);
  if (sealed > 0) app.log.info({ accounts: sealed }, 'sealed callback secrets stored in clear');

  if (pepper.generated && pepper.file) {
    app.log.warn(
      { file: pepper.file },
      'generated a server pepper; several instances on one database must share one through WAYBILL_PEPPER',
    );
  }
  if (!values['no-demo'] && (await loadDemoData(store, pepper.value, new Date()))) {
    app.log.info('empty database: loaded the demo account and data');
  }

  // CONTRACT §11: stop accepting, finish in-flight requests and callback attempts (at most 10 s), close the
  // store, exit 0. A second signal exits at once.
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) {
      app.log.warn({ signal }, 'second signal: exiting at once');
      process.exit(EXIT.apiError);
    }
    stopping = true;
    app.log.info({ signal }, 'shutting down');
    try {
      // Both drain at once, each within the deadline: the relay stops claiming as the server stops accepting.
      await Promise.all([closeServer(app), relay?.stop(SHUTDOWN_DEADLINE_MS)]);
      await limits.close();
      await store.close();
    } catch (error) {
      app.log.error({ err: error }, 'error while shutting down');
    }
    process.exit(EXIT.ok);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));

  const address = await app.listen({ host: config.host, port: config.port });
  if (relay && !stopping) {
    relay.start();
    app.log.info(
      {
        concurrency: config.callbackConcurrency,
        endpointConcurrency: config.callbackEndpointConcurrency,
        allowPrivate: config.callbackAllowPrivate,
      },
      'callback relay started',
    );
    if (config.callbackAllowPrivate) {
      app.log.warn(
        'WAYBILL_CALLBACK_ALLOW_PRIVATE is on: callbacks may reach loopback, private and metadata addresses (development only)',
      );
    }
  }
  if (await store.getAccountByKey(DEMO_ACCOUNT.key)) {
    const url = new URL(address);
    if (url.hostname === '0.0.0.0' || url.hostname === '[::]') url.hostname = '127.0.0.1';
    process.stdout.write(demoBanner(url.origin));
  }
  return new Promise<number>(() => {});
}

/** How long a shutdown waits for in-flight requests and callback attempts (CONTRACT §11). */
const SHUTDOWN_DEADLINE_MS = 10_000;

/** `app.close()` within the deadline; requests still running then have their connections cut. */
async function closeServer(app: FastifyInstance): Promise<void> {
  const closing = app.close();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((done) => {
    timer = setTimeout(() => done(true), SHUTDOWN_DEADLINE_MS);
  });
  if (await Promise.race([closing.then(() => false), late])) {
    app.log.warn('requests still running at the shutdown deadline: closing their connections');
    app.server.closeAllConnections();
    await closing;
  }
  clearTimeout(timer);
}

/** Shared counters in Redis when REDIS_URL is set (several instances), else in this process. */
async function openLimits(config: ReturnType<typeof loadConfig>): Promise<Limits> {
  if (!config.redisUrl) return new MemoryLimits(config);
  const limits = new RedisLimits(config.redisUrl, config);
  await limits.ping();
  return limits;
}

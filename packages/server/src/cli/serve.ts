import cluster from 'node:cluster';
import { createServer } from 'node:net';
import { parseArgs } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { pepperFingerprint } from '../auth/pepper.js';
import { type Config, loadConfig, unknownVariables } from '../config.js';
import { secretMatches } from '../domain/credentials.js';
import { drainConnections } from '../http/drain.js';
import { sealLegacyCallbackSecrets } from '../operations/accounts.js';
import { DEMO_ACCOUNT, demoBanner, loadDemoData } from '../operations/demo-data.js';
import { composeService, type Service } from '../service.js';
import { openStore } from '../store/open.js';
import type { Store } from '../store/store.js';
import { checkedPepper } from './database.js';
import { configFlags, configSource, EXIT, StartupError } from './options.js';
import { startupProblem } from './run.js';
import { runsRelay, superviseWorkers, workerCount, workerIndex } from './workers.js';

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
  const workers = workerCount(config);
  // Nothing is written (pepper file, SQLite file, demo data) before we know the port can be bound. Workers
  // share the primary's port, which the primary has probed.
  if (cluster.isPrimary) await probeAddress(config.host, config.port);
  if (workers > 1 && cluster.isPrimary)
    return superviseAfterPreparing(config, workers, values['no-demo'] === true);
  const store = openStore(config);
  let service: Service | undefined;
  // Whatever fails from here on is fatal: the process must not stay up half-started (listening, or holding the
  // store open) after the command has given up, and it exits 3 with one sentence.
  try {
    const { migrated, pepper } = await prepareStore(store, config);
    service = await composeService({
      config,
      store,
      pepper: pepper.value,
      relay: runsRelay(config),
      binds: true,
    });
    const { app, relay, binds, limits } = service;
    const running = service;

    if ((workerIndex() ?? 0) === 0) {
      logSettingsWorthKnowing(app, config);
      await logReplicasNotServing(app, store);
    }
    if (migrated.length > 0) {
      app.log.info(
        { migrations: migrated.map((m) => `${m.version} ${m.name}`) },
        'applied schema migrations',
      );
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
    if (pepper.recorded) {
      app.log.info(
        { fingerprint: pepperFingerprint(pepper.value) },
        'recorded the fingerprint of the server pepper in the database: a start with another pepper is refused',
      );
    }
    if (!values['no-demo'] && (await loadDemoData(store, pepper.value, new Date()))) {
      app.log.info('empty database: loaded the demo account and data');
    }

    // CONTRACT §11: stop accepting, finish in-flight requests and callback attempts (at most 10 s), close the
    // store, exit 0. A second signal exits at once. The SMPP binds answer what is in flight and unbind (§12).
    let stopping = false;
    const stop = async (signal: string) => {
      if (stopping) {
        app.log.warn({ signal }, 'second signal: exiting at once');
        process.exit(EXIT.apiError);
      }
      stopping = true;
      app.log.info({ signal }, 'shutting down');
      try {
        // All drain at once, each within the deadline: the relay stops claiming as the server stops accepting,
        // and the binds stop taking receipts.
        await Promise.all([
          closeServer(app),
          relay?.stop(SHUTDOWN_DEADLINE_MS),
          binds?.stop(SHUTDOWN_DEADLINE_MS),
        ]);
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
    // The relay (when this process runs one) and the SMPP binds start once the server listens; the binds run
    // whether or not this process sends callbacks (WAYBILL_CALLBACK_RELAY=off only stops sending).
    if (!stopping) running.start();
    if (relay && !stopping) {
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
    const demo = (workerIndex() ?? 0) === 0 ? await store.getAccountByKey(DEMO_ACCOUNT.key) : null;
    if (demo) {
      // The well-known secret is advertised only while it works: a rotated secret makes it fail.
      if (secretMatches(pepper.value, DEMO_ACCOUNT.secret, demo.secretHash)) {
        const url = new URL(address);
        if (url.hostname === '0.0.0.0' || url.hostname === '[::]') url.hostname = '127.0.0.1';
        process.stdout.write(demoBanner(url.origin));
      } else {
        process.stdout.write(
          `\nThe demo account (key ${DEMO_ACCOUNT.key}) no longer takes the demo secret: its secret was changed. Delete it with \`waybill accounts delete ${demo.id}\` if you no longer need it.\n`,
        );
      }
    }
  } catch (error) {
    await (service ? service.close(0) : store.close()).catch(() => {});
    throw startupFailure(error);
  }
  return new Promise<number>(() => {});
}

/** The one sentence a failed start exits 3 with (cli/run.ts prints it). */
function startupFailure(error: unknown): StartupError {
  if (error instanceof StartupError) return error;
  const sentence = startupProblem(error);
  if (sentence !== null) return new StartupError(sentence);
  const message = error instanceof Error ? error.message : String(error);
  return new StartupError(`the service could not start: ${message.split('\n')[0]}`);
}

/**
 * One line per read replica (DATABASE_READ_URL) that cannot serve reads yet: the service starts on the primary
 * regardless and takes each replica in once it answers and has caught up (a fresh replica may not have replayed
 * the migrations just run). Names are host:port, never credentials.
 */
async function logReplicasNotServing(app: FastifyInstance, store: Store): Promise<void> {
  const replicas = await store.readReplicas?.check();
  for (const { name, up, lagMs } of replicas ?? []) {
    if (!up) {
      app.log.warn(
        { replica: name },
        `DATABASE_READ_URL replica ${name} cannot be reached: reads go to the primary until it answers`,
      );
    } else if (lagMs === null || lagMs > 0) {
      app.log.info(
        { replica: name, lagMs },
        `DATABASE_READ_URL replica ${name} is behind the primary: reads go to the primary until it catches up`,
      );
    }
  }
}

/**
 * What an operator could otherwise only find out by a request failing: a `WAYBILL_*` variable that nothing reads
 * (a typo: the setting it meant is not in effect) and whether the operator API is on. The token is never logged.
 */
function logSettingsWorthKnowing(app: FastifyInstance, config: Readonly<Config>): void {
  for (const { name, closest } of unknownVariables(process.env)) {
    app.log.warn(
      { variable: name, closest },
      `${name} is not a Waybill setting and is ignored: did you mean ${closest}?`,
    );
  }
  if (config.adminToken !== null) {
    app.log.info({ operatorApi: true }, 'operator API on: /admin/v1 takes the WAYBILL_ADMIN_TOKEN bearer');
  } else {
    app.log.info({ operatorApi: false }, 'operator API off: set WAYBILL_ADMIN_TOKEN to enable /admin/v1');
  }
}

/**
 * Migrates, then resolves the pepper against the fingerprint the database keeps (auth/pepper.ts); a refused
 * pepper closes the store again, so the process can exit with its sentence.
 */
async function prepareStore(store: Store, config: Readonly<Config>) {
  try {
    const migrated = await store.migrate();
    return { migrated, pepper: await checkedPepper(config, store) };
  } catch (error) {
    await store.close().catch(() => {});
    throw error;
  }
}

/** How long a shutdown waits for in-flight requests and callback attempts (CONTRACT §11). */
const SHUTDOWN_DEADLINE_MS = 10_000;

/** Drains the server within the deadline (http/drain.ts), then closes the app. */
async function closeServer(app: FastifyInstance): Promise<void> {
  await drainConnections(app, SHUTDOWN_DEADLINE_MS);
  await app.close();
}

/**
 * The primary of `--workers`: migrates, seals legacy secrets and loads the demo data once, so the workers start
 * on a ready database (and a pepper file that exists), then forks and supervises them.
 */
async function superviseAfterPreparing(
  config: ReturnType<typeof loadConfig>,
  workers: number,
  noDemo: boolean,
): Promise<number> {
  const store = openStore(config);
  try {
    const { pepper } = await prepareStore(store, config);
    await sealLegacyCallbackSecrets(store, pepper.value);
    if (!noDemo) await loadDemoData(store, pepper.value, new Date());
  } finally {
    await store.close();
  }
  const log = (message: string) =>
    process.stderr.write(
      `${JSON.stringify({ level: 30, time: Date.now(), pid: process.pid, msg: message })}\n`,
    );
  log(`starting ${workers} workers`);
  return superviseWorkers(workers, log);
}

/**
 * Fails with one sentence naming the fix when `host`:`port` cannot be bound (taken, privileged, not an address
 * of this machine). Port 0 takes any free port, so there is nothing to probe. The probe closes again at once;
 * another process could still take the port before the server binds it, and that rarer failure is mapped to
 * a sentence too (run.ts).
 */
export async function probeAddress(host: string, port: number): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => {
      const where = `port ${port} on ${host}`;
      if (error.code === 'EADDRINUSE')
        reject(new StartupError(`${where} is already in use: stop the other process or pass --port`));
      else if (error.code === 'EACCES')
        reject(new StartupError(`${where} needs privileges to bind: pass a --port above 1023`));
      else if (error.code === 'EADDRNOTAVAIL' || error.code === 'ENOTFOUND' || error.code === 'EAI_AGAIN')
        reject(new StartupError(`${host} is not an address of this machine: pass --host (e.g. 127.0.0.1)`));
      else reject(error);
    });
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}

import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/**
 * A real PgBouncer (the Debian package's binary) in transaction pooling mode on a free port, in front of one
 * PostgreSQL server: every database of that server is reachable through it under its own name (the `*`
 * fallback entry), with any user name, no password (auth_type = trust).
 */

const BINARIES = [process.env.WAYBILL_TEST_PGBOUNCER ?? '', '/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'];

/** The pgbouncer binary, or null. */
export const PGBOUNCER_BIN: string | null = BINARIES.find((bin) => bin !== '' && existsSync(bin)) ?? null;

/**
 * Whether the PgBouncer tests run: skipped, with a message, when the binary is missing, except under CI=true
 * where a missing binary must fail the run rather than quietly skip it.
 */
export function pgbouncerTestsEnabled(): boolean {
  if (PGBOUNCER_BIN !== null || process.env.CI === 'true') return true;
  console.warn(
    `skipping the PgBouncer tests: pgbouncer not found at ${BINARIES.filter(Boolean).join(', ')} (apt-get install pgbouncer, or set WAYBILL_TEST_PGBOUNCER)`,
  );
  return false;
}

export interface PgBouncer {
  port: number;
  /** A postgres:// URL to `database` through PgBouncer, as `user`. */
  url(database: string, user?: string): string;
  /** PgBouncer's own log so far. */
  log(): Promise<string>;
  /** Stops PgBouncer and removes its directory; safe to call twice or after a failed start. */
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface PgBouncerOptions {
  /** The PostgreSQL server behind it. */
  target: { host: string; port: number };
  /** Server connections per database and user. @default 4 */
  poolSize?: number;
  /** Users the auth file lists (trust still wants them listed). @default ['postgres'] */
  users?: string[];
}

/** Starts PgBouncer in transaction mode; resolves once it answers a query. Pair with `stop()`. */
export async function startPgBouncer(options: PgBouncerOptions): Promise<PgBouncer> {
  if (PGBOUNCER_BIN === null) throw new Error('pgbouncer is not installed (apt-get install pgbouncer)');
  const bin = PGBOUNCER_BIN;
  const dir = await mkdtemp(join(tmpdir(), 'waybill-pgbouncer-'));
  let child: ChildProcess | undefined;
  let output = '';
  const stop = async () => {
    const running = child;
    child = undefined;
    if (running && running.exitCode === null && running.signalCode === null) {
      const exited = new Promise<void>((done) => running.once('exit', () => done()));
      running.kill('SIGTERM');
      const timer = setTimeout(() => running.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const port = await freePort();
    const users = options.users ?? ['postgres'];
    await writeFile(join(dir, 'users.txt'), users.map((u) => `"${u}" ""\n`).join(''));
    await writeFile(
      join(dir, 'pgbouncer.ini'),
      [
        '[databases]',
        `* = host=${options.target.host} port=${options.target.port}`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${port}`,
        'unix_socket_dir =',
        'auth_type = trust',
        `auth_file = ${join(dir, 'users.txt')}`,
        'pool_mode = transaction',
        `default_pool_size = ${options.poolSize ?? 4}`,
        'max_client_conn = 500',
        // No ignore_startup_parameters: node-postgres sends only user, database and application_name.
        `logfile = ${join(dir, 'pgbouncer.log')}`,
        `pidfile = ${join(dir, 'pgbouncer.pid')}`,
        '',
      ].join('\n'),
    );
    // PgBouncer refuses to run as root: as root it is told to switch to the postgres user, which must own
    // the directory (it writes its log and pid file there).
    const asRoot = process.getuid?.() === 0;
    if (asRoot) {
      const { uid, gid } = await postgresIds();
      await chown(dir, uid, gid);
      for (const file of ['users.txt', 'pgbouncer.ini']) await chown(join(dir, file), uid, gid);
    }
    const args = [...(asRoot ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')];
    const started = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = started;
    started.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    started.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const url = (database: string, user = 'postgres') =>
      `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (started.exitCode !== null) throw new Error(`pgbouncer exited with ${started.exitCode}:\n${output}`);
      const probe = new pg.Client({ connectionString: url('postgres'), connectionTimeoutMillis: 2_000 });
      probe.on('error', () => {});
      try {
        await probe.connect();
        await probe.query('SELECT 1');
        break;
      } catch (error) {
        if (Date.now() > deadline) throw new Error(`pgbouncer did not answer: ${String(error)}\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      } finally {
        await probe.end().catch(() => {});
      }
    }
    return {
      port,
      url,
      log: async () => `${output}${await readFile(join(dir, 'pgbouncer.log'), 'utf8').catch(() => '')}`,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function postgresIds(): Promise<{ uid: number; gid: number }> {
  const passwd = await readFile('/etc/passwd', 'utf8');
  const line = passwd.split('\n').find((l) => l.startsWith('postgres:'));
  const fields = line?.split(':');
  if (!fields || fields.length < 4) throw new Error('no postgres OS user to run pgbouncer as');
  return { uid: Number(fields[2]), gid: Number(fields[3]) };
}

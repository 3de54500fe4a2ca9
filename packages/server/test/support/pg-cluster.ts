import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { appendFile, chown, mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

/**
 * A real PostgreSQL primary and a streaming standby (`pg_basebackup -R`) on free ports in a temporary
 * directory, built with PostgreSQL's own tools: what an operator runs, not the same server under two URLs.
 */

const run = promisify(execFile);

const BIN_DIRS = [
  process.env.WAYBILL_TEST_PG_BIN ?? '',
  '/usr/lib/postgresql/15/bin',
  '/usr/lib/postgresql/16/bin',
];
const TOOLS = ['initdb', 'pg_ctl', 'pg_basebackup'];

/** The directory holding initdb, pg_ctl and pg_basebackup, or null. */
export const PG_BIN: string | null =
  BIN_DIRS.find((dir) => dir !== '' && TOOLS.every((tool) => existsSync(join(dir, tool)))) ?? null;

/**
 * Whether the cluster tests run: skipped, with a message, when the tools are missing, except under CI=true
 * where a missing tool must fail the run rather than quietly skip it.
 */
export function clusterTestsEnabled(): boolean {
  if (PG_BIN !== null || process.env.CI === 'true') return true;
  console.warn(
    `skipping the real-cluster tests: initdb, pg_ctl and pg_basebackup not found in ${BIN_DIRS.filter(Boolean).join(', ')} (set WAYBILL_TEST_PG_BIN)`,
  );
  return false;
}

export interface PgCluster {
  primaryUrl: string;
  standbyUrl: string;
  /** host:port of the standby, as Waybill names it. */
  standbyName: string;
  /** Runs one statement on the primary or the standby. */
  query<T extends pg.QueryResultRow>(node: 'primary' | 'standby', text: string): Promise<T[]>;
  /** Stops replaying WAL on the standby (it keeps receiving): it falls behind from now on. */
  pauseReplay(): Promise<void>;
  resumeReplay(): Promise<void>;
  stopStandby(): Promise<void>;
  startStandby(): Promise<void>;
  /** Waits until the standby has replayed everything the primary has written so far. */
  waitForCatchUp(): Promise<void>;
  /** Stops both servers at once and removes their files; safe to call twice or after a failed start. */
  destroy(): Promise<void>;
}

/** Runs as the `postgres` OS user when this process is root (initdb refuses root). */
const asPostgres = (command: string, args: string[]) =>
  process.getuid?.() === 0
    ? run('runuser', ['-u', 'postgres', '--', command, ...args], { timeout: 60_000 })
    : run(command, args, { timeout: 60_000 });

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

/** Starts a primary and a standby streaming from it. Pair with `destroy()` in afterAll. */
export async function startCluster(): Promise<PgCluster> {
  if (PG_BIN === null) throw new Error('PostgreSQL tools (initdb, pg_ctl, pg_basebackup) not found');
  const bin = (tool: string) => join(PG_BIN as string, tool);
  const dir = await mkdtemp(join(tmpdir(), 'waybill-pg-'));
  const primaryDir = join(dir, 'primary');
  const standbyDir = join(dir, 'standby');
  const [primaryPort, standbyPort] = [await freePort(), await freePort()];
  const started: string[] = [];
  const pgCtl = (data: string, ...args: string[]) =>
    asPostgres(bin('pg_ctl'), ['-D', data, '-l', `${data}.log`, '-w', '-t', '60', ...args]);

  const destroy = async () => {
    for (const data of started.splice(0)) {
      await pgCtl(data, 'stop', '-m', 'immediate').catch(() => {});
    }
    await rm(dir, { recursive: true, force: true });
  };

  try {
    if (process.getuid?.() === 0) {
      const { stdout } = await run('id', ['-u', 'postgres']);
      const { stdout: gid } = await run('id', ['-g', 'postgres']);
      await chown(dir, Number(stdout.trim()), Number(gid.trim()));
    }
    await asPostgres(bin('initdb'), [
      '-D',
      primaryDir,
      '-U',
      'postgres',
      '--auth=trust',
      '--no-sync',
      '-E',
      'UTF8',
    ]);
    // Fast and disposable: no fsync; a socket directory of its own, so nothing clashes with the suite's server.
    await appendFile(
      join(primaryDir, 'postgresql.conf'),
      [
        `port = ${primaryPort}`,
        "listen_addresses = '127.0.0.1'",
        `unix_socket_directories = '${dir}'`,
        'wal_level = replica',
        'max_wal_senders = 5',
        'fsync = off',
        'full_page_writes = off',
        'shared_buffers = 16MB',
        '',
      ].join('\n'),
    );
    await pgCtl(primaryDir, 'start');
    started.push(primaryDir);
    await asPostgres(bin('pg_basebackup'), [
      '-h',
      '127.0.0.1',
      '-p',
      String(primaryPort),
      '-U',
      'postgres',
      '-D',
      standbyDir,
      '-R',
      '-X',
      'stream',
      '--no-sync',
    ]);
    // The later setting wins: the standby listens on a port of its own.
    await appendFile(join(standbyDir, 'postgresql.conf'), `port = ${standbyPort}\n`);
    await pgCtl(standbyDir, 'start');
    started.push(standbyDir);
  } catch (error) {
    await destroy();
    throw error;
  }

  const primaryUrl = `postgres://postgres@127.0.0.1:${primaryPort}/postgres`;
  const standbyUrl = `postgres://postgres@127.0.0.1:${standbyPort}/postgres`;
  const query = async <T extends pg.QueryResultRow>(node: 'primary' | 'standby', text: string) => {
    const client = new pg.Client({ connectionString: node === 'primary' ? primaryUrl : standbyUrl });
    await client.connect();
    try {
      return (await client.query<T>(text)).rows;
    } finally {
      await client.end();
    }
  };
  const cluster: PgCluster = {
    primaryUrl,
    standbyUrl,
    standbyName: `127.0.0.1:${standbyPort}`,
    query,
    async pauseReplay() {
      await query('standby', 'SELECT pg_wal_replay_pause()');
    },
    async resumeReplay() {
      await query('standby', 'SELECT pg_wal_replay_resume()');
    },
    async stopStandby() {
      const i = started.indexOf(standbyDir);
      if (i >= 0) started.splice(i, 1);
      await pgCtl(standbyDir, 'stop', '-m', 'fast');
    },
    async startStandby() {
      await pgCtl(standbyDir, 'start');
      started.push(standbyDir);
    },
    async waitForCatchUp() {
      const [{ lsn }] = (await query<{ lsn: string }>(
        'primary',
        'SELECT pg_current_wal_lsn()::text AS lsn',
      )) as [{ lsn: string }];
      const deadline = Date.now() + 30_000;
      for (;;) {
        const [row] = await query<{ done: boolean }>(
          'standby',
          `SELECT pg_last_wal_replay_lsn() >= '${lsn}'::pg_lsn AS done`,
        );
        if (row?.done) return;
        if (Date.now() > deadline) throw new Error('the standby did not catch up within 30 s');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    destroy,
  };
  return cluster;
}

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
  /** The first standby's URL (`standbyUrls[0]`). */
  standbyUrl: string;
  standbyUrls: string[];
  /** host:port of the first standby, as Waybill names it. */
  standbyName: string;
  standbyNames: string[];
  /** Runs one statement on the primary or the first standby. */
  query<T extends pg.QueryResultRow>(node: 'primary' | 'standby', text: string): Promise<T[]>;
  /** Stops replaying WAL on a standby (it keeps receiving): it falls behind from now on. @default the first */
  pauseReplay(standby?: number): Promise<void>;
  resumeReplay(standby?: number): Promise<void>;
  stopStandby(standby?: number): Promise<void>;
  /** Starts a stopped standby again (a running one is left alone). */
  startStandby(standby?: number): Promise<void>;
  /** host:port of the primary. */
  primaryName: string;
  /** Stops the primary (`pg_ctl stop -m fast`: its standbys receive all of its WAL first). */
  stopPrimary(): Promise<void>;
  /** Promotes a standby to a primary (`pg_ctl promote`), returning once it accepts writes. @default the first */
  promote(standby?: number): Promise<void>;
  /** Waits until every running standby has replayed everything the primary has written so far. */
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

/** Starts a primary and `standbys` standbys streaming from it. Pair with `destroy()` in afterAll. */
export async function startCluster(standbys = 1): Promise<PgCluster> {
  if (PG_BIN === null) throw new Error('PostgreSQL tools (initdb, pg_ctl, pg_basebackup) not found');
  const bin = (tool: string) => join(PG_BIN as string, tool);
  const dir = await mkdtemp(join(tmpdir(), 'waybill-pg-'));
  const primaryDir = join(dir, 'primary');
  const standbyDirs = Array.from({ length: standbys }, (_, i) => join(dir, `standby-${i + 1}`));
  const primaryPort = await freePort();
  const standbyPorts: number[] = [];
  for (let i = 0; i < standbys; i++) standbyPorts.push(await freePort());
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
    for (const [i, standbyDir] of standbyDirs.entries()) {
      await asPostgres(bin('pg_basebackup'), [
        ...['-h', '127.0.0.1', '-p', String(primaryPort), '-U', 'postgres'],
        ...['-D', standbyDir, '-R', '-X', 'stream', '--no-sync'],
      ]);
      // The later setting wins: each standby listens on a port of its own.
      await appendFile(join(standbyDir, 'postgresql.conf'), `port = ${standbyPorts[i]}\n`);
      await pgCtl(standbyDir, 'start');
      started.push(standbyDir);
    }
  } catch (error) {
    await destroy();
    throw error;
  }

  const primaryUrl = `postgres://postgres@127.0.0.1:${primaryPort}/postgres`;
  const standbyUrls = standbyPorts.map((port) => `postgres://postgres@127.0.0.1:${port}/postgres`);
  const on = async <T extends pg.QueryResultRow>(url: string, text: string) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query<T>(text)).rows;
    } finally {
      await client.end();
    }
  };
  const standby = (i: number) => {
    const url = standbyUrls[i];
    const data = standbyDirs[i];
    if (url === undefined || data === undefined) throw new Error(`no standby ${i}`);
    return { url, data };
  };
  const cluster: PgCluster = {
    primaryUrl,
    standbyUrl: standby(0).url,
    standbyUrls,
    standbyName: `127.0.0.1:${standbyPorts[0]}`,
    standbyNames: standbyPorts.map((port) => `127.0.0.1:${port}`),
    primaryName: `127.0.0.1:${primaryPort}`,
    async stopPrimary() {
      const at = started.indexOf(primaryDir);
      if (at >= 0) started.splice(at, 1);
      await pgCtl(primaryDir, 'stop', '-m', 'fast');
    },
    async promote(i = 0) {
      const { url, data } = standby(i);
      await pgCtl(data, 'promote');
      const deadline = Date.now() + 60_000;
      for (;;) {
        const [row] = await on<{ standby: boolean }>(url, 'SELECT pg_is_in_recovery() AS standby');
        if (row?.standby === false) return;
        if (Date.now() > deadline) throw new Error(`standby ${i + 1} still in recovery 60 s after promote`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    query: (node, text) => on(node === 'primary' ? primaryUrl : standby(0).url, text),
    async pauseReplay(i = 0) {
      await on(standby(i).url, 'SELECT pg_wal_replay_pause()');
    },
    async resumeReplay(i = 0) {
      await on(standby(i).url, 'SELECT pg_wal_replay_resume()');
    },
    async stopStandby(i = 0) {
      const { data } = standby(i);
      const at = started.indexOf(data);
      if (at >= 0) started.splice(at, 1);
      await pgCtl(data, 'stop', '-m', 'fast');
    },
    async startStandby(i = 0) {
      const { data } = standby(i);
      if (started.includes(data)) return;
      await pgCtl(data, 'start');
      started.push(data);
    },
    async waitForCatchUp() {
      const [row] = await on<{ lsn: string }>(primaryUrl, 'SELECT pg_current_wal_lsn()::text AS lsn');
      const lsn = row?.lsn ?? '0/0';
      const deadline = Date.now() + 30_000;
      for (const [i, data] of standbyDirs.entries()) {
        if (!started.includes(data)) continue;
        for (;;) {
          const [replayed] = await on<{ done: boolean }>(
            standby(i).url,
            `SELECT pg_last_wal_replay_lsn() >= '${lsn}'::pg_lsn AS done`,
          );
          if (replayed?.done) break;
          if (Date.now() > deadline) throw new Error(`standby ${i + 1} did not catch up within 30 s`);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
    },
    destroy,
  };
  return cluster;
}

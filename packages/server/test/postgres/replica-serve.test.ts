import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { clusterTestsEnabled, type PgCluster, startCluster } from '../support/pg-cluster.js';
import { killAll, type Served, serve } from '../support/processes.js';

/**
 * `waybill serve` beside a real streaming standby that is down or behind at start: it starts on the primary,
 * says so in one line naming DATABASE_READ_URL, and serves correct answers.
 */

const PEPPER = 'replica-serve-test-pepper-0123456789';
const DEMO = 'key=DEMOKEY1&secret=DEMOSECR&messageid=x';

describe.skipIf(!clusterTestsEnabled())('waybill serve with a read replica that cannot serve yet', () => {
  let cluster: PgCluster;
  let cwd: string;
  let server: Served | undefined;

  beforeAll(async () => {
    cwd = await mkdtemp(join(tmpdir(), 'waybill-serve-'));
    cluster = await startCluster();
  }, 120_000);
  afterEach(async () => {
    await server?.stop();
    server = undefined;
    killAll();
    await cluster.startStandby().catch(() => {});
    await cluster.resumeReplay().catch(() => {});
  }, 60_000);
  afterAll(async () => {
    killAll();
    await cluster?.destroy();
    await rm(cwd, { recursive: true, force: true });
  }, 60_000);

  /** A database of its own on the primary, replayed by the standby before the test changes anything. */
  async function freshDatabase(): Promise<{ primary: string; standby: string }> {
    const name = `w_${randomBytes(5).toString('hex')}`;
    await cluster.query('primary', `CREATE DATABASE ${name}`);
    await cluster.waitForCatchUp();
    const on = (url: string) => url.replace(/\/postgres$/, `/${name}`);
    return { primary: on(cluster.primaryUrl), standby: on(cluster.standbyUrl) };
  }

  /** The output once the demo banner (printed after the listen line) is complete. */
  async function outputWithBanner(served: Served): Promise<string> {
    const deadline = Date.now() + 20_000;
    while (!served.output().includes('/openapi.json') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return served.output();
  }

  const replicaLines = (output: string) =>
    output.split('\n').filter((line) => line.includes('DATABASE_READ_URL'));

  it('starts on the primary when the standby is down, with one line naming DATABASE_READ_URL', async () => {
    const db = await freshDatabase();
    await cluster.stopStandby();
    server = await serve(
      [],
      { DATABASE_URL: db.primary, DATABASE_READ_URL: db.standby, WAYBILL_PEPPER: PEPPER },
      { cwd },
    );
    const output = await outputWithBanner(server);
    expect(replicaLines(output)).toHaveLength(1);
    expect(replicaLines(output)[0]).toContain(`replica ${cluster.standbyName} cannot be reached`);
    expect(output).not.toMatch(/DATABASE_URL \//);
    expect(output).toContain('Demo account:');

    const dlr = await fetch(`${server.url}/dlr?${DEMO}`);
    expect(dlr.status).toBe(200);
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toStrictEqual({
      status: 'ok',
      replicas: [{ name: cluster.standbyName, up: false, lagMs: null }],
    });
  }, 60_000);

  it('starts on a fresh database whose standby has not replayed the migrations: behind, not an error', async () => {
    const db = await freshDatabase();
    await cluster.pauseReplay();
    server = await serve(
      [],
      { DATABASE_URL: db.primary, DATABASE_READ_URL: db.standby, WAYBILL_PEPPER: PEPPER },
      { cwd },
    );
    const output = await outputWithBanner(server);
    expect(output).not.toContain('does not exist');
    expect(output).not.toMatch(/\n\s+at /);
    expect(output).toContain('Demo account:');
    expect(replicaLines(output)).toHaveLength(1);
    expect(replicaLines(output)[0]).toContain('is behind the primary');

    for (let i = 0; i < 5; i++) expect((await fetch(`${server.url}/dlr?${DEMO}`)).status).toBe(200);
    const ready = await fetch(`${server.url}/readyz`);
    expect(ready.status).toBe(200);
    const body = (await ready.json()) as {
      status: string;
      replicas: { up: boolean; lagMs: number | null }[];
    };
    expect(body.status).toBe('ok');
    expect(body.replicas[0]?.up).toBe(true);
  }, 60_000);
});

import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, expect, it } from 'vitest';
import { killAll, serve } from '../support/processes.js';
import { Smsc } from './smsc.js';

/** `waybill serve` as a process: it binds the routes it finds, and unbinds cleanly on SIGTERM. */

const TOKEN = randomBytes(16).toString('hex');
let smsc: Smsc | undefined;

afterEach(async () => {
  killAll();
  await smsc?.close();
});

it('binds an smpp route it is given, and unbinds on SIGTERM before it exits', {
  timeout: 30_000,
}, async () => {
  smsc = new Smsc();
  const port = await smsc.listen();
  const server = await serve(['--no-demo'], {
    DATABASE_URL: 'sqlite::memory:',
    WAYBILL_ADMIN_TOKEN: TOKEN,
    WAYBILL_PEPPER: randomBytes(16).toString('hex'),
    // An instance that sends no callbacks still takes receipts: the binds do not hang on the relay.
    WAYBILL_CALLBACK_RELAY: 'off',
  });
  await addRouteAndWaitForBind(server.url, port);
  const detail = await fetch(`${server.url}/admin/v1/routes/smsc`, {
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  expect(((await detail.json()) as { status: { state: string } }).status.state).toBe('bound');
  expect(await smsc.deliver({ esm_class: 0, short_message: Buffer.from('hello') })).toBe(0);

  await server.stop();
  expect(smsc.events.unbinds).toBe(1);
  expect(server.output()).not.toContain('"pw"');
});

it('with --workers 2 on one SQLite file, one worker binds; the other waits on the lease', {
  timeout: 40_000,
}, async () => {
  smsc = new Smsc();
  const port = await smsc.listen();
  const dir = mkdtempSync(join(tmpdir(), 'waybill-smpp-workers-'));
  try {
    const server = await serve(['--no-demo', '--workers', '2'], {
      DATABASE_URL: `sqlite:${join(dir, 'waybill.db')}`,
      WAYBILL_ADMIN_TOKEN: TOKEN,
      WAYBILL_PEPPER: randomBytes(16).toString('hex'),
    });
    const deadline = Date.now() + 10_000;
    while ((server.output().match(/listening at/g) ?? []).length < 2 && Date.now() < deadline)
      await sleep(50);
    await addRouteAndWaitForBind(server.url, port);
    // Both workers have read the route by now (every 5 s); still one bind.
    await sleep(6000);
    expect(smsc.events.binds).toBe(1);
    expect(smsc.maxBound).toBe(1);
    await server.stop();
    expect(smsc.events.unbinds).toBe(1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Adds the `smsc` route pointing at the simulator, then waits (10 s at most) until a process has bound it. */
async function addRouteAndWaitForBind(url: string, port: number): Promise<void> {
  const created = await fetch(`${url}/admin/v1/routes`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      name: 'smsc',
      kind: 'smpp',
      smpp: { host: '127.0.0.1', port, systemId: 'waybill', password: 'pw' },
    }),
  });
  expect(created.status).toBe(201);
  const deadline = Date.now() + 10_000;
  while ((smsc as Smsc).bound.size === 0 && Date.now() < deadline) await sleep(50);
  expect((smsc as Smsc).bound.size).toBe(1);
}

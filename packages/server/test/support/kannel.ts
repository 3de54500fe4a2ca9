import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/**
 * A real Kannel (the Debian packages `kannel` and `kannel-extras`): bearerbox and smsbox as child processes on
 * free ports, bound over SMPP to an SMSC the test runs, with a sendsms user. The configuration is the one
 * docs/intake.md shows in its Kannel section, with only the ports, hosts and file names of this run put in, so
 * the documented configuration is the one the test proves.
 */

const DIRS = [process.env.WAYBILL_TEST_KANNEL_DIR ?? '', '/usr/sbin', '/usr/bin'];
const dirWith = (bin: string) => DIRS.find((dir) => dir !== '' && existsSync(join(dir, bin))) ?? null;

/** Where bearerbox and smsbox are, or null when either is missing. */
export const KANNEL_DIR: string | null = (() => {
  const dir = dirWith('bearerbox');
  return dir !== null && existsSync(join(dir, 'smsbox')) ? dir : null;
})();

/**
 * Whether the Kannel tests run: skipped, with a message, when Kannel is missing, except under CI=true where a
 * missing Kannel must fail the run rather than quietly skip it.
 */
export function kannelTestsEnabled(): boolean {
  if (KANNEL_DIR !== null || process.env.CI === 'true') return true;
  console.warn(
    `skipping the Kannel tests: bearerbox and smsbox not found in ${DIRS.filter(Boolean).join(', ')} (apt-get install kannel kannel-extras, or set WAYBILL_TEST_KANNEL_DIR)`,
  );
  return false;
}

const DOC = resolve(import.meta.dirname, '../../../../docs/intake.md');

/** The Kannel section of docs/intake.md. */
function kannelSection(): string {
  const doc = readFileSync(DOC, 'utf8');
  const start = doc.indexOf('\n## Kannel\n');
  const end = doc.indexOf('\n## ', start + 1);
  if (start < 0) throw new Error('docs/intake.md has no Kannel section');
  return doc.slice(start, end < 0 ? undefined : end);
}

/** The documented kannel.conf: the section's `conf` block. */
export function documentedConfig(): string {
  const match = /```conf\n([\s\S]*?)```/.exec(kannelSection());
  if (!match?.[1]) throw new Error('the Kannel section of docs/intake.md has no ```conf block');
  return match[1];
}

/** The documented `dlr-url=` templates of the Kannel section, in order. */
export function documentedDlrUrls(): string[] {
  return [...kannelSection().matchAll(/^dlr-url=(\S+)$/gm)].map((m) => m[1] ?? '');
}

/**
 * The documented configuration with some settings replaced, group by group (`core`, `smsc`, `smsbox`,
 * `sendsms-user`). A setting that is not in its group is an error: the doc and the test stay in step.
 */
export function withSettings(config: string, settings: Record<string, Record<string, string>>): string {
  const groups = config.trim().split(/\n\s*\n/);
  const out = groups.map((group) => {
    const name = /^group\s*=\s*(\S+)/m.exec(group)?.[1] ?? '';
    let text = group;
    for (const [key, value] of Object.entries(settings[name] ?? {})) {
      const line = new RegExp(`^${key}\\s*=.*$`, 'm');
      if (!line.test(text)) throw new Error(`the documented group ${name} has no ${key}`);
      text = text.replace(line, `${key} = ${value}`);
    }
    return text;
  });
  return `${out.join('\n\n')}\n`;
}

/** A setting of one group of the documented configuration. */
export function documentedSetting(group: string, key: string): string {
  for (const text of documentedConfig()
    .trim()
    .split(/\n\s*\n/)) {
    if (/^group\s*=\s*(\S+)/m.exec(text)?.[1] !== group) continue;
    const value = new RegExp(`^${key}\\s*=\\s*(.*)$`, 'm').exec(text)?.[1];
    if (value !== undefined) return value.trim().replace(/^"(.*)"$/, '$1');
  }
  throw new Error(`the documented group ${group} has no ${key}`);
}

export async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => done(port));
    });
  });
}

export interface Kannel {
  /** smsbox's sendsms interface, `http://127.0.0.1:PORT`. */
  sendsmsUrl: string;
  /** Calls /cgi-bin/sendsms as the documented sendsms user; resolves with Kannel's status and answer. */
  sendsms(params: Record<string, string>): Promise<{ status: number; body: string }>;
  /** bearerbox's status page (status.txt). */
  status(): Promise<string>;
  /** The logs of both boxes so far, and what they printed. */
  logs(): Promise<string>;
  /** Stops both boxes and removes the directory; safe to call twice or after a failed start. */
  stop(): Promise<void>;
}

/** Starts bearerbox and smsbox bound to the SMSC at 127.0.0.1:`smscPort`; resolves once the SMSC link is online. */
/** How long one readiness probe of a box may take. */
const PROBE_MS = 2_000;
/** How long the boxes may take to be ready; a start that fails stops them (up to 5 s a box) and throws. */
const READY_MS = 60_000;
/** What a caller's hook should allow `startKannel`: readiness, then the stop of a failed start. */
export const START_MS = READY_MS + 15_000;

export async function startKannel(smscPort: number): Promise<Kannel> {
  if (KANNEL_DIR === null) throw new Error('Kannel is not installed (apt-get install kannel kannel-extras)');
  const dir = await mkdtemp(join(tmpdir(), 'waybill-kannel-'));
  const children: ChildProcess[] = [];
  let output = '';
  const killOnExit = () => {
    for (const child of children) child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  const stop = async () => {
    // smsbox first: it is bearerbox's client.
    for (const child of children.splice(0).reverse()) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      const exited = new Promise<void>((done) => child.once('exit', () => done()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
    process.removeListener('exit', killOnExit);
    await rm(dir, { recursive: true, force: true });
  };
  const logs = async () => {
    const files = ['bearerbox.log', 'smsbox.log'];
    const texts = await Promise.all(files.map((f) => readFile(join(dir, f), 'utf8').catch(() => '')));
    return `${output}\n${files.map((f, i) => `── ${f}\n${texts[i]}`).join('\n')}`;
  };
  try {
    const [adminPort, boxPort, sendsmsPort] = [await freePort(), await freePort(), await freePort()];
    const password = documentedSetting('core', 'admin-password');
    const config = join(dir, 'kannel.conf');
    await writeFile(
      config,
      withSettings(documentedConfig(), {
        core: {
          'admin-port': String(adminPort),
          'smsbox-port': String(boxPort),
          'log-file': `"${join(dir, 'bearerbox.log')}"`,
        },
        smsc: { host: '127.0.0.1', port: String(smscPort) },
        smsbox: {
          'bearerbox-port': String(boxPort),
          'sendsms-port': String(sendsmsPort),
          'log-file': `"${join(dir, 'smsbox.log')}"`,
        },
      }),
    );
    const start = (box: string) => {
      const child = spawn(join(KANNEL_DIR, box), [config], { stdio: ['ignore', 'pipe', 'pipe'] });
      children.push(child);
      const keep = (chunk: Buffer) => {
        output += chunk.toString();
      };
      child.stdout?.on('data', keep);
      child.stderr?.on('data', keep);
    };
    const sendsmsUrl = `http://127.0.0.1:${sendsmsPort}`;
    // Every probe is bounded: a box that takes the connection but never answers (seen on a loaded machine)
    // must fail the probe, not hang the start past its caller's timeout with the boxes left running.
    const probe = (url: string) => fetch(url, { signal: AbortSignal.timeout(PROBE_MS) });
    const status = async () => {
      const res = await probe(`http://127.0.0.1:${adminPort}/status.txt?password=${password}`);
      return res.text();
    };
    // One deadline for the whole start, within the START_MS that callers give it.
    const deadline = Date.now() + READY_MS;
    const until = async (what: string, ready: () => Promise<boolean>) => {
      for (;;) {
        const exited = children.find((c) => c.exitCode !== null);
        if (exited) throw new Error(`a Kannel box exited with ${exited.exitCode}:\n${await logs()}`);
        if (await ready().catch(() => false)) return;
        if (Date.now() > deadline) throw new Error(`Kannel: ${what} timed out:\n${await logs()}`);
        await new Promise((done) => setTimeout(done, 200));
      }
    };
    // smsbox gives up at once when bearerbox does not listen yet: bearerbox first, until its admin page answers.
    start('bearerbox');
    await until('bearerbox listening', async () => (await status()).length > 0);
    start('smsbox');
    // Ready: bearerbox's SMSC link is bound, and smsbox's sendsms interface answers.
    await until('the SMSC link', async () => /\(online /.test(await status()));
    await until('smsbox', async () => (await probe(`${sendsmsUrl}/cgi-bin/sendsms`)).status > 0);
    const user = {
      username: documentedSetting('sendsms-user', 'username'),
      password: documentedSetting('sendsms-user', 'password'),
    };
    return {
      sendsmsUrl,
      async sendsms(params) {
        const res = await fetch(
          `${sendsmsUrl}/cgi-bin/sendsms?${new URLSearchParams({ ...user, ...params })}`,
        );
        return { status: res.status, body: await res.text() };
      },
      status,
      logs,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

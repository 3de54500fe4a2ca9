/**
 * End to end against a real server: `node packages/server/dist/cli/main.js serve` on an in-memory SQLite
 * database, fed through the operator API (CONTRACT §5). Skips itself until the server is built.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ConnectionError,
  DlrSearchNotSupportedError,
  type FetchFunction,
  hasReceipt,
  InvalidCredentialsError,
  InvalidParametersError,
  isDelivered,
  type MessageRecord,
  MissingParametersError,
  QuotaExceededError,
  RateLimitError,
  type ReceiptEvent,
  UnauthorizedIpError,
  verifyWebhook,
  WaybillClient,
  type WaybillClientOptions,
  type WaybillWarning,
} from '../src/index.js';

const MAIN = fileURLToPath(new URL('../../server/dist/cli/main.js', import.meta.url));
const CLI_DLR = fileURLToPath(new URL('../../server/dist/cli/dlr.js', import.meta.url));
const CLI_MESSAGES = fileURLToPath(new URL('../../server/dist/cli/messages.js', import.meta.url));
const CLI_RECEIPTS = fileURLToPath(new URL('../../server/dist/cli/receipts.js', import.meta.url));
const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const ADMIN_TOKEN = randomBytes(24).toString('hex');
const BASE_MS = Date.parse('2026-11-01T08:00:00.000Z');
const HISTORY_USER = '447700900100';

interface CreatedAccount {
  id: string;
  key: string;
  secret: string;
  callbackSecret: string;
}

let server: ChildProcess | undefined;
let baseUrl = '';

function startServer(): Promise<string> {
  const child = spawn(process.execPath, [MAIN, 'serve', '--port', '0'], {
    cwd: ROOT,
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      DATABASE_URL: 'sqlite::memory:',
      WAYBILL_ADMIN_TOKEN: ADMIN_TOKEN,
      WAYBILL_PEPPER: randomBytes(32).toString('hex'),
      WAYBILL_ACCESS_LOG: 'off',
      WAYBILL_RATE_PER_SECOND: '0',
      WAYBILL_LOCKOUT_FAILURES: '3',
      WAYBILL_V1_SUNSET: '2099-01-01T00:00:00Z',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  server = child;
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 30_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening at (http:\/\/[^\s"]+)/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code}:\n${output}`));
    });
  });
}

async function admin<T>(method: string, path: string, body: unknown, expected = 200): Promise<T> {
  const response = await fetch(`${baseUrl}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status !== expected) throw new Error(`${method} ${path} -> ${response.status}: ${text}`);
  return JSON.parse(text) as T;
}

const createAccount = (settings: Record<string, unknown> = {}): Promise<CreatedAccount> =>
  admin(
    'POST',
    '/accounts',
    { name: `e2e-${randomBytes(4).toString('hex')}`, ipWhitelist: [], ...settings },
    201,
  );

function clientFor(
  account: { key: string; secret: string },
  options: WaybillClientOptions = {},
): WaybillClient {
  return new WaybillClient({ baseUrl, key: account.key, secret: account.secret, maxRetries: 0, ...options });
}

/** A fetch that counts requests per path and can pretend to be an old server without GET /messages. */
function countingFetch(options: { withoutMessagesEndpoint?: boolean } = {}) {
  const paths: string[] = [];
  const fetchFn: FetchFunction = (input, init) => {
    const url = new URL(input);
    paths.push(url.pathname);
    if (options.withoutMessagesEndpoint && url.pathname === '/messages') {
      return Promise.resolve(new Response('{"message":"Route GET:/messages not found"}', { status: 404 }));
    }
    return fetch(input, init);
  };
  return { fetch: fetchFn, paths };
}

/**
 * Runs one exported CLI command of the built server in a child process, against the test server; `env`
 * carries the account's WAYBILL_KEY and WAYBILL_SECRET.
 */
async function runCli(file: string, fn: string, args: string[], env: Record<string, string>) {
  const script = `const m = await import(${JSON.stringify(file)}); process.exitCode = await m.${fn}(process.argv.slice(1));`;
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--input-type=module', '-e', script, '--', ...args],
      {
        env: {
          ...process.env,
          WAYBILL_URL: baseUrl,
          ...env,
        },
      },
    );
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const historyIds = Array.from({ length: 45 }, (_, i) => `h-${String(i).padStart(3, '0')}`);

describe.skipIf(!existsSync(MAIN))('end to end against the real server', () => {
  let main: CreatedAccount;
  let client: WaybillClient;

  beforeAll(async () => {
    baseUrl = await startServer();
    main = await createAccount();
    client = clientFor(main);
    await admin('POST', `/accounts/${main.id}/messages`, {
      messages: [
        { id: 'sms-1', channel: 'SMS', channelUserId: '447700900001', text: 'Hi', sms: { status: '0' } },
        { id: 'sms-1', channel: 'SMS', channelUserId: '447700900002', text: 'Hi', sms: { status: '0' } },
        ...historyIds.map((id, i) => ({
          id,
          channel: 'SMS',
          channelUserId: HISTORY_USER,
          createdAt: new Date(BASE_MS + i * 1000).toISOString(),
          text: `history ${i}`,
          ...(i % 3 === 0 ? { campaignId: 'camp-1' } : {}),
          sms: { status: '0' },
        })),
        {
          id: 'wa-1',
          channel: 'WHATSAPP',
          channelUserId: 'wa-user-1',
          campaignId: 'camp-1',
          createdAt: new Date(BASE_MS + 100_000).toISOString(),
          text: 'Hello on WhatsApp',
        },
      ],
    });
    await admin('POST', `/accounts/${main.id}/receipts`, {
      receipts: [
        {
          messageId: 'sms-1',
          to: '447700900001',
          drStatuscode: 'delivered',
          drTime: '2026-11-22 10:00:05.120',
        },
        ...historyIds.slice(0, 10).map((messageId) => ({ messageId, drStatuscode: 'delivered' })),
      ],
    });
  });

  afterAll(async () => {
    if (server && server.exitCode === null) {
      const exited = new Promise((resolve) => server?.once('exit', resolve));
      server.kill('SIGTERM');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
      if (server.exitCode === null && server.signalCode === null) server.kill('SIGKILL');
    }
  });

  describe('dlr.get', () => {
    it('returns one normalized item per recipient, in ingest order', async () => {
      const items = await client.dlr.get('sms-1');
      expect(items.map((i) => i.to)).toEqual(['447700900001', '447700900002']);
      const [delivered, pending] = items;
      if (!delivered || !pending) throw new Error('two items expected');
      expect(isDelivered(delivered)).toBe(true);
      if (!hasReceipt(delivered)) throw new Error('receipt expected');
      expect(delivered).toMatchObject({
        type: 'dlr',
        messageid: 'sms-1',
        status: '0',
        drStatus: 0,
        drErrcode: '0',
      });
      expect(delivered.drTime).toBe('2026-11-22 10:00:05.120');
      expect(delivered.drTimeDate.toISOString()).toBe('2026-11-22T10:00:05.120Z');
      expect(hasReceipt(pending)).toBe(false);
      expect(pending.status).toBe('0');
    });

    it('returns [] for an unknown id', async () => {
      await expect(client.dlr.get('no-such-id')).resolves.toEqual([]);
    });

    it('throws MissingParametersError (2) for an empty id', async () => {
      await expect(client.dlr.get('')).rejects.toMatchObject({
        constructor: MissingParametersError,
        code: 2,
      });
    });

    it('throws InvalidParametersError (3) for a malformed id', async () => {
      const err = await client.dlr.get('bad id!').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidParametersError);
      expect(err).toMatchObject({ code: 3, status: 400, descr: 'Invalid parameters' });
    });

    it('throws InvalidCredentialsError (4) for a wrong secret or an unknown key, with the request id', async () => {
      const wrongSecret = await clientFor({ key: main.key, secret: 'WRONGSEC' })
        .dlr.get('sms-1')
        .catch((e: unknown) => e);
      expect(wrongSecret).toBeInstanceOf(InvalidCredentialsError);
      expect(wrongSecret).toMatchObject({ code: 4, status: 401 });
      expect((wrongSecret as InvalidCredentialsError).requestId).toMatch(/.+/);
      await expect(
        clientFor({ key: 'NOSUCHKY', secret: 'WRONGSEC' }).dlr.get('sms-1'),
      ).rejects.toBeInstanceOf(InvalidCredentialsError);
      await client.dlr.get('sms-1'); // a success resets the failure count
    });

    it('throws UnauthorizedIpError (5) outside the whitelist', async () => {
      const fenced = clientFor(await createAccount({ ipWhitelist: ['203.0.113.0/24'] }));
      await expect(fenced.dlr.get('sms-1')).rejects.toMatchObject({
        constructor: UnauthorizedIpError,
        status: 403,
      });
      await expect(fenced.messages.get(['sms-1'])).rejects.toMatchObject({
        constructor: UnauthorizedIpError,
        problemCode: 'ip_not_allowed',
      });
    });

    it('throws DlrSearchNotSupportedError (20) when DLR queries are off', async () => {
      const off = clientFor(await createAccount({ dlrQueryEnabled: false }));
      await expect(off.dlr.get('sms-1')).rejects.toMatchObject({
        constructor: DlrSearchNotSupportedError,
        code: 20,
      });
    });

    it('throws QuotaExceededError (9) below the credit limit', async () => {
      const broke = clientFor(await createAccount({ balance: -1, creditLimit: 0 }));
      await expect(broke.dlr.get('sms-1')).rejects.toMatchObject({
        constructor: QuotaExceededError,
        code: 9,
      });
    });

    it('throws RateLimitError (429) for a locked-out key, without waiting 15 minutes', async () => {
      const account = await createAccount();
      const wrong = clientFor({ key: account.key, secret: 'WRONGSEC' });
      for (let i = 0; i < 3; i++)
        await expect(wrong.dlr.get('x')).rejects.toBeInstanceOf(InvalidCredentialsError);
      const right = clientFor(account, { maxRetries: 2 });
      const err = await right.dlr.get('x').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RateLimitError);
      expect((err as RateLimitError).retryAfterSeconds).toBeGreaterThan(60);
      await expect(right.messages.get(['x'])).rejects.toMatchObject({
        constructor: RateLimitError,
        problemCode: 'locked_out',
      });
    });
  });

  describe('messages', () => {
    it('gets 45 ids in 3 requests of at most 20, merged oldest first', async () => {
      const counting = countingFetch();
      const wanted = [...historyIds].reverse().concat('no-such-id');
      const records = await clientFor(main, { fetch: counting.fetch }).messages.get(wanted);
      expect(counting.paths).toEqual(['/messages', '/messages', '/messages']);
      expect(records.map((r) => r.id)).toEqual(historyIds);
      expect(records[0]).toMatchObject({
        channel: 'SMS',
        direction: 'outbound',
        channelUserId: HISTORY_USER,
      });
      expect(records[0]?.status).toBe('delivered');
      expect(records[44]?.status).toBe('sent');
    });

    it('gives one record per recipient of an SMS id', async () => {
      const records = await client.messages.get(['sms-1']);
      expect(records.map((r) => r.channelUserId).sort()).toEqual(['447700900001', '447700900002']);
      expect(records.map((r) => r.status).sort()).toEqual(['delivered', 'sent']);
    });

    it('walks a 45-message history newest to oldest across pages', async () => {
      const counting = countingFetch();
      const pager = clientFor(main, { fetch: counting.fetch }).messages.history({
        channel: 'SMS',
        channelUserId: HISTORY_USER,
        size: 10,
      });
      const seen: MessageRecord[] = [];
      for await (const m of pager) seen.push(m);
      expect(seen.map((m) => m.id)).toEqual([...historyIds].reverse());
      expect(counting.paths).toHaveLength(5);

      const pages = [];
      for await (const page of pager.pages()) pages.push(page);
      expect(pages.map((p) => p.messages.length)).toEqual([10, 10, 10, 10, 5]);
      expect(pages[0]?.messages.map((m) => m.id)).toEqual(historyIds.slice(35));
      expect(pages.at(-1)).toMatchObject({ hasMore: false, nextCursor: null });
    });

    it('walks the same history by contactId, and resumes from a cursor', async () => {
      const [first] = await client.messages.get(['h-000']);
      if (!first) throw new Error('h-000 expected');
      const pager = client.messages.history({ channel: 'SMS', contactId: first.contactId, size: 20 });
      expect((await pager.take(100)).map((m) => m.id)).toEqual([...historyIds].reverse());
      const firstPage = (await pager.pages().next()).value;
      const rest = await client.messages
        .history({
          channel: 'SMS',
          contactId: first.contactId,
          size: 20,
          cursor: firstPage?.nextCursor ?? '',
        })
        .take(100);
      expect(rest.map((m) => m.id)).toEqual(historyIds.slice(0, 25).reverse());
    });

    it('filters history by campaign and lists a campaign across channels', async () => {
      const inCampaign = historyIds.filter((_, i) => i % 3 === 0);
      const filtered = await client.messages
        .history({ channel: 'SMS', channelUserId: HISTORY_USER, campaignId: 'camp-1', size: 4 })
        .take(100);
      expect(filtered.map((m) => m.id)).toEqual([...inCampaign].reverse());
      const campaign = await client.messages.campaign('camp-1', { size: 7 }).take(100);
      expect(campaign.map((m) => m.id)).toEqual(['wa-1', ...[...inCampaign].reverse()]);
      const smsOnly = await client.messages.campaign('camp-1', { channel: 'SMS' }).take(100);
      expect(smsOnly).toHaveLength(inCampaign.length);
    });

    it('gives an empty history for an unknown contact', async () => {
      await expect(
        client.messages.history({ channel: 'SMS', channelUserId: '447700999999' }).take(5),
      ).resolves.toEqual([]);
    });

    it('throws InvalidParametersError for a page size out of range', async () => {
      const err = await client.messages
        .history({ channel: 'SMS', channelUserId: HISTORY_USER, size: 500 })
        .take(1)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidParametersError);
      expect(err).toMatchObject({ status: 400, problemCode: 'invalid_request', param: 'size' });
    });

    it('throws InvalidCredentialsError for a wrong secret', async () => {
      const err = await clientFor({ key: main.key, secret: 'WRONGSEC' })
        .messages.get(['h-000'])
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidCredentialsError);
      expect(err).toMatchObject({ status: 401, problemCode: 'unauthorized' });
      await client.messages.get(['h-000']);
    });
  });

  describe('the deprecated v1 endpoint', () => {
    it('is used after a 404 on /messages, with one warning, for lists and history', async () => {
      const counting = countingFetch({ withoutMessagesEndpoint: true });
      const warnings: WaybillWarning[] = [];
      const old = clientFor(main, { fetch: counting.fetch, onWarning: (w) => warnings.push(w) });

      const records = await old.messages.get(historyIds);
      expect(records.map((r) => r.id)).toEqual(historyIds);
      const walked = await old.messages
        .history({ channel: 'SMS', channelUserId: HISTORY_USER, size: 10 })
        .take(45);
      expect(walked.map((m) => m.id)).toEqual([...historyIds].reverse());

      expect(warnings).toHaveLength(1);
      const v1 = counting.paths.filter((p) => p === '/api/v1/contacts/messages');
      expect(v1).toHaveLength(3 + 5);
    });

    it('answers with deprecation headers', async () => {
      const response = await fetch(`${baseUrl}/api/v1/contacts/messages?messageIds=h-000`, {
        headers: { authorization: `Basic ${btoa(`${main.key}:${main.secret}`)}` },
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('deprecation')).toMatch(/^@\d+$/);
      expect(response.headers.get('sunset')).toBe('Thu, 01 Jan 2099 00:00:00 GMT');
    });
  });

  describe('transport', () => {
    it('throws ConnectionError when nothing listens', async () => {
      const nowhere = new WaybillClient({
        baseUrl: 'http://127.0.0.1:9',
        key: main.key,
        secret: main.secret,
        maxRetries: 0,
      });
      await expect(nowhere.dlr.get('sms-1')).rejects.toBeInstanceOf(ConnectionError);
    });
  });

  describe('receipts feed', () => {
    const FEED_TO = ['447700900301', '447700900302', '447700900303'];
    let feedAccount: CreatedAccount;
    let feedClient: WaybillClient;

    beforeAll(async () => {
      feedAccount = await createAccount();
      feedClient = clientFor(feedAccount);
      await admin('POST', `/accounts/${feedAccount.id}/messages`, {
        messages: FEED_TO.map((to) => ({
          id: 'feed-1',
          channel: 'SMS',
          channelUserId: to,
          sms: { status: '0' },
        })),
      });
      await admin('POST', `/accounts/${feedAccount.id}/receipts`, {
        receipts: [
          {
            messageId: 'feed-1',
            to: FEED_TO[0],
            drStatuscode: 'accepted',
            drTime: '2026-11-22 10:00:01.000',
          },
          {
            messageId: 'feed-1',
            to: FEED_TO[1],
            drStatuscode: 'accepted',
            drTime: '2026-11-22 10:00:01.000',
          },
          {
            messageId: 'feed-1',
            to: FEED_TO[0],
            drStatuscode: 'delivered',
            drTime: '2026-11-22 10:00:02.000',
          },
          // Ignored (a lower rank): no event.
          {
            messageId: 'feed-1',
            to: FEED_TO[0],
            drStatuscode: 'accepted',
            drTime: '2026-11-22 10:00:03.000',
          },
          {
            messageId: 'feed-1',
            to: FEED_TO[1],
            drStatuscode: 'failed',
            drErrcode: 3,
            drTime: '2026-11-22 10:00:04.000',
          },
        ],
      });
    });

    it('lists every applied receipt oldest first, normalized, and ends with a resumable cursor', async () => {
      const feed = feedClient.receipts.list();
      const events: ReceiptEvent[] = [];
      for await (const event of feed) events.push(event);
      expect(events.map((e) => [e.receipt.to, e.receipt.drStatuscode])).toEqual([
        [FEED_TO[0], 'accepted'],
        [FEED_TO[1], 'accepted'],
        [FEED_TO[0], 'delivered'],
        [FEED_TO[1], 'failed'],
      ]);
      for (const e of events) {
        expect(e.id).toMatch(/^evt_[0-9A-Za-z]{26}$/);
        expect(e.recordedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      }
      expect(new Set(events.map((e) => e.id)).size).toBe(4);
      const failed = events[3]?.receipt;
      expect(failed).toMatchObject({
        type: 'dlr',
        messageid: 'feed-1',
        status: '0',
        drStatus: 400,
        drErrcode: '3',
      });
      expect(failed?.drTimeDate?.toISOString()).toBe('2026-11-22T10:00:04.000Z');
      expect(typeof feed.nextCursor).toBe('string');

      // Caught up: the cursor gives an empty page that keeps its place.
      const pages = [];
      for await (const page of feedClient.receipts.list({ after: feed.nextCursor }).pages()) pages.push(page);
      expect(pages).toEqual([{ receipts: [], nextCursor: feed.nextCursor, hasMore: false }]);
    });

    it('pages with limit and resumes from any nextCursor with no gap and no duplicate', async () => {
      const all = [];
      for await (const e of feedClient.receipts.list()) all.push(e.id);
      const pages = [];
      for await (const page of feedClient.receipts.list({ limit: 3 }).pages()) pages.push(page);
      expect(pages.map((p) => [p.receipts.length, p.hasMore])).toEqual([
        [3, true],
        [1, false],
      ]);
      const rest = [];
      for await (const e of feedClient.receipts.list({ after: pages[0]?.nextCursor })) rest.push(e.id);
      expect(rest).toEqual(all.slice(3));
    });

    it('follows: polls after an empty page and yields each new event once, until aborted', async () => {
      const start = feedClient.receipts.list();
      for await (const _ of start) {
        // drain to the end to learn the cursor
      }
      const controller = new AbortController();
      const follower = feedClient.receipts.follow({
        after: start.nextCursor,
        intervalMs: 50,
        signal: controller.signal,
      });
      const seen: ReceiptEvent[] = [];
      const following = (async () => {
        for await (const e of follower) {
          seen.push(e);
          if (seen.length === 2) setTimeout(() => controller.abort(), 200); // room for a wrong extra event
        }
      })();
      await new Promise((resolve) => setTimeout(resolve, 150)); // a few empty polls
      expect(seen).toEqual([]);
      await admin('POST', `/accounts/${feedAccount.id}/receipts`, {
        receipts: [{ messageId: 'feed-1', to: FEED_TO[2], drStatuscode: 'accepted' }],
      });
      await admin('POST', `/accounts/${feedAccount.id}/receipts`, {
        receipts: [
          { messageId: 'feed-1', to: FEED_TO[2], drStatuscode: 'accepted' }, // ignored: the same rank, no change
          { messageId: 'feed-1', to: FEED_TO[2], drStatuscode: 'delivered' },
        ],
      });
      await following;
      expect(seen.map((e) => e.receipt.drStatuscode)).toEqual(['accepted', 'delivered']);
      expect(seen.every((e) => e.receipt.to === FEED_TO[2])).toBe(true);
      const after = [];
      for await (const e of feedClient.receipts.list({ after: follower.nextCursor })) after.push(e);
      expect(after).toEqual([]);
    });

    it('maps failures to the error classes', async () => {
      await expect(
        clientFor({ key: feedAccount.key, secret: 'WRONGSEC' }).receipts.list().pages().next(),
      ).rejects.toMatchObject({ constructor: InvalidCredentialsError, problemCode: 'unauthorized' });
      const { value: page } = await feedClient.receipts.list({ limit: 1 }).pages().next();
      const forged = `${page?.nextCursor ?? ''}x`;
      await expect(feedClient.receipts.list({ after: forged }).pages().next()).rejects.toMatchObject({
        constructor: InvalidParametersError,
        problemCode: 'invalid_request',
      });
      // Another account's cursor is refused too.
      await expect(client.receipts.list({ after: page?.nextCursor }).pages().next()).rejects.toBeInstanceOf(
        InvalidParametersError,
      );
      await expect(feedClient.receipts.list({ limit: 1001 }).pages().next()).rejects.toMatchObject({
        constructor: InvalidParametersError,
        param: 'limit',
      });
    });

    it.skipIf(!existsSync(CLI_RECEIPTS))(
      'waybill receipts prints the feed and the cursor to resume with',
      async () => {
        const env = { WAYBILL_KEY: feedAccount.key, WAYBILL_SECRET: feedAccount.secret };
        const table = await runCli(CLI_RECEIPTS, 'receiptsCommand', [], env);
        expect(table.code, table.stderr).toBe(0);
        expect(table.stdout).toContain('feed-1');
        expect(table.stdout).toContain('delivered');
        const cursor = /--after (\S+)/.exec(table.stdout)?.[1];
        expect(cursor).toBeDefined();
        const json = await runCli(CLI_RECEIPTS, 'receiptsCommand', ['--json', '--limit', '4'], env);
        expect(json.code, json.stderr).toBe(0);
        const lines = json.stdout
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as { receipts: unknown[]; hasMore: boolean; nextCursor: string });
        const ids: string[] = [];
        for await (const e of feedClient.receipts.list()) ids.push(e.id);
        const sizes = Array.from({ length: Math.ceil(ids.length / 4) }, (_, i) =>
          Math.min(4, ids.length - i * 4),
        );
        expect(lines.map((p) => p.receipts.length)).toEqual(sizes);
        expect(lines.flatMap((p) => (p.receipts as { id: string }[]).map((e) => e.id))).toEqual(ids);
        expect(lines.at(-1)?.nextCursor).toBe(cursor);
        const none = await runCli(CLI_RECEIPTS, 'receiptsCommand', ['--after', cursor ?? '', '--json'], env);
        expect(JSON.parse(none.stdout)).toEqual({ receipts: [], nextCursor: cursor, hasMore: false });
        expect((await runCli(CLI_RECEIPTS, 'receiptsCommand', ['--after', 'nonsense'], env)).code).toBe(1);
      },
    );
  });

  describe('webhooks', () => {
    it('verifies a delivery signed with the account callbackSecret', async () => {
      expect(main.callbackSecret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
      const [item] = await client.dlr.get('sms-1');
      const body = JSON.stringify(item);
      const timestamp = String(Math.floor(Date.now() / 1000));
      const key = Buffer.from(main.callbackSecret.slice('whsec_'.length), 'base64');
      const signature = createHmac('sha256', key).update(`msg_e2e.${timestamp}.${body}`).digest('base64');
      const verified = await verifyWebhook(
        body,
        { 'webhook-id': 'msg_e2e', 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${signature}` },
        main.callbackSecret,
      );
      expect(verified).toMatchObject({ messageid: 'sms-1', to: '447700900001', drStatuscode: 'delivered' });
    });
  });

  describe.skipIf(!existsSync(CLI_DLR) || !existsSync(CLI_MESSAGES))('the CLI client commands', () => {
    const run = (file: string, fn: string, args: string[], env: Record<string, string> = {}) =>
      runCli(file, fn, args, { WAYBILL_KEY: main.key, WAYBILL_SECRET: main.secret, ...env });

    it('waybill dlr prints JSON and a table, and maps failures to exit codes', async () => {
      const json = await run(CLI_DLR, 'dlrCommand', ['sms-1', '--json']);
      expect(json.code).toBe(0);
      expect((JSON.parse(json.stdout) as unknown[]).length).toBe(2);
      const table = await run(CLI_DLR, 'dlrCommand', ['sms-1']);
      expect(table.stdout).toContain('447700900001');
      expect(table.stdout).toContain('delivered');
      expect((await run(CLI_DLR, 'dlrCommand', ['sms-1', '--secret', 'WRONGSEC'])).code).toBe(1);
      expect((await run(CLI_DLR, 'dlrCommand', [])).code).toBe(2);
      expect((await run(CLI_DLR, 'dlrCommand', ['sms-1', '--url', 'http://127.0.0.1:9'])).code).toBe(3);
    });

    it('waybill messages lists ids and walks history', async () => {
      // --json prints the API's own envelope: one page, with the cursor to the next one.
      type Envelope = { messages: MessageRecord[]; nextCursor: string | null; hasMore: boolean };
      const ids = await run(CLI_MESSAGES, 'messagesCommand', ['--ids', 'h-001,h-000', '--json']);
      expect(ids.code).toBe(0);
      const byIds = JSON.parse(ids.stdout) as Envelope;
      expect(byIds.messages.map((m) => m.id)).toEqual(['h-000', 'h-001']);
      expect(byIds).toMatchObject({ nextCursor: null, hasMore: false });
      const history = await run(CLI_MESSAGES, 'messagesCommand', [
        '--channel',
        'sms',
        '--user',
        HISTORY_USER,
        '--size',
        '12',
        '--json',
      ]);
      expect(history.code).toBe(0);
      const page = JSON.parse(history.stdout) as Envelope;
      expect(page.messages.map((m) => m.id)).toEqual(historyIds.slice(-12));
      expect(page.hasMore).toBe(true);
      expect(page.nextCursor).toEqual(expect.any(String));
      const table = await run(CLI_MESSAGES, 'messagesCommand', ['--channel', 'SMS', '--user', HISTORY_USER]);
      expect(table.stdout).toContain('history 44');
      expect((await run(CLI_MESSAGES, 'messagesCommand', ['--channel', 'SMS'])).code).toBe(2);
    });
  });
});

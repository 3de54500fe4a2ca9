import { parseArgs } from 'node:util';
import { describeErrcode, hasReceipt, type ReceiptEvent, type ReceiptPage } from '@waybill/client';
import { MAX_FEED_LIMIT } from '../domain/query-params.js';
import {
  CLIENT_OPTIONS,
  cell,
  clientFromFlags,
  parseCommandLine,
  reportFailure,
  requestOptions,
  usageError,
} from './client-commands.js';
import { EXIT } from './options.js';

/** `waybill receipts`: the account's receipt feed (GET /receipts), caught up once or followed, through the SDK. */

const USAGE = `Usage: waybill receipts [--after CURSOR] [--limit N] [--follow [--interval SECONDS]] [--json]

Shows the account's receipt events (GET /receipts), oldest first: every receipt the service applied, with
the recipient's state right after it. Without --follow it reads up to now and prints the cursor to resume
with; with --follow it then keeps polling for new events until Ctrl-C (exit code 0).

  --after CURSOR     start after this cursor (a cursor printed earlier) instead of at the oldest event
  --limit N          events per request, 1-${MAX_FEED_LIMIT} (default: 100)
  --follow           keep polling for new events until interrupted
  --interval SECONDS wait between polls once caught up, with --follow (default: 2)
  --json             print each page as the API returns it, one JSON object per line; with --follow,
                     one JSON line per event (the cursor to resume with goes to stderr on exit)
  --url URL          the server (default: $WAYBILL_URL)
  --key KEY          API key (default: $WAYBILL_KEY)
  --secret SECRET    API secret (default: $WAYBILL_SECRET)
  --timeout MS       give up on a request after MS milliseconds (default: 30000)

Exit codes: 0 success, 1 the API answered with an error, 2 bad usage, 3 the server could not be reached.`;

interface Plan {
  after: string | undefined;
  limit: number | undefined;
  follow: boolean;
  intervalMs: number | undefined;
  json: boolean;
}

export async function receiptsCommand(args: string[]): Promise<number> {
  const parsed = parseCommandLine(args, parseReceiptsArgs, USAGE);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  if (positionals.length > 0) return usageError(`unexpected argument: ${positionals[0]}`, USAGE);
  const plan = planFeed(values);
  if (typeof plan === 'string') return usageError(plan, USAGE);
  const client = clientFromFlags(values, USAGE);
  if (typeof client === 'number') return client;

  let options: { timeoutMs?: number };
  try {
    options = requestOptions(values);
  } catch (err) {
    return reportFailure(err);
  }
  const params = { ...options, after: plan.after, limit: plan.limit };
  return plan.follow ? follow(client, params, plan) : catchUp(client, params, plan);
}

function parseReceiptsArgs(args: string[]) {
  return parseArgs({
    args,
    options: {
      ...CLIENT_OPTIONS,
      after: { type: 'string' },
      limit: { type: 'string' },
      follow: { type: 'boolean', default: false },
      interval: { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  });
}

/** Checks the flags; a string is what is wrong with them. */
function planFeed(values: {
  after?: string | undefined;
  limit?: string | undefined;
  follow?: boolean | undefined;
  interval?: string | undefined;
  json?: boolean | undefined;
}): Plan | string {
  const { after } = values;
  if (after !== undefined && after.trim() === '') return '--after needs a cursor';
  let limit: number | undefined;
  if (values.limit !== undefined) {
    limit = Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_FEED_LIMIT)
      return `--limit must be a whole number from 1 to ${MAX_FEED_LIMIT}`;
  }
  let intervalMs: number | undefined;
  if (values.interval !== undefined) {
    if (!values.follow) return '--interval only applies with --follow';
    const seconds = Number(values.interval);
    if (values.interval.trim() === '' || !Number.isFinite(seconds) || seconds <= 0)
      return '--interval must be a positive number of seconds';
    intervalMs = Math.round(seconds * 1000);
  }
  return {
    after: after?.trim(),
    limit,
    follow: values.follow === true,
    intervalMs,
    json: values.json === true,
  };
}

type Client = Exclude<ReturnType<typeof clientFromFlags>, number>;
type FeedParams = { after: string | undefined; limit: number | undefined; timeoutMs?: number };

/** Reads the feed up to now: every page, then the cursor to resume with. */
async function catchUp(client: Client, params: FeedParams, plan: Plan): Promise<number> {
  const out = new Output();
  const feed = client.receipts.list(params);
  let count = 0;
  try {
    for await (const page of feed.pages()) {
      if (out.closed) break;
      if (plan.json) {
        out.write(`${JSON.stringify(wirePage(page))}\n`);
      } else {
        if (count === 0 && page.receipts.length > 0) out.write(HEADER);
        for (const event of page.receipts) out.write(row(event));
      }
      count += page.receipts.length;
    }
  } catch (err) {
    return reportFailure(err);
  } finally {
    out.detach();
  }
  if (!plan.json && !out.closed) {
    const where = plan.after === undefined ? 'yet' : 'after this cursor';
    const summary =
      count === 0 ? `No receipt events ${where}.` : `${count} receipt event${count === 1 ? '' : 's'}.`;
    out.write(`${count === 0 ? '' : '\n'}${summary} Resume with: ${resumeHint(feed.nextCursor)}\n`);
  }
  return EXIT.ok;
}

/** Follows the feed until SIGINT or SIGTERM (exit 0), printing each event as it comes. */
async function follow(client: Client, params: FeedParams, plan: Plan): Promise<number> {
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const out = new Output(stop);
  const follower = client.receipts.follow({
    ...params,
    intervalMs: plan.intervalMs,
    signal: controller.signal,
  });
  // Where to resume: to stdout under the table, to stderr beside JSON lines (stdout stays pure JSON).
  const tell = (line: string) => (plan.json || out.closed ? process.stderr : process.stdout).write(line);
  try {
    if (!plan.json) out.write(HEADER);
    for await (const event of follower) {
      out.write(plan.json ? `${JSON.stringify(wireEvent(event))}\n` : row(event));
    }
    if (follower.nextCursor !== undefined) tell(`Resume with: ${resumeHint(follower.nextCursor)}\n`);
    return EXIT.ok;
  } catch (err) {
    const code = reportFailure(err);
    if (follower.nextCursor !== undefined)
      process.stderr.write(`waybill: resume with: ${resumeHint(follower.nextCursor)}\n`);
    return code;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    out.detach();
  }
}

/** stdout that notices a reader going away (`| head`) instead of crashing on EPIPE. */
class Output {
  closed = false;
  readonly #onError: (err: NodeJS.ErrnoException) => void;

  constructor(onClosed: () => void = () => {}) {
    this.#onError = (err) => {
      if (err.code !== 'EPIPE') throw err;
      this.closed = true;
      onClosed();
    };
    process.stdout.on('error', this.#onError);
  }

  write(text: string): void {
    if (!this.closed) process.stdout.write(text);
  }

  detach(): void {
    process.stdout.off('error', this.#onError);
  }
}

/** The event as the API sent it: the SDK's added `drTimeDate` left out. */
function wireEvent(event: ReceiptEvent): ReceiptEvent {
  const { drTimeDate: _parsed, ...receipt } = event.receipt;
  return { id: event.id, recordedAt: event.recordedAt, receipt: receipt as ReceiptEvent['receipt'] };
}

const wirePage = (page: ReceiptPage) => ({
  receipts: page.receipts.map(wireEvent),
  nextCursor: page.nextCursor,
  hasMore: page.hasMore,
});

// Fixed widths, so rows printed as they arrive line up (an id is `evt_` + 26 characters).
const WIDTHS = [30, 24, 20, 15, 9] as const;

const line = (cells: readonly string[]): string =>
  `${cells
    .map((value, i) => (i < WIDTHS.length ? value.padEnd(WIDTHS[i] ?? 0) : value))
    .join('  ')
    .trimEnd()}\n`;

const HEADER = line(['ID', 'RECORDED (UTC)', 'MESSAGEID', 'TO', 'RECEIPT', 'ERRCODE']);

function row(event: ReceiptEvent): string {
  const { receipt } = event;
  const status = hasReceipt(receipt) ? receipt.drStatuscode : '-';
  const errcode = hasReceipt(receipt)
    ? `${receipt.drErrcode} ${describeErrcode(receipt.drErrcode) ?? '(unlisted code)'}`
    : '-';
  return line([event.id, event.recordedAt, receipt.messageid, receipt.to, status, errcode].map(cell));
}

/** The command line that resumes at `cursor`, quoted for a POSIX shell when it needs to be. */
function resumeHint(cursor: string | undefined): string {
  if (cursor === undefined) return 'waybill receipts';
  const quoted = /^[A-Za-z0-9._~=-]+$/.test(cursor) ? cursor : `'${cursor.replaceAll("'", `'\\''`)}'`;
  return `waybill receipts --after ${quoted}`;
}

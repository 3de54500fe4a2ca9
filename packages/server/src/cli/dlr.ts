import { parseArgs } from 'node:util';
import {
  type DlrItem,
  describeErrcode,
  hasReceipt,
  isApiError,
  isConnectionError,
  isTimeoutError,
  isWaybillError,
  WaybillClient,
} from '@waybill/client';

/** `waybill dlr <messageid>`: the delivery state of every SMS recipient of a message, through the SDK. */

const USAGE = `Usage: waybill dlr <messageid> [--json] [--url URL] [--key KEY] [--secret SECRET]

Shows the delivery state of every SMS recipient of a message (GET /dlr).

  --json           print the receipt items as JSON (for scripts)
  --url URL        the server (default: $WAYBILL_URL)
  --key KEY        API key (default: $WAYBILL_KEY)
  --secret SECRET  API secret (default: $WAYBILL_SECRET)
  --timeout MS     give up after MS milliseconds (default: 30000)

Exit codes: 0 success, 1 the API answered with an error, 2 bad usage, 3 the server could not be reached.`;

/** Options every client command takes: where the server is and who is asking. */
export const CLIENT_OPTIONS = {
  url: { type: 'string' },
  key: { type: 'string' },
  secret: { type: 'string' },
  timeout: { type: 'string' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

/** The CLI's exit codes (CONTRACT §8). */
export const EXIT = { ok: 0, apiError: 1, usage: 2, unreachable: 3 } as const;

export async function dlrCommand(args: string[]): Promise<number> {
  let parsed: ReturnType<typeof parseDlrArgs>;
  try {
    parsed = parseDlrArgs(args);
  } catch (err) {
    return usageError((err as Error).message, USAGE);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return EXIT.ok;
  }
  const [messageId, ...extra] = positionals;
  if (messageId === undefined || extra.length > 0)
    return usageError('expected exactly one message id', USAGE);

  const client = clientFromFlags(values, USAGE);
  if (typeof client === 'number') return client;
  try {
    const items = await client.dlr.get(messageId, requestOptions(values));
    if (values.json) process.stdout.write(`${JSON.stringify(items, null, 2)}\n`);
    else process.stdout.write(renderDlr(messageId, items));
    return EXIT.ok;
  } catch (err) {
    return reportFailure(err);
  }
}

function parseDlrArgs(args: string[]) {
  return parseArgs({ args, options: CLIENT_OPTIONS, allowPositionals: true, strict: true });
}

function renderDlr(messageId: string, items: DlrItem[]): string {
  if (items.length === 0) return `No SMS recipients found for message id ${cell(messageId)}.\n`;
  const rows = items.map((item) => {
    const receipt = hasReceipt(item)
      ? [
          `${item.drStatuscode} (${item.drStatus})`,
          `${item.drErrcode} ${describeErrcode(item.drErrcode) ?? '(unlisted code)'}`,
          item.drTime,
        ]
      : ['-', '-', '-'];
    return [
      item.to,
      sendStatusLabel(item.status),
      ...receipt,
      item.network ?? '-',
      String(item.price),
      String(item.counts),
    ];
  });
  return renderTable(
    ['TO', 'SEND STATUS', 'RECEIPT', 'ERRCODE', 'DR TIME (UTC)', 'NETWORK', 'PRICE', 'COUNTS'],
    rows,
  );
}

function sendStatusLabel(status: string): string {
  const label = ({ '1': 'in progress', '0': 'submitted', '400': 'submit failed' } as Record<string, string>)[
    status
  ];
  return label === undefined ? status : `${status} ${label}`;
}

/**
 * Builds the SDK client from `--url/--key/--secret` or `WAYBILL_URL/KEY/SECRET`, or reports a usage error
 * and returns its exit code.
 */
export function clientFromFlags(
  values: { url?: string | undefined; key?: string | undefined; secret?: string | undefined },
  usage: string,
): WaybillClient | number {
  const env = (name: string) => (process.env[name]?.trim() ? process.env[name]?.trim() : undefined);
  const baseUrl = values.url ?? env('WAYBILL_URL');
  const key = values.key ?? env('WAYBILL_KEY');
  const secret = values.secret ?? env('WAYBILL_SECRET');
  if (baseUrl === undefined) return usageError('no server: pass --url or set WAYBILL_URL', usage);
  if (key === undefined || secret === undefined) {
    return usageError('no credentials: pass --key and --secret or set WAYBILL_KEY and WAYBILL_SECRET', usage);
  }
  try {
    return new WaybillClient({
      baseUrl,
      key,
      secret,
      onWarning: (warning) => process.stderr.write(`warning: ${warning.message}\n`),
    });
  } catch (err) {
    return usageError((err as Error).message, usage);
  }
}

/** Per-call options from `--timeout`; throws on a value that is not a positive number of milliseconds. */
export function requestOptions(values: { timeout?: string | undefined }): { timeoutMs?: number } {
  if (values.timeout === undefined) return {};
  const timeoutMs = Number(values.timeout);
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0)
    throw new UsageError('--timeout must be a positive number of ms');
  return { timeoutMs };
}

/** A mistake in the command line found after parsing. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** Reports a command-line mistake with the synopsis (the full text is behind --help). */
export function usageError(message: string, usage: string): number {
  const synopsis = usage.split('\n\n')[0] ?? usage;
  process.stderr.write(`waybill: ${message}\n${synopsis}\nRun with --help for every option.\n`);
  return EXIT.usage;
}

/** Writes a failure to stderr and returns its exit code. */
export function reportFailure(err: unknown): number {
  if (err instanceof UsageError || err instanceof TypeError) {
    process.stderr.write(`waybill: ${err.message}\n`);
    return EXIT.usage;
  }
  if (isConnectionError(err) || isTimeoutError(err)) {
    process.stderr.write(`waybill: the server could not be reached: ${err.message}\n`);
    return EXIT.unreachable;
  }
  if (isApiError(err)) {
    const code = err.problemCode === undefined ? `code ${err.code}` : `${err.problemCode}, code ${err.code}`;
    const request = err.requestId === undefined ? '' : `, request id ${err.requestId}`;
    process.stderr.write(`waybill: ${err.descr} (${code}, HTTP ${err.status}${request})\n`);
    return EXIT.apiError;
  }
  if (isWaybillError(err)) {
    process.stderr.write(`waybill: ${err.message}\n`);
    return EXIT.apiError;
  }
  throw err;
}

// Message text comes from other people: never let it move the cursor or recolour the terminal.
const cell = (value: string): string => value.replace(/[\p{Cc}\u2028\u2029]/gu, ' ');

/** A plain-text table: a header, then rows, columns padded to their widest cell. */
export function renderTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const clean = rows.map((row) => row.map(cell));
  const widths = header.map((title, i) =>
    Math.max(title.length, ...clean.map((row) => (row[i] ?? '').length)),
  );
  const line = (row: readonly string[]) =>
    row
      .map((value, i) => (i === row.length - 1 ? value : value.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return `${[line(header), ...clean.map(line)].join('\n')}\n`;
}

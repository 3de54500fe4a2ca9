import {
  isApiError,
  isConnectionError,
  isTimeoutError,
  isWaybillError,
  WaybillClient,
} from '@waybill/client';
import { EXIT, UsageError } from './options.js';

/** What the client commands (`waybill dlr`, `waybill messages`) share: flags, the SDK client, output, failures. */

/** Options every client command takes: where the server is and who is asking. */
export const CLIENT_OPTIONS = {
  url: { type: 'string' },
  key: { type: 'string' },
  secret: { type: 'string' },
  timeout: { type: 'string' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

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
export const cell = (value: string): string => value.replace(/[\p{Cc}\u2028\u2029]/gu, ' ');

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

import {
  type ApiError,
  type FetchFunction,
  isApiError,
  isConnectionError,
  isTimeoutError,
  isWaybillError,
  WaybillClient,
} from '@waybill/client';
import { EXIT, UsageError } from './options.js';
import { unknownOptionMessage } from './suggest.js';

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
  wire?: WireLog,
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
      fetch: wire?.fetch,
    });
  } catch (err) {
    return usageError((err as Error).message, usage);
  }
}

/**
 * The bodies of the successful answers, exactly as the server sent them: `--json` prints these, not what the
 * SDK made of them (it parses dates into `drTimeDate`, fills in defaults).
 */
export class WireLog {
  readonly #texts: Promise<string | undefined>[] = [];

  /** The `fetch` to give the SDK: the real one, keeping a copy of every 2xx body. */
  readonly fetch: FetchFunction = async (input, init) => {
    const response = await globalThis.fetch(input, init);
    if (response.ok) this.#texts.push(WireLog.#read(response.clone()));
    return response;
  };

  // A copy that could not be read (the request was aborted) is no answer to print, and no unhandled rejection.
  static #read = (copy: Response): Promise<string | undefined> => copy.text().catch(() => undefined);

  /** The parsed bodies, in the order they came; a body that was not JSON is left out. */
  async bodies(): Promise<unknown[]> {
    const out: unknown[] = [];
    for (const text of await Promise.all(this.#texts)) {
      if (text === undefined) continue;
      try {
        out.push(JSON.parse(text));
      } catch {
        // Not JSON: the SDK refused it already.
      }
    }
    return out;
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
/**
 * Parses a command line with `parse` (node:util parseArgs with the command's options): the parsed values, or
 * the exit code once `--help` printed the usage (0) or a wrong flag printed the synopsis (2).
 */
export function parseCommandLine<T extends { values: { help?: boolean | undefined } }>(
  args: string[],
  parse: (args: string[]) => T,
  usage: string,
): T | number {
  let parsed: T;
  try {
    parsed = parse(args);
  } catch (err) {
    return usageError(unknownOptionMessage(err, usage) ?? (err as Error).message, usage);
  }
  if (parsed.values.help) {
    process.stdout.write(`${usage}\n`);
    return EXIT.ok;
  }
  return parsed;
}

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
    const wait = retryAfterSeconds(err);
    const retry = wait === undefined ? '' : `; try again in ${formatWait(wait)}`;
    process.stderr.write(`waybill: ${err.descr} (${code}, HTTP ${err.status}${request})${retry}\n`);
    return EXIT.apiError;
  }
  if (isWaybillError(err)) {
    process.stderr.write(`waybill: ${err.message}\n`);
    return EXIT.apiError;
  }
  throw err;
}

/** How long the server asked us to wait (`Retry-After`: seconds or an HTTP date), in whole seconds. */
export function retryAfterSeconds(err: ApiError, now: number = Date.now()): number | undefined {
  const asked = (err as { retryAfterSeconds?: unknown }).retryAfterSeconds;
  if (typeof asked === 'number' && Number.isFinite(asked) && asked >= 0) return Math.ceil(asked);
  const header = err.headers.get('retry-after')?.trim();
  if (header === undefined || header === '') return undefined;
  if (/^\d+$/.test(header)) return Number(header);
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

/** A wait for people: `45 s`, `14 min 12 s`, `2 h 5 min`. */
export function formatWait(seconds: number): string {
  const s = Math.max(0, Math.ceil(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return s % 60 === 0 ? `${s / 60} min` : `${Math.floor(s / 60)} min ${s % 60} s`;
  const minutes = Math.ceil((s % 3600) / 60);
  const hours = Math.floor(s / 3600) + (minutes === 60 ? 1 : 0);
  return minutes === 0 || minutes === 60 ? `${hours} h` : `${hours} h ${minutes} min`;
}

/** `value` as one word for a POSIX shell: as it is when that is safe, else in single quotes. */
export const shellQuote = (value: string): string =>
  /^[A-Za-z0-9._~=/:@%+,-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;

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

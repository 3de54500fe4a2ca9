import { parseArgs } from 'node:util';
import { isApiError } from '@waybill/client';
import { isUuid } from '../domain/formats.js';
import { MAX_BATCH } from '../routes/admin-ingest.js';
import { ADMIN_FLAGS, ADMIN_OPTIONS_HELP, AdminApi, adminHint, adminTarget } from './admin-api.js';
import { cell, parseCommandLine, reportFailure, requestOptions, usageError } from './client-commands.js';
import { type IngestKind, type InputItem, parseInput, readInput } from './ingest-input.js';
import { EXIT, UsageError } from './options.js';
import { startProgress } from './progress.js';
import { unknownWord } from './suggest.js';

/**
 * `waybill ingest messages|receipts`: feeds a file (or stdin) to the running server's operator API in batches
 * of at most MAX_BATCH, and names every refused item by its place in the input, not in its batch.
 */

export const INGEST_USAGE = `waybill ingest messages <accountId> <file.json|-> [--keep-going] [--json]
waybill ingest receipts <accountId> <file.json|-> [--keep-going] [--json]`;

const USAGE = `Usage:
  waybill ingest messages <accountId> <file.json|-> [--keep-going] [--json]
  waybill ingest receipts <accountId> <file.json|-> [--keep-going] [--json]

Sends messages or delivery receipts to the account through the running server's operator API
(POST /admin/v1/accounts/<accountId>/messages or .../receipts; docs/api.md says what an item holds). The
token is read from $WAYBILL_ADMIN_TOKEN only (never a flag, so it stays out of shell history and ps).

The input is a file, or - for stdin: a JSON array of items, the API's own body ({"messages": [...]} or
{"receipts": [...]}), or NDJSON (one item a line). It goes in batches of at most ${MAX_BATCH} items and 5 MiB
(the API's limits), in order, with a progress line on stderr when stderr is a terminal. The server checks each batch whole: one bad item refuses
its batch and nothing of that batch is written. Each refused item is printed with its place in the input:
"item 1234" is the 1235th item (0-based, as jq .[1234] counts), and NDJSON items name their line too.
Without --keep-going the first refused batch stops the run; the batches before it are written. Sending the
same input again is safe: a re-sent message updates the stored one with the same fields, and a re-sent
receipt changes nothing.

  --keep-going     send the batches after a refused one too (and report the errors of every batch)
  --json           print the outcome as JSON: the API's answer summed over the batches, with "errors"
                   (every refused item, "index" its place in the input) when there were any
${ADMIN_OPTIONS_HELP}

Exit codes: 0 every item was taken, 1 the API refused an item or a request, 2 bad usage or unreadable
input (nothing was sent), 3 the server could not be reached.`;

const OPTIONS = {
  ...ADMIN_FLAGS,
  'keep-going': { type: 'boolean', default: false },
} as const;

interface ItemError {
  index: number;
  detail: string;
  param?: string;
  line?: number;
}

interface Totals {
  accepted: number;
  applied: number;
  ignored: number;
  unknown: { messageId: string; to: string | null }[];
}

export async function ingestCommand(args: string[]): Promise<number> {
  const parsed = parseCommandLine(
    args,
    (a) => parseArgs({ args: a, options: OPTIONS, allowPositionals: true }),
    USAGE,
  );
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  const [kind, accountId, source, ...extra] = positionals;
  if (kind === undefined) return usageError('say what to ingest: messages or receipts', USAGE);
  if (kind !== 'messages' && kind !== 'receipts')
    return usageError(unknownWord('ingest kind', kind, ['messages', 'receipts']), USAGE);
  if (accountId === undefined) return usageError(`ingest ${kind} needs an account id`, USAGE);
  if (!isUuid(accountId)) return usageError(`"${accountId}" is not an account id (a UUID)`, USAGE);
  if (source === undefined) return usageError(`ingest ${kind} needs a file, or - for stdin`, USAGE);
  if (extra.length > 0) return usageError(`unexpected argument: ${extra[0]}`, USAGE);
  const target = adminTarget(values, USAGE);
  if (typeof target === 'number') return target;

  let items: InputItem[];
  try {
    items = parseInput(await readInput(source), kind);
  } catch (err) {
    if (err instanceof UsageError) return usageError(err.message, USAGE);
    throw err;
  }

  const api = new AdminApi(target.baseUrl, target.token, requestOptions(values).timeoutMs ?? 30_000);
  const path = `/accounts/${encodeURIComponent(accountId.toLowerCase())}/${kind}`;
  const totals: Totals = { accepted: 0, applied: 0, ignored: 0, unknown: [] };
  const errors: ItemError[] = [];
  const refused: { from: number; to: number }[] = [];
  let sent = 0;
  let failure: unknown;
  const progress = startProgress(`sending ${items.length} ${kind}`);
  try {
    for (const { start, batch, body } of batches(items, kind)) {
      progress.update(`sent ${start} of ${items.length} ${kind}`);
      try {
        const answer = await api.requestJson<Partial<Totals>>('POST', path, body);
        totals.accepted += answer.accepted ?? 0;
        totals.applied += answer.applied ?? 0;
        totals.ignored += answer.ignored ?? 0;
        totals.unknown.push(...(answer.unknown ?? []));
        sent += batch.length;
      } catch (err) {
        const itemErrors = batchItemErrors(err);
        if (itemErrors === undefined) {
          failure = err;
          break;
        }
        errors.push(...itemErrors.map((e) => globalError(e, start, items)));
        refused.push({ from: start, to: start + batch.length - 1 });
        if (!values['keep-going']) break;
      }
    }
  } finally {
    await progress.stop();
  }

  for (const e of errors) {
    const where = e.line === undefined ? `item ${e.index}` : `item ${e.index} (line ${e.line})`;
    process.stderr.write(`waybill: ${where}: ${cell(e.detail)}\n`);
  }
  const notSent = items.length - sent - refused.reduce((n, r) => n + r.to - r.from + 1, 0);
  if (values.json) {
    const outcome =
      kind === 'messages'
        ? { accepted: totals.accepted }
        : { applied: totals.applied, ignored: totals.ignored, unknown: totals.unknown };
    process.stdout.write(
      `${JSON.stringify({ ...outcome, ...(errors.length > 0 ? { errors } : {}) }, null, 2)}\n`,
    );
  } else {
    process.stdout.write(summary(kind, sent, totals));
  }
  if (refused.length > 0) {
    const left = notSent > 0 ? `; ${notSent} ${kind} after it were not sent (--keep-going sends them)` : '';
    const spans = refused.map((r) => `items ${r.from}-${r.to}`).join(', ');
    process.stderr.write(
      `waybill: ${errors.length} item(s) refused; nothing of ${spans} was written${left}\n`,
    );
  }
  if (failure !== undefined) {
    if (notSent > 0) process.stderr.write(`waybill: stopped after ${sent} of ${items.length} ${kind}\n`);
    const code = reportFailure(failure);
    adminHint(failure);
    return code;
  }
  return refused.length > 0 ? EXIT.apiError : EXIT.ok;
}

/** The server refuses a body over 5 MiB (413, app.ts); a batch is cut before its JSON would pass this. */
const MAX_BODY_BYTES = 5 * 1024 * 1024;

/**
 * The input cut into request bodies of at most MAX_BATCH items and MAX_BODY_BYTES, in order; `start` is the
 * place of a batch's first item in the input. An item too large on its own still goes alone, for the server to
 * refuse with its own answer.
 */
function* batches(
  items: readonly InputItem[],
  kind: IngestKind,
): Generator<{ start: number; batch: InputItem[]; body: string }> {
  const head = `{"${kind}":[`;
  const tail = ']}';
  let start = 0;
  let parts: string[] = [];
  let bytes = 0;
  const take = () => {
    const out = {
      start,
      batch: items.slice(start, start + parts.length),
      body: `${head}${parts.join(',')}${tail}`,
    };
    start += parts.length;
    parts = [];
    bytes = 0;
    return out;
  };
  for (const item of items) {
    const json = JSON.stringify(item.value) ?? 'null';
    const size = Buffer.byteLength(json) + 1;
    const full =
      parts.length === MAX_BATCH ||
      (parts.length > 0 && head.length + bytes + size + tail.length > MAX_BODY_BYTES);
    if (full) yield take();
    parts.push(json);
    bytes += size;
  }
  if (parts.length > 0) yield take();
}

/** The item errors of a refused batch (400 with `errors`), or undefined when the failure is something else. */
function batchItemErrors(err: unknown): ItemError[] | undefined {
  if (!isApiError(err) || err.status !== 400) return undefined;
  const list = (err.body as { errors?: unknown } | null)?.errors;
  if (!Array.isArray(list)) return undefined;
  return list.filter(
    (e): e is ItemError =>
      typeof e === 'object' && e !== null && typeof e.index === 'number' && typeof e.detail === 'string',
  );
}

/** An error of the batch starting at `start`, indexed in the whole input and with the line it came from. */
function globalError(e: ItemError, start: number, items: readonly InputItem[]): ItemError {
  const index = start + e.index;
  const line = items[index]?.line;
  return {
    index,
    detail: e.detail,
    ...(e.param === undefined ? {} : { param: e.param }),
    ...(line === undefined ? {} : { line }),
  };
}

const count = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? '' : 's'}`;

function summary(kind: IngestKind, sent: number, totals: Totals): string {
  if (kind === 'messages') return `${count(totals.accepted, 'message')} accepted.\n`;
  const shown = totals.unknown.slice(0, 20);
  const unknown =
    totals.unknown.length === 0
      ? ''
      : `\nNo outbound SMS recipient yet (parked until its message arrives):\n${shown
          .map((u) => `  ${cell(u.messageId)}${u.to === null ? '' : ` to ${cell(u.to)}`}\n`)
          .join(
            '',
          )}${totals.unknown.length > shown.length ? `  … and ${totals.unknown.length - shown.length} more (--json lists them all)\n` : ''}`;
  return `${count(sent, 'receipt')} sent: ${totals.applied} applied, ${totals.ignored} ignored, ${totals.unknown.length} unknown.\n${unknown}`;
}

import { parseArgs } from 'node:util';
import { type DlrItem, describeErrcode, hasReceipt } from '@waybill/client';
import {
  CLIENT_OPTIONS,
  cell,
  clientFromFlags,
  parseCommandLine,
  renderTable,
  reportFailure,
  requestOptions,
  usageError,
  WireLog,
} from './client-commands.js';
import { EXIT } from './options.js';

/** `waybill dlr <messageid>`: the delivery state of every SMS recipient of a message, through the SDK. */

const USAGE = `Usage: waybill dlr <messageid> [--json] [--url URL] [--key KEY] [--secret SECRET]

Shows the delivery state of every SMS recipient of a message (GET /dlr).

  --json           print the receipt items as JSON, exactly as the API returns them (for scripts)
  --url URL        the server (default: $WAYBILL_URL)
  --key KEY        API key (default: $WAYBILL_KEY)
  --secret SECRET  API secret (default: $WAYBILL_SECRET)
  --timeout MS     give up after MS milliseconds (default: 30000)

A refusal that comes with a wait (429: too many requests, or the key locked out after wrong secrets) says
how long: "try again in 14 min 12 s".

Exit codes: 0 success, 1 the API answered with an error, 2 bad usage, 3 the server could not be reached.`;

export async function dlrCommand(args: string[]): Promise<number> {
  const parsed = parseCommandLine(args, parseDlrArgs, USAGE);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  const [messageId, ...extra] = positionals;
  if (messageId === undefined || extra.length > 0)
    return usageError('expected exactly one message id', USAGE);

  const wire = new WireLog();
  const client = clientFromFlags(values, USAGE, wire);
  if (typeof client === 'number') return client;
  try {
    const items = await client.dlr.get(messageId, requestOptions(values));
    // The answer as it came (the SDK's items add `drTimeDate` and fill in defaults): the last 2xx body.
    if (values.json)
      process.stdout.write(`${JSON.stringify((await wire.bodies()).at(-1) ?? items, null, 2)}\n`);
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

#!/usr/bin/env node
import { ConfigError } from '../config.js';
import { ACCOUNTS_USAGE, accountsCommand } from './accounts.js';
import { dlrCommand } from './dlr.js';
import { messagesCommand } from './messages.js';
import { MIGRATE_USAGE, migrateCommand } from './migrate.js';
import { EXIT, UsageError } from './options.js';
import { PRUNE_USAGE, pruneCommand } from './prune.js';
import { SERVE_USAGE, serveCommand } from './serve.js';

const USAGE = `waybill — delivery receipts and message history

Server and database:
  ${SERVE_USAGE.split('\n').join('\n  ')}
  ${MIGRATE_USAGE}
  ${PRUNE_USAGE}
  ${ACCOUNTS_USAGE.split('\n').join('\n  ')}

Client (WAYBILL_URL, WAYBILL_KEY, WAYBILL_SECRET or --url, --key, --secret):
  waybill dlr <messageid> [--json]
  waybill messages --ids a,b,… [--json]
  waybill messages --channel C (--user U | --contact ID) [--campaign X] [--limit N] [--json]

Exit codes: 0 success, 1 the API answered with an error, 2 bad usage, 3 the server could not be reached.
`;

const COMMANDS: Record<string, (args: string[]) => Promise<number>> = {
  serve: serveCommand,
  migrate: migrateCommand,
  prune: pruneCommand,
  accounts: accountsCommand,
  dlr: dlrCommand,
  messages: messagesCommand,
};

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    process.stdout.write(USAGE);
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`waybill: unknown command "${name}"\n\n${USAGE}`);
    return EXIT.usage;
  }
  try {
    return await command(args);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? '';
    if (error instanceof UsageError || error instanceof ConfigError || code.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`waybill ${name}: ${(error as Error).message}\n`);
      return EXIT.usage;
    }
    if (['ECONNREFUSED', 'ENOTFOUND', 'ETIMEDOUT', 'EHOSTUNREACH'].includes(code)) {
      process.stderr.write(`waybill ${name}: could not reach the database: ${(error as Error).message}\n`);
      return EXIT.unreachable;
    }
    process.stderr.write(`waybill ${name}: ${(error as Error).stack ?? String(error)}\n`);
    return EXIT.apiError;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`${String(error)}\n`);
    process.exitCode = EXIT.apiError;
  },
);

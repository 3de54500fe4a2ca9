import { readFileSync } from 'node:fs';
import { ConfigError } from '../config.js';
import { StoreUnavailableError } from '../store/store.js';
import { ACCOUNTS_USAGE, accountsCommand, accountsHelp } from './accounts.js';
import { DELIVERIES_USAGE, deliveriesCommand } from './deliveries.js';
import { dlrCommand } from './dlr.js';
import { INGEST_USAGE, ingestCommand } from './ingest.js';
import { messagesCommand } from './messages.js';
import { MIGRATE_HELP, MIGRATE_USAGE, migrateCommand } from './migrate.js';
import { EXIT, helpRows, StartupError, settingRows, UsageError, wantsHelp } from './options.js';
import { PRUNE_HELP, PRUNE_USAGE, pruneCommand } from './prune.js';
import { receiptsCommand } from './receipts.js';
import { ROUTES_USAGE, routesCommand } from './routes.js';
import { SERVE_USAGE, serveCommand } from './serve.js';
import { unknownOptionMessage, unknownWord } from './suggest.js';

/** The `waybill` command line: which command, its help, and what its failures exit with. main.ts loads this. */

const USAGE = `waybill — delivery receipts and message history

Server and database:
  ${SERVE_USAGE.split('\n').join('\n  ')}
  ${MIGRATE_USAGE}
  ${PRUNE_USAGE}
  ${ACCOUNTS_USAGE.split('\n').join('\n  ')}

Client (WAYBILL_URL, WAYBILL_KEY, WAYBILL_SECRET or --url, --key, --secret):
  waybill dlr <messageid> [--json]
  waybill messages --ids a,b,… [--json]
  waybill messages --channel C (--user U | --contact ID) [--campaign X] [--size N] [--cursor C] [--json]
  waybill messages --campaign X [--channel C] [--size N] [--cursor C] [--json]
  waybill receipts [--after CURSOR] [--limit N] [--follow [--interval SECONDS]] [--json]

Operator API of a running server (--url or WAYBILL_URL, and WAYBILL_ADMIN_TOKEN):
  ${INGEST_USAGE.split('\n').join('\n  ')}
  ${DELIVERIES_USAGE.split('\n').join('\n  ')}
  ${ROUTES_USAGE.split('\n').join('\n  ')}

waybill <command> --help shows a command's options; waybill --version its version.
Exit codes: 0 success, 1 the API answered with an error, 2 bad usage, 3 the server could not be reached.
`;

const SERVE_HELP = `Usage: ${SERVE_USAGE}

Settings: a flag beats its variable (docs/configuration.md says what each one means, and its default).
${helpRows([
  ...settingRows(),
  ['--no-demo', 'do not load the demo account and data into an empty database'],
  ['-h, --help', 'show this help'],
])}
`;

const COMMANDS: Record<string, (args: string[]) => Promise<number>> = {
  serve: serveCommand,
  migrate: migrateCommand,
  prune: pruneCommand,
  accounts: accountsCommand,
  dlr: dlrCommand,
  messages: messagesCommand,
  receipts: receiptsCommand,
  deliveries: deliveriesCommand,
  ingest: ingestCommand,
  routes: routesCommand,
};

/**
 * The help of the commands that leave `--help` to this file (the client and operator commands answer it
 * themselves, with their other flags).
 */
const HELP: Record<string, (args: string[]) => string> = {
  serve: () => SERVE_HELP,
  migrate: () => MIGRATE_HELP,
  prune: () => PRUNE_HELP,
  accounts: (args) => accountsHelp(args[0]?.startsWith('-') ? undefined : args[0]),
};

/** The version of @waybill/server, from its package.json (two levels above src/cli and dist/cli). */
export function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

function unknownCommand(name: string): number {
  const known = [...Object.keys(COMMANDS), 'help'];
  process.stderr.write(
    `waybill: ${unknownWord('command', name, known)}\nRun \`waybill help\` for every command.\n`,
  );
  return EXIT.usage;
}

/** Runs one command line (without `node` and the script) and returns its exit code (CONTRACT §8). */
export async function runCli(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    const topic = name === 'help' ? args[0] : undefined;
    if (topic !== undefined && Object.hasOwn(COMMANDS, topic))
      return runCli([topic, ...args.slice(1), '--help']);
    if (topic !== undefined) return unknownCommand(topic);
    process.stdout.write(USAGE);
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  if (name === '--version' || name === '-v') {
    process.stdout.write(`${version()}\n`);
    return EXIT.ok;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!command) return unknownCommand(name);
  const help = Object.hasOwn(HELP, name) ? HELP[name] : undefined;
  if (help && wantsHelp(args)) {
    process.stdout.write(help(args));
    return EXIT.ok;
  }
  try {
    return await command(args);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? '';
    if (error instanceof UsageError || error instanceof ConfigError || code.startsWith('ERR_PARSE_ARGS')) {
      const hint = help ? `\nRun \`waybill ${name} --help\` for its options.` : '';
      const message = (help && unknownOptionMessage(error, help(args))) ?? (error as Error).message;
      process.stderr.write(`waybill ${name}: ${message}${hint}\n`);
      return EXIT.usage;
    }
    const startup = error instanceof StartupError ? error.message : startupProblem(error);
    if (startup !== null) {
      process.stderr.write(`waybill ${name}: ${startup}\n`);
      return EXIT.unreachable;
    }
    process.stderr.write(`waybill ${name}: ${(error as Error).stack ?? String(error)}\n`);
    return EXIT.apiError;
  }
}

/**
 * The one sentence, naming the fix, for a failure to reach the database or bind the port (exit 3), or null
 * when the error is something else. PostgreSQL's own codes: 3D000 no such database, 28P01 and 28000 the role
 * or its password was refused.
 */
export function startupProblem(thrown: unknown): string | null {
  // The store wraps what the driver threw (StoreUnavailableError and its cause): the first known code wins.
  for (let error = thrown; error instanceof Error; error = error.cause) {
    const sentence = sentenceFor((error as NodeJS.ErrnoException).code ?? '', error);
    if (sentence !== null) return sentence;
  }
  if (thrown instanceof StoreUnavailableError) {
    return `could not reach the database (${thrown.message}): start it, or fix DATABASE_URL / --database-url`;
  }
  return null;
}

function sentenceFor(code: string, error: Error): string | null {
  switch (code) {
    case '3D000':
      return `${error.message}: create it (createdb <name>) or point DATABASE_URL / --database-url at one that exists`;
    case '28P01':
    case '28000':
      return `the database refused the login (${error.message}): fix the user and password in DATABASE_URL / --database-url`;
    case 'ECONNREFUSED':
    case 'ENOTFOUND':
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
      return `could not reach the database (${error.message}): start it, or fix the host and port in DATABASE_URL / --database-url`;
    case 'EADDRINUSE':
      return `the address is already in use (${error.message}): stop the other process or pass --port`;
    default:
      return null;
  }
}

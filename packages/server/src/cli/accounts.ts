import { parseArgs } from 'node:util';
import { isCredential, isUuid } from '../domain/formats.js';
import { allowlistEntryProblem } from '../domain/ip-allowlist.js';
import type { Account } from '../domain/records.js';
import { createAccount, rotateSecret } from '../operations/accounts.js';
import type { AccountLookup } from '../store/store.js';
import { openDatabase } from './database.js';
import { configFlags, DATABASE_HELP, EXIT, UsageError } from './options.js';

export const ACCOUNTS_USAGE = `waybill accounts create --name NAME [--ip-whitelist a,b/24] [--dlr-query-enabled true|false]
                        [--balance N] [--credit-limit N] [--callback-url URL]
waybill accounts show <id|key>
waybill accounts rotate-secret <id|key>
waybill accounts delete <id|key>
  Work directly on the database (DATABASE_URL, WAYBILL_PEPPER); output is JSON. A running server sees a change
  within WAYBILL_ACCOUNT_CACHE_MS (1 s by default); its in-memory lockout of the key is cleared only by rotating
  through the operator API.`;

const ACTION_HELP: Record<string, string> = {
  create: `Usage: waybill accounts create --name NAME [--ip-whitelist a,b/24] [--dlr-query-enabled true|false]
                               [--balance N] [--credit-limit N] [--callback-url URL]

Creates an account and prints it as JSON with its key, its secret and its callbackSecret: the two secrets are
shown only now.

  --name NAME                    the account's name (required)
  --ip-whitelist LIST            comma-separated addresses and CIDR ranges the API accepts its requests from
                                 (default: empty, which allows every address)
  --dlr-query-enabled true|false whether it may query GET /dlr (default: true)
  --balance N                    its balance (default: 0)
  --credit-limit N               how far below zero the balance may go (default: 0)
  --callback-url URL             where its receipt callbacks go (default: none)
${DATABASE_HELP}`,
  show: `Usage: waybill accounts show <id|key>

Prints the account with this id (a UUID) or key as JSON, never its secret. Exit code 1 when there is none.

${DATABASE_HELP}`,
  'rotate-secret': `Usage: waybill accounts rotate-secret <id|key>

Gives the account a new secret and prints the account with it as JSON. The new secret works at once; a running
server may still accept the old one for up to WAYBILL_ACCOUNT_CACHE_MS (1 s by default). It keeps its in-memory
lockout of the key until the lock ends: rotate through the operator API (or run the servers with REDIS_URL) to
clear it at once.

${DATABASE_HELP}`,
  delete: `Usage: waybill accounts delete <id|key>

Deletes the account and all its data (messages, contacts, receipt events, callback deliveries, parked
receipts) in one transaction, and prints {"deleted": "<id>"}; its key stops working (within
WAYBILL_ACCOUNT_CACHE_MS, 1 s by default, on a running server). There is no undo. Exit code 1 when there is no
such account.

${DATABASE_HELP}`,
};

/** The help of `waybill accounts [action] --help`: the action's own, or every action's synopsis. */
export function accountsHelp(action: string | undefined): string {
  const own = action !== undefined && Object.hasOwn(ACTION_HELP, action) ? ACTION_HELP[action] : undefined;
  if (own !== undefined) return `${own}\n`;
  return `Usage:\n  ${ACCOUNTS_USAGE.split('\n').join('\n  ')}\n\nOptions of every action:\n${DATABASE_HELP}\n\nRun \`waybill accounts <action> --help\` for one action's options.\n`;
}

const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

async function findAccount(store: AccountLookup, ref: string): Promise<Account | null> {
  if (isUuid(ref)) return store.getAccount(ref.toLowerCase());
  if (isCredential(ref)) return store.getAccountByKey(ref).then((a) => (a ? stripSecret(a) : null));
  throw new UsageError(`"${ref}" is neither an account id (UUID) nor a key`);
}

function stripSecret(account: Account & { secretHash?: Buffer }): Account {
  const { secretHash: _ignored, ...rest } = account;
  return rest;
}

function numberFlag(name: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new UsageError(`--${name} takes a number`);
  return n;
}

export async function accountsCommand(args: string[]): Promise<number> {
  const [action, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    strict: true,
    options: {
      ...configFlags,
      name: { type: 'string' },
      'ip-whitelist': { type: 'string' },
      'dlr-query-enabled': { type: 'string' },
      balance: { type: 'string' },
      'credit-limit': { type: 'string' },
      'callback-url': { type: 'string' },
    },
  });
  if (action === 'create') {
    if (!values.name) throw new UsageError('accounts create needs --name');
    const ipWhitelist = (values['ip-whitelist'] ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
    for (const entry of ipWhitelist) {
      const problem = allowlistEntryProblem(entry);
      if (problem) throw new UsageError(`--ip-whitelist: ${problem}`);
    }
    const flag = values['dlr-query-enabled'];
    if (flag !== undefined && flag !== 'true' && flag !== 'false')
      throw new UsageError('--dlr-query-enabled is true or false');
    const balance = numberFlag('balance', values.balance);
    const creditLimit = numberFlag('credit-limit', values['credit-limit']);
    const { store, pepper } = await openDatabase(values);
    try {
      const created = await createAccount(
        store,
        pepper.value,
        {
          name: values.name,
          ipWhitelist,
          ...(flag !== undefined ? { dlrQueryEnabled: flag === 'true' } : {}),
          ...(balance !== undefined ? { balance } : {}),
          ...(creditLimit !== undefined ? { creditLimit } : {}),
          ...(values['callback-url'] !== undefined ? { callbackUrl: values['callback-url'] } : {}),
        },
        new Date(),
      );
      print({ ...created.account, secret: created.secret, callbackSecret: created.callbackSecret });
      return EXIT.ok;
    } finally {
      await store.close();
    }
  }
  if (action === 'show' || action === 'rotate-secret' || action === 'delete') {
    const ref = positionals[0];
    if (!ref || positionals.length > 1)
      throw new UsageError(`accounts ${action} takes one account id or key`);
    const { store, pepper } = await openDatabase(values);
    try {
      const account = await findAccount(store, ref);
      if (!account) {
        process.stderr.write(`no account ${ref}\n`);
        return EXIT.apiError;
      }
      if (action === 'show') {
        print(account);
        return EXIT.ok;
      }
      if (action === 'delete') {
        if (!(await store.deleteAccount(account.id))) {
          process.stderr.write(`no account ${ref}\n`);
          return EXIT.apiError;
        }
        print({ deleted: account.id });
        return EXIT.ok;
      }
      const rotated = await rotateSecret(store, pepper.value, account.id);
      if (!rotated) return EXIT.apiError;
      print({ ...rotated.account, secret: rotated.secret });
      return EXIT.ok;
    } finally {
      await store.close();
    }
  }
  throw new UsageError(action ? `unknown accounts action "${action}"` : 'accounts needs an action');
}

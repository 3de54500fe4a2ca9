import { parseArgs } from 'node:util';
import { ApiError } from '../domain/errors.js';
import { isCredential, isUuid } from '../domain/formats.js';
import type { Account, AccountPatch } from '../domain/records.js';
import { checkSettable } from '../http/accounts.js';
import { createAccount, rotateCallbackSecret, rotateSecret } from '../operations/accounts.js';
import type { AccountLookup } from '../store/store.js';
import { openDatabase } from './database.js';
import { configFlags, DATABASE_HELP, EXIT, UsageError } from './options.js';
import { unknownWord } from './suggest.js';

export const ACCOUNTS_USAGE = `waybill accounts create --name NAME [--ip-whitelist a,b/24] [--dlr-query-enabled true|false]
                        [--balance N] [--credit-limit N] [--callback-url URL]
waybill accounts update <id|key> [--name NAME] [--ip-whitelist a,b/24] [--dlr-query-enabled true|false]
                        [--balance N] [--credit-limit N] [--callback-url URL | --no-callback-url]
                        [--callback-enabled true|false]
waybill accounts show <id|key>
waybill accounts rotate-secret <id|key>
waybill accounts rotate-callback-secret <id|key>
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
  update: `Usage: waybill accounts update <id|key> [--name NAME] [--ip-whitelist a,b/24]
                               [--dlr-query-enabled true|false] [--balance N] [--credit-limit N]
                               [--callback-url URL | --no-callback-url] [--callback-enabled true|false]

Changes the given fields of the account (the others keep theirs) and prints it as JSON, never its secrets.
A running server applies the change within WAYBILL_ACCOUNT_CACHE_MS (1 s by default).

  --name NAME                     its name
  --ip-whitelist LIST             comma-separated addresses and CIDR ranges the API accepts its requests
                                  from; "" empties it, which allows every address
  --dlr-query-enabled true|false  whether it may query GET /dlr
  --balance N                     its balance
  --credit-limit N                how far below zero the balance may go
  --callback-url URL              where its receipt callbacks go (http or https); also turns callbacks on
                                  again after a 410 Gone turned them off
  --no-callback-url               no callbacks any more (clears the URL)
  --callback-enabled true|false   pause (false) or resume (true) its callbacks, keeping the URL
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
  'rotate-callback-secret': `Usage: waybill accounts rotate-callback-secret <id|key>

Gives the account a new callback secret (whsec_…, the key that signs its callbacks) and prints the account
with it as JSON: the new secret is shown only now. The previous one keeps signing beside it for
WAYBILL_CALLBACK_SECRET_GRACE_SECONDS (1 day by default), so the receiver can switch without losing a callback.

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

/** The flag of each settable field, for the messages of a refused value. */
const FLAG_OF: Record<string, string> = { name: '--name', callbackUrl: '--callback-url' };

/**
 * Refuses what the operator API would refuse, in the words of the flags (an ApiError becomes a UsageError), and
 * returns the fields as the API stores them (the callback URL normalized).
 */
function checkFields<T extends { name?: string; ipWhitelist?: string[]; callbackUrl?: string | null }>(
  fields: T,
): T {
  let checked: T;
  try {
    checked = checkSettable(fields);
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    const param = String(error.extra.param ?? '');
    // The API names a whitelist entry by its place in the body ("ipWhitelist[2]: …"); the problem names the entry.
    if (param.startsWith('ipWhitelist[')) {
      throw new UsageError(`--ip-whitelist: ${error.message.replace(/^ipWhitelist\[\d+\]: /, '')}`);
    }
    throw new UsageError(`${FLAG_OF[param] ?? param}: ${error.message}`);
  }
  if (fields.name !== undefined && (fields.name.length < 1 || fields.name.length > 200))
    throw new UsageError('--name takes 1 to 200 characters');
  if (typeof fields.callbackUrl === 'string' && fields.callbackUrl.length > 2048)
    throw new UsageError('--callback-url takes at most 2048 characters');
  return checked;
}

function booleanFlag(name: string, raw: string | undefined): boolean | undefined {
  if (raw === undefined) return undefined;
  if (raw !== 'true' && raw !== 'false') throw new UsageError(`--${name} is true or false`);
  return raw === 'true';
}

const listFlag = (raw: string | undefined): string[] | undefined =>
  raw
    ?.split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');

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
      'no-callback-url': { type: 'boolean' },
      'callback-enabled': { type: 'string' },
    },
  });
  if (
    action !== 'update' &&
    (values['no-callback-url'] !== undefined || values['callback-enabled'] !== undefined)
  )
    throw new UsageError('--no-callback-url and --callback-enabled only apply to accounts update');
  if (action === 'create') {
    if (!values.name) throw new UsageError('accounts create needs --name');
    const ipWhitelist = listFlag(values['ip-whitelist']) ?? [];
    const callbackUrl = values['callback-url'];
    const checked = checkFields({
      name: values.name,
      ipWhitelist,
      ...(callbackUrl === undefined ? {} : { callbackUrl }),
    });
    const flag = booleanFlag('dlr-query-enabled', values['dlr-query-enabled']);
    const balance = numberFlag('balance', values.balance);
    const creditLimit = numberFlag('credit-limit', values['credit-limit']);
    const { store, pepper } = await openDatabase(values);
    try {
      const created = await createAccount(
        store,
        (await pepper()).value,
        {
          name: values.name,
          ipWhitelist,
          ...(flag !== undefined ? { dlrQueryEnabled: flag } : {}),
          ...(balance !== undefined ? { balance } : {}),
          ...(creditLimit !== undefined ? { creditLimit } : {}),
          ...(checked.callbackUrl ? { callbackUrl: checked.callbackUrl } : {}),
        },
        new Date(),
      );
      print({ ...created.account, secret: created.secret, callbackSecret: created.callbackSecret });
      return EXIT.ok;
    } finally {
      await store.close();
    }
  }
  if (
    action === 'show' ||
    action === 'update' ||
    action === 'rotate-secret' ||
    action === 'rotate-callback-secret' ||
    action === 'delete'
  ) {
    const ref = positionals[0];
    if (!ref || positionals.length > 1)
      throw new UsageError(`accounts ${action} takes one account id or key`);
    const patch = action === 'update' ? patchFromFlags(values) : undefined;
    const { config, store, pepper } = await openDatabase(values);
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
      if (patch !== undefined) {
        const updated = await store.updateAccount(account.id, patch);
        if (!updated) {
          process.stderr.write(`no account ${ref}\n`);
          return EXIT.apiError;
        }
        print(updated);
        return EXIT.ok;
      }
      if (action === 'rotate-callback-secret') {
        const rotated = await rotateCallbackSecret(
          store,
          (await pepper()).value,
          account.id,
          new Date(),
          config.callbackSecretGraceSeconds,
        );
        if (!rotated) {
          process.stderr.write(`no account ${ref}\n`);
          return EXIT.apiError;
        }
        print({ ...rotated.account, callbackSecret: rotated.callbackSecret });
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
      const rotated = await rotateSecret(store, (await pepper()).value, account.id);
      if (!rotated) return EXIT.apiError;
      print({ ...rotated.account, secret: rotated.secret });
      return EXIT.ok;
    } finally {
      await store.close();
    }
  }
  throw new UsageError(
    action ? unknownWord('accounts action', action, Object.keys(ACTION_HELP)) : 'accounts needs an action',
  );
}

/** The fields `accounts update` changes, from its flags; at least one. */
function patchFromFlags(values: {
  name?: string | undefined;
  'ip-whitelist'?: string | undefined;
  'dlr-query-enabled'?: string | undefined;
  balance?: string | undefined;
  'credit-limit'?: string | undefined;
  'callback-url'?: string | undefined;
  'no-callback-url'?: boolean | undefined;
  'callback-enabled'?: string | undefined;
}): AccountPatch {
  if (values['callback-url'] !== undefined && values['no-callback-url'])
    throw new UsageError('give --callback-url or --no-callback-url, not both');
  const patch: AccountPatch = {};
  if (values.name !== undefined) patch.name = values.name;
  const ipWhitelist = listFlag(values['ip-whitelist']);
  if (ipWhitelist !== undefined) patch.ipWhitelist = ipWhitelist;
  const dlrQueryEnabled = booleanFlag('dlr-query-enabled', values['dlr-query-enabled']);
  if (dlrQueryEnabled !== undefined) patch.dlrQueryEnabled = dlrQueryEnabled;
  const balance = numberFlag('balance', values.balance);
  if (balance !== undefined) patch.balance = balance;
  const creditLimit = numberFlag('credit-limit', values['credit-limit']);
  if (creditLimit !== undefined) patch.creditLimit = creditLimit;
  if (values['callback-url'] !== undefined) patch.callbackUrl = values['callback-url'];
  if (values['no-callback-url']) patch.callbackUrl = null;
  const callbackEnabled = booleanFlag('callback-enabled', values['callback-enabled']);
  if (callbackEnabled !== undefined) patch.callbackEnabled = callbackEnabled;
  if (Object.keys(patch).length === 0)
    throw new UsageError(
      'accounts update needs a field to change: --name, --ip-whitelist, --dlr-query-enabled, --balance, --credit-limit, --callback-url, --no-callback-url or --callback-enabled',
    );
  return checkFields(patch);
}

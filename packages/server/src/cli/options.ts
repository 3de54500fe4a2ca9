import { type Config, ENV_NAMES, type Source } from '../config.js';

/** `--database-url` for `databaseUrl`: every variable of CONTRACT §7 has a flag, and a flag beats its variable. */
export const flagName = (field: string): string => field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

/** parseArgs options for every configuration flag (all take a string value). */
export const configFlags = Object.fromEntries(
  Object.keys(ENV_NAMES).map((field) => [flagName(field), { type: 'string' as const }]),
);

/** The environment with the given flags laid over it, keyed by variable name (input of loadConfig). */
export function configSource(env: NodeJS.ProcessEnv, values: Record<string, unknown>): Source {
  const source: Record<string, string | undefined> = { ...env };
  for (const [field, variable] of Object.entries(ENV_NAMES) as [keyof Config, string][]) {
    const value = values[flagName(field)];
    if (typeof value === 'string') source[variable] = value;
  }
  return source;
}

/** Exit codes of every command (CONTRACT §8). */
export const EXIT = { ok: 0, apiError: 1, usage: 2, unreachable: 3 } as const;

/** A wrong command line: printed with the command's usage, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/**
 * A start that cannot succeed for a reason the user can fix (the port is taken, the database does not exist):
 * printed as its one sentence, which names the fix, exit code 3.
 */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}

/** True when the command line asks for help (`--help` or `-h` anywhere before a `--` that ends the options). */
export function wantsHelp(args: readonly string[]): boolean {
  for (const arg of args) {
    if (arg === '--') return false;
    if (arg === '--help' || arg === '-h') return true;
  }
  return false;
}

/** The flag of every setting beside the variable it stands for (for `--help`). */
export const settingRows = (): [string, string][] =>
  Object.entries(ENV_NAMES).map(([field, variable]) => [`--${flagName(field)}`, variable]);

/** Two columns, the first padded to its widest cell, one row a line (for `--help`). */
export const helpRows = (rows: readonly (readonly [string, string])[], indent = '  '): string => {
  const width = Math.max(...rows.map(([left]) => left.length));
  return rows.map(([left, right]) => `${indent}${left.padEnd(width)}  ${right}`).join('\n');
};

/** The options of the commands that work on the database directly (migrate, prune, accounts), for `--help`. */
export const DATABASE_HELP = `  --database-url URL  the database (default: $DATABASE_URL, else sqlite:./data/waybill.db); every setting
                      flag of \`waybill serve --help\` is taken too (WAYBILL_PEPPER: --pepper)
  -h, --help          show this help`;

// The command lines of the scripts at the top of bench/: options from a table of their defaults, and --help
// from the script's own header comment.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

/** The comment at the top of a script, its usage: without the #! line and the comment marks. */
function usageOf(scriptUrl) {
  const head = readFileSync(new URL(scriptUrl), 'utf8').split('\nimport ')[0];
  return head.replace(/^#!.*\n/, '').replace(/^\/\/ ?/gm, '');
}

/**
 * Parses the command line. `defaults` gives each option's default: a string, a boolean for a flag, or null
 * for a string without one. --help (-h) prints the script's usage (and `epilogue`) and exits; a missing
 * `required` option prints it to stderr and exits 2. Returns parseArgs's { values, positionals }.
 */
export function commandLine(scriptUrl, defaults, { required = [], positionals = false, epilogue = '' } = {}) {
  const options = { help: { type: 'boolean', short: 'h', default: false } };
  for (const [name, value] of Object.entries(defaults)) {
    const type = typeof value === 'boolean' ? 'boolean' : 'string';
    options[name] = value === null ? { type } : { type, default: value };
  }
  const parsed = parseArgs({ options, allowPositionals: positionals, strict: true });
  if (parsed.values.help) {
    console.log(epilogue ? `${usageOf(scriptUrl)}\n${epilogue}` : usageOf(scriptUrl));
    process.exit(0);
  }
  const missing = required.filter((name) => parsed.values[name] === undefined);
  if (missing.length > 0) {
    console.error(`missing --${missing.join(', --')}\n\n${usageOf(scriptUrl)}`);
    process.exit(2);
  }
  return parsed;
}

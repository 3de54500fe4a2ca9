import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { expect, it } from 'vitest';
import { run } from '../support/processes.js';

/** docs/cli.md documents every command and action that `waybill help` lists, and each one's --help works. */

const cliDoc = readFileSync(resolve(import.meta.dirname, '../../../../docs/cli.md'), 'utf8');

/** `waybill accounts update`, `waybill dlr`, …: the words of each synopsis line before its first argument. */
function commandsOf(help: string): string[] {
  const commands = new Set<string>();
  for (const line of help.split('\n')) {
    const words = line.trim().split(/\s+/);
    if (words[0] !== 'waybill' || !/^[a-z][a-z-]*$/.test(words[1] ?? '')) continue;
    const name = ['waybill', words[1] as string];
    if (/^[a-z][a-z-]*$/.test(words[2] ?? '')) name.push(words[2] as string);
    commands.add(name.join(' '));
  }
  return [...commands];
}

it('documents every command and action of `waybill help`, and answers --help for each', async () => {
  const help = await run(['help']);
  expect(help.code).toBe(0);
  const commands = commandsOf(help.stdout);
  expect(commands).toContain('waybill ingest messages');
  expect(commands).toContain('waybill accounts update');
  for (const command of commands) {
    expect(cliDoc, command).toContain(`\`${command}`);
    const own = await run([...command.split(' ').slice(1), '--help']);
    expect(own.code, `${command} --help`).toBe(0);
  }
}, 60_000);

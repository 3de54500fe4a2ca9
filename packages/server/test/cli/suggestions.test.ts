import { afterAll, describe, expect, it } from 'vitest';
import { closest } from '../../src/cli/suggest.js';
import { killAll, run } from '../support/processes.js';

/** A mistyped command, action or flag is answered with the nearest right one, and exit code 2 (usage). */

afterAll(() => killAll());

describe('closest', () => {
  const commands = [
    'serve',
    'migrate',
    'prune',
    'accounts',
    'dlr',
    'messages',
    'receipts',
    'deliveries',
    'ingest',
  ];

  it('finds a near miss: a letter missing, extra, wrong or swapped', () => {
    expect(closest('acounts', commands)).toBe('accounts');
    expect(closest('accountss', commands)).toBe('accounts');
    expect(closest('reciepts', commands)).toBe('receipts');
    expect(closest('ingset', commands)).toBe('ingest');
    expect(closest('SERVE', commands)).toBe('serve');
    expect(closest('--jsn', ['--json', '--url'])).toBe('--json');
  });

  it('guesses nothing when no word is near', () => {
    expect(closest('frobnicate', commands)).toBeUndefined();
    expect(closest('x', ['dlr'])).toBeUndefined();
    // The shared dashes do not make a flag near: --x is three edits from --url.
    expect(closest('--x', ['--url', '--json'])).toBeUndefined();
  });
});

describe('the waybill command', () => {
  it('suggests the command meant', async () => {
    const result = await run(['acounts', 'show', 'DEMOKEY1']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('unknown command "acounts"; did you mean accounts?');
    const help = await run(['help', 'ingset']);
    expect(help.code).toBe(2);
    expect(help.stderr).toContain('unknown command "ingset"; did you mean ingest?');
    const far = await run(['frobnicate']);
    expect(far.code).toBe(2);
    expect(far.stderr).toContain('unknown command "frobnicate"');
    expect(far.stderr).not.toContain('did you mean');
  });

  it('suggests the action meant', async () => {
    const accounts = await run(['accounts', 'shwo', 'DEMOKEY1']);
    expect(accounts.code).toBe(2);
    expect(accounts.stderr).toContain('did you mean show?');
    const deliveries = await run(['deliveries', 'lst', '0190c0de-0000-7000-8000-000000000000']);
    expect(deliveries.code).toBe(2);
    expect(deliveries.stderr).toContain('did you mean list?');
    const ingest = await run(['ingest', 'reciepts']);
    expect(ingest.code).toBe(2);
    expect(ingest.stderr).toContain('did you mean receipts?');
  });

  it('suggests the flag meant, among the flags of that command', async () => {
    const serve = await run(['serve', '--prot', '9000']);
    expect(serve.code).toBe(2);
    expect(serve.stderr).toContain('unknown option "--prot"; did you mean --port?');
    const dlr = await run(['dlr', 'm-1', '--jsn']);
    expect(dlr.code).toBe(2);
    expect(dlr.stderr).toContain('unknown option "--jsn"; did you mean --json?');
    const create = await run(['accounts', 'create', '--nmae', 'shop']);
    expect(create.code).toBe(2);
    expect(create.stderr).toContain('did you mean --name?');
    const ingest = await run(['ingest', 'messages', '--keepgoing']);
    expect(ingest.code).toBe(2);
    expect(ingest.stderr).toContain('did you mean --keep-going?');
    const far = await run(['receipts', '--colour']);
    expect(far.code).toBe(2);
    expect(far.stderr).toContain('unknown option "--colour"');
    expect(far.stderr).not.toContain('did you mean');
  });
});

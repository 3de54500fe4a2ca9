#!/usr/bin/env node
// Generates a benchmark dataset (bench/lib/datagen.mjs) and writes its manifest; `npm run bench` does the same
// by itself when the dataset it needs is missing.
//
//   node bench/datagen.mjs --database-url sqlite:bench/.data/x.db --recipients 1000000 [--seed 42] [--force]
//   node bench/datagen.mjs --database-url postgres://postgres@127.0.0.1:5432/waybill_bench --recipients 1000000
//
// Options: --long 100000 (messages in the long history), --end <ISO time> and --days 90 (the period), --force
// (replace an existing SQLite file).
import { commandLine } from './lib/cli.mjs';
import { DEFAULT_END, generate } from './lib/datagen.mjs';

const { values: opts } = commandLine(
  import.meta.url,
  {
    'database-url': null,
    recipients: '1000000',
    seed: '42',
    long: '100000',
    end: DEFAULT_END,
    days: '90',
    force: false,
  },
  { required: ['database-url'] },
);
const manifest = await generate({
  databaseUrl: opts['database-url'],
  recipients: Number(opts.recipients),
  seed: Number(opts.seed),
  longMessages: Number(opts.long),
  end: opts.end,
  days: Number(opts.days),
  force: opts.force,
});
console.log(
  JSON.stringify(
    { ...manifest, dlrIds: undefined, missingIds: undefined, conversations: undefined },
    null,
    2,
  ),
);

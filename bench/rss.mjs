#!/usr/bin/env node
// Resident memory of `waybill serve` on a generated dataset, idle and after 30 s of /dlr and history load (the
// memory column of the sizing table in docs/operations.md).
//
//   node bench/rss.mjs --database-url sqlite:bench/.data/bench-1000000.db [--seconds 15] [--connections 16]
//
// The dataset and its manifest come from bench/datagen.mjs (or `npm run bench`). The server runs with its
// default settings but the access log (off) and the rate limit (off); the load is bench/lib/loader.mjs, half
// the time /dlr of sample ids, half page 1 of sample conversations.
import { readFileSync } from 'node:fs';
import { commandLine } from './lib/cli.mjs';
import { memoryOf } from './lib/cpu.mjs';
import { manifestPathFor } from './lib/paths.mjs';
import { startLoader, startWaybill } from './lib/processes.mjs';
import { READ_SCENARIOS, rawGet } from './lib/scenarios.mjs';

const { values: opts } = commandLine(
  import.meta.url,
  { 'database-url': null, seconds: '15', connections: '16' },
  { required: ['database-url'] },
);
const manifest = JSON.parse(readFileSync(manifestPathFor(opts['database-url']), 'utf8'));
const server = await startWaybill({
  databaseUrl: manifest.databaseUrl,
  pepper: manifest.pepper,
  accessLog: false,
  label: 'waybill-rss',
});
const loader = startLoader();
try {
  console.log('idle', memoryOf(server.pid));
  for (const name of ['dlr', 'conversation']) {
    const paths = await READ_SCENARIOS[name].requests(manifest, server.url);
    await loader.run({
      host: server.host,
      port: server.port,
      connections: Number(opts.connections),
      warmupMs: 0,
      durationMs: Number(opts.seconds) * 1000,
      requests: paths.map(({ path, headers }) => rawGet(path, headers)),
    });
  }
  console.log(`after ${2 * Number(opts.seconds)} s of /dlr + history load`, memoryOf(server.pid));
} finally {
  loader.stop();
  await server.stop();
}

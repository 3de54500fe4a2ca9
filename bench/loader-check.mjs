#!/usr/bin/env node
// Is the load generator what bounds the figures? Measures the ceiling server (CPU 0) with this project's raw
// loader and with autocannon, each in its own process on CPU 1, alternately, and prints req/s and how much of
// its core each loader used. A loader near 100% of its core measures itself, not the server.
//
//   node bench/loader-check.mjs [--duration 10] [--rounds 3] [--connections 50] [--body-bytes 260]
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { commandLine } from './lib/cli.mjs';
import { treeCpuMs } from './lib/cpu.mjs';
import { repoRoot } from './lib/paths.mjs';
import { sleep, startCeiling, startLoader } from './lib/processes.mjs';
import { rawGet } from './lib/scenarios.mjs';

const { values: opts } = commandLine(import.meta.url, {
  duration: '10',
  rounds: '3',
  connections: '50',
  'body-bytes': '260',
});
const DURATION = Number(opts.duration);
const CONNECTIONS = Number(opts.connections);
const body = `[${'"x",'.repeat(Math.max(0, Math.floor((Number(opts['body-bytes']) - 6) / 4)))}"x"]`;
const path = '/dlr?key=BENCHKEY&secret=BENCHSEC&messageid=0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';

const ceiling = await startCeiling({ body, cpus: '0', label: 'ceiling-loader-check' });
const raw = startLoader({ cpus: '1' });

async function autocannon() {
  // autocannon's own CLI, in its own process on CPU 1, as a user would run it.
  const bin = join(repoRoot, 'node_modules', 'autocannon', 'autocannon.js');
  const child = spawn(
    'taskset',
    [
      '-c',
      '1',
      process.execPath,
      bin,
      '-c',
      String(CONNECTIONS),
      '-d',
      String(DURATION),
      '-j',
      `${ceiling.url}${path}`,
    ],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  const started = performance.now();
  await new Promise((r) => child.once('exit', r));
  const seconds = (performance.now() - started) / 1000;
  const result = JSON.parse(out);
  return { rps: result.requests.total / result.duration, loaderShare: null, seconds };
}

console.log(`ceiling with a ${body.length}-byte body, ${CONNECTIONS} connections, ${DURATION} s per run`);
try {
  for (let round = 0; round < Number(opts.rounds); round++) {
    const c0 = treeCpuMs(ceiling.pid);
    const r = await raw.run({
      host: ceiling.host,
      port: ceiling.port,
      connections: CONNECTIONS,
      warmupMs: 1000,
      durationMs: DURATION * 1000,
      requests: [rawGet(path)],
    });
    const serverShare = (treeCpuMs(ceiling.pid) - c0) / (r.seconds * 1000 + 1000);
    console.log(
      `raw loader   ${Math.round(r.rps).toLocaleString('en').padStart(7)} req/s  loader CPU ${Math.round((r.loaderCpuMs / (r.seconds * 1000 + 1000)) * 100)}%  server CPU ${Math.round(serverShare * 100)}%`,
    );
    await sleep(500);
    const a0 = treeCpuMs(ceiling.pid);
    const a = await autocannon();
    const aShare = (treeCpuMs(ceiling.pid) - a0) / (a.seconds * 1000);
    console.log(
      `autocannon   ${Math.round(a.rps).toLocaleString('en').padStart(7)} req/s  (its core is saturated when the server is not)  server CPU ${Math.round(aShare * 100)}%`,
    );
  }
} finally {
  raw.stop();
  await ceiling.stop();
}

#!/usr/bin/env node
// What one callback attempt's abort signals cost (callbacks/http-client.ts post), the two ways side by side:
// AbortSignal.timeout combined with the relay's shutdown signal by AbortSignal.any (the way before), against one
// AbortController, one setTimeout cleared when the attempt ends, and one listener on the shutdown signal removed
// with it (the way now). Each attempt makes its signals, waits one turn of the event loop as a request would, and
// ends; the rounds alternate the two ways. Prints µs per attempt, garbage collection included.
//
//   taskset -c 0 node bench/abort-signals.mjs [--attempts 100000] [--rounds 6] [--timeout-ms 15000]
import { setImmediate as turn } from 'node:timers/promises';
import { commandLine } from './lib/cli.mjs';
import { median } from './lib/report.mjs';

const { values: opts } = commandLine(import.meta.url, {
  attempts: '100000',
  rounds: '6',
  'timeout-ms': '15000',
});
const attempts = Number(opts.attempts);
const timeoutMs = Number(opts['timeout-ms']);
const shutdown = new AbortController().signal;
const inFlight = 64; // attempts at once, as a relay's concurrency

const ways = {
  async timeoutAndAny() {
    const timeout = AbortSignal.timeout(timeoutMs);
    const combined = AbortSignal.any([shutdown, timeout]);
    await turn();
    return combined.aborted;
  },
  async controllerAndTimer() {
    const attempt = new AbortController();
    const timer = setTimeout(() => attempt.abort(), timeoutMs);
    const stop = () => attempt.abort();
    shutdown.addEventListener('abort', stop, { once: true });
    try {
      await turn();
      return attempt.signal.aborted;
    } finally {
      clearTimeout(timer);
      shutdown.removeEventListener('abort', stop);
    }
  },
};

async function run(way) {
  const started = process.hrtime.bigint();
  let left = attempts;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (left-- > 0) await way();
    }),
  );
  return Number(process.hrtime.bigint() - started) / 1000 / attempts;
}

const results = { timeoutAndAny: [], controllerAndTimer: [] };
for (let round = 0; round < Number(opts.rounds); round++) {
  const order = round % 2 === 0 ? Object.keys(ways) : Object.keys(ways).reverse();
  for (const name of order) results[name].push(await run(ways[name]));
}
for (const [name, xs] of Object.entries(results)) {
  console.log(
    `${name.padEnd(20)} µs per attempt: median ${median(xs).toFixed(2)}  rounds ${xs.map((x) => x.toFixed(2)).join(' ')}`,
  );
}
// The timers AbortSignal.timeout left behind keep the process alive until they fire.
process.exit(0);

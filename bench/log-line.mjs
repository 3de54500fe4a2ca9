#!/usr/bin/env node
// What one access-log line costs the server, in pieces measured on their own (issue 19, /dlr's fixed cost):
// - the output: N lines through pino to a file, 20 lines per turn of the event loop as under load, into pino's
//   asynchronous destination directly and through the server's batchedOutput (http/log-output.ts), each in a
//   fresh process, alternately; CPU per line of the whole process (its threads' writes included);
// - the line's formatting: Fastify's logger (pino) writing the access log's fields into a sink that keeps nothing;
// - per call, of this build and of --baseline-dist's: the URL's redaction (redactUrl of http/access-log.ts), the
//   whole line through logRequest, and an item's report time (formatDrTime of domain/wire.ts).
//
//   node bench/log-line.mjs [--lines 300000] [--rounds 3] [--baseline-dist <another build's packages/server/dist>]
import { spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { commandLine } from './lib/cli.mjs';
import { dataDir, serverDist } from './lib/paths.mjs';

/** The fields of an access-log line as the server logs a `/dlr` request. */
const LINE = {
  reqId: 'b3f1c2d4-1234-5678-9abc-def012345678',
  method: 'GET',
  url: '/dlr?key=[redacted]&secret=[redacted]&messageid=m-000123',
  status: 200,
  ms: 0.53,
  ip: '127.0.0.1',
};

const [mode, lines] = process.argv.slice(2);
if (mode === '--child-direct' || mode === '--child-batched') {
  // One measurement, in a process of its own, writing to standard output (a file).
  const { default: pino } = await import('pino');
  const { batchedOutput } = await import(pathToFileURL(join(serverDist, 'http/log-output.js')).href);
  const n = Number(lines);
  const destination = pino.destination({ dest: 1, sync: false });
  const log = pino({}, mode === '--child-batched' ? batchedOutput(destination, 1) : destination);
  const start = process.cpuUsage();
  let i = 0;
  const turn = () => {
    for (let k = 0; k < 20 && i < n; k++, i++) log.info(LINE, 'request');
    if (i < n) return setImmediate(turn);
    // Every write done and its completion handled before the CPU is read.
    destination.flush(() => {
      const used = process.cpuUsage(start);
      process.stderr.write(`${(used.user + used.system) / n}\n`);
    });
  };
  turn();
} else {
  const { values: opts } = commandLine(import.meta.url, {
    lines: '300000',
    rounds: '3',
    'baseline-dist': null,
  });
  const out = join(dataDir, 'logs', 'log-line.out');
  mkdirSync(join(dataDir, 'logs'), { recursive: true });
  const child = (which) => {
    const fd = openSync(out, 'w');
    try {
      const { stderr, status } = spawnSync(
        process.execPath,
        [process.argv[1], `--child-${which}`, opts.lines],
        {
          stdio: ['ignore', fd, 'pipe'],
          encoding: 'utf8',
        },
      );
      if (status !== 0) throw new Error(`the ${which} measurement failed: ${stderr}`);
      return Number(stderr.trim());
    } finally {
      closeSync(fd);
    }
  };
  const got = { direct: [], batched: [] };
  for (let round = 0; round < Number(opts.rounds); round++) {
    got.direct.push(child('direct'));
    got.batched.push(child('batched'));
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const fmt = (xs) => `${median(xs).toFixed(2)} µs (${xs.map((x) => x.toFixed(2)).join(', ')})`;
  console.log(`log output, CPU per line: pino's destination ${fmt(got.direct)}; batched ${fmt(got.batched)}`);

  const { default: Fastify } = await import('fastify');
  const app = Fastify({ logger: { level: 'info', stream: { write: () => true } } });
  for (let i = 0; i < 300_000; i++) app.log.info(LINE, 'request');
  const formatStart = performance.now();
  for (let i = 0; i < 1_000_000; i++) app.log.info(LINE, 'request');
  console.log(
    `formatting through Fastify's logger: ${((performance.now() - formatStart) / 1000).toFixed(3)} µs per line`,
  );

  // Per call, this build's against --baseline-dist's, alternately in this process: the URL's redaction, the
  // whole access-log line through Fastify's logger (logRequest: redaction, fields and pino's line; since the fifth
  // pass built by http/access-line.ts), and the report time of an item (formatDrTime of domain/wire.ts).
  const url = '/dlr?key=Abcdefgh&secret=Abcdefgh&messageid=m-000123';
  const request = { ...LINE, url };
  const dates = Array.from({ length: 1024 }, (_, i) => new Date(1_785_715_220_497 + i * 7_777_777));
  const perCall = (f, n) => {
    for (let i = 0; i < n / 5; i++) f(i);
    const t = performance.now();
    for (let i = 0; i < n; i++) f(i);
    return ((performance.now() - t) * 1e6) / n;
  };
  const timeBuild = async (dist) => {
    const { redactUrl, logRequest } = await import(pathToFileURL(join(dist, 'http/access-log.js')).href);
    const { formatDrTime } = await import(pathToFileURL(join(dist, 'domain/wire.js')).href);
    return {
      redactUrl: perCall(() => redactUrl(url), 1_000_000),
      logRequest: perCall(() => logRequest(app.log, request), 300_000),
      formatDrTime: perCall((i) => formatDrTime(dates[i & 1023]), 1_000_000),
    };
  };
  const builds = [['this build', serverDist]];
  if (opts['baseline-dist']) builds.push(['baseline', resolve(opts['baseline-dist'])]);
  for (let round = 0; round < Number(opts.rounds); round++) {
    const figures = [];
    for (const [name, dist] of round % 2 === 0 ? builds : [...builds].reverse()) {
      const t = await timeBuild(dist);
      figures.push(
        `${name}: ${Object.entries(t)
          .map(([k, v]) => `${k} ${v.toFixed(0)} ns`)
          .join(', ')}`,
      );
    }
    console.log(`per call, round ${round + 1}: ${figures.join('; ')}`);
  }
}

#!/usr/bin/env node
// A light HTTP/1.1 load generator, run as its own process by bench/run.mjs (over IPC). Each of `connections`
// keep-alive sockets sends one request, reads the whole response, and sends the next (no pipelining): the
// closed loop autocannon runs, minus its per-request bookkeeping, so that on a 2-core machine the loader's core
// is not what bounds the figures (docs/benchmarks.md compares the two on the ceiling server).
//
// Requests are pre-encoded buffers; each connection picks one at random per request. A response is read by its
// Content-Length, or to the end of a chunked body. Latency is recorded from the write to the last byte into
// 10-µs buckets (1 s and beyond share the last one).
import net from 'node:net';

const BUCKET_NS = 10_000n;
const BUCKETS = 100_000;

/**
 * Runs one measurement: warm-up, then `durationMs` of counted requests.
 * @param {{ host: string, port: number, connections: number, warmupMs: number, durationMs: number,
 *           requests: string[] }} job
 */
export async function runLoad(job) {
  const requests = job.requests.map((r) => Buffer.from(r, 'latin1'));
  const histogram = new Uint32Array(BUCKETS + 1);
  const statuses = new Map();
  let counting = false;
  let stopping = false;
  let completed = 0;
  let socketErrors = 0;
  let bytes = 0;
  const cpuStart = process.cpuUsage();

  const connection = () =>
    new Promise((resolveConnection) => {
      let socket;
      let buffer = Buffer.alloc(0);
      let sentAt = 0n;
      const send = () => {
        if (stopping) {
          socket.end();
          resolveConnection();
          return;
        }
        sentAt = process.hrtime.bigint();
        socket.write(requests[Math.floor(Math.random() * requests.length)]);
      };
      const open = () => {
        socket = net.connect({ host: job.host, port: job.port, noDelay: true });
        socket.on('connect', send);
        socket.on('data', (chunk) => {
          buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
          const end = responseEnd(buffer);
          if (end < 0) return;
          if (counting) {
            const ns = process.hrtime.bigint() - sentAt;
            const bucket = ns / BUCKET_NS;
            histogram[bucket >= BigInt(BUCKETS) ? BUCKETS : Number(bucket)]++;
            const status = buffer.toString('latin1', 9, 12);
            statuses.set(status, (statuses.get(status) ?? 0) + 1);
            completed++;
            bytes += end;
          }
          buffer = buffer.subarray(end);
          send();
        });
        socket.on('error', () => {
          if (counting) socketErrors++;
        });
        socket.on('close', () => {
          if (stopping) return resolveConnection();
          buffer = Buffer.alloc(0);
          setTimeout(open, 10);
        });
      };
      open();
    });

  const done = Promise.all(Array.from({ length: job.connections }, connection));
  await sleep(job.warmupMs);
  counting = true;
  const started = process.hrtime.bigint();
  await sleep(job.durationMs);
  counting = false;
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  stopping = true;
  await Promise.race([done, sleep(2000)]);
  const cpu = process.cpuUsage(cpuStart);
  return {
    seconds,
    requests: completed,
    rps: completed / seconds,
    statuses: Object.fromEntries(statuses),
    socketErrors,
    bytes,
    p50Ms: percentile(histogram, completed, 0.5),
    p99Ms: percentile(histogram, completed, 0.99),
    p999Ms: percentile(histogram, completed, 0.999),
    loaderCpuMs: (cpu.user + cpu.system) / 1000,
  };
}

/** The length of the first complete response in `buf`, or -1 while it is incomplete. */
function responseEnd(buf) {
  const head = buf.indexOf('\r\n\r\n', 0, 'latin1');
  if (head < 0) return -1;
  const headers = buf.toString('latin1', 0, head).toLowerCase();
  const length = /\r\ncontent-length:\s*(\d+)/.exec(headers);
  if (length) {
    const end = head + 4 + Number(length[1]);
    return buf.length >= end ? end : -1;
  }
  if (headers.includes('\r\ntransfer-encoding: chunked')) {
    const last = buf.indexOf('\r\n0\r\n\r\n', head, 'latin1');
    return last < 0 ? -1 : last + 7;
  }
  return head + 4; // no body (204, 304)
}

function percentile(histogram, count, q) {
  if (count === 0) return Number.NaN;
  const target = Math.ceil(count * q);
  let seen = 0;
  for (let i = 0; i < histogram.length; i++) {
    seen += histogram[i];
    if (seen >= target) return ((i + 1) * Number(BUCKET_NS)) / 1e6; // the bucket's upper edge
  }
  return Number.POSITIVE_INFINITY;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// As a child process: one job per IPC message, one result back.
if (process.send) {
  process.on('message', async (job) => {
    try {
      process.send({ ok: true, result: await runLoad(job) });
    } catch (error) {
      process.send({ ok: false, error: String(error?.stack ?? error) });
    }
  });
}

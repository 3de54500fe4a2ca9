import { METHODS } from 'node:http';
import fc from 'fast-check';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { writeAccessLine } from '../../src/http/access-line.js';
import { logRequest } from '../../src/http/access-log.js';

/** A stream that keeps what it is given, and a fixed clock, so that two writes of one line compare equal. */
function recorded(options: pino.LoggerOptions = {}) {
  const lines: string[] = [];
  const stream = { write: (line: string) => lines.push(line) };
  const log = pino({ timestamp: () => ',"time":1764300000000', ...options }, stream);
  return { log: log as unknown as FastifyBaseLogger, lines };
}

/** A request line's text as Node's HTTP parser gives it: Latin-1, one byte per character. */
const latin1 = fc
  .array(fc.integer({ min: 0, max: 255 }), { maxLength: 120 })
  .map((codes) => String.fromCharCode(...codes));
const field = fc.record({
  reqId: fc.option(fc.stringMatching(/^[A-Za-z0-9._:@/+=-]{1,40}$/), { nil: undefined }),
  method: fc.constantFrom(...METHODS),
  url: latin1.map((rest) => `/dlr?${rest}`),
  status: fc.integer({ min: 100, max: 599 }),
  ms: fc.oneof(
    fc.double({ min: 0, max: 1e7, noNaN: true }),
    fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY),
  ),
  ip: fc.option(fc.constantFrom('127.0.0.1', '::1', '203.0.113.7', '2001:db8::1'), { nil: undefined }),
});

/** What pino itself writes for the line's fields, in the order the access log gives them. */
interface Line {
  reqId: string | undefined;
  method: string;
  url: string;
  status: number;
  ms: number;
  ip: string | undefined;
}

function pinoLine(log: FastifyBaseLogger, line: Line) {
  const fields = { method: line.method, url: line.url, status: line.status, ms: line.ms, ip: line.ip };
  log.info(line.reqId === undefined ? fields : { reqId: line.reqId, ...fields }, 'request');
}

describe('writeAccessLine', () => {
  it('writes the bytes pino writes, for any line, on a logger and on a child with bindings', () => {
    const root = recorded();
    const child = { log: root.log.child({ reqId: 'from-the-binding' }), lines: root.lines };
    fc.assert(
      fc.property(field, fc.boolean(), (line, onChild) => {
        const { log, lines } = onChild ? child : root;
        lines.length = 0;
        pinoLine(log, line);
        expect(writeAccessLine(log, line.reqId, line.method, line.url, line.status, line.ms, line.ip)).toBe(
          true,
        );
        expect(lines).toHaveLength(2);
        expect(lines[1]).toBe(lines[0]);
      }),
      { numRuns: 3000 },
    );
  });

  it('is the path the service takes: Fastify’s logger with its serializers, pid and hostname', () => {
    const lines: string[] = [];
    const app = Fastify({ logger: { level: 'info', stream: { write: (l: string) => lines.push(l) } } });
    expect(writeAccessLine(app.log, 'r-1', 'GET', '/dlr?key=[redacted]', 200, 0.42, '::1')).toBe(true);
    app.log.info(
      { reqId: 'r-1', method: 'GET', url: '/dlr?key=[redacted]', status: 200, ms: 0.42, ip: '::1' },
      'request',
    );
    const [fast, viaPino] = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const { time: t1, ...a } = fast ?? {};
    const { time: t2, ...b } = viaPino ?? {};
    expect(a).toStrictEqual(b);
    expect(Object.keys(fast ?? {})).toStrictEqual(Object.keys(viaPino ?? {}));
    expect(a).toMatchObject({ level: 30, pid: process.pid, msg: 'request', reqId: 'r-1' });
    expect(typeof t1).toBe('number');
    expect(typeof t2).toBe('number');
  });

  it('writes nothing when info is below the level, as pino does', () => {
    const { log, lines } = recorded({ level: 'warn' });
    expect(writeAccessLine(log, 'r', 'GET', '/dlr', 200, 1, undefined)).toBe(true);
    log.info({ method: 'GET' }, 'request');
    expect(lines).toStrictEqual([]);
  });

  it('leaves to pino every logger whose line would differ, and logRequest then writes pino’s line', () => {
    const configs: Record<string, pino.LoggerOptions> = {
      mixin: { mixin: () => ({ extra: 1 }) },
      'message key': { messageKey: 'message' },
      'nested key': { nestedKey: 'payload' },
      'message prefix': { msgPrefix: '[http] ' },
      'log formatter': { formatters: { log: (o) => ({ ...o, formatted: true }) } },
      'url serializer': { serializers: { url: () => 'hidden' } },
      'ip redaction': { redact: ['ip'] },
      'wildcard redaction': { redact: ['*.secret'] },
      'method hook': {
        hooks: {
          logMethod(args, method) {
            method.apply(this, args);
          },
        },
      },
      'stream hook': { hooks: { streamWrite: (s) => s.replace('request', 'REQUEST') } },
    };
    for (const [name, options] of Object.entries(configs)) {
      const { log, lines } = recorded(options);
      expect(writeAccessLine(log, 'r', 'GET', '/dlr?a=1', 200, 1.5, '::1'), name).toBe(false);
      expect(lines, name).toStrictEqual([]);
      logRequest(log, { reqId: 'r', method: 'GET', url: '/dlr?secret=s', status: 200, ms: 1.5, ip: '::1' });
      pinoLine(log, {
        reqId: 'r',
        method: 'GET',
        url: '/dlr?secret=[redacted]',
        status: 200,
        ms: 1.5,
        ip: '::1',
      });
      expect(lines, name).toHaveLength(2);
      expect(lines[0], name).toBe(lines[1]);
    }
  });
});

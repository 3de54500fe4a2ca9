import type { FastifyBaseLogger } from 'fastify';
import pino from 'pino';

const {
  chindingsSym,
  endSym,
  formattersSym,
  hooksSym,
  lsCacheSym,
  messageKeySym,
  mixinSym,
  needsMetadataGsym,
  nestedKeySym,
  serializersSym,
  streamSym,
  stringifiersSym,
  timeSym,
  wildcardFirstSym,
} = pino.symbols;
// Missing from pino's type declarations, present since pino 8.
const { msgPrefixSym } = pino.symbols as unknown as Record<string, symbol | undefined>;

/** The fields of an access-log line (http/access-log.ts) and the message's key: none may be serialized or redacted. */
const KEYS = ['reqId', 'method', 'url', 'status', 'ms', 'ip', 'msg'];

/** The parts of a pino logger the line is built from, read by pino's own exported symbols. */
interface PinoLine {
  levelPrefix: string;
  time: () => string;
  bindings: string;
  end: string;
  stream: { write(line: string): unknown };
}

type Internals = Record<symbol, unknown>;
const record = (value: unknown): Internals | undefined =>
  typeof value === 'object' && value !== null ? (value as Internals) : undefined;

/**
 * The parts of `log` to build the line from, when `log.info(fields, 'request')` would write exactly the line
 * {@link writeAccessLine} builds: a pino logger whose message key is `msg`, with no mixin, message prefix,
 * nested key, log formatter, hook, stream that wants the line's metadata, and no serializer or redaction of
 * these fields. `waybill serve`'s logger is such a logger; for any other (a test's, say) this is undefined and
 * the line is written through pino.
 */
function plainPino(log: FastifyBaseLogger): PinoLine | undefined {
  const p = log as unknown as Internals;
  const stream = record(p[streamSym]);
  const serializers = record(p[serializersSym]) as Record<string, unknown> | undefined;
  const stringifiers = record(p[stringifiersSym]) as (Record<string, unknown> & Internals) | undefined;
  const hooks = record(p[hooksSym]) as Record<string, unknown> | undefined;
  const formatters = record(p[formattersSym]) as Record<string, unknown> | undefined;
  const levels = record(p[lsCacheSym]) as Record<number, unknown> | undefined;
  const time = p[timeSym];
  const bindings = p[chindingsSym];
  const end = p[endSym];
  const levelPrefix = levels?.[30];
  if (!stream || !serializers || !stringifiers || !hooks || !formatters || typeof time !== 'function') return;
  if (typeof bindings !== 'string' || typeof end !== 'string' || typeof levelPrefix !== 'string') return;
  if (
    p[messageKeySym] !== 'msg' ||
    p[mixinSym] ||
    typeof p[msgPrefixSym as symbol] === 'string' ||
    p[nestedKeySym]
  )
    return;
  if (formatters.log || hooks.logMethod || hooks.streamWrite || stream[needsMetadataGsym] === true) return;
  if (msgPrefixSym === undefined || stringifiers[wildcardFirstSym] !== undefined) return;
  if (typeof (stream as { write?: unknown }).write !== 'function') return;
  for (const field of KEYS) {
    if (serializers[field] !== undefined || stringifiers[field] !== undefined) return;
  }
  return { levelPrefix, time: time as () => string, bindings, end, stream: stream as PinoLine['stream'] };
}

/**
 * Writes the access log's line `{"level":30,"time":…,<the logger's bindings>,"reqId":…,"method":…,"url":…,
 * "status":…,"ms":…,"ip":…,"msg":"request"}` straight to the logger's stream, built from pino's own level
 * prefix, clock, bindings and line end: the bytes `log.info({ reqId, method, url, status, ms, ip }, 'request')`
 * writes, without pino's general path (its argument formatting, the walk over the object's keys and each
 * value's type), which cost `/dlr` about 3% (docs/benchmarks.md). `reqId` and `ip` are left out when undefined,
 * as pino leaves them. Strings are escaped with `JSON.stringify`, which is what pino does for every string these
 * can be (a request line is Latin-1, so no lone surrogate, where pino's own escaping would differ). Returns
 * false, having written nothing, when the logger is not plainly pino's ({@link plainPino}); a level above
 * `info` writes nothing and returns true. A test compares it with pino's own line byte for byte.
 */
export function writeAccessLine(
  log: FastifyBaseLogger,
  reqId: string | undefined,
  method: string,
  url: string,
  status: number,
  ms: number,
  ip: string | undefined,
): boolean {
  const parts = plainPino(log);
  if (parts === undefined) return false;
  if (!(log as unknown as { isLevelEnabled(level: string): boolean }).isLevelEnabled('info')) return true;
  let line = parts.levelPrefix + parts.time.call(log) + parts.bindings;
  if (reqId !== undefined) line += `,"reqId":${JSON.stringify(reqId)}`;
  line += `,"method":${JSON.stringify(method)},"url":${JSON.stringify(url)},"status":${status},"ms":${Number.isFinite(ms) ? ms : null}`;
  if (ip !== undefined) line += `,"ip":${JSON.stringify(ip)}`;
  parts.stream.write(`${line},"msg":"request"${parts.end}`);
  return true;
}

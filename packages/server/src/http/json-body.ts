import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from '../domain/errors.js';

/**
 * The JSON body parser of the operator API. It replaces Fastify's for two answers a person can act on:
 * - an empty body sent as `application/json` (what `curl -X POST -H 'Content-Type: application/json'` sends)
 *   is no body at all for an operation that takes none, and `{}` for one whose body may be an empty object;
 *   only an operation that needs fields refuses it;
 * - a body holding a `__proto__` key (or `constructor.prototype`) is still refused, since later code copying
 *   it could alter object prototypes, but the answer names the key and where it is instead of calling valid
 *   JSON "not valid JSON".
 */
export function registerJsonBody(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, text, done) => {
    try {
      done(null, parseBody(request, String(text)));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
}

function parseBody(request: FastifyRequest, raw: string): unknown {
  // A byte order mark is not JSON, but editors write one; Fastify's parser skipped it too.
  const text = raw.charCodeAt(0) === 0xfeff ? raw.slice(1) : raw;
  if (text.trim() === '') return emptyBody(request);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ApiError('invalid_request', 'the request body is not valid JSON');
  }
  // Only a text that spells one of the keys (possibly with escapes) can hold it: most bodies skip the walk.
  if (MAY_HOLD_FORBIDDEN_KEY.test(text)) {
    const where = forbiddenKey(value);
    if (where !== null) {
      throw new ApiError(
        'invalid_request',
        `the request body must not contain the key "${where.key}" (found at ${where.path}): it is refused anywhere in a body`,
      );
    }
  }
  return value;
}

/** A text that could spell a forbidden key: the key itself, or any \u escape (which could spell it). */
const MAY_HOLD_FORBIDDEN_KEY = /__proto__|constructor|\\u/;

/** The operation's body schema, as declared on the route (a `$ref` when it is a named schema). */
type BodySchema = { $ref?: string; type?: string; required?: unknown[] } | undefined;

/**
 * An operation that takes no body reads an empty one as none; one whose body may be an empty object (`{}`: a
 * bulk redelivery) as `{}`. One that needs fields refuses it, saying so.
 */
function emptyBody(request: FastifyRequest): unknown {
  const schema = request.routeOptions.schema?.body as BodySchema;
  if (schema === undefined) return undefined;
  if (schema.$ref === undefined && schema.type === 'object' && (schema.required ?? []).length === 0)
    return {};
  throw new ApiError('invalid_request', 'the request body is empty; send a JSON object');
}

/** Where a parsed body holds `__proto__`, or `constructor` holding `prototype`, as an own key; else null. */
function forbiddenKey(value: unknown): { key: string; path: string } | null {
  const stack: [unknown, string][] = [[value, '']];
  while (stack.length > 0) {
    const [node, path] = stack.pop() as [unknown, string];
    if (node === null || typeof node !== 'object') continue;
    const shown = path === '' ? 'the top level' : path;
    if (Object.hasOwn(node, '__proto__')) return { key: '__proto__', path: shown };
    const ctor = Object.hasOwn(node, 'constructor') ? (node as { constructor: unknown }).constructor : null;
    if (ctor !== null && typeof ctor === 'object' && Object.hasOwn(ctor, 'prototype')) {
      return { key: 'constructor.prototype', path: shown };
    }
    const children: [string, unknown][] = Array.isArray(node)
      ? node.map((child, i) => [`${path}[${i}]`, child])
      : Object.entries(node).map(([key, child]) => [path === '' ? key : `${path}.${key}`, child]);
    for (const [childPath, child] of children) stack.push([child, childPath]);
  }
  return null;
}

import { createHash } from 'node:crypto';
import {
  type Serializer,
  type SerializerFactory,
  SerializerSelector,
} from '@fastify/fast-json-stringify-compiler';

/**
 * Fastify's response-serializer factory, compiling each response schema once per process instead of once per
 * app. Compiling every route's serializers (fast-json-stringify) is most of the ~0.4 s an app takes to become
 * ready; `waybill serve` builds one app, but tests, the CLI and the benches build many in one process.
 *
 * Routes build their schema objects as they register, and Fastify clones the shared (`addSchema`) ones, so a
 * compiled serializer is found by content: the route schema's JSON, the shared schemas' JSON and the server's
 * serializer options object (by identity). Any difference compiles afresh. Serializers are pure functions of
 * those inputs, and JSON is what fast-json-stringify reads of a schema.
 */

const compiled = new Map<string, Serializer>();
const optionIds = new WeakMap<object, number>();
let optionObjects = 0;

/** Fastify passes the server's own `serializerOpts` object, or none. */
function optionsId(options: unknown): number {
  if (typeof options !== 'object' || options === null) return 0;
  let id = optionIds.get(options);
  if (id === undefined) {
    optionObjects += 1;
    id = optionObjects;
    optionIds.set(options, id);
  }
  return id;
}

const digest = (text: string) => createHash('sha256').update(text).digest('base64');

export function cachedSerializerFactory(): SerializerFactory {
  const build = SerializerSelector();
  return (externalSchemas, options) => {
    const compile = build(externalSchemas, options);
    const byId = (externalSchemas ?? {}) as Record<string, unknown>;
    const shared = digest(
      JSON.stringify(
        Object.keys(byId)
          .sort()
          .map((id) => byId[id]),
      ),
    );
    const context = `${optionsId(options)}:${shared}`;
    return (route) => {
      const key = `${context}:${route.httpStatus}:${digest(JSON.stringify(route.schema) ?? '')}`;
      let serialize = compiled.get(key);
      if (!serialize) {
        serialize = compile(route);
        compiled.set(key, serialize);
      }
      return serialize;
    };
  };
}

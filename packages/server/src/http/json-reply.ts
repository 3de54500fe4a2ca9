import type { FastifyReply } from 'fastify';

/**
 * A 200 answer serialized by `JSON.stringify` instead of the route's compiled response serializer. For pages of
 * message records, strings for the most part, V8's own serializer is the cheaper of the two (docs/benchmarks.md,
 * "Second pass, per-row cost and the relay"). It writes what it is given, so this is only for bodies built field
 * by field in their schema's order with nothing else in them — domain/wire.ts's records and the envelopes around
 * them; the HTTP tests compare such answers byte for byte with the schema's serializer.
 */
export function stringified(reply: FastifyReply, body: unknown): string {
  reply.type('application/json; charset=utf-8');
  return JSON.stringify(body);
}

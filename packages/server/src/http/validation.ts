import type { FastifySchemaCompiler } from 'fastify';

/**
 * For routes whose input rules depend on a mode or on the spec's own error codes: the schema stays on the
 * route for the OpenAPI document, and the handler enforces the rules with the domain parsers.
 */
export const describedOnly: FastifySchemaCompiler<unknown> = () => (value) => ({ value });

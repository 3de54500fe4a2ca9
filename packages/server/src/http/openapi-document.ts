/**
 * Constraints the OpenAPI document states but the schema validator must not enforce, and the last touches
 * @fastify/swagger cannot make itself.
 *
 * Some inputs are checked by code rather than by schema, because the contract fixes the answer: a malformed
 * account id is an account that does not exist (404, not 400); an ingest item's errors are listed per index
 * with our own wording; `callbackUrl` is judged by the WHATWG URL parser, which also accepts spellings a
 * pattern cannot describe. Such a rule is declared beside the schema under {@link DOCUMENTED}: the validators
 * (Fastify's Ajv, which knows the keyword and ignores it, and TypeBox) do not see it, and
 * {@link finishDocument} merges it into the served document.
 */

/** The keyword holding document-only constraints (an `x-` name: JSON Schema tools ignore it). */
export const DOCUMENTED = 'x-documented';

/** Schema options stating `constraints` in the document only (spread them into a TypeBox schema's options). */
export const documented = (constraints: Record<string, unknown>) => ({ [DOCUMENTED]: constraints });

/**
 * The served document: document-only constraints merged into their schemas, and response headers that are
 * always sent marked `required` (the header object's own field, which @fastify/swagger does not set).
 */
export function finishDocument<T extends object>(generated: T): T {
  // A copy: the generated document may share objects with the route schemas the validators compile.
  const document = structuredClone(generated);
  const stack: unknown[] = [document];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node === null || typeof node !== 'object') continue;
    const record = node as Record<string, unknown>;
    const constraints = record[DOCUMENTED];
    if (constraints !== undefined) {
      delete record[DOCUMENTED];
      Object.assign(record, constraints);
    }
    liftRequiredHeaders(record.headers);
    for (const child of Object.values(record)) stack.push(child);
  }
  return document;
}

/** Response headers arrive as `{schema: {…, required: true}}`: `required` belongs to the header object. */
function liftRequiredHeaders(headers: unknown): void {
  if (headers === null || typeof headers !== 'object') return;
  for (const header of Object.values(headers as Record<string, unknown>)) {
    const schema = (header as { schema?: Record<string, unknown> } | null)?.schema;
    if (schema?.required === true) {
      delete schema.required;
      (header as Record<string, unknown>).required = true;
    }
  }
}

/**
 * The examples of the OpenAPI document — what /docs shows a reader — are real answers: every response has one,
 * each one validates against its schema, a /dlr failure shows the spec's code and text of its HTTP status, and
 * every receipt shown is consistent (a receipt means send status "0", drStatus follows drStatuscode).
 */
import { describe, expect, it } from 'vitest';
import { DLR_FAILURES } from '../../src/domain/errors.js';
import { engines } from '../support/engines.js';
import { startHarness } from '../support/http.js';
import {
  documentValidator,
  type JsonSchema,
  type OpenApiDocument,
  operationsOf,
  pointerSegment,
} from '../support/openapi.js';

const sqlite = engines()[0];
if (!sqlite) throw new Error('no SQLite engine');

async function loadDocument(env: Record<string, string> = {}): Promise<OpenApiDocument> {
  const h = await startHarness(sqlite as NonNullable<typeof sqlite>, env);
  try {
    return (await h.inject('/openapi.json')).json() as OpenApiDocument;
  } finally {
    await h.close();
  }
}

/** Every example of every response, with where it is and the pointer of its schema. */
function responseExamples(doc: OpenApiDocument) {
  return operationsOf(doc).flatMap(({ path, method, operation }) =>
    Object.entries(operation.responses).flatMap(([status, response]) =>
      Object.entries(response.content ?? {}).flatMap(([mediaType, media]) => {
        const schemaPointer = `/paths/${pointerSegment(path)}/${method}/responses/${status}/content/${pointerSegment(mediaType)}/schema`;
        const named = Object.entries(media.examples ?? {}).map(([name, e]) => ({ name, value: e.value }));
        const values =
          media.example === undefined ? named : [{ name: 'example', value: media.example }, ...named];
        return values.map(({ name, value }) => ({
          where: `${method.toUpperCase()} ${path} ${status} ${mediaType} ${name}`,
          path,
          status: Number(status),
          mediaType,
          schemaPointer,
          value,
        }));
      }),
    ),
  );
}

/** Every `examples` array of a schema anywhere in the document, with the pointer of that schema. */
function schemaExamples(node: unknown, pointer = ''): { pointer: string; value: unknown }[] {
  if (node === null || typeof node !== 'object') return [];
  const found: { pointer: string; value: unknown }[] = [];
  const record = node as JsonSchema;
  const isSchema = 'type' in record || 'properties' in record || '$ref' in record || 'anyOf' in record;
  if (isSchema && Array.isArray(record.examples)) {
    for (const value of record.examples) found.push({ pointer, value });
  }
  for (const [key, child] of Object.entries(record)) {
    // Media and parameter examples are checked against their schema elsewhere.
    if (key === 'examples' || key === 'example') continue;
    found.push(...schemaExamples(child, `${pointer}/${pointerSegment(key)}`));
  }
  return found;
}

/** Every /dlr item shown anywhere in the document. */
function dlrItems(node: unknown): Record<string, unknown>[] {
  if (node === null || typeof node !== 'object') return [];
  const record = node as Record<string, unknown>;
  const own = record.type === 'dlr' && typeof record.messageid === 'string' ? [record] : [];
  return [...own, ...Object.values(record).flatMap(dlrItems)];
}

describe.each([
  ['with the operator API on', {}],
  ['with the operator API off', { WAYBILL_ADMIN_TOKEN: '' }],
])('the examples of the OpenAPI document, %s', (_name, env) => {
  it('give every response with a body at least one example', async () => {
    const doc = await loadDocument(env);
    const missing = operationsOf(doc).flatMap(({ path, method, operation }) =>
      Object.entries(operation.responses).flatMap(([status, response]) =>
        Object.entries(response.content ?? {})
          .filter(
            ([, media]) => media.example === undefined && Object.keys(media.examples ?? {}).length === 0,
          )
          .map(([mediaType]) => `${method.toUpperCase()} ${path} ${status} ${mediaType}`),
      ),
    );
    expect(missing).toStrictEqual([]);
  });

  it('validate against the schema of their response', async () => {
    const doc = await loadDocument(env);
    const validate = documentValidator(doc);
    // The validator is not vacuous: a receipt with an unknown send status, or an unknown field, is refused.
    const item = { type: 'dlr', messageid: 'm-1', to: '447700900123', status: '1', price: 0, counts: 1 };
    expect(validate('/components/schemas/DlrItem', item)).toStrictEqual([]);
    expect(validate('/components/schemas/DlrItem', { ...item, status: '5' })).not.toStrictEqual([]);
    expect(validate('/components/schemas/DlrItem', { ...item, extra: 1 })).not.toStrictEqual([]);
    const examples = responseExamples(doc);
    expect(examples.length).toBeGreaterThan(50);
    for (const example of examples) {
      if (example.mediaType === 'text/plain') {
        expect(typeof example.value, example.where).toBe('string');
        continue;
      }
      expect(validate(example.schemaPointer, example.value), example.where).toStrictEqual([]);
    }
  });

  it('show, for each /dlr failure, the spec’s code and text of that HTTP status', async () => {
    const doc = await loadDocument(env);
    const failures = responseExamples(doc).filter(
      (e) => e.path === '/dlr' && e.status >= 400 && e.mediaType === 'application/json',
    );
    expect(new Set(failures.map((f) => f.status))).toStrictEqual(new Set([400, 401, 402, 403, 429, 500]));
    const codes = new Set<number>();
    for (const failure of failures) {
      const { code, descr } = failure.value as { code: keyof typeof DLR_FAILURES; descr: string };
      codes.add(code);
      expect(DLR_FAILURES[code], failure.where).toBeDefined();
      expect({ status: failure.status, descr }, failure.where).toStrictEqual({
        status: DLR_FAILURES[code].status,
        descr: DLR_FAILURES[code].descr,
      });
    }
    // Every failure the spec defines is shown once.
    expect([...codes].sort((a, b) => a - b)).toStrictEqual(Object.keys(DLR_FAILURES).map(Number));
  });

  it('show problems whose status and code agree', async () => {
    const doc = await loadDocument(env);
    for (const e of responseExamples(doc).filter((x) => x.mediaType === 'application/problem+json')) {
      expect(e.value, e.where).toMatchObject({ type: 'about:blank', status: e.status });
    }
  });

  it('show only consistent receipts', async () => {
    const doc = await loadDocument(env);
    const items = dlrItems(doc);
    expect(items.length).toBeGreaterThan(0);
    for (const item of items) {
      const where = JSON.stringify(item);
      expect(item.counts, where).toBeGreaterThanOrEqual(1);
      if (item.drStatuscode === undefined) {
        for (const field of ['drStatus', 'drErrcode', 'drTime'])
          expect(item, where).not.toHaveProperty(field);
        continue;
      }
      // An applied receipt sets the send status to "0"; drStatus is derived from drStatuscode.
      expect(item.status, where).toBe('0');
      const ok = item.drStatuscode === 'delivered' || item.drStatuscode === 'accepted';
      expect(item.drStatus, where).toBe(ok ? 0 : 400);
      expect(typeof item.drErrcode, where).toBe('string');
      expect(typeof item.drTime, where).toBe('string');
      if (item.drStatuscode === 'delivered') expect(item.drErrcode, where).toBe('0');
    }
  });

  it('of schemas and parameters validate against their own schema', async () => {
    const doc = await loadDocument(env);
    const validate = documentValidator(doc);
    const examples = schemaExamples(doc);
    expect(examples.length).toBeGreaterThan(10);
    for (const { pointer, value } of examples) {
      expect(validate(pointer, value), `${pointer}: ${JSON.stringify(value)}`).toStrictEqual([]);
    }
    for (const { path, method, operation } of operationsOf(doc)) {
      for (const [i, parameter] of (operation.parameters ?? []).entries()) {
        if (parameter.example === undefined) continue;
        const pointer = `/paths/${pointerSegment(path)}/${method}/parameters/${i}/schema`;
        expect(validate(pointer, parameter.example), `${method} ${path} ${parameter.name}`).toStrictEqual([]);
      }
    }
  });
});

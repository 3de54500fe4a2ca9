import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';

// ajv-formats is CommonJS: under NodeNext its function is the default export's `default`.
const addFormats = formats.default;

/** The parts of an OpenAPI 3.1 document the tests read. */
export interface MediaObject {
  schema?: unknown;
  example?: unknown;
  examples?: Record<string, { summary?: string; value: unknown }>;
}
export interface HeaderObject {
  required?: boolean;
  schema?: unknown;
}
export interface ResponseObject {
  description: string;
  headers?: Record<string, HeaderObject>;
  content?: Record<string, MediaObject>;
}
export interface ParameterObject {
  name: string;
  in: 'query' | 'path' | 'header' | 'cookie';
  required?: boolean;
  schema: JsonSchema;
  example?: unknown;
}
export interface Operation {
  operationId: string;
  parameters?: ParameterObject[];
  requestBody?: { required?: boolean; content: Record<string, MediaObject> };
  responses: Record<string, ResponseObject>;
  security?: Record<string, string[]>[];
}
export interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, JsonSchema> };
}
export type JsonSchema = Record<string, unknown>;

export const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;

/** Every operation of the document with its path and method. */
export const operationsOf = (doc: OpenApiDocument) =>
  Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => (METHODS as readonly string[]).includes(method))
      .map(([method, operation]) => ({ path, method, operation })),
  );

/** A JSON pointer segment (`/` and `~` escaped). */
export const pointerSegment = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

const BASE = 'https://waybill.test/openapi.json';

/**
 * Validates values against the schemas of the document (JSON Schema 2020-12, with formats), each named by
 * its JSON pointer in the document, so that `$ref`s resolve as the document's readers resolve them.
 */
export function documentValidator(doc: OpenApiDocument) {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  ajv.addSchema({ ...structuredClone(doc), $id: BASE });
  const compiled = new Map<string, ValidateFunction>();
  return (pointer: string, value: unknown): string[] => {
    let validate = compiled.get(pointer);
    if (!validate) {
      validate = ajv.compile({ $ref: `${BASE}#${pointer}` });
      compiled.set(pointer, validate);
    }
    return validate(value)
      ? []
      : (validate.errors ?? []).map(
          (e) => `${e.instancePath || '/'} ${e.message ?? ''} ${JSON.stringify(e.params)}`,
        );
  };
}

/** The schema a `$ref` (`#/components/schemas/X`) names; any other schema as is. */
export function resolve(doc: OpenApiDocument, schema: JsonSchema): JsonSchema {
  let current = schema;
  for (let i = 0; i < 20 && typeof current.$ref === 'string'; i++) {
    const name = current.$ref.replace('#/components/schemas/', '');
    const target = doc.components.schemas[name];
    if (!target) throw new Error(`unresolved ${current.$ref}`);
    current = target;
  }
  return current;
}

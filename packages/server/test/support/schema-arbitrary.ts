import fc from 'fast-check';
import { type JsonSchema, type OpenApiDocument, resolve } from './openapi.js';

/**
 * Values a JSON Schema of the OpenAPI document allows, as a fast-check arbitrary: what a client (or a tester such
 * as Schemathesis) generating from the document would send. It reads the keywords the document uses — type,
 * enum, const, pattern, format, length and range bounds, properties with required and additionalProperties,
 * patternProperties with propertyNames,
 * items with minItems and maxItems, anyOf — and fails loudly on a keyword it does not know, so that a new kind
 * of constraint is not silently left out.
 */
export function arbitraryOf(doc: OpenApiDocument, schema: JsonSchema): fc.Arbitrary<unknown> {
  const s = resolve(doc, schema);
  if (Array.isArray(s.enum)) return fc.constantFrom(...(s.enum as unknown[]));
  if ('const' in s) return fc.constant(s.const);
  if (Array.isArray(s.anyOf) || Array.isArray(s.oneOf)) {
    const { anyOf, oneOf, ...rest } = s;
    const members = ((anyOf ?? oneOf) as JsonSchema[]).map((m) => ({ ...rest, ...resolve(doc, m) }));
    return fc.oneof(...members.map((m) => arbitraryOf(doc, m)));
  }
  switch (s.type) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return fc.integer({ min: bound(s.minimum, -1000), max: bound(s.maximum, 1000) });
    case 'number':
      return fc.double({
        min: bound(s.minimum, -1e6),
        max: bound(s.maximum, 1e6),
        noNaN: true,
        noDefaultInfinity: true,
      });
    case 'string':
      return stringOf(s);
    case 'array': {
      const items = arbitraryOf(doc, (s.items ?? {}) as JsonSchema);
      const minLength = bound(s.minItems, 0);
      return fc.array(items, {
        minLength,
        maxLength: Math.max(minLength, Math.min(bound(s.maxItems, 3), 3)),
      });
    }
    case 'object':
      return objectOf(doc, s);
    default:
      throw new Error(`no generator for the schema ${JSON.stringify(s).slice(0, 200)}`);
  }
}

const bound = (value: unknown, fallback: number) => (typeof value === 'number' ? value : fallback);

function stringOf(s: JsonSchema): fc.Arbitrary<string> {
  const minLength = bound(s.minLength, 0);
  const maxLength = bound(s.maxLength, 40);
  const pattern = typeof s.pattern === 'string' ? new RegExp(s.pattern, 'u') : null;
  const fits = (v: string) => v.length >= minLength && v.length <= maxLength && (!pattern || pattern.test(v));
  let base: fc.Arbitrary<string>;
  switch (s.format) {
    case 'uuid':
      // Any case: the document allows it (UUIDs are matched case-insensitively).
      base = fc.tuple(fc.uuid(), fc.boolean()).map(([u, upper]) => (upper ? u.toUpperCase() : u));
      break;
    case 'date-time':
      base = fc
        .date({
          min: new Date('1970-01-01T00:00:00Z'),
          max: new Date('9999-12-31T23:59:59Z'),
          noInvalidDate: true,
        })
        .map((d) => d.toISOString());
      break;
    case 'uri':
      base = fc.webUrl({ validSchemes: ['http', 'https'], withQueryParameters: true, withFragments: true });
      break;
    case 'ipv4':
      base = fc.ipV4();
      break;
    case 'ipv6':
      base = fc.ipV6();
      break;
    case undefined:
      base = pattern ? fc.stringMatching(pattern) : fc.string({ minLength, maxLength, unit: 'grapheme' });
      break;
    default:
      throw new Error(`no generator for the format ${String(s.format)}`);
  }
  return base.filter(fits);
}

function objectOf(doc: OpenApiDocument, s: JsonSchema): fc.Arbitrary<Record<string, unknown>> {
  const properties = (s.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((s.required ?? []) as string[]);
  const shape = Object.fromEntries(
    Object.entries(properties).map(([name, property]) => [name, arbitraryOf(doc, property)]),
  );
  const fixed = fc.record(shape, { requiredKeys: [...required].filter((k) => k in properties) });
  // A map (a record of any keys): keys from propertyNames that its pattern takes, values from its schema.
  const patterns = Object.entries((s.patternProperties ?? {}) as Record<string, JsonSchema>);
  if (patterns.length > 0 && Object.keys(properties).length === 0) {
    const [[keyPattern, valueSchema]] = patterns as [[string, JsonSchema]];
    const keyRule = new RegExp(keyPattern, 'u');
    const names = s.propertyNames ? stringOf(s.propertyNames as JsonSchema) : fc.string({ maxLength: 8 });
    return fc.dictionary(
      names.filter((k) => keyRule.test(k) && !['__proto__', 'constructor'].includes(k)),
      arbitraryOf(doc, valueSchema),
      { maxKeys: Math.min(bound(s.maxProperties, 3), 3) },
    );
  }
  // A free-form object (stored as is): a few JSON values under plain keys.
  if (s.additionalProperties === true && Object.keys(properties).length === 0) {
    return fc.dictionary(
      fc.string({ minLength: 1, maxLength: 8 }).filter((k) => !['__proto__', 'constructor'].includes(k)),
      fc.jsonValue({ maxDepth: 2 }),
      { maxKeys: 3 },
    );
  }
  return fixed;
}

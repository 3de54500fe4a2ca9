import { describe, expect, it } from 'vitest';
import { cachedSerializerFactory } from '../../src/http/serializers.js';

const route = (schema: unknown) => ({ schema, method: 'GET', url: '/x', httpStatus: '200' });

describe('the response-serializer cache', () => {
  const item = () => ({
    type: 'object',
    properties: { id: { type: 'string' }, count: { type: 'integer' } },
  });

  it('reuses one compiled serializer for schemas of the same content, across factories', () => {
    const first = cachedSerializerFactory()(undefined, undefined)(route(item()));
    const second = cachedSerializerFactory()(undefined, undefined)(route(item()));
    expect(second).toBe(first);
    expect(first({ id: 'a', count: 2, secret: 'x' })).toBe('{"id":"a","count":2}');
  });

  it('compiles afresh when the schema differs, and each serializes by its own schema', () => {
    const compile = cachedSerializerFactory()(undefined, undefined);
    const narrow = compile(route(item()));
    const wide = compile(
      route({ ...item(), properties: { ...item().properties, label: { type: 'string' } } }),
    );
    expect(wide).not.toBe(narrow);
    expect(wide({ id: 'a', count: 2, label: 'l' })).toBe('{"id":"a","count":2,"label":"l"}');
    expect(narrow({ id: 'a', count: 2, label: 'l' })).toBe('{"id":"a","count":2}');
  });

  it('compiles afresh when a shared $ref schema differs', () => {
    const schema = { type: 'object', properties: { item: { $ref: 'Item#' } } };
    const shared = (extra: Record<string, unknown>) => ({
      Item: { $id: 'Item', type: 'object', properties: { id: { type: 'string' }, ...extra } },
    });
    const plain = cachedSerializerFactory()(shared({}), undefined)(route(schema));
    const labelled = cachedSerializerFactory()(shared({ label: { type: 'string' } }), undefined)(
      route(schema),
    );
    expect(labelled).not.toBe(plain);
    expect(plain({ item: { id: 'a', label: 'l' } })).toBe('{"item":{"id":"a"}}');
    expect(labelled({ item: { id: 'a', label: 'l' } })).toBe('{"item":{"id":"a","label":"l"}}');
  });

  it('compiles afresh for other serializer options', () => {
    const schema = item();
    const plain = cachedSerializerFactory()(undefined, undefined)(route(schema));
    const withOptions = cachedSerializerFactory()(undefined, { rounding: 'ceil' })(route(schema));
    expect(withOptions).not.toBe(plain);
    expect(withOptions({ id: 'a', count: 1.2 })).toBe('{"id":"a","count":2}');
    expect(plain({ id: 'a', count: 1.2 })).toBe('{"id":"a","count":1}');
  });
});

import fastJson from 'fast-json-stringify';
import { SHARED_SCHEMAS } from '../../src/http/schemas.js';

/**
 * What the route's compiled serializer (fast-json-stringify, with the app's shared `$id` schemas) makes of
 * `body` for `schema`: the bytes a route that writes its own JSON must answer.
 */
export function schemaSerializer(schema: object): (body: unknown) => string {
  const shared = Object.fromEntries(SHARED_SCHEMAS.map((s) => [(s as { $id: string }).$id, s]));
  const options = { schema: shared } as unknown as Parameters<typeof fastJson>[1];
  return fastJson(schema as Parameters<typeof fastJson>[0], options) as (body: unknown) => string;
}

import { parse } from 'fast-querystring';

/**
 * The query-string parser of every route, given to Fastify's router (app.ts) and used by the prepared /dlr path
 * (http/prepared-dlr.ts), so that both read a query alike. It is the router's own default, fast-querystring:
 * a name given twice becomes an array, `+` a space, and a malformed escape stays as it was sent.
 */
export function parseQueryString(query: string): Record<string, unknown> {
  return query.length === 0 ? {} : parse(query);
}

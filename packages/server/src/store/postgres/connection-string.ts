/**
 * Multi-host PostgreSQL URLs, as libpq takes them: `postgres://user@h1:5432,h2:5432/db?target_session_attrs=read-write`
 * lists the candidates in order, and the connection goes to the first one that is reachable and, with
 * `target_session_attrs=read-write` (or `primary`), accepts writes. node-postgres takes one host only, so
 * Waybill resolves the list itself (host-resolver.ts) and hands node-postgres one host at a time. This
 * module only reads the URL: the configuration checks DATABASE_URL with it at start.
 */

export interface PgHost {
  host: string;
  port: number;
}

/** Which server of the list a connection wants: any reachable one, or one that accepts writes. */
export type TargetSessionAttrs = 'any' | 'read-write' | 'primary';

export interface DatabaseTarget {
  hosts: PgHost[];
  targetSessionAttrs: TargetSessionAttrs;
  /** The URL with `host` as its only host and without `target_session_attrs`: what node-postgres takes. */
  urlFor(host: PgHost): string;
}

const DEFAULT_PORT = 5432;

/** `host:port` as Waybill names a server in messages (IPv6 in brackets). */
export const hostName = (host: PgHost): string =>
  `${host.host.includes(':') ? `[${host.host}]` : host.host}:${host.port}`;

/**
 * Splits a postgres:// URL into its hosts and the rest. A URL with one host and no `target_session_attrs`
 * comes back as one host; throws on a host list it cannot read (the message never repeats the URL, which
 * may hold a password).
 */
export function parseDatabaseUrl(url: string): DatabaseTarget {
  const scheme = /^postgres(?:ql)?:\/\//.exec(url)?.[0];
  if (scheme === undefined) throw new Error('a PostgreSQL URL must start with postgres://');
  const afterScheme = url.slice(scheme.length);
  const authorityEnd = afterScheme.search(/[/?#]/);
  const authority = authorityEnd === -1 ? afterScheme : afterScheme.slice(0, authorityEnd);
  const rest = authorityEnd === -1 ? '' : afterScheme.slice(authorityEnd);
  const at = authority.lastIndexOf('@');
  const userinfo = at === -1 ? '' : authority.slice(0, at + 1);
  const hostList = at === -1 ? authority : authority.slice(at + 1);

  const hosts = hostList.split(',').map(parseHost);
  const [path, query = ''] = splitOnce(rest, '?');
  const params = query === '' ? [] : query.split('&');
  let targetSessionAttrs: TargetSessionAttrs = 'any';
  const kept: string[] = [];
  for (const param of params) {
    const [key, value = ''] = splitOnce(param, '=');
    if (decodeURIComponent(key) !== 'target_session_attrs') {
      kept.push(param);
      continue;
    }
    const wanted = decodeURIComponent(value);
    if (wanted !== 'any' && wanted !== 'read-write' && wanted !== 'primary') {
      throw new Error(
        `target_session_attrs=${wanted} is not supported: the database URL names the primary (any, read-write or primary)`,
      );
    }
    targetSessionAttrs = wanted;
  }
  const tail = `${path}${kept.length > 0 ? `?${kept.join('&')}` : ''}`;
  return {
    hosts,
    targetSessionAttrs,
    urlFor: (host) =>
      `${scheme}${userinfo}${host.host.includes(':') ? `[${host.host}]` : host.host}:${host.port}${tail}`,
  };
}

function splitOnce(text: string, separator: string): [string, string?] {
  const i = text.indexOf(separator);
  return i === -1 ? [text] : [text.slice(0, i), text.slice(i + 1)];
}

function parseHost(entry: string): PgHost {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]+))(?::(\d{1,5}))?$/.exec(entry.trim());
  if (!match)
    throw new Error('the database URL has a host list that cannot be read: use host:port,host:port');
  const host = decodeURIComponent(match[1] ?? match[2] ?? '');
  const port = match[3] === undefined ? DEFAULT_PORT : Number(match[3]);
  if (port < 1 || port > 65535) throw new Error('the database URL has a port outside 1-65535');
  return { host, port };
}

/** Whether a target needs resolving at all: more than one host, or a role to check. */
export const needsResolver = (target: DatabaseTarget): boolean =>
  target.hosts.length > 1 || target.targetSessionAttrs !== 'any';

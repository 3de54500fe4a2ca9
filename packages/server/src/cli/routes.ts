import { parseArgs } from 'node:util';
import { BIND_TYPES, ROUTE_KINDS, ROUTE_NAME } from '../domain/intake/route.js';
import { ADMIN_EXIT_HELP, ADMIN_FLAGS, ADMIN_OPTIONS_HELP, AdminApi, adminHint } from './admin-api.js';
import {
  cell,
  parseCommandLine,
  renderTable,
  reportFailure,
  requestOptions,
  usageError,
} from './client-commands.js';
import { EXIT } from './options.js';

/**
 * `waybill routes`: the intake routes of CONTRACT §12, through the running server's operator API (`/admin/v1`,
 * bearer `WAYBILL_ADMIN_TOKEN`). An SMPP password is read from `$WAYBILL_SMPP_PASSWORD`, never from a flag.
 */

export const ROUTES_USAGE = `waybill routes list [--json]
waybill routes add <name> --kind smpp|kannel|jasmin [settings] [--json]
waybill routes show|remove|token|garbled <name> [--json]
waybill routes set <name> [settings] [--json]`;

const USAGE = `Usage:
  waybill routes list [--json]
  waybill routes add <name> --kind KIND [settings] [--json]
  waybill routes show <name> [--json]
  waybill routes set <name> [settings] [--json]
  waybill routes remove <name>
  waybill routes token <name> [--json]
  waybill routes garbled <name> [--json]

The intake routes (sources of receipts), through the running server's operator API (/admin/v1). The admin
token is read from $WAYBILL_ADMIN_TOKEN and an SMPP password from $WAYBILL_SMPP_PASSWORD only (never a flag,
so they stay out of shell history and ps). A kannel or jasmin route's token is printed by add and token only.

  list      every route
  add       create a route (--kind ${ROUTE_KINDS.join(', ')}); prints its intake token once
  show      one route, with what it received since the server started and, for smpp, its bind
  set       change the given settings
  remove    delete a route; its token stops working at once
  token     give a kannel or jasmin route a new token (the old one stops working) and print it
  garbled   the last 1,000 receipts the route could not read, newest first

Settings:
  --account ID            an account the route may touch (repeat it); none = any account
  --any-account           with set: let the route touch any account again
  --timezone ZONE         IANA zone of the dates inside receipts (default: UTC)
  --error-map ERR=CODE    carrier error ERR means drErrcode CODE (repeat it; with set it replaces the map)
  --enabled / --disabled  accept receipts or not (default: enabled)
  --host H --port P --system-id ID [--system-type T] [--bind-type ${BIND_TYPES.join('|')}]
  [--enquire-link-seconds N]   smpp: the bind (the password from $WAYBILL_SMPP_PASSWORD)

  --json           print the API's answer as JSON (for scripts)
${ADMIN_OPTIONS_HELP}

${ADMIN_EXIT_HELP}`;

const OPTIONS = {
  ...ADMIN_FLAGS,
  kind: { type: 'string' },
  account: { type: 'string', multiple: true },
  'any-account': { type: 'boolean', default: false },
  timezone: { type: 'string' },
  'error-map': { type: 'string', multiple: true },
  enabled: { type: 'boolean' },
  disabled: { type: 'boolean' },
  host: { type: 'string' },
  port: { type: 'string' },
  'system-id': { type: 'string' },
  'system-type': { type: 'string' },
  'bind-type': { type: 'string' },
  'enquire-link-seconds': { type: 'string' },
} as const;

type Values = ReturnType<typeof parseRoutesArgs>['values'];

interface Route {
  name: string;
  kind: string;
  accounts: string[];
  timezone: string;
  errorMap: Record<string, string>;
  enabled: boolean;
  createdAt: string;
  smpp?: Record<string, unknown>;
  token?: string;
  counts?: Record<string, number>;
  status?: { state: string; since: string | null; lastError: string | null; heldBy: string | null };
}

interface Garbled {
  at: string;
  text: string;
  pdu: string | null;
}

function parseRoutesArgs(args: string[]) {
  return parseArgs({ args, options: OPTIONS, allowPositionals: true, strict: true });
}

const envValue = (name: string): string | undefined => process.env[name]?.trim() || undefined;

/** The settings the flags give, as the API's body; a string is what is wrong with them. */
function settingsOf(values: Values, action: 'add' | 'set'): Record<string, unknown> | string {
  const body: Record<string, unknown> = {};
  if (values['any-account'] && values.account !== undefined)
    return 'give --account or --any-account, not both';
  if (values['any-account']) {
    if (action === 'add')
      return '--any-account only applies to set (a new route touches any account by default)';
    body.accounts = [];
  }
  if (values.account !== undefined) body.accounts = values.account;
  if (values.timezone !== undefined) body.timezone = values.timezone;
  if (values['error-map'] !== undefined) {
    const map: Record<string, string> = {};
    for (const entry of values['error-map']) {
      const eq = entry.lastIndexOf('=');
      if (eq <= 0 || eq === entry.length - 1)
        return `--error-map takes ERR=CODE, got ${JSON.stringify(entry)}`;
      map[entry.slice(0, eq)] = entry.slice(eq + 1);
    }
    body.errorMap = map;
  }
  if (values.enabled && values.disabled) return 'give --enabled or --disabled, not both';
  if (values.enabled) body.enabled = true;
  if (values.disabled) body.enabled = false;
  const smpp: Record<string, unknown> = {};
  if (values.host !== undefined) smpp.host = values.host;
  for (const [flag, field] of [
    ['port', 'port'],
    ['enquire-link-seconds', 'enquireLinkSeconds'],
  ] as const) {
    const raw = values[flag];
    if (raw === undefined) continue;
    const n = Number(raw);
    if (!Number.isInteger(n)) return `--${flag} must be a whole number`;
    smpp[field] = n;
  }
  if (values['system-id'] !== undefined) smpp.systemId = values['system-id'];
  if (values['system-type'] !== undefined) smpp.systemType = values['system-type'];
  if (values['bind-type'] !== undefined) smpp.bindType = values['bind-type'];
  const password = process.env.WAYBILL_SMPP_PASSWORD;
  if (password !== undefined && password !== '') smpp.password = password;
  if (Object.keys(smpp).length > 0) body.smpp = smpp;
  return body;
}

export async function routesCommand(args: string[]): Promise<number> {
  const parsed = parseCommandLine(args, parseRoutesArgs, USAGE);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  const [action, name, ...extra] = positionals;
  if (action === undefined)
    return usageError('say what to do: list, add, show, set, remove, token or garbled', USAGE);
  if (!['list', 'add', 'show', 'set', 'remove', 'token', 'garbled'].includes(action))
    return usageError(`unknown routes action "${action}"`, USAGE);
  if (extra.length > 0) return usageError(`unexpected argument: ${extra[0]}`, USAGE);
  if (action === 'list' && name !== undefined) return usageError(`unexpected argument: ${name}`, USAGE);
  if (action !== 'list') {
    if (name === undefined) return usageError(`routes ${action} needs a route name`, USAGE);
    if (!ROUTE_NAME.test(name))
      return usageError(`"${name}" is not a route name (1-32 of a-z, 0-9, -)`, USAGE);
  }
  let body: Record<string, unknown> | undefined;
  if (action === 'add' || action === 'set') {
    const settings = settingsOf(values, action);
    if (typeof settings === 'string') return usageError(settings, USAGE);
    body = settings;
    if (action === 'add') {
      if (values.kind === undefined)
        return usageError(`routes add needs --kind (${ROUTE_KINDS.join(', ')})`, USAGE);
      body = { name, kind: values.kind, ...settings };
    } else if (Object.keys(settings).length === 0) {
      return usageError('routes set needs at least one setting to change', USAGE);
    }
  } else {
    const settingFlags = Object.keys(values).filter(
      (k) =>
        !['url', 'timeout', 'json', 'help', 'any-account'].includes(k) &&
        values[k as keyof Values] !== undefined,
    );
    if (settingFlags.length > 0 || values['any-account'])
      return usageError(`--${settingFlags[0] ?? 'any-account'} only applies to add and set`, USAGE);
  }

  const baseUrl = values.url ?? envValue('WAYBILL_URL');
  if (baseUrl === undefined) return usageError('no server: pass --url or set WAYBILL_URL', USAGE);
  if (!URL.canParse(baseUrl) || !/^https?:$/.test(new URL(baseUrl).protocol))
    return usageError(`--url must be an http(s) URL, got ${JSON.stringify(baseUrl)}`, USAGE);
  const token = envValue('WAYBILL_ADMIN_TOKEN');
  if (token === undefined)
    return usageError('no admin token: set WAYBILL_ADMIN_TOKEN to the server’s operator token', USAGE);

  try {
    const api = new AdminApi(baseUrl, token, requestOptions(values).timeoutMs ?? 30_000);
    const path = `/routes/${encodeURIComponent(name ?? '')}`;
    switch (action) {
      case 'list': {
        const list = await api.request<{ routes: Route[] }>('GET', '/routes');
        print(values.json, list, () => renderList(list.routes));
        return EXIT.ok;
      }
      case 'add': {
        const route = await api.request<Route>('POST', '/routes', body);
        print(values.json, route, () => `${renderRoute(route)}${tokenLine(route)}`);
        return EXIT.ok;
      }
      case 'show': {
        const route = await api.request<Route>('GET', path);
        print(values.json, route, () => renderRoute(route));
        return EXIT.ok;
      }
      case 'set': {
        const route = await api.request<Route>('PATCH', path, body);
        print(values.json, route, () => renderRoute(route));
        return EXIT.ok;
      }
      case 'remove': {
        await api.request<undefined>('DELETE', path);
        print(values.json, { removed: name }, () => `Route ${name} removed; its token no longer works.\n`);
        return EXIT.ok;
      }
      case 'garbled': {
        const list = await api.request<{ garbled: Garbled[] }>('GET', `${path}/garbled`);
        print(values.json, list, () => renderGarbled(list.garbled));
        return EXIT.ok;
      }
      default: {
        const route = await api.request<Route>('POST', `${path}/token`);
        print(values.json, route, () => tokenLine(route));
        return EXIT.ok;
      }
    }
  } catch (err) {
    const code = reportFailure(err);
    adminHint(err);
    return code;
  }
}

function print(json: boolean, value: unknown, render: () => string): void {
  process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : render());
}

const accountsText = (accounts: string[]) => (accounts.length === 0 ? 'any' : accounts.join(', '));

function renderList(routes: Route[]): string {
  if (routes.length === 0) return 'No routes.\n';
  return renderTable(
    ['NAME', 'KIND', 'ENABLED', 'ACCOUNTS', 'TIMEZONE', 'CREATED (UTC)'],
    routes.map((r) => [
      r.name,
      r.kind,
      r.enabled ? 'yes' : 'no',
      accountsText(r.accounts),
      r.timezone,
      r.createdAt,
    ]),
  );
}

function renderRoute(r: Route): string {
  const fields: [string, string][] = [
    ['Route', r.name],
    ['Kind', r.kind],
    ['Enabled', r.enabled ? 'yes' : 'no'],
    ['Accounts', accountsText(r.accounts)],
    ['Timezone', r.timezone],
    ['Error map', Object.keys(r.errorMap).length === 0 ? '-' : JSON.stringify(r.errorMap)],
    ['Created', r.createdAt],
  ];
  if (r.smpp) {
    const s = r.smpp;
    fields.push([
      'SMPP',
      `${String(s.host)}:${String(s.port)} as ${String(s.systemId)}${s.systemType === undefined ? '' : ` (${String(s.systemType)})`}, ${String(s.bindType)}, enquire_link every ${String(s.enquireLinkSeconds)} s`,
    ]);
  }
  if (r.status) {
    const st = r.status;
    fields.push(['Bind', `${st.state}${st.lastError === null ? '' : `: ${st.lastError}`}`]);
  }
  if (r.counts) {
    const c = r.counts;
    fields.push([
      'Received',
      `${c.matched} matched, ${c.parked} parked, ${c.garbled} garbled, ${c.ignored} ignored (since start)`,
    ]);
  }
  const width = Math.max(...fields.map(([label]) => label.length));
  return fields.map(([label, value]) => `${`${label}:`.padEnd(width + 2)}${cell(value)}\n`).join('');
}

function renderGarbled(garbled: Garbled[]): string {
  if (garbled.length === 0) return 'No unreadable receipts.\n';
  return renderTable(
    ['AT (UTC)', 'TEXT', 'PDU'],
    garbled.map((g) => [g.at, g.text, g.pdu ?? '-']),
  );
}

const tokenLine = (r: Route) =>
  r.token === undefined
    ? ''
    : `\nIntake token (shown only now; put it in the gateway's dlr-url as token=…):\n${r.token}\n`;

import { ApiError } from '../domain/errors.js';
import { isUuid } from '../domain/formats.js';
import {
  type BindType,
  generateIntakeToken,
  type IntakeRouteRecord,
  intakeTokenDigest,
  isHttpKind,
  isTimeZone,
  ROUTE_NAME,
  type RouteKind,
  type SmppSettings,
} from '../domain/intake/route.js';
import { sealSecret } from '../domain/secret-box.js';
import { DR_ERRCODES } from '../domain/vocabulary.js';
import { DuplicateKeyError, type Store } from '../store/store.js';

/**
 * Creating, changing and rotating intake routes (CONTRACT §12). Secrets are sealed here, before anything is
 * stored; the clear token leaves only in the return value of {@link createRoute} and {@link rotateRouteToken}.
 */

export interface SmppInput {
  host?: string;
  port?: number;
  systemId?: string;
  password?: string;
  systemType?: string | null;
  bindType?: string;
  tls?: boolean;
  enquireLinkSeconds?: number;
}

export interface RouteSettings {
  accounts?: string[];
  timezone?: string;
  errorMap?: Record<string, string>;
  enabled?: boolean;
  smpp?: SmppInput;
}

export interface CreateRouteInput extends RouteSettings {
  name: string;
  kind: string;
}

/** A route and, for the HTTP kinds, its clear token: shown once. */
export interface RouteWithToken {
  route: IntakeRouteRecord;
  token: string | null;
}

const bad = (param: string, detail: string) => new ApiError('invalid_request', detail, { param });

/** Refuses what the body schema cannot express; `accounts` must name existing accounts. */
async function checkSettings(store: Store, settings: RouteSettings): Promise<void> {
  if (settings.timezone !== undefined && !isTimeZone(settings.timezone)) {
    throw bad('timezone', `timezone ${JSON.stringify(settings.timezone)} is not an IANA time zone name`);
  }
  for (const [carrierError, code] of Object.entries(settings.errorMap ?? {})) {
    if (carrierError.trim() === '') throw bad('errorMap', 'errorMap keys must not be empty');
    if (carrierError.length > 64) throw bad('errorMap', 'errorMap keys must be at most 64 characters');
    if (!Object.hasOwn(DR_ERRCODES, code)) {
      throw bad(
        `errorMap.${carrierError}`,
        `errorMap[${JSON.stringify(carrierError)}] must be one of the spec's drErrcode values: ${Object.keys(DR_ERRCODES).join(', ')}`,
      );
    }
  }
  for (const [i, id] of (settings.accounts ?? []).entries()) {
    if (!isUuid(id) || !(await store.getAccount(id.toLowerCase()))) {
      throw bad(`accounts[${i}]`, `accounts[${i}]: no account ${id}`);
    }
  }
  const smpp = settings.smpp;
  if (smpp !== undefined) {
    for (const field of ['host', 'systemId', 'password', 'systemType'] as const) {
      const value = smpp[field];
      if (typeof value === 'string' && /\p{Cc}/u.test(value)) {
        throw bad(`smpp.${field}`, `smpp.${field} must not contain control characters`);
      }
    }
  }
}

/** Creates a route; an HTTP kind gets a fresh intake token, returned once. A name taken → 409. */
export async function createRoute(
  store: Store,
  pepper: Buffer,
  input: CreateRouteInput,
  now: Date,
): Promise<RouteWithToken> {
  if (!ROUTE_NAME.test(input.name)) throw bad('name', 'name must be 1–32 of a-z, 0-9 and -');
  const kind = input.kind as RouteKind;
  if (kind === 'smpp' && input.smpp === undefined) {
    throw bad('smpp', 'an smpp route needs smpp: {host, port, systemId, password}');
  }
  if (kind !== 'smpp' && input.smpp !== undefined) {
    throw bad('smpp', `a ${kind} route takes no smpp settings`);
  }
  await checkSettings(store, input);
  const token = isHttpKind(kind) ? generateIntakeToken() : null;
  const smpp = input.smpp;
  const route: IntakeRouteRecord = {
    name: input.name,
    kind,
    accounts: (input.accounts ?? []).map((id) => id.toLowerCase()),
    timezone: input.timezone ?? 'UTC',
    errorMap: input.errorMap ?? {},
    enabled: input.enabled ?? true,
    createdAt: now,
    smpp: smpp === undefined ? null : smppSettings(smpp),
    sealedPassword: smpp === undefined ? null : sealSecret(pepper, smpp.password ?? ''),
    sealedToken: token === null ? null : sealSecret(pepper, token),
    tokenDigest: token === null ? null : intakeTokenDigest(pepper, token),
  };
  try {
    await store.insertIntakeRoute(route);
  } catch (error) {
    if (error instanceof DuplicateKeyError) {
      throw new ApiError('conflict', `a route named ${input.name} exists already`, { param: 'name' });
    }
    throw error;
  }
  return { route, token };
}

function smppSettings(input: SmppInput, current?: SmppSettings): SmppSettings {
  const pick = <K extends keyof SmppSettings>(key: K, fallback: SmppSettings[K]): SmppSettings[K] =>
    (input[key as keyof SmppInput] as SmppSettings[K] | undefined) ?? current?.[key] ?? fallback;
  return {
    host: pick('host', ''),
    port: pick('port', 2775),
    systemId: pick('systemId', ''),
    systemType: input.systemType === undefined ? (current?.systemType ?? null) : input.systemType,
    bindType: pick('bindType', 'receiver' as BindType),
    tls: pick('tls', false),
    enquireLinkSeconds: pick('enquireLinkSeconds', 30),
  };
}

/** Changes the given settings of a route; null when there is no such route. */
export async function updateRoute(
  store: Store,
  pepper: Buffer,
  name: string,
  patch: RouteSettings,
): Promise<IntakeRouteRecord | null> {
  const current = await store.getIntakeRoute(name);
  if (!current) return null;
  if (patch.smpp !== undefined && current.kind !== 'smpp') {
    throw bad('smpp', `a ${current.kind} route takes no smpp settings`);
  }
  await checkSettings(store, patch);
  const next: IntakeRouteRecord = {
    ...current,
    accounts: patch.accounts?.map((id) => id.toLowerCase()) ?? current.accounts,
    timezone: patch.timezone ?? current.timezone,
    errorMap: patch.errorMap ?? current.errorMap,
    enabled: patch.enabled ?? current.enabled,
  };
  if (patch.smpp !== undefined && current.smpp !== null) {
    next.smpp = smppSettings(patch.smpp, current.smpp);
    if (patch.smpp.password !== undefined) next.sealedPassword = sealSecret(pepper, patch.smpp.password);
  }
  return (await store.updateIntakeRoute(next)) ? next : null;
}

/**
 * Gives an HTTP route a new intake token; the old one stops working at once. Null when there is no such route;
 * an SMPP route has no token (400).
 */
export async function rotateRouteToken(
  store: Store,
  pepper: Buffer,
  name: string,
): Promise<RouteWithToken | null> {
  const current = await store.getIntakeRoute(name);
  if (!current) return null;
  if (!isHttpKind(current.kind)) {
    throw new ApiError('invalid_request', `route ${name} is an smpp route: it has no intake token`);
  }
  const token = generateIntakeToken();
  const sealedToken = sealSecret(pepper, token);
  const tokenDigest = intakeTokenDigest(pepper, token);
  if (!(await store.setIntakeRouteToken(name, sealedToken, tokenDigest))) return null;
  return { route: { ...current, sealedToken, tokenDigest }, token };
}

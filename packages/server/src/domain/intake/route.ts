import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { hmacKey } from '../hmac-key.js';

/**
 * Intake routes (CONTRACT §12): named sources of receipts. This file holds what a route is and the rules of its
 * intake token; the operator API (routes/admin-intake-routes.ts) and the adapters (routes/intake.ts) use them.
 */

export const ROUTE_KINDS = ['smpp', 'kannel', 'jasmin'] as const;
export type RouteKind = (typeof ROUTE_KINDS)[number];

/** The kinds that receive over HTTP and so hold an intake token. */
export const isHttpKind = (kind: RouteKind): kind is 'kannel' | 'jasmin' => kind !== 'smpp';

export const ROUTE_NAME = /^[a-z0-9-]{1,32}$/;

export const BIND_TYPES = ['receiver', 'transceiver'] as const;
export type BindType = (typeof BIND_TYPES)[number];

/** An SMPP route's bind settings; its password is kept apart, sealed. */
export interface SmppSettings {
  host: string;
  port: number;
  systemId: string;
  systemType: string | null;
  bindType: BindType;
  tls: boolean;
  enquireLinkSeconds: number;
}

/** A route as stored. The sealed values are never shown; `tokenDigest` finds the route of a token. */
export interface IntakeRouteRecord {
  name: string;
  kind: RouteKind;
  /** Account ids this route may touch; empty = any account. */
  accounts: string[];
  timezone: string;
  errorMap: Record<string, string>;
  enabled: boolean;
  createdAt: Date;
  /** Set for `smpp` routes only. */
  smpp: SmppSettings | null;
  /** `sealed:v1:…` (domain/secret-box.ts); `smpp` routes only. */
  sealedPassword: string | null;
  /** `sealed:v1:…` of the intake token; HTTP kinds only. */
  sealedToken: string | null;
  /** HMAC-SHA256 of the intake token under the pepper (see {@link intakeTokenDigest}); HTTP kinds only. */
  tokenDigest: Buffer | null;
}

/** `wbi_` + 32 base64url characters (24 random bytes). */
export function generateIntakeToken(): string {
  return `wbi_${randomBytes(24).toString('base64url')}`;
}

export const INTAKE_TOKEN = /^wbi_[A-Za-z0-9_-]{32}$/;

/**
 * The lookup key of an intake token: a keyed hash, so the route of a token is one indexed read, never an
 * opening of every sealed token, and a stolen table without the pepper yields no token.
 */
export function intakeTokenDigest(pepper: Buffer, token: string): Buffer {
  return createHmac('sha256', hmacKey(pepper)).update('waybill.intake-token.v1\0').update(token).digest();
}

/** Constant-time comparison of a presented token's digest with a stored one. */
export function digestsMatch(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Whether `zone` is an IANA time zone name this runtime knows. */
export function isTimeZone(zone: string): boolean {
  if (zone.trim() === '' || zone.length > 64) return false;
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

import { Writable } from 'node:stream';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import inject from 'light-my-request';
import { afterEach, beforeEach } from 'vitest';
import { dispatchOf } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { composeService } from '../../src/service.js';
import type { Store } from '../../src/store/store.js';
import type { EngineFixture } from './engines.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789';
export const PEPPER = Buffer.from('test-pepper-0123456789abcdef');

export interface CreatedAccount {
  id: string;
  key: string;
  secret: string;
  callbackSecret: string;
  [field: string]: unknown;
}

/** A built app over a fresh store of one engine, with helpers to drive it through `inject`. */
export interface Harness {
  app: FastifyInstance;
  store: Store;
  /** Log lines written while the harness ran (pino JSON). */
  logs: string[];
  /** Moves the injected clock. */
  advance(ms: number): void;
  /**
   * Sends a request as the app's server would hand it over: to the prepared paths (http/prepared-dlr.ts) first,
   * then to Fastify's router. (`app.inject` goes to the router alone.)
   */
  inject(options: InjectOptions | string): Promise<LightMyRequestResponse>;
  admin(
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
    url: string,
    body?: unknown,
  ): Promise<LightMyRequestResponse>;
  createAccount(body?: Record<string, unknown>): Promise<CreatedAccount>;
  ingest(accountId: string, messages: unknown[]): Promise<LightMyRequestResponse>;
  receipts(accountId: string, receipts: unknown[]): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

export const START = Date.parse('2026-11-22T10:00:00.000Z');

export async function startHarness(
  engine: EngineFixture,
  env: Record<string, string> = {},
): Promise<Harness> {
  const config = loadConfig({
    DATABASE_URL: 'sqlite::memory:',
    WAYBILL_ADMIN_TOKEN: ADMIN_TOKEN,
    WAYBILL_LOG_LEVEL: 'info',
    ...env,
  });
  const store = await engine.open();
  let now = START;
  const logs: string[] = [];
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const service = await composeService({ config, store, pepper: PEPPER, clock: () => now, logStream });
  const { app } = service;
  const admin = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown) =>
    app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      ...(body === undefined ? {} : { payload: body as object }),
    });
  return {
    app,
    store,
    logs,
    advance: (ms) => {
      now += ms;
    },
    inject: (options) => injectServed(app, options),
    admin,
    async createAccount(body = {}) {
      const res = await admin('POST', '/admin/v1/accounts', { name: 'Acme', ...body });
      if (res.statusCode !== 201) throw new Error(`account creation failed: ${res.statusCode} ${res.body}`);
      return res.json() as CreatedAccount;
    },
    ingest: (accountId, messages) => admin('POST', `/admin/v1/accounts/${accountId}/messages`, { messages }),
    receipts: (accountId, receipts) =>
      admin('POST', `/admin/v1/accounts/${accountId}/receipts`, { receipts }),
    async close() {
      await service.close();
    },
  };
}

/** Sends a request through the app's whole dispatch, prepared paths included (see Harness.inject). */
export async function injectServed(
  app: FastifyInstance,
  options: InjectOptions | string,
): Promise<LightMyRequestResponse> {
  await app.ready();
  return inject(dispatchOf(app), options);
}

/** A harness per test, on the given engine. */
export function useHarness(engine: EngineFixture, env: Record<string, string> = {}): () => Harness {
  let harness: Harness | undefined;
  beforeEach(async () => {
    harness = await startHarness(engine, env);
  });
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });
  return () => {
    if (!harness) throw new Error('harness used outside a test');
    return harness;
  };
}

export const basic = (key: string, secret: string) =>
  `Basic ${Buffer.from(`${key}:${secret}`).toString('base64')}`;

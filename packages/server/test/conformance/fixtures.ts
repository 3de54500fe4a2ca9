import { randomBytes, randomInt } from 'node:crypto';
import { afterEach, beforeEach, expect } from 'vitest';
import { newId } from '../../src/domain/ids.js';
import type { MessageBatchState } from '../../src/domain/ingest/plan-messages.js';
import type { MessageUpsert, ReceiptInput, ReceiptOutcome } from '../../src/domain/ingest/precedence.js';
import {
  type Account,
  type ListedMessage,
  type NewAccount,
  type Position,
  positionOf,
  type StoredMessage,
} from '../../src/domain/records.js';
import type { DrStatuscode } from '../../src/domain/vocabulary.js';
import type { ClaimRequest, HistoryQuery, Store } from '../../src/store/store.js';
import type { EngineFixture } from '../support/engines.js';

/**
 * Shared helpers of the conformance suite. Every test makes its own accounts (random keys) and uses dates from
 * 2026 on, so the suite also holds when several test files share one database.
 */

export const NOW = new Date('2026-11-22T10:00:00.000Z');

/** `NOW` plus some seconds: a readable way to lay records out in time. */
export const at = (seconds: number): Date => new Date(NOW.getTime() + seconds * 1000);

/** Opens a fresh store of the engine before each test and closes it after. */
export function useStore(engine: EngineFixture): () => Store {
  let store: Store | undefined;
  beforeEach(async () => {
    store = await engine.open();
  });
  afterEach(async () => {
    await store?.close();
    store = undefined;
  });
  return () => {
    if (!store) throw new Error('store used outside a test');
    return store;
  };
}

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
/** A relay's claim at `at(10)`, leased until `at(40)`: up to 100 deliveries, 100 of one account. */
export const claimRequest = (overrides: Partial<ClaimRequest> = {}): ClaimRequest => ({
  now: at(10),
  limit: 100,
  perAccount: 100,
  inFlight: new Map(),
  leaseUntil: at(40),
  lease: `lease-${Math.random()}`,
  ...overrides,
});

export const randomKey = (): string => Array.from({ length: 8 }, () => ALPHANUMERIC[randomInt(62)]).join('');

export function newAccount(overrides: Partial<NewAccount> = {}): NewAccount {
  return {
    id: newId(),
    name: 'Acme',
    key: randomKey(),
    ipWhitelist: [],
    dlrQueryEnabled: true,
    balance: 0,
    creditLimit: 0,
    callbackUrl: null,
    callbackEnabled: true,
    createdAt: NOW,
    secretHash: randomBytes(32),
    callbackSecret: `whsec_${randomBytes(32).toString('base64')}`,
    ...overrides,
  };
}

export async function createAccount(store: Store): Promise<Account> {
  return store.createAccount(newAccount());
}

/** What a message batch of `accountId` loads when it finds nothing stored, with `found` instead where given. */
export const batchState = (accountId: string, found: Partial<MessageBatchState> = {}): MessageBatchState => ({
  accountId,
  owners: new Map(),
  held: new Map(),
  conversations: new Map(),
  records: new Map(),
  parked: [],
  carriers: [],
  parkedCarrier: [],
  callbacks: false,
  ...found,
});

/** An outbound SMS to one number. */
export function sms(id: string, to: string, extra: Partial<MessageUpsert> = {}): MessageUpsert {
  return { id, channel: 'SMS', channelUserId: to, createdAt: NOW, ...extra };
}

export function receipt(
  messageId: string,
  drStatuscode: DrStatuscode,
  drTime: Date,
  extra: Partial<ReceiptInput> = {},
): ReceiptInput {
  return { messageId, drStatuscode, drErrcode: '0', drTime, ...extra };
}

/** Ingests a batch that must be accepted. */
export async function ingest(
  store: Store,
  accountId: string,
  items: MessageUpsert[],
  now = NOW,
): Promise<void> {
  const outcome = await store.ingestMessages(accountId, items, now);
  expect(outcome).toMatchObject({ ok: true, value: { accepted: items.length } });
}

/** Ingests receipts that must be accepted as a batch; returns what happened to them. */
export async function ingestReceipts(
  store: Store,
  accountId: string,
  items: ReceiptInput[],
): Promise<ReceiptOutcome> {
  const outcome = await store.ingestReceipts(accountId, items, NOW);
  if (!outcome.ok) throw new Error(`receipts refused: ${JSON.stringify(outcome.errors)}`);
  return outcome.value;
}

/** The one record with this id and recipient, or a failed test. */
export async function record(
  store: Store,
  accountId: string,
  id: string,
  channelUserId: string,
): Promise<StoredMessage> {
  const found = (await store.findMessagesByIds(accountId, [id])).find(
    (m) => m.channelUserId === channelUserId,
  );
  if (!found) throw new Error(`no record ${id} to ${channelUserId}`);
  return found;
}

/** Follows the keyset from the newest record to the oldest, `size` at a time; returns every page. */
export async function allPages(
  store: Store,
  accountId: string,
  query: Omit<HistoryQuery, 'limit' | 'before'>,
  size: number,
): Promise<ListedMessage[][]> {
  const pages: ListedMessage[][] = [];
  let before: Position | undefined;
  for (;;) {
    const page = await store.listHistory(accountId, { ...query, limit: size, ...(before ? { before } : {}) });
    if (page.length > 0) pages.push(page);
    const last = page.at(-1);
    if (page.length < size || !last) return pages;
    before = positionOf(last);
    if (pages.length > 10_000) throw new Error('paging does not terminate');
  }
}

/** A record's place in the total order, as a comparable string for assertions. */
export const key = (m: Pick<StoredMessage, 'createdAt' | 'id' | 'channelUserId'>): string =>
  `${m.createdAt.toISOString()}|${m.id}|${m.channelUserId}`;

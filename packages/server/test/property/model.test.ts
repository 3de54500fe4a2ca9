import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runsFrom } from '../support/checks.js';
import { engines } from '../support/engines.js';
import {
  ADMIN_TOKEN,
  basic,
  type CreatedAccount,
  type Harness,
  START,
  startHarness,
} from '../support/http.js';

/**
 * A model-based test of the read and write paths together (the "Hardening" issue): random sequences over two
 * accounts of ingests, receipts (early ones parked), receipts from a route matched by carrier id (CONTRACT §12,
 * the pairs shared by both accounts), queries, cursor walks, secret rotation and cursor misuse.
 * A small in-memory model written from CONTRACT §2–§5, §9 and §10 predicts every answer; each real answer must
 * equal it, so neither account can ever see the other's data (both use the same message ids and numbers).
 *
 * `WAYBILL_TEST_MODEL_RUNS` sets the number of sequences per engine; `WAYBILL_TEST_MODEL_SEED` replays one;
 * `WAYBILL_TEST_MODEL_SHRINK=1` shrinks a failing sequence to a short one (off by default, for CI time).
 */

const SEQUENCES = runsFrom('WAYBILL_TEST_MODEL_RUNS', 50);
const MAX_COMMANDS = 40;
const SEED = process.env.WAYBILL_TEST_MODEL_SEED ? Number(process.env.WAYBILL_TEST_MODEL_SEED) : undefined;
/** WAYBILL_RECEIPT_PARK_SECONDS at its default (CONTRACT §9). */
const PARK_MS = 259_200 * 1000;

const figures = { sequences: 0, commands: 0, requests: 0, started: Date.now() };
/** What the sequences exercised, printed with WAYBILL_TEST_MODEL_STATS=1 (to see that they reach deep). */
const stats = new Map<string, number>();
const count = (what: string, n = 1) => stats.set(what, (stats.get(what) ?? 0) + n);
afterAll(() => {
  const seconds = ((Date.now() - figures.started) / 1000).toFixed(1);
  console.log(
    `[model] ${figures.sequences} sequences, ${figures.commands} commands, ${figures.requests} requests in ${seconds} s`,
  );
  if (process.env.WAYBILL_TEST_MODEL_STATS)
    console.log(
      [...stats]
        .sort()
        .map(([k, n]) => `${k}: ${n}`)
        .join('\n'),
    );
});

// ── Vocabulary of the generated sequences ───────────────────────────────────────────────────────────────

const CHANNELS = ['SMS', 'WHATSAPP', 'VIBER', 'TELEGRAM', 'APPLEMB', 'RBM'] as const;
type Channel = (typeof CHANNELS)[number];
const OTHER_CHANNELS = CHANNELS.filter((c) => c !== 'SMS');
/** Ids shared by both accounts; their byte order differs from their order here ('M' < 'm', '-' < '.' < '1'). */
const IDS = ['m1', 'M1', 'm-1', 'm.2', 'p1', 'P-2'] as const;
/** The ids every sequence opens with; the others first arrive (or their receipts do) during the sequence. */
const SEEDED_IDS = 4;
/** Three contacts per account; the same numbers in both accounts. */
const PHONES = ['447700900001', '447700900002', '447700900003'] as const;
const CONTACTS = [0, 1, 2] as const;
const CODES = ['delivered', 'accepted', 'rejected', 'failed', 'expired', 'deleted', 'unknown'] as const;
type Code = (typeof CODES)[number];
const SETTABLE = ['pending', 'sent', 'delivered', 'read', 'failed'] as const;
type Settable = (typeof SETTABLE)[number];
type SendStatus = '1' | '0' | '400';

const identityOf = (channel: Channel, contact: number): string =>
  channel === 'SMS' ? (PHONES[contact] as string) : `${channel.toLowerCase()}-u${contact}`;
/** The contact index of a record's identity (the inverse of identityOf). */
const contactIndexOf = (r: { channel: Channel; channelUserId: string }): number =>
  r.channel === 'SMS'
    ? PHONES.indexOf(r.channelUserId as (typeof PHONES)[number])
    : Number(r.channelUserId.slice(-1));

// ── The model ───────────────────────────────────────────────────────────────────────────────────────────

interface Receipt {
  code: Code;
  errcode: string;
  drTime: number;
}
interface Sms {
  status: SendStatus;
  network: string | null;
  price: number;
  counts: number;
  receipt: Receipt | null;
}
interface Rec {
  id: string;
  channel: Channel;
  direction: 'outbound' | 'inbound';
  channelUserId: string;
  /** The owning contact: a designated contact's UUID, or `anon:<identity>` for one the server created. */
  contact: string;
  campaignId: string | null;
  text: string | null;
  content: Record<string, unknown> | null;
  status: Settable | null;
  sms: Sms | null;
  createdAt: number;
  /** First-ingest order: the order of /dlr items. */
  seq: number;
}
interface ReceiptIn {
  messageId: string;
  to?: string;
  code: Code;
  errcode: string;
  drTime: number;
  network?: string;
  price?: number;
  counts?: number;
}
interface Parked {
  fingerprint: string;
  receipt: ReceiptIn;
  parkedAt: number;
  ref: number;
}
type DlrItem = Record<string, unknown>;
interface Event {
  item: DlrItem;
  recordedAt: number;
  /** The event id the server gave it, once seen. */
  id?: string;
}
interface Position {
  createdAt: number;
  id: string;
  channelUserId: string;
}
/** A history or campaign walk: the query that started it, and where its next page begins. */
interface Walk {
  mode: 'user' | 'contact' | 'campaign';
  channel: Channel | null;
  /** The channelUserId or contactId queried (the contact index for 'contact'). */
  contact: number;
  campaignId: string | null;
  /** The v1 endpoint cannot carry campaignId. */
  v1Allowed: boolean;
  cursor: string | null;
  position: Position | null;
  /** A cursor this walk was given, for the misuse commands. */
  lastCursor: string | null;
}

class AccountModel {
  secret: string;
  readonly designated: string[] = CONTACTS.map(() => randomUUID());
  readonly owners = new Map<string, string>();
  readonly records = new Map<string, Rec>();
  seq = 0;
  parked: Parked[] = [];
  readonly events: Event[] = [];
  /** UUIDs the server minted, learned at first sight: contact token → UUID, (token, channel) → conversation. */
  readonly contactIds = new Map<string, string>();
  readonly conversationIds = new Map<string, string>();
  walk: Walk | null = null;
  feed: { cursor: string; pos: number } | null = null;

  /**
   * @param conversations every conversation id either account was shown, with its owner: shared by the two
   *   accounts, so that one conversation can never belong to both.
   */
  constructor(
    readonly account: CreatedAccount,
    readonly conversations: Map<string, string>,
  ) {
    this.secret = account.secret;
  }
  get auth(): string {
    return basic(this.account.key, this.secret);
  }
}

/** A receipt from the route, parked until a recipient claims its carrier id. */
interface ParkedCarrier {
  fingerprint: string;
  carrierId: string;
  receipt: ReceiptIn;
  parkedAt: number;
  ref: number;
}

interface Model {
  now: number;
  /** The base of generated times; moved past every earlier time by a long clock jump. */
  epoch: number;
  accounts: [AccountModel, AccountModel];
  /** This sequence's route: carrier pairs are global, and the harness outlives a sequence. */
  route: string;
  /** Who holds each carrier id on the route: an account and a record key. */
  carriers: Map<string, { acct: 0 | 1; key: string }>;
  parkedCarrier: ParkedCarrier[];
  /** Parked receipts of both kinds and accounts share one numbering, as in the store. */
  nextRef: number;
}
interface Real {
  h: Harness;
}

const recordKey = (id: string, channelUserId: string) => `${id}\u0000${channelUserId}`;
const identityKey = (channel: string, channelUserId: string) => `${channel}\u0000${channelUserId}`;

/** CONTRACT §1 total order: createdAt, then id and channelUserId as bytes. */
function compareRecords(a: Position, b: Position): number {
  return (
    a.createdAt - b.createdAt ||
    Buffer.compare(Buffer.from(a.id), Buffer.from(b.id)) ||
    Buffer.compare(Buffer.from(a.channelUserId), Buffer.from(b.channelUserId))
  );
}

/** CONTRACT §3 status derivation. */
function statusOf(r: Rec): string {
  if (r.direction === 'inbound') return 'received';
  if (!r.sms) return r.status ?? 'sent';
  if (r.sms.status === '1') return 'pending';
  if (r.sms.status === '400') return 'failed';
  const code = r.sms.receipt?.code;
  if (code === undefined || code === 'accepted') return 'sent';
  return code === 'delivered' ? 'delivered' : 'failed';
}

const drTimeText = (ms: number) => new Date(ms).toISOString().replace('T', ' ').slice(0, 23);

/** CONTRACT §2 /dlr item. */
function dlrItem(r: Rec): DlrItem {
  const sms = r.sms as Sms;
  const item: DlrItem = {
    type: 'dlr',
    messageid: r.id,
    to: r.channelUserId,
    status: sms.status,
    price: sms.price,
    counts: sms.counts,
  };
  if (sms.network !== null) item.network = sms.network;
  if (sms.receipt) {
    item.drStatus = sms.receipt.code === 'delivered' || sms.receipt.code === 'accepted' ? 0 : 400;
    item.drStatuscode = sms.receipt.code;
    item.drErrcode = sms.receipt.errcode;
    item.drTime = drTimeText(sms.receipt.drTime);
  }
  return item;
}

const rank = (code: Code | undefined) => (code === undefined ? 0 : code === 'accepted' ? 1 : 2);

/** CONTRACT §5 precedence: the new SMS state, or null when the receipt is ignored. */
function applyReceipt(sms: Sms, r: ReceiptIn): Sms | null {
  const held = sms.receipt;
  if (rank(r.code) < rank(held?.code)) return null;
  if (held && rank(r.code) === rank(held.code)) {
    const later = r.drTime > held.drTime;
    const differs = r.code !== held.code || r.errcode !== held.errcode;
    if (!later || !differs) return null;
  }
  return {
    status: '0',
    network: r.network ?? sms.network,
    price: r.price ?? sms.price,
    counts: r.counts ?? sms.counts,
    receipt: { code: r.code, errcode: r.errcode, drTime: r.drTime },
  };
}

const isRecipient = (r: Rec) => r.channel === 'SMS' && r.direction === 'outbound';
/** Outbound SMS recipients of an id, in first-ingest order. */
const recipientsOf = (records: Iterable<Rec>, id: string) =>
  [...records].filter((r) => r.id === id && isRecipient(r)).sort((a, b) => a.seq - b.seq);

function fingerprint(r: ReceiptIn): string {
  return JSON.stringify([
    r.messageId,
    r.to ?? null,
    r.code,
    r.errcode,
    r.drTime,
    r.network ?? null,
    r.price ?? null,
    r.counts ?? null,
  ]);
}

// ── Requests and their expected answers ─────────────────────────────────────────────────────────────────

/** The server's own account of the last 5xx (its error log line), for the failure message. */
let lastServerError = '';

async function send(real: Real, options: Parameters<Harness['inject']>[0]): Promise<LightMyRequestResponse> {
  figures.requests++;
  const seen = real.h.logs.length;
  const res = await real.h.inject(options);
  if (res.statusCode >= 500) {
    lastServerError = real.h.logs
      .slice(seen)
      .filter((line) => /"level":50/.test(line))
      .join('')
      .slice(0, 1500);
  }
  return res;
}

function expectStatus(res: LightMyRequestResponse, status: number, what: string): void {
  if (res.statusCode !== status) {
    const log = res.statusCode >= 500 ? `\nserver log: ${lastServerError}` : '';
    expect.fail(`${what}: expected HTTP ${status}, got ${res.statusCode} ${res.body.slice(0, 800)}${log}`);
  }
}

/** Learns server-minted UUIDs at first sight, then holds them to it; two tokens never share one. */
function learn(map: Map<string, string>, token: string, seen: unknown, what: string): string {
  const known = map.get(token);
  if (known !== undefined) return known;
  if (typeof seen !== 'string') return `<${what} of ${token}>`;
  for (const [other, value] of map) {
    if (value === seen) expect.fail(`${what} ${seen} was given to ${other} and to ${token}`);
  }
  map.set(token, seen);
  return seen;
}

/** The expected wire record of a model record (CONTRACT §3), learning minted ids from the real one beside it. */
function wireRecord(a: AccountModel, r: Rec, actual: unknown): Record<string, unknown> {
  const real = (actual ?? {}) as Record<string, unknown>;
  const designated = a.designated.includes(r.contact);
  const contactId = designated ? r.contact : learn(a.contactIds, r.contact, real.contactId, 'contactId');
  if (!designated && a.designated.includes(contactId))
    expect.fail(`a minted contact got designated id ${contactId}`);
  const conversationId = learn(
    a.conversationIds,
    `${r.contact}\u0000${r.channel}`,
    real.conversationId,
    'conversationId',
  );
  const owner = `${a.account.id} ${r.contact} ${r.channel}`;
  const holder = a.conversations.get(conversationId);
  if (holder !== undefined && holder !== owner)
    expect.fail(`conversation ${conversationId} is both ${holder} and ${owner}`);
  a.conversations.set(conversationId, owner);
  return {
    id: r.id,
    channel: r.channel,
    direction: r.direction,
    contactId,
    channelUserId: r.channelUserId,
    conversationId,
    campaignId: r.campaignId,
    text: r.text,
    content: r.content,
    status: statusOf(r),
    createdAt: new Date(r.createdAt).toISOString(),
  };
}

function expectRecords(a: AccountModel, actual: unknown, expected: Rec[], what: string): void {
  const list = Array.isArray(actual) ? actual : [];
  const wanted = expected.map((r, i) => wireRecord(a, r, list[i]));
  expect(actual, what).toStrictEqual(wanted);
}

/** Records matching a history or campaign query, oldest first. */
function historyRecords(a: AccountModel, w: Walk): Rec[] {
  let contact: string | undefined;
  if (w.mode === 'user' && w.channel)
    contact = a.owners.get(identityKey(w.channel, identityOf(w.channel, w.contact)));
  if (w.mode === 'contact') contact = a.designated[w.contact];
  return [...a.records.values()]
    .filter((r) => w.mode === 'campaign' || (contact !== undefined && r.contact === contact))
    .filter((r) => w.channel === null || r.channel === w.channel)
    .filter((r) => w.campaignId === null || r.campaignId === w.campaignId)
    .sort(compareRecords);
}

function historyUrl(
  designated: readonly string[],
  w: Walk,
  endpoint: 'v1' | 'messages',
  size: number,
  upper: boolean,
): string {
  const q = new URLSearchParams();
  if (w.channel !== null) q.set('channel', upper ? w.channel : w.channel.toLowerCase());
  if (w.mode === 'user' && w.channel) q.set('channelUserId', identityOf(w.channel, w.contact));
  if (w.mode === 'contact') {
    const id = designated[w.contact] as string;
    q.set('contactId', upper ? id.toUpperCase() : id);
  }
  if (w.campaignId !== null && endpoint === 'messages') q.set('campaignId', w.campaignId);
  q.set('size', String(size));
  if (w.cursor !== null) q.set('cursor', w.cursor);
  return `${endpoint === 'v1' ? '/api/v1/contacts/messages' : '/messages'}?${q}`;
}

/** Fetches one page of a walk and checks it against the model; moves the walk on. */
async function walkPage(
  real: Real,
  a: AccountModel,
  w: Walk,
  endpoint: 'v1' | 'messages',
  size: number,
  upper: boolean,
  what: string,
): Promise<void> {
  const all = historyRecords(a, w);
  const older = w.position === null ? all : all.filter((r) => compareRecords(r, w.position as Position) < 0);
  const page = older.slice(Math.max(0, older.length - size));
  const hasMore = older.length > page.length;
  const res = await send(real, {
    url: historyUrl(a.designated, w, endpoint, size, upper),
    headers: { authorization: a.auth },
  });
  expectStatus(res, 200, what);
  const body = res.json() as { messages: unknown; nextCursor: unknown; hasMore: unknown };
  expect(Object.keys(body).sort(), what).toStrictEqual(['hasMore', 'messages', 'nextCursor']);
  expectRecords(a, body.messages, page, `${what}: messages`);
  expect(body.hasMore, `${what}: hasMore`).toBe(hasMore);
  count(`history pages of ${page.length}${hasMore ? ' with more' : ''}`);
  if (hasMore) expect(typeof body.nextCursor, `${what}: nextCursor`).toBe('string');
  else expect(body.nextCursor, `${what}: nextCursor`).toBeNull();
  const oldest = page[0];
  w.cursor = hasMore ? (body.nextCursor as string) : null;
  w.position =
    hasMore && oldest
      ? { createdAt: oldest.createdAt, id: oldest.id, channelUserId: oldest.channelUserId }
      : null;
  if (w.cursor !== null) w.lastCursor = w.cursor;
}

// ── Commands ────────────────────────────────────────────────────────────────────────────────────────────

interface ItemSpec {
  id: number;
  kind: 'sms' | 'sms-in' | 'other';
  otherChannel: number;
  /** Other channels: an inbound message. */
  inbound: boolean;
  /** Recipients (SMS) or the one contact (others). */
  contacts: number[];
  /**
   * `default`: contacts 0 and 1 are named by their designated contactId, contact 2 never is (the server mints
   * one); `omit`: no contactId; `other`: the designated id of the next contact (an item error when taken);
   * `foreign`: the other account's designated id for this contact — in this account just another contact.
   */
  link: 'default' | 'omit' | 'other' | 'foreign';
  explicitOutbound: boolean;
  lowerChannel: boolean;
  campaign: string | null | undefined;
  text: string | null | undefined;
  content: Record<string, unknown> | null | undefined;
  status: Settable | undefined;
  sms: { status?: SendStatus; network?: string; price?: number; counts?: number } | undefined;
  /** Outbound SMS: claims carrier id `c<carrier>.<contact>` on the sequence's route. */
  carrier: number | undefined;
  createdAt: number | undefined;
}

type Outcome = { ok: true } | { ok: false; errors: number[] };

/** Applies a message batch to a copy of the account model, as the planner would (CONTRACT §5, §9). */
function planMessages(
  a: AccountModel,
  m: Model,
  items: Record<string, unknown>[],
): { outcome: Outcome; commit: () => void } {
  const owners = new Map(a.owners);
  const records = new Map(a.records);
  let seq = a.seq;
  const errors: number[] = [];
  const acct = m.accounts.indexOf(a) as 0 | 1;
  // Carrier pairs (CONTRACT §12): one recipient of either account per pair, one pair per recipient.
  const holders = new Map(m.carriers);
  const heldBy = new Map<string, string>();
  for (const [cid, h] of holders) if (h.acct === acct) heldBy.set(h.key, cid);
  const written = new Map<string, Rec>();
  const fresh = new Set<string>();
  items.forEach((item, index) => {
    const channel = String(item.channel).toUpperCase() as Channel;
    const cuid = item.channelUserId as string;
    const idKey = identityKey(channel, cuid);
    const owner = owners.get(idKey);
    let contact: string;
    const given = item.contactId as string | undefined;
    if (given === undefined) {
      contact = owner ?? `anon:${idKey}`;
    } else if (owner !== undefined) {
      if (owner !== given) {
        errors.push(index);
        return;
      }
      contact = owner;
    } else {
      const holds = [...owners].some(([k, c]) => c === given && k.startsWith(`${channel}\u0000`));
      if (holds) {
        errors.push(index);
        return;
      }
      contact = given;
    }
    owners.set(idKey, contact);
    const key = recordKey(item.id as string, cuid);
    const existing = records.get(key);
    const direction = (item.direction as Rec['direction'] | undefined) ?? existing?.direction ?? 'outbound';
    const outboundSms = channel === 'SMS' && direction === 'outbound';
    let sms: Sms | null = null;
    if (outboundSms) {
      const base = existing?.sms ?? {
        status: '1' as SendStatus,
        network: null,
        price: 0,
        counts: 1,
        receipt: null,
      };
      const given = (item.sms ?? {}) as Partial<Sms>;
      let status = given.status ?? base.status;
      if (status === '1' && base.status !== '1') status = base.status;
      sms = {
        status,
        network: given.network ?? base.network,
        price: given.price ?? base.price,
        counts: given.counts ?? base.counts,
        receipt: base.receipt,
      };
    }
    const rec: Rec = {
      id: item.id as string,
      channel,
      direction,
      channelUserId: cuid,
      contact,
      campaignId:
        item.campaignId !== undefined ? (item.campaignId as string | null) : (existing?.campaignId ?? null),
      text: item.text !== undefined ? (item.text as string | null) : (existing?.text ?? null),
      content:
        item.content !== undefined
          ? (item.content as Record<string, unknown> | null)
          : (existing?.content ?? null),
      status:
        channel === 'SMS' || direction === 'inbound'
          ? null
          : ((item.status as Settable | undefined) ?? existing?.status ?? 'sent'),
      sms,
      createdAt:
        existing?.createdAt ?? (item.createdAt !== undefined ? Date.parse(item.createdAt as string) : m.now),
      seq: existing?.seq ?? ++seq,
    };
    const cid = (item.sms as { carrier?: { messageId: string } } | undefined)?.carrier?.messageId;
    const current = heldBy.get(key);
    if (!rec.sms) {
      if (current !== undefined) holders.delete(current);
      heldBy.delete(key);
    } else if (cid !== undefined) {
      const holder = holders.get(cid);
      if (holder && !(holder.acct === acct && holder.key === key)) {
        errors.push(index);
        return;
      }
      if (!holder) {
        if (current !== undefined) holders.delete(current);
        holders.set(cid, { acct, key });
        heldBy.set(key, cid);
      }
    }
    if (!existing) fresh.add(key);
    records.set(key, rec);
    written.set(key, rec);
  });
  if (errors.length > 0) return { outcome: { ok: false, errors }, commit: () => {} };

  // Parked receipts meet their recipients (CONTRACT §9): oldest drTime first, each consumed applied or not.
  const live = a.parked.filter((p) => p.parkedAt >= m.now - PARK_MS);
  const firstRecipient = new Map<string, string>();
  for (const [key, r] of written)
    if (r.sms && fresh.has(key) && !firstRecipient.has(r.id)) firstRecipient.set(r.id, key);
  // Carrier receipts parked for a pair this batch claimed (not one its recipient held already).
  const claimed = new Map<string, string>();
  for (const [cid, h] of holders) {
    const before = m.carriers.get(cid);
    if (h.acct === acct && !(before?.acct === acct && before.key === h.key)) claimed.set(cid, h.key);
  }
  const waiting = [
    ...live.map((p) => ({
      ref: p.ref,
      receipt: p.receipt,
      key:
        p.receipt.to === undefined
          ? firstRecipient.get(p.receipt.messageId)
          : recordKey(p.receipt.messageId, p.receipt.to),
    })),
    ...m.parkedCarrier
      .filter((p) => p.parkedAt >= m.now - PARK_MS && claimed.has(p.carrierId))
      .map((p) => ({ ref: p.ref, receipt: p.receipt, key: claimed.get(p.carrierId) })),
  ];
  const ordered = waiting.sort((x, y) => x.receipt.drTime - y.receipt.drTime || x.ref - y.ref);
  const consumed = new Set<number>();
  const events: Event[] = [];
  for (const p of ordered) {
    const key = p.key;
    const r = key === undefined ? undefined : written.get(key);
    if (key === undefined || !r?.sms) continue;
    consumed.add(p.ref);
    const sms = applyReceipt(r.sms, p.receipt);
    if (sms) {
      const updated = { ...r, sms };
      written.set(key, updated);
      records.set(key, updated);
      events.push({ item: dlrItem(updated), recordedAt: m.now });
    }
  }
  return {
    outcome: { ok: true },
    commit: () => {
      count('parked receipts consumed', consumed.size);
      if (consumed.size > 1) count('batches consuming several parked receipts');
      count('events from parked receipts', events.length);
      a.owners.clear();
      for (const [k, v] of owners) a.owners.set(k, v);
      a.records.clear();
      for (const [k, v] of records) a.records.set(k, v);
      a.seq = seq;
      a.parked = a.parked.filter((p) => !consumed.has(p.ref));
      m.parkedCarrier = m.parkedCarrier.filter((p) => !consumed.has(p.ref));
      if (claimed.size > 0) count('carrier ids claimed', claimed.size);
      m.carriers.clear();
      for (const [k, v] of holders) m.carriers.set(k, v);
      a.events.push(...events);
    },
  };
}

class IngestCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly acct: 0 | 1,
    readonly specs: ItemSpec[],
  ) {}
  check = () => true;
  items(m: Model): Record<string, unknown>[] {
    const a = m.accounts[this.acct];
    // A record keeps its direction: the generator never turns one around, not even within a batch.
    const directions = new Map<string, Rec['direction']>();
    for (const r of a.records.values()) directions.set(recordKey(r.id, r.channelUserId), r.direction);
    return this.specs.flatMap((s) => {
      const channel: Channel = s.kind === 'other' ? (OTHER_CHANNELS[s.otherChannel] as Channel) : 'SMS';
      const contacts = s.kind === 'sms' ? s.contacts : s.contacts.slice(0, 1);
      return contacts.map((contact) => {
        const cuid = identityOf(channel, contact);
        const key = recordKey(IDS[s.id] as string, cuid);
        const wanted = s.kind === 'sms-in' || (s.kind === 'other' && s.inbound) ? 'inbound' : 'outbound';
        const inbound = (directions.get(key) ?? wanted) === 'inbound';
        directions.set(key, inbound ? 'inbound' : 'outbound');
        const item: Record<string, unknown> = {
          id: IDS[s.id],
          channel: s.lowerChannel ? channel.toLowerCase() : channel,
          channelUserId: cuid,
        };
        if (inbound) item.direction = 'inbound';
        else if (s.explicitOutbound) item.direction = 'outbound';
        if (s.link === 'other') item.contactId = a.designated[(contact + 1) % CONTACTS.length];
        else if (s.link === 'foreign')
          item.contactId = (m.accounts[1 - this.acct] as AccountModel).designated[contact];
        else if (s.link === 'default' && contact !== 2) item.contactId = a.designated[contact];
        if (s.campaign !== undefined) item.campaignId = s.campaign;
        if (s.text !== undefined) item.text = s.text;
        if (s.content !== undefined) item.content = s.content;
        if (channel !== 'SMS' && !inbound && s.status !== undefined) item.status = s.status;
        if (channel === 'SMS' && !inbound && s.sms !== undefined) item.sms = s.sms;
        if (channel === 'SMS' && !inbound && s.carrier !== undefined) {
          item.sms = { ...s.sms, carrier: { route: m.route, messageId: `c${s.carrier}.${contact}` } };
        }
        if (s.createdAt !== undefined) item.createdAt = new Date(m.epoch + s.createdAt * 1000).toISOString();
        return item;
      });
    });
  }
  async run(m: Model, real: Real): Promise<void> {
    figures.commands++;
    const a = m.accounts[this.acct];
    const items = this.items(m);
    const planned = planMessages(a, m, items);
    const res = await send(real, {
      method: 'POST',
      url: `/admin/v1/accounts/${a.account.id}/messages`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      payload: { messages: items },
    });
    count(planned.outcome.ok ? 'ingest accepted' : 'ingest refused (contact or carrier rules)');
    if (planned.outcome.ok) {
      expectStatus(res, 200, `${this} ${JSON.stringify(items)}`);
      expect(res.json()).toStrictEqual({ accepted: items.length });
      planned.commit();
    } else {
      expectStatus(res, 400, `${this} ${JSON.stringify(items)}`);
      const errors = (res.json() as { errors?: { index: number }[] }).errors ?? [];
      expect(
        errors.map((e) => e.index),
        `${this}: the bad items`,
      ).toStrictEqual(planned.outcome.errors);
    }
  }
  toString = () => `ingest(${'AB'[this.acct]}, ${JSON.stringify(this.specs)})`;
}

interface ReceiptSpec {
  /** When set, the receipt is for the n-th (mod count) outbound SMS recipient the account has, if any. */
  existing: number | undefined;
  id: number;
  to: number | undefined;
  code: Code;
  errcode: string | number | undefined;
  /** Seconds after the epoch, or undefined for "now". */
  drTime: number | undefined;
  specFormat: boolean;
  network: string | undefined;
  price: number | undefined;
  counts: number | undefined;
}

class ReceiptsCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly acct: 0 | 1,
    readonly specs: ReceiptSpec[],
  ) {}
  check = () => true;
  async run(m: Model, real: Real): Promise<void> {
    figures.commands++;
    const a = m.accounts[this.acct];
    const wire: Record<string, unknown>[] = [];
    const inputs: ReceiptIn[] = [];
    const recipients = [...a.records.values()].filter(isRecipient).sort((x, y) => x.seq - y.seq);
    for (const s of this.specs) {
      const drTime = s.drTime === undefined ? m.now : m.epoch + s.drTime * 1000;
      const known =
        s.existing === undefined ? undefined : recipients[s.existing % Math.max(1, recipients.length)];
      const messageId = known?.id ?? (IDS[s.id] as string);
      const to = known
        ? s.to === undefined && recipientsOf(a.records.values(), known.id).length === 1
          ? undefined
          : known.channelUserId
        : s.to === undefined
          ? undefined
          : PHONES[s.to];
      const item: Record<string, unknown> = { messageId, drStatuscode: s.code };
      const input: ReceiptIn = {
        messageId,
        code: s.code,
        errcode: s.errcode === undefined ? '0' : String(s.errcode),
        drTime,
      };
      if (to !== undefined) item.to = input.to = to;
      if (s.errcode !== undefined) item.drErrcode = s.errcode;
      if (s.drTime !== undefined)
        item.drTime = s.specFormat ? drTimeText(drTime) : new Date(drTime).toISOString();
      if (s.network !== undefined) item.network = input.network = s.network;
      if (s.price !== undefined) item.price = input.price = s.price;
      if (s.counts !== undefined) item.counts = input.counts = s.counts;
      wire.push(item);
      inputs.push(input);
    }
    // The planner, in order, each receipt seeing what the earlier ones applied.
    const records = new Map(a.records);
    const errors: number[] = [];
    const outcome = { applied: 0, ignored: 0, unknown: [] as { messageId: string; to: string | null }[] };
    const events: Event[] = [];
    const park = new Map<string, ReceiptIn>();
    inputs.forEach((r, index) => {
      const recipients = recipientsOf(records.values(), r.messageId);
      let target: Rec | undefined;
      if (r.to !== undefined) target = recipients.find((x) => x.channelUserId === r.to);
      else if (recipients.length > 1) {
        errors.push(index);
        return;
      } else target = recipients[0];
      if (!target?.sms) {
        outcome.unknown.push({ messageId: r.messageId, to: r.to ?? null });
        const fp = fingerprint(r);
        if (!park.has(fp)) park.set(fp, r);
        return;
      }
      const sms = applyReceipt(target.sms, r);
      if (!sms) {
        outcome.ignored++;
        return;
      }
      const updated = { ...target, sms };
      records.set(recordKey(updated.id, updated.channelUserId), updated);
      events.push({ item: dlrItem(updated), recordedAt: m.now });
      outcome.applied++;
    });
    const res = await send(real, {
      method: 'POST',
      url: `/admin/v1/accounts/${a.account.id}/receipts`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      payload: { receipts: wire },
    });
    const what = `${this} ${JSON.stringify(wire)}`;
    if (errors.length > 0) {
      count('receipt batches refused (to missing)');
      expectStatus(res, 400, what);
      const got = (res.json() as { errors?: { index: number }[] }).errors ?? [];
      expect(
        got.map((e) => e.index),
        `${what}: the bad items`,
      ).toStrictEqual(errors);
      return;
    }
    expectStatus(res, 200, what);
    expect(res.json(), what).toStrictEqual(outcome);
    count('receipts applied', outcome.applied);
    count('receipts ignored', outcome.ignored);
    count('receipts unknown (parked)', outcome.unknown.length);
    a.records.clear();
    for (const [k, v] of records) a.records.set(k, v);
    a.events.push(...events);
    for (const [fp, r] of park) {
      // A replay of a receipt already parked is parked once (CONTRACT §9).
      if (!a.parked.some((p) => p.fingerprint === fp)) {
        a.parked.push({ fingerprint: fp, receipt: r, parkedAt: m.now, ref: m.nextRef++ });
      }
    }
  }
  toString = () => `receipts(${'AB'[this.acct]}, ${JSON.stringify(this.specs)})`;
}

interface CarrierReceiptSpec {
  /** The receipt names carrier id `c<carrier>.<contact>` on the sequence's route. */
  carrier: number;
  contact: number;
  code: Code;
  errcode: string | undefined;
  /** Seconds after the epoch, or undefined for "now". */
  drTime: number | undefined;
  network: string | undefined;
}

/** Receipts from the route (SMPP, gateways): matched by carrier id in either account, or parked. */
class CarrierReceiptsCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly specs: CarrierReceiptSpec[]) {}
  check = () => true;
  async run(m: Model, real: Real): Promise<void> {
    figures.commands++;
    const records = m.accounts.map((a) => new Map(a.records));
    const events: Event[][] = [[], []];
    const park = new Map<string, { carrierId: string; receipt: ReceiptIn }>();
    const expected: unknown[] = [];
    const items = this.specs.map((s) => {
      const carrierId = `c${s.carrier}.${s.contact}`;
      const drTime = s.drTime === undefined ? m.now : m.epoch + s.drTime * 1000;
      const input: ReceiptIn = { messageId: '', code: s.code, errcode: s.errcode ?? '0', drTime };
      if (s.network !== undefined) input.network = s.network;
      const holder = m.carriers.get(carrierId);
      const target = holder && records[holder.acct]?.get(holder.key);
      if (!holder || !target?.sms) {
        const fp = JSON.stringify([carrierId, input.code, input.errcode, drTime, input.network ?? null]);
        if (!park.has(fp)) park.set(fp, { carrierId, receipt: input });
        expected.push({ outcome: 'parked' });
      } else {
        const sms = applyReceipt(target.sms, input);
        const a = m.accounts[holder.acct];
        const matched = { accountId: a.account.id, messageId: target.id, to: target.channelUserId };
        if (sms) {
          const updated = { ...target, sms };
          records[holder.acct]?.set(holder.key, updated);
          events[holder.acct]?.push({ item: dlrItem(updated), recordedAt: m.now });
        }
        expected.push({ outcome: sms ? 'applied' : 'ignored', ...matched });
      }
      return {
        carrierId,
        drStatuscode: s.code,
        drErrcode: input.errcode as '0',
        drTime: new Date(drTime),
        ...(s.network === undefined ? {} : { network: s.network }),
      };
    });
    figures.requests++;
    const got = await real.h.store.ingestCarrierReceipts(m.route, items, new Date(m.now));
    expect(got, `${this}`).toStrictEqual(expected);
    for (const r of expected as { outcome: string }[]) count(`carrier receipts ${r.outcome}`);
    m.accounts.forEach((a, i) => {
      a.records.clear();
      for (const [k, v] of records[i] ?? []) a.records.set(k, v);
      a.events.push(...(events[i] ?? []));
    });
    for (const [fp, { carrierId, receipt }] of park) {
      const already = m.parkedCarrier.find((p) => p.fingerprint === fp);
      // A replay is parked once, its park time restarted.
      if (already) already.parkedAt = m.now;
      else m.parkedCarrier.push({ fingerprint: fp, carrierId, receipt, parkedAt: m.now, ref: m.nextRef++ });
    }
  }
  toString = () => `carrierReceipts(${JSON.stringify(this.specs)})`;
}

/** The id of the n-th (mod count) record the account has, or the id of the pool when it has none. */
function existingId(a: AccountModel, pick: number | undefined, fallback: number): string {
  const ids = [...new Set([...a.records.values()].sort((x, y) => x.seq - y.seq).map((r) => r.id))];
  return pick === undefined || ids.length === 0
    ? (IDS[fallback] as string)
    : (ids[pick % ids.length] as string);
}

class DlrCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly acct: 0 | 1,
    readonly id: number,
    readonly pick: number | undefined,
  ) {}
  check = () => true;
  async run(m: Model, real: Real): Promise<void> {
    figures.commands++;
    const a = m.accounts[this.acct];
    const id = existingId(a, this.pick, this.id);
    const q = new URLSearchParams({ key: a.account.key, secret: a.secret, messageid: id });
    const res = await send(real, { url: `/dlr?${q}` });
    expectStatus(res, 200, String(this));
    const items = recipientsOf(a.records.values(), id).map(dlrItem);
    expect(res.json(), String(this)).toStrictEqual(items);
    count(
      `dlr answers of ${items.length} item(s)${items.some((i) => 'drStatuscode' in i) ? ' with receipts' : ''}`,
    );
  }
  toString = () =>
    `dlr(${'AB'[this.acct]}, ${this.pick === undefined ? IDS[this.id] : `existing #${this.pick}`})`;
}

class ByIdsCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly acct: 0 | 1,
    readonly ids: number[],
    readonly endpoint: 'v1' | 'messages',
    readonly campaign: string | null,
    readonly spaced: boolean,
  ) {}
  check = () => true;
  async run(m: Model, real: Real): Promise<void> {
    figures.commands++;
    const a = m.accounts[this.acct];
    const ids = this.ids.map((i) => IDS[i] as string);
    const q = new URLSearchParams({ messageIds: ids.join(this.spaced ? ' , ' : ',') });
    const campaign = this.endpoint === 'messages' ? this.campaign : null;
    if (campaign !== null) q.set('campaignId', campaign);
    const path = this.endpoint === 'v1' ? '/api/v1/contacts/messages' : '/messages';
    const res = await send(real, { url: `${path}?${q}`, headers: { authorization: a.auth } });
    expectStatus(res, 200, String(this));
    const expected = [...a.records.values()]
      .filter((r) => ids.includes(r.id) && (campaign === null || r.campaignId === campaign))
      .sort(compareRecords);
    const body = res.json() as unknown;
    if (this.endpoint === 'v1') expectRecords(a, body, expected, String(this));
    else {
      const envelope = body as { messages: unknown; nextCursor: unknown; hasMore: unknown };
      expect({ nextCursor: envelope.nextCursor, hasMore: envelope.hasMore }).toStrictEqual({
        nextCursor: null,
        hasMore: false,
      });
      expectRecords(a, envelope.messages, expected, String(this));
    }
  }
  toString = () =>
    `byIds(${'AB'[this.acct]}, ${this.ids.map((i) => IDS[i]).join(',')}, ${this.endpoint}, ${this.campaign})`;
}

class HistoryStartCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly acct: 0 | 1,
    readonly mode: Walk['mode'],
    readonly channel: number,
    readonly channelFilter: boolean,
    readonly contact: number,
    readonly campaign: string | null,
    readonly size: number,
    readonly endpoint: 'v1' | 'messages',
    readonly upper: boolean,
    /** When set, the walk is of the n-th (mod count) record's contact and channel (or campaign), if any. */
    readonly pick: number | undefined,
  ) {}
  check = () => true;
  async run(m: Model, real: Real): Promise<void> {
    figures.commands++;
    const a = m.accounts[this.acct];
    const records = [...a.records.values()].sort((x, y) => x.seq - y.seq);
    const picked = this.pick === undefined ? undefined : records[this.pick % Math.max(1, records.length)];
    let campaign = this.mode === 'campaign' ? (this.campaign ?? 'c1') : this.campaign;
    if (picked && this.mode === 'campaign' && picked.campaignId !== null) campaign = picked.campaignId;
    const v1Allowed = campaign === null;
    const channel = picked?.channel ?? (CHANNELS[this.channel] as Channel);
    const w: Walk = {
      mode: this.mode,
      channel: this.mode === 'campaign' && !this.channelFilter ? null : channel,
      contact: picked ? contactIndexOf(picked) : this.contact,
      campaignId: campaign,
      v1Allowed,
      cursor: null,
      position: null,
      lastCursor: null,
    };
    await walkPage(real, a, w, v1Allowed ? this.endpoint : 'messages', this.size, this.upper, String(this));
    a.walk = w;
  }
  toString = () =>
    `historyStart(${'AB'[this.acct]}, ${this.mode}, ${this.pick === undefined ? `${CHANNELS[this.channel]}${this.channelFilter ? '' : '?'}, contact ${this.contact}` : `like existing #${this.pick}`}, campaign ${this.campaign}, size ${this.size}, ${this.endpoint})`;
}

class HistoryNextCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly acct: 0 | 1,
    readonly size: number,
    readonly endpoint: 'v1' | 'messages',
  ) {}
  check = (m: Readonly<Model>) => m.accounts[this.acct].walk?.cursor != null;
  async run(m: Model, real: Real): Promise<void> {
    figures.commands++;
    const a = m.accounts[this.acct];
    const w = a.walk as Walk;
    // A cursor is bound to neither the page size nor the endpoint (CONTRACT §3).
    await walkPage(real, a, w, w.v1Allowed ? this.endpoint : 'messages', this.size, false, String(this));
  }
  toString = () => `historyNext(${'AB'[this.acct]}, size ${this.size}, ${this.endpoint})`;
}

const MISUSES = ['otherAccount', 'otherChannel', 'otherContact', 'otherCampaign', 'tampered'] as const;

class CursorMisuseCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly acct: 0 | 1,
    readonly kind: (typeof MISUSES)[number],
    readonly at: number,
  ) {}
  check = (m: Readonly<Model>) => m.accounts[this.acct].walk?.lastCursor != null;
  async run(m: Model, real: Real): Promise<void> {
    figures.commands++;
    const a = m.accounts[this.acct];
    const w = { ...(a.walk as Walk) };
    w.cursor = w.lastCursor;
    let as = a;
    switch (this.kind) {
      case 'otherAccount':
        // The same query under the other account: its own contact for the same number, its own data.
        as = m.accounts[1 - this.acct] as AccountModel;
        break;
      case 'otherChannel':
        w.channel = (CHANNELS.find((c) => c !== w.channel) ?? 'SMS') as Channel;
        break;
      case 'otherContact':
        if (w.mode === 'campaign') w.campaignId = w.campaignId === 'c1' ? 'c2' : 'c1';
        else w.contact = (w.contact + 1) % CONTACTS.length;
        break;
      case 'otherCampaign':
        w.campaignId = w.campaignId === 'c2' ? 'c1' : 'c2';
        break;
      case 'tampered': {
        const c = w.cursor as string;
        const i = this.at % c.length;
        const swapped = c[i] === 'A' ? 'B' : 'A';
        w.cursor = `${c.slice(0, i)}${swapped}${c.slice(i + 1)}`;
        break;
      }
    }
    const url = historyUrl(as.designated, w, 'messages', 3, false);
    const res = await send(real, { url, headers: { authorization: as.auth } });
    count(`cursor misuse ${this.kind}`);
    expectStatus(res, 400, `${this}: ${url}`);
    expect(res.json(), String(this)).toMatchObject({ code: 'invalid_request', status: 400 });
  }
  toString = () => `cursorMisuse(${'AB'[this.acct]}, ${this.kind})`;
}

class FeedCommand implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly acct: 0 | 1,
    readonly limit: number,
    readonly restart: boolean,
  ) {}
  check = () => true;
  async run(m: Model, real: Real): Promise<void> {
    figures.commands++;
    const a = m.accounts[this.acct];
    const from = this.restart || a.feed === null ? null : a.feed;
    const pos = from?.pos ?? 0;
    const q = new URLSearchParams({ limit: String(this.limit) });
    if (from) q.set('after', from.cursor);
    const res = await send(real, { url: `/receipts?${q}`, headers: { authorization: a.auth } });
    expectStatus(res, 200, String(this));
    const body = res.json() as {
      receipts: { id: string; recordedAt: string; receipt: unknown }[];
      nextCursor: unknown;
      hasMore: unknown;
    };
    const expected = a.events.slice(pos, pos + this.limit);
    expect(Object.keys(body).sort()).toStrictEqual(['hasMore', 'nextCursor', 'receipts']);
    expect(
      body.receipts.map((e) => ({ recordedAt: e.recordedAt, receipt: e.receipt })),
      `${this}: events from ${pos} (the model holds ${a.events.length})`,
    ).toStrictEqual(
      expected.map((e) => ({ recordedAt: new Date(e.recordedAt).toISOString(), receipt: e.item })),
    );
    body.receipts.forEach((e, i) => {
      const event = expected[i] as Event;
      expect(e.id).toMatch(/^evt_[0-9A-HJKMNP-TV-Z]{26}$/);
      if (event.id === undefined) {
        for (const acct of m.accounts) {
          if (acct.events.some((x) => x.id === e.id)) expect.fail(`event id ${e.id} given twice`);
        }
        event.id = e.id;
      } else expect(e.id, `${this}: the id of event ${pos + i}`).toBe(event.id);
    });
    expect(body.hasMore, `${this}: hasMore`).toBe(a.events.length > pos + this.limit);
    expect(typeof body.nextCursor, `${this}: nextCursor`).toBe('string');
    a.feed = { cursor: body.nextCursor as string, pos: pos + expected.length };
    count(`feed pages of ${expected.length}`);
  }
  toString = () => `feed(${'AB'[this.acct]}, limit ${this.limit}${this.restart ? ', from the start' : ''})`;
}

class FeedMisuseCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly acct: 0 | 1) {}
  check = (m: Readonly<Model>) => m.accounts[this.acct].feed !== null;
  async run(m: Model, real: Real): Promise<void> {
    figures.commands++;
    const a = m.accounts[this.acct];
    const other = m.accounts[1 - this.acct] as AccountModel;
    const q = new URLSearchParams({ after: (a.feed as { cursor: string }).cursor });
    const res = await send(real, { url: `/receipts?${q}`, headers: { authorization: other.auth } });
    expectStatus(res, 400, String(this));
    expect(res.json()).toMatchObject({ code: 'invalid_request' });
  }
  toString = () => `feedCursorOf(${'AB'[this.acct]}) used by ${'BA'[this.acct]}`;
}

class RotateCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly acct: 0 | 1) {}
  check = () => true;
  async run(m: Model, real: Real): Promise<void> {
    figures.commands++;
    const a = m.accounts[this.acct];
    const oldAuth = a.auth;
    const oldSecret = a.secret;
    const res = await send(real, {
      method: 'POST',
      url: `/admin/v1/accounts/${a.account.id}/secret`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expectStatus(res, 200, String(this));
    const secret = (res.json() as { secret: string }).secret;
    expect(secret).toMatch(/^[A-Za-z0-9]{8}$/);
    a.secret = secret;
    const old = await send(real, { url: '/messages?messageIds=m1', headers: { authorization: oldAuth } });
    expectStatus(old, 401, `${this}: the old secret`);
    const oldDlr = await send(real, { url: `/dlr?key=${a.account.key}&secret=${oldSecret}&messageid=m1` });
    expect(oldDlr.json(), `${this}: the old secret on /dlr`).toStrictEqual({
      code: 4,
      descr: 'Invalid credentials',
    });
    const fresh = await send(real, { url: '/messages?messageIds=m1', headers: { authorization: a.auth } });
    expectStatus(fresh, 200, `${this}: the new secret`);
  }
  toString = () => `rotateSecret(${'AB'[this.acct]})`;
}

class AdvanceCommand implements fc.AsyncCommand<Model, Real> {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(m: Model, real: Real): Promise<void> {
    figures.commands++;
    real.h.advance(this.ms);
    m.now += this.ms;
    clock.now += this.ms;
    // After a jump past the park time, generated times start afresh beyond every earlier one.
    if (this.ms > PARK_MS) {
      m.epoch = m.now;
      count('jumps past the park time');
    }
  }
  toString = () => `advance(${this.ms} ms)`;
}

// ── Generators ──────────────────────────────────────────────────────────────────────────────────────────

const acct = fc.constantFrom<0 | 1>(0, 1);
const maybe = <T>(arb: fc.Arbitrary<T>, freq = 2) => fc.option(arb, { nil: undefined, freq });
const idIndex = fc.integer({ min: 0, max: IDS.length - 1 });
const contactIndex = fc.integer({ min: 0, max: CONTACTS.length - 1 });
const seconds = fc.integer({ min: -3, max: 8 });

const itemSpec: fc.Arbitrary<ItemSpec> = fc.record({
  id: idIndex,
  kind: fc.constantFrom<ItemSpec['kind']>('sms', 'sms', 'sms', 'sms-in', 'other', 'other'),
  otherChannel: fc.integer({ min: 0, max: OTHER_CHANNELS.length - 1 }),
  inbound: fc.boolean(),
  contacts: fc.uniqueArray(contactIndex, { minLength: 1, maxLength: 3 }),
  link: fc.oneof(
    { weight: 17, arbitrary: fc.constant<ItemSpec['link']>('default') },
    { weight: 2, arbitrary: fc.constant<ItemSpec['link']>('omit') },
    { weight: 1, arbitrary: fc.constant<ItemSpec['link']>('other') },
    { weight: 1, arbitrary: fc.constant<ItemSpec['link']>('foreign') },
  ),
  explicitOutbound: fc.boolean(),
  lowerChannel: fc.boolean(),
  campaign: fc.constantFrom<string | null | undefined>(undefined, undefined, null, 'c1', 'c2'),
  text: fc.constantFrom<string | null | undefined>(undefined, undefined, null, 'Hi', 'héllo 𝄞'),
  content: fc.constantFrom<Record<string, unknown> | null | undefined>(
    undefined,
    undefined,
    null,
    { a: 1 },
    { b: [true, null, 'x'] },
  ),
  status: maybe(fc.constantFrom(...SETTABLE)),
  sms: maybe(
    fc.record(
      {
        status: fc.constantFrom<SendStatus>('1', '0', '400'),
        network: fc.constantFrom('23410', '310260'),
        price: fc.constantFrom(0, 0.05, 1.25),
        counts: fc.integer({ min: 1, max: 3 }),
      },
      { requiredKeys: [] },
    ),
  ),
  carrier: maybe(fc.integer({ min: 0, max: 2 }), 3),
  createdAt: maybe(seconds, 3),
});

const receiptSpec: fc.Arbitrary<ReceiptSpec> = fc.record({
  existing: maybe(fc.nat(20), 3),
  id: idIndex,
  to: maybe(contactIndex, 5),
  code: fc.constantFrom(...CODES),
  errcode: fc.constantFrom<string | number | undefined>(undefined, undefined, '0', '1', '5', 5),
  drTime: maybe(fc.integer({ min: 0, max: 6 }), 4),
  specFormat: fc.boolean(),
  network: maybe(fc.constantFrom('23410', '310260'), 4),
  price: maybe(fc.constantFrom(0, 0.07), 4),
  counts: maybe(fc.integer({ min: 1, max: 2 }), 4),
});

/** Every sequence opens with this batch in both accounts, so that early queries have something to find. */
const SEED_ITEMS: ItemSpec[] = IDS.slice(0, SEEDED_IDS).flatMap((_, id): ItemSpec[] => [
  {
    id,
    kind: 'sms',
    otherChannel: 0,
    inbound: false,
    contacts: [0, 1],
    link: 'default',
    explicitOutbound: false,
    lowerChannel: false,
    campaign: id % 2 === 0 ? 'c1' : 'c2',
    text: `seed ${id}`,
    content: undefined,
    status: undefined,
    sms: undefined,
    carrier: undefined,
    createdAt: id,
  },
  {
    id,
    kind: 'other',
    otherChannel: 0,
    inbound: id === 3,
    contacts: [id % 3],
    link: 'default',
    explicitOutbound: true,
    lowerChannel: true,
    campaign: undefined,
    text: undefined,
    content: { n: id },
    status: id === 1 ? 'read' : undefined,
    sms: undefined,
    carrier: undefined,
    createdAt: 1,
  },
]);

const carrierReceiptSpec: fc.Arbitrary<CarrierReceiptSpec> = fc.record({
  carrier: fc.integer({ min: 0, max: 3 }),
  contact: contactIndex,
  code: fc.constantFrom(...CODES),
  errcode: fc.constantFrom<string | undefined>(undefined, '0', '3'),
  drTime: maybe(fc.integer({ min: 0, max: 6 }), 4),
  network: maybe(fc.constantFrom('23410', '310260'), 4),
});

const earlyReceiptSpec: fc.Arbitrary<ReceiptSpec> = fc
  .tuple(receiptSpec, fc.integer({ min: SEEDED_IDS, max: IDS.length - 1 }))
  .map(([spec, id]) => ({ ...spec, existing: undefined, id }));

const arrivalSpec: fc.Arbitrary<ItemSpec> = fc
  .tuple(itemSpec, fc.integer({ min: SEEDED_IDS, max: IDS.length - 1 }))
  .map(([spec, id]) => ({ ...spec, id, kind: 'sms' }));

const commandArbitraries = [
  fc.tuple(acct, fc.array(itemSpec, { minLength: 1, maxLength: 4 })).map(([a, s]) => new IngestCommand(a, s)),
  fc.tuple(acct, fc.array(itemSpec, { minLength: 1, maxLength: 4 })).map(([a, s]) => new IngestCommand(a, s)),
  fc.tuple(acct, fc.array(itemSpec, { minLength: 1, maxLength: 4 })).map(([a, s]) => new IngestCommand(a, s)),
  fc
    .tuple(acct, fc.array(receiptSpec, { minLength: 1, maxLength: 3 }))
    .map(([a, s]) => new ReceiptsCommand(a, s)),
  fc
    .tuple(acct, fc.array(receiptSpec, { minLength: 1, maxLength: 3 }))
    .map(([a, s]) => new ReceiptsCommand(a, s)),
  // Messages that parked receipts may be waiting for.
  fc
    .tuple(acct, fc.array(arrivalSpec, { minLength: 1, maxLength: 2 }))
    .map(([a, s]) => new IngestCommand(a, s)),
  // Early receipts: for ids no sequence opens with, so they park until (if ever) their message arrives.
  fc
    .tuple(acct, fc.array(earlyReceiptSpec, { minLength: 1, maxLength: 3 }))
    .map(([a, s]) => new ReceiptsCommand(a, s)),
  fc.array(carrierReceiptSpec, { minLength: 1, maxLength: 3 }).map((s) => new CarrierReceiptsCommand(s)),
  fc.array(carrierReceiptSpec, { minLength: 1, maxLength: 3 }).map((s) => new CarrierReceiptsCommand(s)),
  fc.tuple(acct, idIndex, maybe(fc.nat(20), 4)).map(([a, id, pick]) => new DlrCommand(a, id, pick)),
  fc
    .tuple(
      acct,
      fc.array(idIndex, { minLength: 1, maxLength: 4 }),
      fc.constantFrom<'v1' | 'messages'>('v1', 'messages'),
      fc.constantFrom<string | null>(null, null, 'c1', 'c2'),
      fc.boolean(),
    )
    .map(([a, ids, e, c, s]) => new ByIdsCommand(a, ids, e, c, s)),
  fc
    .tuple(
      acct,
      fc.constantFrom<Walk['mode']>('user', 'user', 'contact', 'campaign'),
      fc.constantFrom(0, 0, 0, 1, 2),
      fc.boolean(),
      contactIndex,
      fc.constantFrom<string | null>(null, null, 'c1', 'c2'),
      fc.integer({ min: 1, max: 3 }),
      fc.constantFrom<'v1' | 'messages'>('v1', 'messages'),
      fc.boolean(),
      maybe(fc.nat(30), 4),
    )
    .map(
      ([a, mode, ch, f, c, camp, size, e, up, pick]) =>
        new HistoryStartCommand(a, mode, ch, f, c, camp, size, e, up, pick),
    ),
  fc
    .tuple(acct, fc.integer({ min: 1, max: 3 }), fc.constantFrom<'v1' | 'messages'>('v1', 'messages'))
    .map(([a, size, e]) => new HistoryNextCommand(a, size, e)),
  fc
    .tuple(acct, fc.integer({ min: 1, max: 3 }), fc.constantFrom<'v1' | 'messages'>('v1', 'messages'))
    .map(([a, size, e]) => new HistoryNextCommand(a, size, e)),
  fc
    .tuple(acct, fc.constantFrom(...MISUSES), fc.nat({ max: 100 }))
    .map(([a, k, at]) => new CursorMisuseCommand(a, k, at)),
  fc.tuple(acct, fc.integer({ min: 1, max: 4 }), fc.boolean()).map(([a, l, r]) => new FeedCommand(a, l, r)),
  fc
    .tuple(acct, fc.integer({ min: 1, max: 4 }), fc.constant(false))
    .map(([a, l, r]) => new FeedCommand(a, l, r)),
  acct.map((a) => new FeedMisuseCommand(a)),
  acct.map((a) => new RotateCommand(a)),
  fc
    .oneof(
      { weight: 6, arbitrary: fc.integer({ min: 1, max: 120_000 }) },
      { weight: 1, arbitrary: fc.integer({ min: PARK_MS + 1, max: PARK_MS + 3_600_000 }) },
    )
    .map((ms) => new AdvanceCommand(ms)),
];

// ── The runs ────────────────────────────────────────────────────────────────────────────────────────────

/** The harness clock, shared by the sequences of one engine (it only moves forward). */
const clock = { now: START };

describe.each(engines())('$name: model-based sequences over two accounts', (engine) => {
  let h: Harness;
  beforeAll(async () => {
    // No rate limit: a sequence sends many requests at one instant of the injected clock.
    h = await startHarness(engine, {
      WAYBILL_RATE_PER_SECOND: '0',
      WAYBILL_V1_SUNSET: '2100-01-01T00:00:00Z',
    });
    clock.now = START;
  });
  afterAll(async () => {
    await h?.close();
  });

  it(
    'answers every query as the model predicts, and never shows one account the other’s data',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.commands(commandArbitraries, { maxCommands: MAX_COMMANDS, size: 'max' }),
          async (commands) => {
            figures.sequences++;
            const setup = async () => {
              const a = await h.createAccount({ name: 'model-A' });
              const b = await h.createAccount({ name: 'model-B' });
              figures.requests += 2;
              const conversations = new Map<string, string>();
              const model: Model = {
                now: clock.now,
                epoch: clock.now,
                accounts: [new AccountModel(a, conversations), new AccountModel(b, conversations)],
                route: `model-${figures.sequences}`,
                carriers: new Map(),
                parkedCarrier: [],
                nextRef: 0,
              };
              // The same opening in both accounts: same ids, same numbers, so any leak between them shows.
              for (const i of [0, 1] as const) await new IngestCommand(i, SEED_ITEMS).run(model, { h });
              return { model, real: { h } };
            };
            await fc.asyncModelRun(setup, commands);
          },
        ),
        {
          numRuns: SEQUENCES,
          ...(SEED === undefined ? {} : { seed: SEED }),
          endOnFailure: !process.env.WAYBILL_TEST_MODEL_SHRINK,
        },
      );
    },
    60_000 + SEQUENCES * 500,
  );
});

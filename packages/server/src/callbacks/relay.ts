import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Config } from '../config.js';
import { type AttemptOutcome, attemptOutcome, outcomeLabel } from '../domain/deliveries/attempt-outcome.js';
import { parkedCutoff } from '../domain/deliveries/parking.js';
import { signingSecrets, signWebhook } from '../domain/deliveries/signing.js';
import { openSecret } from '../domain/secret-box.js';
import type { Metrics } from '../http/metrics.js';
import type { ClaimedDelivery, FinishedAttempt, OutboxStore } from '../store/store.js';
import { RefusalWarnings } from './address-guard.js';
import { CallbackHttpClient, CallbackRequestError, type CallbackResponse } from './http-client.js';

/**
 * The callback relay (CONTRACT §9): takes due deliveries from the store's outbox, POSTs each to its account's
 * callback through the guarded client, and records every attempt and what follows it (delivered, retry later,
 * dead). Several relays — one per instance on PostgreSQL — share the queue through the store's leases.
 */

/** The pino methods the relay logs with (a Fastify `app.log` or a pino logger will do). */
export interface RelayLogger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

type RelayConfig = Pick<
  Config,
  | 'callbackTimeoutMs'
  | 'callbackRetrySchedule'
  | 'callbackConcurrency'
  | 'callbackEndpointConcurrency'
  | 'callbackPollMs'
  | 'callbackAllowPrivate'
  | 'receiptParkSeconds'
>;

export interface RelayOptions {
  store: OutboxStore;
  config: Readonly<RelayConfig>;
  /** Opens the sealed callback secrets. */
  pepper: Buffer;
  logger: RelayLogger;
  /** Attempt counters (`waybill_callback_attempts_total`), shared with the app of the same process. */
  metrics?: Metrics;
  /** @default Date.now */
  clock?: () => number;
  /** A number in [0, 1), for the retry jitter. @default Math.random */
  random?: () => number;
  /** @default a {@link CallbackHttpClient} built from `config` */
  client?: CallbackHttpClient;
}

/** The `User-Agent` of every attempt: `Waybill/<version of @waybill/server>`. */
export const USER_AGENT = `Waybill/${
  (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string })
    .version
}`;

/**
 * Idle, the relay looks for due deliveries at most this often, and at least every WAYBILL_CALLBACK_POLL_MS
 * (sooner when woken: deliveries queued by this process, or on PostgreSQL by any, through the store's notices).
 */
const MIN_IDLE_MS = 50;
/**
 * At most this many attempts are recorded by one store call. Attempts that end while a recording is under way
 * wait for it and are then recorded together (one statement on PostgreSQL instead of one each: about a quarter
 * less CPU per delivery, Waybill's and PostgreSQL's, docs/benchmarks.md); alone, an attempt is recorded at once.
 */
const RECORD_BATCH = 256;
/** How often expired parked receipts are dropped. */
const PARK_SWEEP_MS = 60_000;
/** After a store failure the relay waits this long, doubling up to the maximum, before it tries again. */
const MIN_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 5000;
/**
 * Claims run ahead of the attempts: besides its attempts in flight (at most WAYBILL_CALLBACK_ENDPOINT_CONCURRENCY
 * per account) the relay holds up to PREFETCH − 1 times as many claimed deliveries, each started the moment a
 * slot of its account frees. A claim is a query that scans the due queue, so refilling in batches instead of one
 * slot at a time costs a fraction of the database time (measured on SQLite, bench/callbacks.mjs: claims fell
 * from half of the server's CPU to under a third), and the pipeline never drains while the next claim runs.
 */
const PREFETCH = 4;
/**
 * A lease lasts two timeouts plus this margin. A held delivery is started only while its lease still covers a
 * whole attempt plus the margin (time to record the outcome); otherwise it is handed back, so a lease never runs
 * out mid-attempt (when another relay could take the delivery meanwhile). A crashed relay's deliveries are due
 * again when their leases run out: 2 × WAYBILL_CALLBACK_TIMEOUT_MS + 5 s after they were claimed.
 */
const LEASE_MARGIN_MS = 5000;
/** After the stop deadline, how long aborted attempts get to hand their deliveries back. */
const RELEASE_GRACE_MS = 2000;

interface Held {
  claim: ClaimedDelivery;
  leaseUntil: number;
  fresh: boolean;
}

const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms).unref());

export class Relay {
  readonly #store: OutboxStore;
  readonly #config: Readonly<RelayConfig>;
  readonly #pepper: Buffer;
  readonly #log: RelayLogger;
  readonly #metrics: Metrics | undefined;
  readonly #clock: () => number;
  readonly #random: () => number;
  readonly #client: CallbackHttpClient;

  /** Attempts in flight by account, and in all. */
  readonly #inFlight = new Map<string, number>();
  readonly #running = new Set<Promise<void>>();
  /**
   * Claimed, not started yet (oldest due first), and their count by account. `fresh` while the claim that took
   * it is the store's latest word on it: anything held longer is checked again before it is sent (finish.ts
   * maySend), as ingest may have superseded it meanwhile.
   */
  readonly #held: Held[] = [];
  readonly #heldByAccount = new Map<string, number>();
  /** Hand-backs under way (awaited by stop). */
  readonly #chores = new Set<Promise<void>>();
  /** Aborts in-flight attempts when the stop deadline passes. */
  readonly #abort = new AbortController();
  /** Opened secrets by their sealed form (opening one costs a key derivation). */
  readonly #secrets = new Map<string, string>();
  readonly #refusals = new RefusalWarnings();

  /** Attempts waiting for the recording under way to end (see RECORD_BATCH). */
  readonly #toRecord: { result: FinishedAttempt; done: (error: unknown) => void }[] = [];
  #recording = false;
  /** Stops the store's notices of queued deliveries. */
  #unwatch: (() => Promise<void>) | null = null;
  /** The listening connection is down (logged once per loss). */
  #deaf = false;

  #loop: Promise<void> | null = null;
  #stopping = false;
  #wake: (() => void) | null = null;
  #woken = false;
  /** Attempts ended since the last claim. */
  #freed = 0;
  /** How many deliveries the next claim asks for: grows while claims come back full, shrinks when not. */
  #claimSize: number;
  #nextSweep = 0;
  /** When the loop's current sleep ends (−∞ while it is not sleeping). */
  #idleUntil = Number.NEGATIVE_INFINITY;

  constructor(options: RelayOptions) {
    this.#store = options.store;
    this.#config = options.config;
    this.#pepper = options.pepper;
    this.#log = options.logger;
    this.#metrics = options.metrics;
    this.#clock = options.clock ?? Date.now;
    this.#random = options.random ?? Math.random;
    this.#claimSize = options.config.callbackConcurrency;
    this.#client =
      options.client ??
      new CallbackHttpClient({
        allowPrivate: options.config.callbackAllowPrivate,
        timeoutMs: options.config.callbackTimeoutMs,
      });
  }

  /** Attempts in flight now. */
  get inFlight(): number {
    return this.#running.size;
  }

  start(): void {
    if (this.#loop || this.#stopping) return;
    this.#unwatch = this.#store.watchQueuedDeliveries({
      queued: () => {
        if (this.#deaf) this.#log.info({}, 'callback relay: listening for queued deliveries again');
        this.#deaf = false;
        this.poke();
      },
      lost: (error) => {
        if (this.#deaf) return;
        this.#deaf = true;
        this.#log.warn(
          { err: errorSummary(error), pollMs: this.#config.callbackPollMs },
          'callback relay: cannot listen for deliveries queued by other instances; polling until it can',
        );
      },
    });
    this.#loop = this.#run();
  }

  /** Something may have been queued: look now rather than at the next poll. */
  poke(): void {
    this.#woken = true;
    this.#wake?.();
  }

  /**
   * Stops claiming, waits for the attempts in flight until `deadlineMs`, then aborts the rest and hands their
   * deliveries back untried (due again at once, for whichever relay runs next). Never rejects.
   */
  async stop(deadlineMs = 10_000): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    this.poke();
    await this.#unwatch?.().catch(() => {});
    // Real time, whatever clock the relay was given: a shutdown deadline must pass.
    const deadline = performance.now() + deadlineMs;
    const left = () => Math.max(0, deadline - performance.now());
    // The loop ends after its current step (a claim it is waiting on hands its deliveries back), and what is
    // claimed but not started goes back at once.
    if (this.#loop) await Promise.race([this.#loop, sleep(left())]);
    await this.#release(this.#held.splice(0).map((h) => h.claim));
    this.#heldByAccount.clear();
    await Promise.race([Promise.allSettled([...this.#running]), sleep(left())]);
    if (this.#running.size > 0) {
      this.#log.warn(
        { inFlight: this.#running.size },
        'callback attempts still running at the shutdown deadline: aborted, their deliveries handed back',
      );
      this.#abort.abort();
      await Promise.race([Promise.allSettled([...this.#running]), sleep(RELEASE_GRACE_MS)]);
    }
    await Promise.race([Promise.allSettled([...this.#chores]), sleep(RELEASE_GRACE_MS)]);
    await this.#client.destroy().catch(() => {});
  }

  async #run(): Promise<void> {
    let backoff = MIN_BACKOFF_MS;
    while (!this.#stopping) {
      try {
        await this.#sweepParked();
        this.#dispatch();
        const room = PREFETCH * this.#config.callbackConcurrency - this.#running.size - this.#held.length;
        const asked = Math.min(room, this.#claimSize);
        let claimed: ClaimedDelivery[] = [];
        if (asked > 0) {
          const leaseUntil = this.#clock() + 2 * this.#config.callbackTimeoutMs + LEASE_MARGIN_MS;
          claimed = await this.#claim(asked, leaseUntil);
          if (this.#stopping) {
            await this.#release(claimed);
            break;
          }
          for (const claim of claimed) this.#hold(claim, leaseUntil);
          // Full: ask for more next time. Short: the due queue (or the accounts' limits) gave what there was.
          this.#claimSize =
            claimed.length === asked
              ? Math.min(2 * asked, PREFETCH * this.#config.callbackConcurrency)
              : Math.max(this.#config.callbackEndpointConcurrency, 2 * claimed.length);
          this.#dispatch();
          for (const held of this.#held) held.fresh = false;
        }
        backoff = MIN_BACKOFF_MS;
        // A full claim: more may be due, so go again as soon as there is room. Otherwise nothing else is
        // claimable now: sleep until the next delivery falls due, a poke, or attempts end (which may free an
        // account's or a recipient's turn; see #ended).
        if (asked > 0 && claimed.length === asked) continue;
        await this.#idle(room > 0 && !this.#woken ? await this.#idleDelay() : this.#config.callbackPollMs);
      } catch (error) {
        this.#log.error(
          { err: errorSummary(error), retryInMs: backoff },
          'callback relay: the store failed; backing off',
        );
        await this.#idle(backoff, false);
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      }
    }
  }

  async #claim(limit: number, leaseUntil: number): Promise<ClaimedDelivery[]> {
    this.#freed = 0;
    // Held deliveries count against an account's share like attempts in flight.
    const taken = new Map(this.#inFlight);
    for (const [account, n] of this.#heldByAccount) taken.set(account, (taken.get(account) ?? 0) + n);
    return this.#store.claimDeliveries({
      now: new Date(this.#clock()),
      limit,
      perAccount: PREFETCH * this.#config.callbackEndpointConcurrency,
      inFlight: taken,
      leaseUntil: new Date(leaseUntil),
      lease: randomUUID(),
    });
  }

  #hold(claim: ClaimedDelivery, leaseUntil: number): void {
    this.#held.push({ claim, leaseUntil, fresh: true });
    this.#heldByAccount.set(claim.accountId, (this.#heldByAccount.get(claim.accountId) ?? 0) + 1);
  }

  #unhold(index: number): Held {
    const [held] = this.#held.splice(index, 1);
    if (!held) throw new Error('no such held delivery');
    const n = (this.#heldByAccount.get(held.claim.accountId) ?? 1) - 1;
    if (n > 0) this.#heldByAccount.set(held.claim.accountId, n);
    else this.#heldByAccount.delete(held.claim.accountId);
    return held;
  }

  /**
   * Starts held deliveries, oldest first, while there are free slots (in all and for their account). Those held
   * since an earlier claim are first checked again, together in one store call: each takes its slot at once,
   * and is sent only if it may still be (a delivery superseded while it was held is never sent).
   */
  #dispatch(): void {
    if (this.#stopping) return;
    const concurrency = this.#config.callbackConcurrency;
    const perAccount = this.#config.callbackEndpointConcurrency;
    const now = this.#clock();
    const stale: ClaimedDelivery[] = [];
    for (let i = 0; i < this.#held.length && this.#running.size < concurrency; ) {
      const held = this.#held[i] as Held;
      if (now + this.#config.callbackTimeoutMs + LEASE_MARGIN_MS > held.leaseUntil) {
        // Held too long to finish within its lease: give it back rather than risk two relays on it.
        this.#chore(this.#release([this.#unhold(i).claim]));
        continue;
      }
      if ((this.#inFlight.get(held.claim.accountId) ?? 0) >= perAccount) {
        i++;
        continue;
      }
      const { claim, fresh } = this.#unhold(i);
      if (fresh) this.#launch(claim);
      else stale.push(claim);
    }
    if (stale.length === 0) return;
    const sendable = this.#recheck(stale);
    for (const claim of stale) this.#launch(claim, sendable);
  }

  /** The ids of those claims that may still be sent; the store has handed the others back. Never rejects. */
  async #recheck(claims: readonly ClaimedDelivery[]): Promise<ReadonlySet<string>> {
    try {
      const sendable = new Set((await this.#store.recheckClaims(claims)).map((c) => c.id));
      if (sendable.size < claims.length) {
        this.#log.debug(
          { notSent: claims.filter((c) => !sendable.has(c.id)).map((c) => c.id) },
          'held callback deliveries superseded meanwhile: not sent',
        );
      }
      return sendable;
    } catch (error) {
      // Unknown whether they may be sent: send none, hand them back (or their leases run out).
      this.#log.error({ err: errorSummary(error) }, 'callback relay: could not check held deliveries again');
      await this.#release(claims);
      return new Set();
    }
  }

  /** Gives back the held deliveries of an account (its callbacks were just turned off). */
  #dropHeld(accountId: string): void {
    const dropped: ClaimedDelivery[] = [];
    for (let i = this.#held.length - 1; i >= 0; i--) {
      if (this.#held[i]?.claim.accountId === accountId) dropped.push(this.#unhold(i).claim);
    }
    if (dropped.length > 0) this.#chore(this.#release(dropped.reverse()));
  }

  #chore(work: Promise<void>): void {
    this.#chores.add(work);
    void work.finally(() => this.#chores.delete(work));
  }

  async #idleDelay(): Promise<number> {
    const poll = this.#config.callbackPollMs;
    const due = await this.#store.nextDeliveryDue();
    if (due === null) return poll;
    return Math.min(poll, Math.max(MIN_IDLE_MS, due.getTime() - this.#clock()));
  }

  /** Waits `ms`, or less when poked (`wakeable`: else only a stop ends it early), or until stopped. */
  async #idle(ms: number, wakeable = true): Promise<void> {
    const awake = () => this.#stopping || (wakeable && this.#woken);
    if (!awake()) {
      await new Promise<void>((done) => {
        const finish = () => {
          clearTimeout(timer);
          this.#wake = null;
          this.#idleUntil = Number.NEGATIVE_INFINITY;
          done();
        };
        const timer = setTimeout(finish, ms);
        this.#idleUntil = this.#clock() + ms;
        this.#wake = () => {
          if (awake()) finish();
        };
      });
    }
    if (wakeable) {
      this.#woken = false;
      // Let the other wake-ups of this moment (attempts ending together) fold into one claim.
      await new Promise((done) => setImmediate(done));
    }
  }

  async #sweepParked(): Promise<void> {
    const now = this.#clock();
    if (now < this.#nextSweep) return;
    this.#nextSweep = now + PARK_SWEEP_MS;
    try {
      const dropped = await this.#store.dropParkedBefore(parkedCutoff(now, this.#config.receiptParkSeconds));
      if (dropped > 0) this.#log.info({ dropped }, 'dropped expired parked receipts');
    } catch (error) {
      this.#log.warn({ err: errorSummary(error) }, 'could not drop expired parked receipts');
    }
  }

  async #release(claimed: readonly ClaimedDelivery[]): Promise<void> {
    for (const claim of claimed) {
      await this.#store.releaseClaim(claim).catch((error: unknown) => {
        this.#log.warn(
          { err: errorSummary(error), deliveryId: claim.id },
          'could not hand a delivery back; it is due again when its lease runs out',
        );
      });
    }
  }

  /** Takes an attempt slot for `claim` and makes the attempt, once `sendable` (if given) lists it. */
  #launch(claim: ClaimedDelivery, sendable?: Promise<ReadonlySet<string>>): void {
    this.#inFlight.set(claim.accountId, (this.#inFlight.get(claim.accountId) ?? 0) + 1);
    const attempt = sendable
      ? sendable.then(async (ids) => {
          if (!ids.has(claim.id)) return null;
          // Stopping began while it was checked: it goes back untried, like everything else held.
          if (this.#stopping) return this.#release([claim]).then(() => null);
          return this.#attempt(claim);
        })
      : this.#attempt(claim);
    const task = attempt
      .catch((error: unknown) => {
        this.#log.error({ err: errorSummary(error), deliveryId: claim.id }, 'callback attempt failed');
        return null;
      })
      .then((retryAt) => {
        this.#running.delete(task);
        const n = (this.#inFlight.get(claim.accountId) ?? 1) - 1;
        if (n > 0) this.#inFlight.set(claim.accountId, n);
        else this.#inFlight.delete(claim.accountId);
        this.#ended(retryAt);
      });
    this.#running.add(task);
  }

  /**
   * An attempt ended, freeing a slot: a held delivery takes it at once. Claiming costs a query that scans the
   * due queue, so the loop is woken to claim more only once an account's share of slots has freed (the held
   * deliveries bridge the gap), when nothing is left, or when a retry falls due before the loop's current
   * sleep ends (a busy loop looks up the next due time itself before it sleeps).
   */
  #ended(retryAt: number | null): void {
    this.#dispatch();
    this.#freed++;
    // What one account holds beyond its attempts: once that many ended, its buffer is empty and a claim refills it.
    const batch = Math.max(
      1,
      Math.min((PREFETCH - 1) * this.#config.callbackEndpointConcurrency, this.#config.callbackConcurrency),
    );
    const idle = this.#running.size === 0 && this.#held.length === 0;
    const retrySooner = retryAt !== null && retryAt < this.#idleUntil;
    if (retrySooner || idle || this.#freed >= batch) this.poke();
  }

  /** Makes one attempt and records it; returns when the retry is due, if one was scheduled. */
  async #attempt(claim: ClaimedDelivery): Promise<number | null> {
    const started = this.#clock();
    const startedHr = performance.now();
    let response: CallbackResponse | null = null;
    let error: string | null = null;
    try {
      const headers = this.#headers(claim, started);
      response = await this.#client.post(claim.callbackUrl, headers, claim.body, this.#abort.signal);
    } catch (caught) {
      if (caught instanceof CallbackRequestError && caught.aborted) {
        // Shutdown passed its deadline: not the receiver's fault, so it does not count as an attempt.
        await this.#release([claim]);
        return null;
      }
      error = caught instanceof CallbackRequestError ? caught.message : errorSummary(caught);
    }
    const durationMs = Math.max(0, Math.round(performance.now() - startedHr));
    const finished = new Date(this.#clock());
    const outcome: AttemptOutcome = attemptOutcome(
      {
        status: response?.status ?? null,
        retryAfter: response?.retryAfter,
        error,
        at: new Date(started),
        durationMs,
        now: finished,
      },
      claim.attempts,
      this.#config.callbackRetrySchedule,
      this.#random(),
    );
    try {
      await this.#record({ claim, outcome });
    } catch (caught) {
      // The lease runs out and the delivery is attempted again (at least once, same webhook-id).
      this.#log.error(
        { err: errorSummary(caught), deliveryId: claim.id },
        'could not record a callback attempt; it will be repeated when its lease runs out',
      );
      return null;
    }
    const label = outcomeLabel(outcome);
    if (label === 'gone') this.#dropHeld(claim.accountId);
    this.#metrics?.callbackAttempts.inc({ outcome: label });
    const fields = {
      accountId: claim.accountId,
      deliveryId: claim.id,
      attempt: claim.attempts + 1,
      httpStatus: outcome.attempt.httpStatus,
      error: outcome.attempt.error,
      durationMs,
      ...(outcome.next.state === 'pending' ? { nextAttemptAt: outcome.next.at.toISOString() } : {}),
    };
    if (this.#refusals.first(claim.accountId, outcome.attempt.error)) {
      this.#log.warn(fields, 'callback destination refused (logged once per account until restart)');
    }
    if (label === 'dead' || label === 'gone') {
      this.#log.warn(
        fields,
        label === 'gone'
          ? 'callback answered 410 Gone: delivery dead, callbacks of the account disabled'
          : 'callback delivery dead: every attempt of the retry schedule failed',
      );
    } else {
      this.#log.debug(fields, label === 'delivered' ? 'callback delivered' : 'callback attempt failed');
    }
    return outcome.next.state === 'pending' ? outcome.next.at.getTime() : null;
  }

  /** Records an attempt, together with those that end while a recording is under way (RECORD_BATCH). */
  #record(result: FinishedAttempt): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#toRecord.push({ result, done: (error) => (error === undefined ? resolve() : reject(error)) });
      if (!this.#recording) void this.#recordQueued();
    });
  }

  async #recordQueued(): Promise<void> {
    this.#recording = true;
    // Attempts whose answers arrived in the same turn of the event loop go together from the start.
    await new Promise((done) => setImmediate(done));
    while (this.#toRecord.length > 0) {
      const batch = this.#toRecord.splice(0, RECORD_BATCH);
      let failure: unknown;
      try {
        await this.#store.finishAttempts(batch.map((b) => b.result));
      } catch (error) {
        failure = error ?? new Error('could not record callback attempts');
      }
      for (const b of batch) b.done(failure);
    }
    this.#recording = false;
  }

  #headers(claim: ClaimedDelivery, now: number): Record<string, string> {
    return callbackHeaders(
      claim.id,
      now,
      claim.body,
      signingSecrets(claim.secrets, now).map((sealed) => this.#open(sealed)),
    );
  }

  #open(sealed: string): string {
    let clear = this.#secrets.get(sealed);
    if (clear === undefined) {
      try {
        clear = openSecret(this.#pepper, sealed);
      } catch {
        throw new CallbackRequestError(
          'cannot open the callback secret (sealed under another WAYBILL_PEPPER?); nothing was sent',
        );
      }
      if (this.#secrets.size >= 10_000) this.#secrets.clear();
      this.#secrets.set(sealed, clear);
    }
    return clear;
  }
}

/** An error's name, code and first line: enough to act on, never a query's parameters or a secret. */
function errorSummary(error: unknown): string {
  if (!(error instanceof Error)) return String(error).slice(0, 200);
  const code = (error as { code?: unknown }).code;
  const line = error.message.split('\n')[0]?.slice(0, 200) ?? '';
  return `${error.name}${typeof code === 'string' ? ` ${code}` : ''}: ${line}`;
}

/** The headers of every callback request, real or a test (CONTRACT §9): Standard Webhooks, signed. */
export function callbackHeaders(
  webhookId: string,
  now: number,
  body: string,
  clearSecrets: readonly string[],
): Record<string, string> {
  const timestamp = Math.floor(now / 1000);
  return {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'webhook-id': webhookId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signWebhook(clearSecrets, webhookId, timestamp, body),
  };
}

import type { AppContext } from '../context.js';
import type { ReceiptInput } from '../domain/ingest/precedence.js';
import type { IntakeRouteRecord } from '../domain/intake/route.js';
import {
  applyCarrierReceipts,
  type CarrierNamedReceipt,
  type CarrierReceiptOutcome,
} from '../operations/intake-receipt.js';

/**
 * Group commit for the HTTP adapters (CONTRACT §12), as the SMPP bind does it for its PDUs: the receipts of
 * requests that arrive together are committed in one transaction, and each request is answered once its
 * transaction has committed. One commit costs an fsync of the log on SQLite (a round trip and a WAL flush on
 * PostgreSQL), which bounded a gateway to ~500 receipts/s at one receipt per transaction (docs/benchmarks.md,
 * "Receipt intake"). What arrives while a key's commit runs waits and goes into the next one.
 */

/** At most this many receipts in one transaction, as for an SMPP bind. */
const MAX_GROUP = 500;

interface Waiting<I, O> {
  item: I;
  resolve: (out: O) => void;
  reject: (error: unknown) => void;
}

/**
 * Items added under one key are committed together by `commit` (which answers one result per item, in order,
 * or throws for all of them): first those added in the same turn of the event loop, then, while a commit runs,
 * everything that arrives meanwhile.
 */
export class GroupCommit<I, O> {
  private readonly waiting = new Map<string, Waiting<I, O>[]>();
  private readonly running = new Set<string>();

  constructor(private readonly commit: (key: string, items: I[]) => Promise<O[]>) {}

  add(key: string, item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      const queue = this.waiting.get(key);
      if (queue) queue.push({ item, resolve, reject });
      else this.waiting.set(key, [{ item, resolve, reject }]);
      // What the same read brought joins the first group.
      if (!this.running.has(key)) {
        this.running.add(key);
        setImmediate(() => void this.drain(key));
      }
    });
  }

  private async drain(key: string): Promise<void> {
    try {
      for (;;) {
        const queue = this.waiting.get(key);
        if (!queue || queue.length === 0) break;
        const group = queue.splice(0, MAX_GROUP);
        try {
          const results = await this.commit(
            key,
            group.map((w) => w.item),
          );
          for (const [i, w] of group.entries()) {
            const result = results[i];
            if (result === undefined) w.reject(new Error('the group commit gave no result for a receipt'));
            else w.resolve(result);
          }
        } catch (error) {
          for (const w of group) w.reject(error);
        }
      }
    } finally {
      this.waiting.delete(key);
      this.running.delete(key);
    }
  }
}

/** A direct-form receipt's answer: matched or parked, or the store's item errors (a 400). */
export type DirectOutcome = { ok: true; result: 'matched' | 'parked' } | { ok: false; detail: string };

/**
 * The adapters' two groups: receipts named by carrier id, per route (operations/intake-receipt.ts counts them
 * and wakes the relay), and receipts named directly, per account, through the operator API's store call.
 */
export function intakeGroups(ctx: AppContext) {
  const routes = new Map<string, IntakeRouteRecord>();
  const carrier = new GroupCommit<CarrierNamedReceipt, CarrierReceiptOutcome>((name, receipts) => {
    const route = routes.get(name);
    if (route === undefined) throw new Error(`no route ${name} for its group`);
    return applyCarrierReceipts(ctx, route, receipts);
  });
  const direct = new GroupCommit<{ item: ReceiptInput; now: Date }, DirectOutcome>((accountId, items) =>
    commitDirect(ctx, accountId, items),
  );
  return {
    /** The route as this request read it; the group commits with the latest read. */
    byCarrier(route: IntakeRouteRecord, receipt: CarrierNamedReceipt): Promise<CarrierReceiptOutcome> {
      routes.set(route.name, route);
      return carrier.add(route.name, receipt);
    },
    direct(accountId: string, item: ReceiptInput, now: Date): Promise<DirectOutcome> {
      return direct.add(accountId, { item, now });
    },
  };
}

export type IntakeGroups = ReturnType<typeof intakeGroups>;

/**
 * One account's direct receipts in one `ingestReceipts` call. The store checks a batch whole, so when it names
 * item errors each receipt is committed alone instead, and only the bad ones are refused.
 */
async function commitDirect(
  ctx: AppContext,
  accountId: string,
  items: { item: ReceiptInput; now: Date }[],
): Promise<DirectOutcome[]> {
  const now = items[items.length - 1]?.now ?? ctx.now();
  const outcome = await ctx.store.ingestReceipts(
    accountId,
    items.map((i) => i.item),
    now,
  );
  if (!outcome.ok) {
    if (items.length === 1) {
      return [{ ok: false, detail: outcome.errors.map((e) => e.detail).join('; ') }];
    }
    const one: DirectOutcome[] = [];
    for (const i of items) one.push(...(await commitDirect(ctx, accountId, [i])));
    return one;
  }
  if (outcome.value.applied > 0) {
    ctx.metrics.receiptEvents.inc(outcome.value.applied);
    ctx.deliveriesQueued();
  }
  const parked = new Set(outcome.value.unknown.map((u) => `${u.messageId} ${u.to}`));
  return items.map(({ item }) => {
    const result = parked.has(`${item.messageId} ${item.to}`) ? 'parked' : 'matched';
    return { ok: true, result };
  });
}

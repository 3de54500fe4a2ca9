/**
 * Which due deliveries a relay may take (CONTRACT §9, "Order and no regression" and "Throughput and fairness").
 * The engines pre-select candidates with their indexes (due, unleased, pending, of accounts with callbacks on,
 * oldest due first, a bounded number per account) and lease what {@link ClaimPicker} chooses from them.
 */

/** A pending delivery as loaded for a claim. */
export interface ClaimCandidate {
  accountId: string;
  seq: number;
  messageId: string;
  to: string;
  nextAttemptAt: Date;
  createdAt: Date;
  /** Its own lease's end, if it has one (an expired lease is a crashed attempt: due again). */
  leaseUntil: Date | null;
  /**
   * The latest lease end among the recipient's other deliveries, if any. A lease that has not run out is an
   * attempt in flight (or about to start), possibly of a delivery superseded meanwhile.
   */
  recipientLeaseUntil: Date | null;
}

/** What the relay asks for (store.ts ClaimRequest). */
export interface ClaimLimits {
  now: Date;
  /** At most this many in all. */
  limit: number;
  /** At most this many of one account, counting `inFlight`. */
  perAccount: number;
  /** What the relay already has under way, by account. */
  inFlight: ReadonlyMap<string, number>;
}

/**
 * How many of an account's oldest due, unleased deliveries an engine loads for one claim: its whole share. Those
 * whose recipient turns out to have an attempt in flight are at most as many as the account's live leases, and
 * each of those already holds a slot of that share (the relay's own, counted in `inFlight`), so the rest still
 * fills the room left.
 */
export const candidateWindow = (perAccount: number): number => perAccount;

/**
 * How many of each account's earliest pending deliveries {@link nextDue} looks at. Those held up (leased, or their
 * recipient in flight) come first only while their attempts run; were all of them held up, the answer is the end
 * of a lease, and the relay never sleeps longer than a second anyway.
 */
export const NEXT_DUE_WINDOW = 64;

const leaseLive = (until: Date | null, now: Date) => until !== null && until.getTime() > now.getTime();

/**
 * A candidate may be claimed when it is due, not leased by a live attempt, and its recipient has no attempt in
 * flight: one recipient never has two attempts at once, so an older delivery (even one superseded while in
 * flight) always ends before the newer one starts, and the receiver never sees the recipient go backwards.
 */
export function claimable(candidate: ClaimCandidate, now: Date): boolean {
  return (
    candidate.nextAttemptAt.getTime() <= now.getTime() &&
    !leaseLive(candidate.leaseUntil, now) &&
    !leaseLive(candidate.recipientLeaseUntil, now)
  );
}

/**
 * The accounts take turns: every account's oldest due delivery first, then every account's second, and so on
 * (ties by age), so an account with a long backlog only ever gets its share and never holds up the others.
 * Within an account, the oldest due first (by due time, then feed position).
 */
export function inTurns<C extends ClaimCandidate>(candidates: readonly C[]): C[] {
  const byAccount = new Map<string, C[]>();
  for (const c of candidates) {
    const list = byAccount.get(c.accountId);
    if (list) list.push(c);
    else byAccount.set(c.accountId, [c]);
  }
  const turns: { candidate: C; turn: number }[] = [];
  for (const list of byAccount.values()) {
    list.sort((a, b) => a.nextAttemptAt.getTime() - b.nextAttemptAt.getTime() || a.seq - b.seq);
    list.forEach((candidate, turn) => {
      turns.push({ candidate, turn });
    });
  }
  turns.sort((a, b) => a.turn - b.turn || a.candidate.createdAt.getTime() - b.candidate.createdAt.getTime());
  return turns.map((t) => t.candidate);
}

const recipientKey = (c: ClaimCandidate) => `${c.accountId}\u0000${c.messageId}\u0000${c.to}`;

/**
 * Chooses what one claim takes: claimable candidates in turns, within the total and per-account limits, one per
 * recipient. Keeps its counts across rounds: an engine that loses some chosen candidates to another relay
 * (PostgreSQL) reports them {@link lost} and chooses again from the rest.
 */
export class ClaimPicker {
  readonly #limits: ClaimLimits;
  readonly #byAccount: Map<string, number>;
  readonly #recipients = new Set<string>();
  #taken = 0;

  constructor(limits: ClaimLimits) {
    this.#limits = limits;
    this.#byAccount = new Map(limits.inFlight);
  }

  /** How many more this claim may take. */
  room(): number {
    return this.#limits.limit - this.#taken;
  }

  /** An account's room left in this claim (what its candidate query need not look beyond). */
  accountRoom(accountId: string): number {
    return this.#limits.perAccount - (this.#byAccount.get(accountId) ?? 0);
  }

  /** Chooses from `candidates` (any order), in the order they should be leased and attempted. */
  choose<C extends ClaimCandidate>(candidates: readonly C[]): C[] {
    const chosen: C[] = [];
    for (const c of inTurns(candidates.filter((c) => claimable(c, this.#limits.now)))) {
      if (this.room() <= 0) break;
      const recipient = recipientKey(c);
      if (this.accountRoom(c.accountId) <= 0 || this.#recipients.has(recipient)) continue;
      this.#byAccount.set(c.accountId, (this.#byAccount.get(c.accountId) ?? 0) + 1);
      this.#recipients.add(recipient);
      this.#taken++;
      chosen.push(c);
    }
    return chosen;
  }

  /**
   * Gives back the room of a chosen candidate another relay leased first. Its recipient stays taken: that relay's
   * attempt is in flight now.
   */
  lost(candidate: ClaimCandidate): void {
    this.#byAccount.set(candidate.accountId, (this.#byAccount.get(candidate.accountId) ?? 1) - 1);
    this.#taken--;
  }
}

/**
 * When the relay should look for due deliveries again, from the earliest-due candidates of each account with
 * callbacks on (paused accounts are never due): a claimable one is due at its `nextAttemptAt`; one that is leased
 * or whose recipient has an attempt in flight at the end of that lease (the relay that holds it wakes itself
 * when its attempt ends; the lease end covers a crashed one). Null when nothing is pending.
 */
export function nextDue(candidates: readonly ClaimCandidate[], now: Date): Date | null {
  let due: number | null = null;
  for (const c of candidates) {
    let at = c.nextAttemptAt.getTime();
    for (const lease of [c.leaseUntil, c.recipientLeaseUntil]) {
      if (leaseLive(lease, now)) at = Math.max(at, (lease as Date).getTime());
    }
    if (due === null || at < due) due = at;
  }
  return due === null ? null : new Date(due);
}

// The rotating instance's side, pure: when a saved rotation may resolve, when it was superseded or lost, and which
// dead entries of the instance table may go. Every expiry here is measured on the rotating instance's own
// monotonic clock; Redis's clock is never consulted.
import type { Era } from './era.js';
import { MARKER_PREFIX } from './history.js';
import { isRollback } from './line.js';
import type { Observed, PendingReply } from './reply.js';

export type AckOutcome =
  /** Every instance that may trust an older key has acknowledged, or its lease has run out: resolve. */
  | 'resolved'
  /** Another rotation replaced this one before it was confirmed. */
  | 'superseded'
  /** Redis no longer holds this rotation nor a newer one (it lost the write): the outcome is not known. */
  | 'lost'
  /** No answer from Redis for too long after the bound: the outcome is not known. */
  | 'uncertain';

export interface AckStep {
  readonly outcome?: AckOutcome;
  /** Table entries seen unchanged for longer than any lease: remove them if still unchanged (housekeeping). */
  readonly drop: ReadonlyArray<readonly [instance: string, seq: number]>;
  /**
   * With a resolved outcome, the entries still waited on whose lease may not be over yet: remove each at `at` (a
   * monotonic time) if its renewal number is still `seq` then. A killed instance's entry goes before the next
   * rotation would have to wait a lease for it.
   */
  readonly dropAt?: ReadonlyArray<readonly [instance: string, seq: number, at: number]>;
}

export interface AckOptions {
  readonly leaseMs: number;
  readonly driftMargin: number;
  /** How long after the bound an answer confirming the rotation is still awaited. */
  readonly commandTimeout: number;
}

/** A rotation whose compare-and-set was answered: what {@link AckWait} waits on. */
export interface SavedRotation {
  readonly generation: number;
  readonly id: string;
  /** When the compare-and-set was answered. */
  readonly savedAt: number;
  /** Its answer. */
  readonly saveReply: Observed;
  readonly era: Era;
  readonly options: AckOptions;
  /** The era's confirmed renewal number when the save was sent (see {@link Era.observe}); by default, now's. */
  readonly confirmedAtSend?: number;
  /** When the save was sent; by default `savedAt`. */
  readonly sentAt?: number;
}

/**
 * One saved rotation of `generation` / `id`, whose compare-and-set was answered at `savedAt`. Every lease that
 * could let an instance trust an older key was granted before the save ran, so it ends before `savedAt +
 * leaseMs + driftMargin` (the bound). Before the bound, the rotation resolves only on positive acknowledgements
 * from a table that is provably complete: same Redis (`run_id`) and same table as this instance has known for
 * longer than any lease, at the save and at the read.
 */
export class AckWait {
  readonly generation: number;
  readonly id: string;
  readonly bound: number;
  readonly #options: AckOptions;
  readonly #era: Era;
  /** When each (instance, renewal number) waited on was first seen. */
  readonly #firstSeen = new Map<string, { seq: number; at: number }>();

  constructor({ generation, id, savedAt, saveReply, era, options, confirmedAtSend, sentAt }: SavedRotation) {
    this.generation = generation;
    this.id = id;
    this.#options = options;
    // The holder's trust already ends driftMargin before its lease; the bound's margin is a second layer, which also
    // covers an instance that keeps none (driftMargin: 0) on a clock slower than this one's by less than this margin.
    this.bound = savedAt + options.leaseMs + options.driftMargin;
    this.#era = era;
    era.observe(saveReply, savedAt, confirmedAtSend ?? era.confirmedSeq, sentAt ?? savedAt);
  }

  /** What a read sent now passes to {@link read} as `confirmedAtSend`. */
  sending(): number {
    return this.#era.confirmedSeq;
  }

  /**
   * An acknowledgement read answered at `now`, while this instance's lease in the table lasts until `leaseUntil`.
   * The rotation resolves only while that lease lasts: it comes from a renewal that found this rotation's record
   * current, and any newer rotation must wait for it, so none can have resolved in between (an answer that lay in
   * a frozen process's buffer is never taken for the present). A second layer: the store renews on the record
   * once the wait resolved, and resolves the rotation only if that renewal leaves a lease (store.ts).
   */
  read(reply: PendingReply, now: number, leaseUntil: number, confirmedAtSend?: number, sentAt?: number): AckStep {
    // A new era (a restart, a failover, a lost table) starts its own wait for leases granted before it.
    this.#era.observe(reply, now, confirmedAtSend, sentAt);
    if (reply.id !== this.id) {
      // The rollback marker is no rotation: Redis went back past this record, and no secret is current.
      if (reply.id?.startsWith(MARKER_PREFIX) === true) return { outcome: 'lost', drop: [] };
      // Superseded only by a record that replaced this one: a record of another line (one that Redis went back to,
      // whatever its generation) never did, and this rotation's record was lost (line.ts).
      const saved = { generation: this.generation, id: this.id };
      if (!isRollback(saved, reply.generation, reply.id, reply.prev, reply.line))
        return { outcome: 'superseded', drop: [] };
      return { outcome: 'lost', drop: [] };
    }
    const drop: Array<readonly [string, number]> = [];
    const dropAt: Array<readonly [string, number, number]> = [];
    const stale = this.#options.leaseMs + this.#options.driftMargin;
    for (const [instance, seq] of reply.waiting) {
      const seen = this.#firstSeen.get(instance);
      if (seen?.seq !== seq) this.#firstSeen.set(instance, { seq, at: now });
      // The renewal behind an entry ran before the read that first showed it: its lease ends within `stale` of
      // that read's answer, whatever happens after.
      const at = (seen?.seq === seq ? seen.at : now) + stale;
      if (now >= at) drop.push([instance, seq]);
      else dropAt.push([instance, seq, at]);
    }
    if (now < leaseUntil) {
      if (now >= this.bound) return { outcome: 'resolved', drop, dropAt };
      if (reply.waiting.length === 0 && this.tableComplete(reply, now)) return { outcome: 'resolved', drop };
    }
    return now >= this.bound + this.#options.commandTimeout ? { outcome: 'uncertain', drop } : { drop };
  }

  /** No answer to a read by `now`: after the bound plus `commandTimeout`, the outcome is declared unknown. */
  unanswered(now: number): AckStep {
    return now >= this.bound + this.#options.commandTimeout ? { outcome: 'uncertain', drop: [] } : { drop: [] };
  }

  /**
   * Whether the table read in `reply` holds every instance that may trust an older key. A second layer: read() has
   * taken `reply` into the era first, and a changed Redis or table starts a new era there, so `completeFrom()` is a
   * lease ahead; `same()` also refuses a table of another Redis or another table that the era did not take in.
   */
  protected tableComplete(reply: Observed, now: number): boolean {
    return this.#era.same(reply) && now >= this.#era.completeFrom();
  }
}

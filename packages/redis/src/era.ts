// How the protocol tells an instance table it can trust from one it cannot, from what each answer observed (the
// lease and the acknowledgement wait both ask it). Pure: no I/O, no clock read; times are `performance.now()`-style
// milliseconds passed in by the caller.
import type { Observed } from './reply.js';

/**
 * When an instance first saw the Redis it talks to in its present form (same `run_id`, same table): the table is
 * provably complete once every lease granted before that moment has run out, i.e. `leaseMs + driftMargin` later
 * on this instance's monotonic clock.
 */
export class Era {
  readonly #wait: number;
  #serverId = '';
  #epoch: string | null = null;
  #since = Number.NaN;
  /** The highest own renewal number Redis confirmed: a table showing less lost writes without a restart. */
  #ownSeq = 0;

  /** `leaseMs + driftMargin`: how long every lease granted before a moment may still last after it. */
  constructor(leaseMs: number, driftMargin: number) {
    this.#wait = leaseMs + driftMargin;
  }

  /** The server and table of the era before this one, and when the command whose answer began this one was sent. */
  #left: { readonly serverId: string; readonly epoch: string | null; readonly before: number } = {
    serverId: '',
    epoch: null,
    before: -Infinity,
  };

  /** The end of the quarantine after a change of era (not after the first one): no trust is granted before it. */
  #quarantineUntil = -Infinity;

  /**
   * Takes in an answer observed at `now`; returns true when the era changed (a restart, a failover, a lost table).
   * `confirmedAtSend` is {@link confirmedSeq} when the command was sent: an answer taken in after a renewal that Redis
   * ran after it (answers that arrive together are not always taken in the order Redis sent them) shows a lower own
   * renewal number without any loss. `sentAt` is when the command was sent: an answer of the server and table this
   * era replaced, to a command sent before the one whose answer began this era (a save whose `WAIT` outlasted a slot
   * move), tells nothing newer than that answer did, and changes nothing.
   */
  observe(observed: Observed, now: number, confirmedAtSend = this.#ownSeq, sentAt = now): boolean {
    const present = this.holds(observed);
    const { serverId, epoch, before } = this.#left;
    if (!present && sentAt < before && observed.serverId === serverId && observed.epoch === epoch) return false;
    // An entry that is gone while Redis and the table are the same was removed by a rotating instance's
    // housekeeping after this instance's lease ran out (it was cut off or frozen): nothing was lost. An entry that
    // is there with an older renewal number was rolled back: second layer under the server's identity, for writes
    // lost while the run_id and the replication id stayed (an operator's restore on a running server).
    const dropped = observed.ownSeq === 0 && observed.serverId === this.#serverId && observed.epoch === this.#epoch;
    const lost = !dropped && observed.ownSeq < Math.min(confirmedAtSend, this.#ownSeq);
    if (!lost && present) return false;
    // No table on the same Redis, in the answer to a command sent before Redis confirmed any renewal of this
    // instance: Redis may have run it before the renewal that created the table, whose answer was taken in first.
    // A table lost since shows at the next renewal, which starts another.
    if (observed.epoch === null && observed.serverId === this.#serverId && confirmedAtSend === 0) return false;
    // A table created by this very answer (no epoch before, same Redis) is the start, not a loss.
    const first = Number.isNaN(this.#since) || (this.#epoch === null && !lost && observed.serverId === this.#serverId);
    if (!first) this.#quarantineUntil = now + this.#wait;
    if (!first) this.#left = { serverId: this.#serverId, epoch: this.#epoch, before: sentAt };
    this.#serverId = observed.serverId;
    this.#epoch = observed.epoch;
    this.#since = now;
    this.#ownSeq = observed.ownSeq;
    return true;
  }

  /** Whether `observed` comes from this era's server and table. */
  holds(observed: Observed): boolean {
    return observed.serverId === this.#serverId && observed.epoch === this.#epoch;
  }

  /**
   * Whether `observed`, the answer to a command sent at `sentAt`, comes from a server this instance has left since:
   * another server than this era's, answering a command sent before the one whose answer began this era (a save
   * sent before a failover, answered by the primary this instance no longer follows).
   */
  behind(observed: Observed, sentAt: number): boolean {
    return !this.holds(observed) && sentAt < this.#left.before;
  }

  /**
   * Starts the era from a read's answer (`load()`), unless an answer already started it. A read is never judged
   * against the era as a renewal is: sent before a renewal, its answer may be taken in after it, and would then
   * look like a table that lost this instance's renewals.
   */
  begin(observed: Observed, now: number): void {
    if (Number.isNaN(this.#since)) this.observe(observed, now);
  }

  /**
   * Whether trust may be granted at `now`. After Redis lost writes (a restart, a failover), the record it holds may
   * be one that a rotation revoked: for one lease, the instances that hold the newer record get the time to see
   * the rollback and write their record forward, and nobody trusts what Redis holds.
   */
  mayTrust(now: number): boolean {
    return now >= this.#quarantineUntil;
  }

  /** The end of the quarantine (monotonic); `-Infinity` when there is none. */
  get quarantineUntil(): number {
    return this.#quarantineUntil;
  }

  /** The highest own renewal number Redis has confirmed so far. */
  get confirmedSeq(): number {
    return this.#ownSeq;
  }

  /** The part of the quarantine that no renewal ends early (see {@link keepQuarantine}). */
  #keptUntil = -Infinity;

  /**
   * Ends the quarantine now (the lease shows that nothing a rotation revoked can be trusted; see Lease.renewed),
   * except the part kept by {@link keepQuarantine}, when `observed`, the answer that shows it, comes from this era's
   * server and table (not a late one from the server this instance left).
   */
  endQuarantine(observed: Observed): void {
    if (this.holds(observed)) this.#quarantineUntil = this.#keptUntil;
  }

  /**
   * This instance found that Redis lost its record: the record that server holds next is the one this instance
   * writes there, which shows nothing about a rotation made elsewhere meanwhile (on the other side of a split brain,
   * which renews elsewhere). The present quarantine then runs its course.
   */
  keepQuarantine(): void {
    this.#keptUntil = Math.max(this.#keptUntil, this.#quarantineUntil);
  }

  /** Records that Redis confirmed this instance's renewal number `seq`. */
  confirmed(seq: number): void {
    if (seq > this.#ownSeq) this.#ownSeq = seq;
  }

  /** Whether `observed` is the same era as the one held (no restart, no new table, no lost renewal). */
  same(observed: Observed): boolean {
    return (
      !Number.isNaN(this.#since) &&
      observed.epoch !== null &&
      observed.serverId === this.#serverId &&
      observed.epoch === this.#epoch &&
      observed.ownSeq >= this.#ownSeq
    );
  }

  /** The monotonic time from which the table is complete: `NaN` before any answer. */
  completeFrom(): number {
    return this.#since + this.#wait;
  }
}

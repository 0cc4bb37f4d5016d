// One instance's lease, pure: what each renewal answer means for trust, reloads, rollbacks and backoff, judged
// against the instance's history (history.ts) and its era (era.ts). The driver (store.ts) and the simulator
// (test/sim/) feed it the same events; it reads no clock.
import type { Era } from './era.js';
import { MARKER_PREFIX, type History } from './history.js';
import type { Seen } from './line.js';
import type { ConfirmReply, Condition, LeaseStep, Overwrite, Renewal } from './lease-events.js';
import type { Observed } from './reply.js';

export type { Condition, ConfirmReply, LeaseStep, Overwrite, Renewal, Seen };

export interface LeaseOptions {
  readonly leaseMs: number;
  readonly renewInterval: number;
  readonly driftMargin: number;
}

export class Lease {
  readonly options: LeaseOptions;
  /** The records this instance has seen, which every answer is judged against. */
  readonly #history: History;
  /** The server and table its renewals reach. */
  readonly #era: Era;
  /** The end of the trust the last confirmed renewal granted (monotonic). */
  #trustUntil = -Infinity;
  /**
   * The end of the lease the last confirmed renewal holds in the table, whether or not it granted trust (a renewal
   * on the record being saved by an instance whose held key is behind): proof that no newer rotation has resolved.
   */
  #leaseUntil = -Infinity;
  #seq = 0;
  /**
   * The renewal in flight and the newest record seen when it was sent. Its answer is judged against that record:
   * a record seen since (the instance's own save, a reload) may have been written after Redis ran the renewal, and
   * answers that arrive together are not always taken in the order Redis sent them.
   */
  #sent: { readonly seq: number; readonly newest: Seen } = { seq: 0, newest: { generation: 0, id: '' } };
  #condition: Condition = 'ok';
  /** Consecutive renewals that did not end in trust: the backoff's exponent. */
  #failures = 0;
  /** The record id a reload was last asked for, so that one record asks once. */
  #reloadAskedFor: string | null = null;

  constructor(options: LeaseOptions, { era, history }: { readonly era: Era; readonly history: History }) {
    this.options = options;
    this.#era = era;
    this.#history = history;
  }

  get condition(): Condition {
    return this.#condition;
  }

  /** The end of the trust the last confirmed renewal granted (monotonic); `-Infinity` before any. */
  get trustUntil(): number {
    return this.#trustUntil;
  }

  /** The end of this instance's lease in the table (see {@link AckWait.read}); `-Infinity` before any. */
  get leaseUntil(): number {
    return this.#leaseUntil;
  }

  /**
   * The renewal number to send with the next renewal, taken just before sending it: its answer is judged against
   * the newest record seen by then.
   */
  nextSeq(): number {
    this.#seq += 1;
    this.#sent = { seq: this.#seq, newest: this.#history.newest };
    return this.#seq;
  }

  /**
   * Whether the trust in `heldId` ends now, after an answer taken in (`observed`, to a command sent at `sentAt`) whose
   * record, the newest seen, replaced the held key on a server this instance has left since (a split brain's other
   * side): that rotation waits for this instance's lease there, which renewals elsewhere do not extend.
   */
  endTrustAfter(heldId: string | undefined, observed: Observed, sentAt: number): boolean {
    const { id } = observed;
    if (heldId === undefined || id === heldId || id !== this.#history.newest.id || !this.#era.behind(observed, sentAt))
      return false;
    this.#trustUntil = -Infinity;
    return true;
  }

  /** The `renewal` answered with `reply` (then {@link endTrustAfter}). */
  renewed(reply: ConfirmReply, renewal: Renewal): LeaseStep {
    const { seq, sentAt, now, heldId, canWriteForward, renewHeld = true } = renewal;
    this.#era.observe(reply, now, undefined, sentAt);
    const sighting = this.#history.see(reply.generation, reply.id, reply.prev, this.sentHighest(seq), reply.line);
    if (sighting === 'rollback') {
      this.#era.keepQuarantine();
      this.#failures += 1;
      const condition: Condition = reply.id === null ? 'missing' : 'rollback';
      const expected = { generation: reply.generation, id: reply.id ?? '' };
      const over = (id: string): Overwrite => ({
        expected: expected.generation,
        expectedId: expected.id,
        generation: Math.max(reply.generation, this.#history.newest.generation) + 1,
        line: this.#history.lineFor(expected, id),
      });
      // Only while this instance's own trust lasts: then no newer rotation can have resolved since its last
      // renewal (it would have had to wait for this lease), so the held key is not one a resolved rotation revoked.
      // And only over a record of its own line (or none): another line's record was written by a rotation that
      // never waited for this lease (the other side of a split brain renews elsewhere), and writing the held
      // record over it could bring back a key that rotation revoked.
      const ownLine = reply.id === null || this.#history.ownLine(reply.id);
      if (canWriteForward && ownLine && heldId === this.#history.newest.id && now < this.#trustUntil) {
        return { writeForward: over(heldId), ...this.#enter(condition) };
      }
      return { marker: over(''), ...this.#enter(condition) };
    }
    if (sighting === 'late') {
      // Redis ran the renewal before the newer record seen since it was sent was written. Not a rollback; nor a
      // trust, a reload or a failure: the next renewal, judged against the newer record, tells.
      if (reply.status === 'ok') this.#era.confirmed(seq);
      return {};
    }
    if (
      reply.status === 'ok' &&
      !this.#era.mayTrust(now) &&
      now < this.#trustUntil &&
      reply.id === heldId &&
      heldId === this.#history.newest.id
    ) {
      // Another server (a slot moved, a failover) holds the very record whose trust still lasts: a rotation that
      // revoked it would have waited for this instance's acknowledgement or lease. Nothing to quarantine (unless kept).
      this.#era.endQuarantine(reply);
    }
    if (reply.status === 'ok' && !this.#era.mayTrust(now)) {
      // Quarantined after Redis lost writes: renewing at the usual pace (Redis answers), not trusting yet. The entry
      // is renewed in this server's table all the same, which a rotation of this instance counts on.
      this.#era.confirmed(seq);
      this.#failures = 0;
      this.#leaseUntil = this.#leaseEnd(sentAt);
      return {};
    }
    if (reply.status === 'ok') {
      this.#era.confirmed(seq);
      this.#failures = 0;
      this.#reloadAskedFor = null;
      this.#leaseUntil = this.#leaseEnd(sentAt);
      // Renewed on the record being saved while the held key is behind: a lease in the table, no trust in the key.
      if (reply.id !== heldId && !renewHeld) return this.#enter('ok');
      this.#trustUntil = this.#leaseUntil;
      return { trustUntil: this.#trustUntil, ...this.#enter('ok') };
    }
    this.#failures += 1;
    // A rollback marker: the same condition as the rollback it stands for, reported once, no reload asked.
    if (reply.id?.startsWith(MARKER_PREFIX)) {
      return this.#condition === 'missing' || this.#condition === 'rollback' ? {} : this.#enter('rollback');
    }
    // Stale: another record is current. Ask for a reload once per record, not once per renewal.
    // Asked again now and then, in case the authority's reload failed.
    const reload = reply.id !== null && (reply.id !== this.#reloadAskedFor || this.#failures % 8 === 0);
    if (reload) this.#reloadAskedFor = reply.id;
    return { reload, ...this.#enter(reply.id === null ? 'missing' : 'ok') };
  }

  /** The end of the lease that a renewal sent at `sentAt` holds in the table, with the margin for clock drift. */
  #leaseEnd(sentAt: number): number {
    return sentAt + this.options.leaseMs - this.options.driftMargin;
  }

  /** The record the answer of renewal `seq` is judged against: the newest seen when it was sent. */
  protected sentHighest(seq: number): Seen {
    return seq === this.#sent.seq ? this.#sent.newest : this.#history.newest;
  }

  /** A reload ended without a new key: a renewal that finds another record current asks for one again. */
  reloadEnded(): void {
    this.#reloadAskedFor = null;
  }

  /** A renewal that got no answer (or an error) by `now`: trust simply runs out. */
  unanswered(): LeaseStep {
    this.#failures += 1;
    return this.#enter('unavailable');
  }

  /**
   * How long to wait before the next renewal at `now`: `renewInterval` while the trust lasts (a short outage is
   * ridden out at the normal rate); once it is gone and renewals keep failing, doubling up to a second, or a
   * quarter of `leaseMs` if that is less (`renewInterval` if longer): a broken Redis sees about one command per
   * instance per second, and an instance trusts its key again well within a lease of Redis answering.
   */
  nextDelay(now: number): number {
    const { renewInterval, leaseMs } = this.options;
    if (this.#failures <= 1 || now < this.#trustUntil) return renewInterval;
    const ceiling = Math.max(renewInterval, Math.min(1000, leaseMs / 4));
    return Math.min(ceiling, Math.max(renewInterval, 25) * 2 ** Math.min(this.#failures - 1, 10));
  }

  /**
   * The condition a read already found before any renewal (a process that opened over a rollback, which its
   * `open()` reported): the renewals then report only a change from it.
   */
  assume(condition: Condition): void {
    this.#condition = condition;
  }

  /**
   * This instance's own save resolved: every instance that may trust an older key acknowledged it or its lease ran
   * out, while this instance's lease lasted. Until that lease ends no newer rotation can resolve (it would wait for
   * this instance's entry, which acknowledges no newer record), so the saved record may be trusted until then,
   * even where a renewal would not grant trust yet (the held key was the rollback marker's placeholder). Returns
   * that end.
   */
  saveResolved(): number {
    this.#trustUntil = Math.max(this.#trustUntil, this.#leaseUntil);
    return this.#leaseUntil;
  }

  #enter(condition: Condition): { report?: Condition } {
    if (condition === this.#condition) return {};
    this.#condition = condition;
    return { report: condition };
  }
}

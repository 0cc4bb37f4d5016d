// The driver of one instance's lease (lease.ts decides, this file does the I/O): renewals on a timer that backs off,
// pub/sub for rotations, reloads asked of the authority without ever holding up a renewal, write-forward after a
// rollback, and one report per change of condition.
import type { Runtime } from 'launcher-auth/store-kit';
import type { StoreLink } from 'launcher-auth';
import type { RedisSubscription } from './client.js';
import type { Era } from './era.js';
import { MARKER_PREFIX, type History } from './history.js';
import type { ConfirmReply, Condition, Lease, LeaseStep, Overwrite } from './lease.js';
import type { Observed } from './reply.js';

export interface FollowerIo {
  /** Runs CONFIRM; `undefined` when Redis did not answer in time (or failed). */
  readonly confirm: (heldId: string, savingId: string, seq: number) => Promise<ConfirmReply | undefined>;
  /** Writes the held record forward, or the rollback marker when `options.marker` is true. */
  readonly overwrite: (over: Overwrite, options: { readonly marker: boolean }) => Promise<void>;
  readonly subscribe: (onMessage: (id: string) => void) => Promise<RedisSubscription>;
  readonly leave: () => Promise<unknown>;
  /** The id of a record this store is saving now ('' if none), renewed on. */
  readonly savingId: () => string;
  /** Whether renewals on the record being saved extend the trust in the held key (it was the newest). */
  readonly renewHeld: () => boolean;
  /** Whether the store holds the record of `id` (to write it forward). */
  readonly holds: (id: string) => boolean;
  readonly report: (condition: Condition) => void;
}

/**
 * After an answer (`observed`, to a command sent at `sentAt`) taken into the history: its record may end the trust
 * in the key `link`'s authority holds (see Lease.endTrustAfter).
 */
export function endTrustOn(lease: Lease, link: StoreLink | undefined, observed: Observed, sentAt: number): void {
  if (lease.endTrustAfter(link?.keyId, observed, sentAt)) link?.trustUntil(-Infinity);
}

export class Follower {
  readonly #lease: Lease;
  readonly #history: History;
  readonly #era: Era;
  readonly #link: StoreLink;
  readonly #io: FollowerIo;
  readonly #onChange: () => Promise<void>;
  #subscription: RedisSubscription | undefined;
  readonly #runtime: Runtime;
  /** Cancels the next renewal's timer. */
  #cancelTimer: (() => void) | undefined;
  #renewing: Promise<void> | undefined;
  /** When the last renewal's outcome came (its answer, or its command timeout): the back-off counts from there. */
  #outcomeAt = -Infinity;
  /** When the last renewal was sent. */
  #sentAt = -Infinity;
  #reloading: Promise<void> | undefined;
  #reloadAgain = false;
  #renewAgain = false;
  #stopped = false;
  /** Ends a wait of {@link renewUntilLeased} when the follower stops. */
  #onStop: (() => void) | undefined;

  /** `lease` judges each renewal's answer against `history` and `era`, which the store's reads and saves share. */
  constructor(
    { lease, history, era }: { readonly lease: Lease; readonly history: History; readonly era: Era },
    link: StoreLink,
    io: FollowerIo,
    onChange: () => Promise<void>,
    runtime: Runtime,
  ) {
    this.#lease = lease;
    this.#history = history;
    this.#era = era;
    this.#runtime = runtime;
    this.#link = link;
    this.#io = io;
    this.#onChange = onChange;
    // Nothing is trusted until Redis has confirmed that this instance holds the current key.
    link.trustUntil(-Infinity);
  }

  /** Subscribes, then makes the first renewal (its failure is not fatal: trust simply waits for a later one). */
  async start(): Promise<void> {
    this.#subscription = await this.#io.subscribe((id) => {
      // A rollback marker is reported by the renewal that sees it, once: not at every message.
      if (id !== this.#link.keyId && id !== this.#io.savingId() && !id.startsWith(MARKER_PREFIX)) this.reload();
    });
    // A reload that adopted a new key while subscribing has started a renewal already: one chain of renewals only.
    await (this.#renewing ?? this.#renewAndSchedule());
  }

  /** Stops renewing and leaves the instance table; the promise settles once Redis answered (or did not in time). */
  stop(): Promise<void> {
    this.#stopped = true;
    this.#cancelTimer?.();
    this.#onStop?.();
    this.#subscription?.close();
    // After a renewal in flight, which would otherwise put the entry back for a rotation to wait on.
    return (this.#renewing ?? Promise.resolve())
      .then(() => this.#io.leave())
      .then(
        () => undefined,
        () => undefined,
      );
  }

  /** Asks the authority to reload; never awaited by a renewal, so a reload queued behind a rotation holds up nothing. */
  reload(): void {
    if (this.#reloading !== undefined) {
      this.#reloadAgain = true;
      return;
    }
    const before = this.#link.keyId;
    this.#reloading = this.#onChange()
      .catch(() => undefined)
      .then(() => {
        this.#reloading = undefined;
        // A new key adopted: acknowledge it now, not at the next renewal, so that the rotation resolves at once.
        if (this.#link.keyId !== before && !this.#stopped) this.#renewSoon();
        // None (Redis did not answer the read): the next renewal that finds another record asks again.
        else this.#lease.reloadEnded();
        if (this.#reloadAgain && !this.#stopped) {
          this.#reloadAgain = false;
          this.reload();
        }
      });
  }

  /** One renewal now, after the one in flight; settles once its answer was taken in (a saved rotation's last step). */
  async #renewNext(): Promise<void> {
    while (this.#renewing !== undefined) await this.#renewing.catch(() => undefined);
    if (this.#stopped) return;
    this.#cancelTimer?.();
    await this.#renewAndSchedule().catch(() => undefined);
  }

  /**
   * `#renewNext()` until a renewal grants trust: again while its lease is over already (the process was frozen
   * meanwhile, or cut off: then at the back-off's pace), after waiting out a quarantine first (the server changed
   * during the rotation: a slot move, a failover). The rotation resolves when its own instance accepts the new
   * token too. It stops when another record is the newest seen, and after two quarantines' time, though never inside
   * a quarantine: a server that changed again meanwhile is waited out too. Settles with whether this instance's lease
   * lasts then: the rotation resolves only while it does (once it ran out, a rotation elsewhere may have replaced the
   * saved record without waiting for this instance).
   */
  async renewUntilLeased(): Promise<boolean> {
    const saving = this.#io.savingId();
    const { leaseMs, driftMargin } = this.#lease.options;
    // Two quarantines at most: past that, or once another record (or the marker) is the newest, the caller decides.
    // Not inside a quarantine, though: the caller then trusts the saved record, and the docs promise that a rotation
    // waits out its instance's quarantine whenever the server changed.
    const started = this.#runtime.now();
    const until = started + 2 * (leaseMs + driftMargin);
    for (let renewals = 0; !this.#stopped && this.#history.newest.id === saving; renewals += 1) {
      const now = this.#runtime.now();
      if (renewals > 0 && now >= until && this.#era.mayTrust(now)) break;
      if (renewals > 0) await this.#sleep(this.#lease.nextDelay(this.#runtime.now()));
      // Until the quarantine ends, so that a renewal goes out as it ends: renewing through it at the usual pace would
      // resolve only at the first renewal after it, up to renewInterval later.
      await this.#sleep(this.#era.quarantineUntil - this.#runtime.now());
      // Renewals that keep failing go out at the back-off's pace, the timer's included: one that failed since this
      // began (while it waited out a quarantine, the first time too) is not followed by another the moment it ends.
      const woke = this.#runtime.now();
      const delay = this.#lease.nextDelay(woke);
      if (this.#outcomeAt >= started && this.#renewing === undefined && delay > this.#lease.options.renewInterval)
        await this.#sleep(this.#outcomeAt + delay - woke);
      // A renewal of the timer's in flight, sent since this began (after the save, at the same back-off), is this
      // one: another sent the moment it fails would double the pace at which a broken Redis is asked.
      if (this.#renewing !== undefined && this.#sentAt >= started) await this.#renewing.catch(() => undefined);
      else await this.#renewNext();
      const answered = this.#runtime.now();
      if (this.#lease.leaseUntil > answered && this.#era.mayTrust(answered)) return true;
    }
    return this.#lease.leaseUntil > this.#runtime.now();
  }

  /** Settles after `ms` (at once when it is not positive), or when the follower stops. */
  #sleep(ms: number): Promise<void> {
    if (ms <= 0 || this.#stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const cancel = this.#runtime.timer(ms, resolve);
      this.#onStop = () => {
        cancel();
        resolve();
      };
    });
  }

  /** A renewal now, or right after the one in flight (a new key to acknowledge at once). */
  #renewSoon(): void {
    if (this.#renewing !== undefined) {
      this.#renewAgain = true;
      return;
    }
    this.#cancelTimer?.();
    void this.#renewAndSchedule();
  }

  /** A renewal, then the timer of the next one (at the back-off's pace after a failure). */
  #renewAndSchedule(): Promise<void> {
    const run = this.#sendRenewal().finally(() => {
      this.#renewing = undefined;
      if (this.#stopped) return;
      const again = this.#renewAgain;
      this.#renewAgain = false;
      const runtime = this.#runtime;
      this.#cancelTimer?.();
      this.#cancelTimer = runtime.timer(
        again ? 0 : this.#lease.nextDelay(runtime.now()),
        () => void this.#renewAndSchedule(),
      );
    });
    this.#renewing = run;
    return run;
  }

  /** One renewal (CONFIRM), its answer taken into the lease, and what that answer asks for done. */
  async #sendRenewal(): Promise<void> {
    const lease = this.#lease;
    const heldId = this.#link.keyId;
    const savingId = this.#io.savingId();
    const seq = lease.nextSeq();
    const sentAt = this.#runtime.now();
    this.#sentAt = sentAt;
    const reply = await this.#io.confirm(heldId, savingId, seq);
    this.#outcomeAt = this.#runtime.now();
    if (this.#stopped) return;
    const step: LeaseStep =
      reply === undefined
        ? lease.unanswered()
        : lease.renewed(reply, {
            seq,
            sentAt,
            now: this.#runtime.now(),
            heldId,
            canWriteForward: this.#io.holds(heldId),
            renewHeld: this.#io.renewHeld(),
          });
    if (step.trustUntil !== undefined) this.#link.trustUntil(step.trustUntil);
    if (reply !== undefined && lease.endTrustAfter(heldId, reply, sentAt)) this.#link.trustUntil(-Infinity);
    if (step.report !== undefined) {
      this.#io.report(step.report);
      // The authority hears of a rollback as a reload that fails with ERR_STORE_ROLLBACK (onStoreError).
      if (step.report === 'rollback' || step.report === 'missing') this.reload();
    }
    if (step.reload === true) this.reload();
    if (step.writeForward !== undefined)
      await this.#io.overwrite(step.writeForward, { marker: false }).catch(() => undefined);
    if (step.marker !== undefined) await this.#io.overwrite(step.marker, { marker: true }).catch(() => undefined);
  }
}

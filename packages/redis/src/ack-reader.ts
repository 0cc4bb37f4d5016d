// The driver of a saved rotation's wait (acks.ts decides, this file does the I/O): reads of the acknowledgements,
// woken early by the ones announced by pub/sub, and the housekeeping of the instance table that the wait asks for.
import type { Runtime } from 'launcher-auth/store-kit';
import type { AckWait } from './acks.js';
import { supersededError, uncertainError } from './errors.js';
import type { History } from './history.js';
import { pendingOf, type Observed } from './reply.js';

export interface AckReaderIo {
  /** Runs PENDING for the record `id`; rejects when Redis did not answer in time. */
  readonly pending: (id: string) => Promise<unknown>;
  /** Removes a table entry if its renewal number is still `seq` (housekeeping: a failure is ignored). */
  readonly drop: (instance: string, seq: number) => void;
  /** The end of this instance's lease in the table (`Infinity` without a watch: its authority trusts without bound). */
  readonly leaseUntil: () => number;
  /** A read's answer (`observed`, sent at `sentAt`), once taken into the history (see Lease.endTrustAfter). */
  readonly seen?: (observed: Observed, sentAt: number) => void;
}

export class AckReader {
  readonly #io: AckReaderIo;
  readonly #pollInterval: number;
  readonly #key: string;
  /** Acknowledgements of the record being saved heard by pub/sub: a waiting save reads the table at once. */
  #heard = 0;
  /** Ends the pause of a waiting save early (set while it pauses). */
  #wake: (() => void) | undefined;
  /** Housekeeping of the instance table after resolved saves (see `AckStep.dropAt`). */
  readonly #dropTimers = new Set<() => void>();
  readonly #runtime: Runtime;

  /** `pollInterval`: the store's `ackPollInterval`; `key`: the Redis key, for the errors. */
  constructor(io: AckReaderIo, pollInterval: number, key: string, runtime: Runtime) {
    this.#io = io;
    this.#runtime = runtime;
    this.#pollInterval = pollInterval;
    this.#key = key;
  }

  /**
   * Reads the acknowledgements until the wait decides: at once after each one announced by pub/sub, and otherwise
   * at 1, 2, 4 ms, then every `ackPollInterval` (an announcement can be missed; a dead instance's lease runs out).
   * Each answer's record is taken into `history` as any read's is (judged against the newest record seen when the
   * read was sent): a rotation that superseded this one is then the newest record this instance has seen, and a
   * Redis that goes back past it is a rollback, never a record to write forward.
   */
  async wait(wait: AckWait, history: Pick<History, 'newest' | 'see'>): Promise<void> {
    for (let read = 0; ; read += 1) {
      const heard = this.#heard;
      const confirmedAtSend = wait.sending();
      const sentAt = this.#runtime.now();
      const sent = history.newest;
      let answer: unknown;
      try {
        answer = await this.#io.pending(wait.id);
      } catch {
        answer = undefined;
      }
      const now = this.#runtime.now();
      const pending = pendingOf(answer);
      if (pending !== undefined) {
        history.see(pending.generation, pending.id, pending.prev, sent, pending.line);
        this.#io.seen?.(pending, sentAt);
      }
      const step =
        pending === undefined
          ? wait.unanswered(now)
          : wait.read(pending, now, this.#io.leaseUntil(), confirmedAtSend, sentAt);
      this.#drop(step.drop);
      if (step.outcome === 'resolved') {
        this.#dropLater(step.dropAt ?? []);
        return;
      }
      if (step.outcome === 'superseded') throw supersededError(this.#key);
      if (step.outcome === 'lost') throw uncertainError(this.#key, 'Redis no longer holds it (it lost writes)');
      if (step.outcome === 'uncertain') {
        throw uncertainError(this.#key, 'Redis stopped answering before every instance had confirmed it');
      }
      // Again at once when an acknowledgement was announced after this read was sent (its answer may lack it);
      // otherwise at the next poll, or at the bound if that comes first.
      const poll = Math.min(read < 3 ? 2 ** read : Infinity, this.#pollInterval);
      if (this.#heard === heard)
        await this.#pause(now < wait.bound ? Math.min(poll, Math.ceil(wait.bound - now)) : poll);
    }
  }

  /** An acknowledgement of the record being saved, announced by pub/sub: wakes the save waiting for it. */
  heard(): void {
    this.#heard += 1;
    this.#wake?.();
  }

  /** Cancels the housekeeping still to come (the store stops watching). */
  cancelDrops(): void {
    for (const cancel of this.#dropTimers) cancel();
    this.#dropTimers.clear();
  }

  /** Waits `ms`, or less when an acknowledgement is heard. */
  #pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const cancel = this.#runtime.timer(ms, () => wake());
      const wake = (): void => {
        cancel();
        this.#wake = undefined;
        resolve();
      };
      this.#wake = wake;
    });
  }

  #drop(entries: ReadonlyArray<readonly [instance: string, seq: number]>): void {
    for (const [instance, seq] of entries) this.#io.drop(instance, seq);
  }

  /**
   * The same, once their time has come: one timer, at the latest of them, for all, so that no entry goes before its
   * own lease may be over. A second layer under DROP, which removes an entry only if it was not renewed since.
   */
  #dropLater(entries: ReadonlyArray<readonly [instance: string, seq: number, at: number]>): void {
    if (entries.length === 0) return;
    const at = Math.max(...entries.map(([, , time]) => time));
    const cancel = this.#runtime.timer(Math.max(0, at - this.#runtime.now()) + 1, () => {
      this.#dropTimers.delete(cancel);
      this.#drop(entries.map(([instance, seq]) => [instance, seq] as const));
    });
    this.#dropTimers.add(cancel);
  }
}

// What a lease (lease.ts) takes in besides Redis's answers, and what it asks its driver to do: the vocabulary the
// driver (follower.ts, store.ts) and the lease share.
import type { Line } from './line.js';
import type { Observed } from './reply.js';

/** The answer of one renewal (the CONFIRM script). */
export interface ConfirmReply extends Observed {
  /** 'ok': the entry was renewed for the key the instance holds (or the one it is saving); 'stale': it was not. */
  readonly status: 'ok' | 'stale';
}

/**
 * The persistent condition an instance is in, reported once per change:
 * - `ok`: renewing normally;
 * - `unavailable`: Redis does not answer;
 * - `missing`: the record is gone (an empty restart) and this instance cannot write it forward;
 * - `rollback`: Redis holds an older record than one already seen (an older snapshot, a lagging replica).
 */
export type Condition = 'ok' | 'unavailable' | 'missing' | 'rollback';

/** What the driver must do after a renewal's answer. */
export interface LeaseStep {
  /** Trust tokens until this monotonic time (only ever set for the key Redis confirmed). */
  readonly trustUntil?: number;
  /** Another record is current: the authority should reload (asked once per record seen). */
  readonly reload?: boolean;
  /** Write the held record forward over a rolled-back one: compare-and-set from `expected` to `generation`. */
  readonly writeForward?: Overwrite;
  /**
   * Replace a rolled-back record that this instance cannot safely write forward with the rollback marker, which
   * holds no key (compare-and-set from `expected` to `generation`): every instance then refuses every token,
   * including one that never saw the newer record, until an operator rotates.
   */
  readonly marker?: Overwrite;
  /** The condition changed to this one: report it (once). */
  readonly report?: Condition;
}

/**
 * A compare-and-set over the record Redis holds (`expected`, `expectedId`; '' when missing) to `generation`, of a
 * value that supersedes `line`.
 */
export interface Overwrite {
  readonly expected: number;
  readonly expectedId: string;
  readonly generation: number;
  readonly line: Line;
}

/** One renewal, besides its answer (see `Lease.renewed`). */
export interface Renewal {
  /** The renewal number sent with it. */
  readonly seq: number;
  /** When it was sent (monotonic, read before sending). */
  readonly sentAt: number;
  /** When its answer was taken in (monotonic). */
  readonly now: number;
  /** The key the instance's authority held when it was sent. */
  readonly heldId: string;
  /** This instance holds the newest record's key (its authority's current key) and the record itself. */
  readonly canWriteForward: boolean;
  /**
   * Whether a renewal on the record being saved extends the trust in `heldId` (see `History.mayRenewWhileSaving`).
   * @default true
   */
  readonly renewHeld?: boolean;
}

// Deliberately broken variants of the protocol: the simulator must catch each one.
import { AckWait } from '../../src/stores/redis/acks.js';
import { Lease, type Seen } from '../../src/stores/redis/lease.js';
import type { Observed } from '../../src/stores/redis/reply.js';
import { REAL, type Variant } from './world.js';

/** Trusts the instance table whatever happened to Redis: after an empty restart or a failover it is incomplete. */
class TrustingTable extends AckWait {
  protected override tableComplete(_reply: Observed, _now: number): boolean {
    return true;
  }
}

export const TRUSTS_TABLE_AFTER_RESTART: Variant = { ...REAL, ackWait: TrustingTable };

/**
 * Judges a renewal's answer against the highest record seen when it is taken in, not when the renewal was sent: an
 * answer Redis gave just before the instance's own save, taken in after the save's, looks like a rollback.
 */
class PresentJudge extends Lease {
  protected override sentHighest(_seq: number): Seen {
    return this.highest;
  }
}

export const JUDGES_RENEWAL_BY_PRESENT: Variant = { ...REAL, lease: PresentJudge };

/**
 * Removes a table entry that has not acknowledged as soon as it is seen, not once the lease behind it is over: an
 * instance cut off since just before the save still trusts the old key, and the rotation resolves without it.
 */
class EagerDrop extends AckWait {
  override read(...args: Parameters<AckWait['read']>): ReturnType<AckWait['read']> {
    const [reply] = args;
    const step = super.read(...args);
    return { ...step, drop: reply.waiting.map(([instance, seq]) => [instance, seq] as const) };
  }
}

export const DROPS_ENTRIES_AT_SIGHT: Variant = { ...REAL, ackWait: EagerDrop };

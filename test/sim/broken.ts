// Deliberately broken variants of the protocol: the simulator must catch each one.
import { AckWait } from '../../src/stores/redis/acks.js';
import { Lease, type Seen } from '../../src/stores/redis/lease.js';
import type { Observed } from '../../src/stores/redis/replies.js';
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

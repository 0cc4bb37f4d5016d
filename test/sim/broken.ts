// Deliberately broken variants of the protocol: the simulator must catch each one.
import { AckWait } from '../../src/stores/redis/acks.js';
import type { Observed } from '../../src/stores/redis/replies.js';
import { REAL, type Variant } from './world.js';

/** Trusts the instance table whatever happened to Redis: after an empty restart or a failover it is incomplete. */
class TrustingTable extends AckWait {
  protected override tableComplete(_reply: Observed, _now: number): boolean {
    return true;
  }
}

export const TRUSTS_TABLE_AFTER_RESTART: Variant = { ...REAL, ackWait: TrustingTable };

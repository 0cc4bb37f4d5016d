// One instance's lease, and the history and the era it judges against, side by side as the store holds them: for
// the tests that drive the protocol's parts without a store.
import { Era } from '../src/era.js';
import { History } from '../src/history.js';
import { Lease, type LeaseOptions } from '../src/lease.js';

export interface Instance {
  readonly lease: Lease;
  readonly history: History;
  readonly era: Era;
}

export function instance(options: LeaseOptions): Instance {
  const [era, history] = [new Era(options.leaseMs, options.driftMargin), new History()];
  return { lease: new Lease(options, { era, history }), history, era };
}

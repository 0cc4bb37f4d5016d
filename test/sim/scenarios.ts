// Focused scenarios: fault combinations that the swarm draws too rarely on its own, each added to a share of the
// plans. Each scenario draws from a stream of its own (its salt), so that adding one changes no other scenario's
// faults and nothing of the plans that do not draw it.
import type { Fault } from './plan.js';
import { Prng } from './prng.js';

/** What a scenario may read of the plan it joins. */
export interface Shape {
  readonly instances: number;
  readonly replicas: number;
}

export interface Scenario {
  /** What it sets up, for the reader of a trace. */
  readonly name: string;
  /** Its stream: `seed ^ salt`. */
  readonly salt: number;
  /** The share of the plans that draw it. */
  readonly share: number;
  readonly faults: (rng: Prng, shape: Shape) => readonly Fault[];
}

/**
 * A save held on its way to Redis (a partition that holds what the rotating instance sends) for most of a command
 * timeout, while another instance renews once more just before the save runs and is cut off right after (a pause
 * that ends then sends its renewal at once; what it sends afterwards is lost): that renewal's lease ends well after
 * a bound counted from when the save was sent rather than from its answer (saved-at-before-send).
 */
function savedAtBeforeSend(rng: Prng, { instances }: Shape): Fault[] {
  if (instances < 2) return [];
  // Once every instance has opened (the one that created the secret waits about a lease for its table), and early
  // enough that the rotation's bound passes before the faults end.
  const at = rng.int(400, 460);
  const rotating = rng.int(0, instances - 1);
  const silent = (rotating + rng.int(1, instances - 1)) % instances;
  // Past a renewal interval, and within the command timeout (the save's answer must come back in time).
  const hold = rng.int(80, 92);
  // The silent instance's renewal timer fires during its pause: the renewal goes out as the pause ends.
  const resume = at + hold - rng.int(3, 6);
  return [
    { at, kind: 'partition', instance: rotating, length: hold, drop: false, way: 'out' },
    { at: at + rng.int(0, 2), kind: 'rotate', instance: rotating },
    { at: resume - 75, kind: 'pause', instance: silent, length: 75 },
    { at: resume + 1, kind: 'partition', instance: silent, length: rng.int(300, 450), drop: true, way: 'out' },
  ];
}

export const SCENARIOS: readonly Scenario[] = [
  { name: 'saved-at-before-send', salt: 0x5a7e5d, share: 0.08, faults: savedAtBeforeSend },
];

/** The faults of every scenario that the plan of `seed` draws. */
export function scenarioFaults(seed: number, shape: Shape): Fault[] {
  const faults: Fault[] = [];
  for (const scenario of SCENARIOS) {
    const rng = new Prng(seed ^ scenario.salt);
    if (rng.chance(scenario.share)) faults.push(...scenario.faults(rng, shape));
  }
  return faults;
}

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
 * An instance whose era began on a Redis without an instance table (its `open()` read the secret before any
 * renewal had created one) is cut off before its first renewal is answered; a rotation elsewhere resolves without
 * it; Redis restarts from a dump taken before that rotation, which holds the older record and a table; the
 * instances that know the newer record are cut off around the restart, and the first one heals before them. Its
 * first answer comes from another server than its `open()` read: it must sit out the quarantine like any other.
 */
function eraFirstWithoutRunId(rng: Prng, { instances }: Shape): Fault[] {
  if (instances < 2) return [];
  // Not instance 0: it creates the secret, and its open() waits for a lease, past any table.
  const target = rng.int(1, instances - 1);
  const others = Array.from({ length: instances }, (_, index) => index).filter((index) => index !== target);
  // Another opener rotates early; with two instances, the creator does, once it has opened.
  const rotator = instances > 2 ? rng.pick(others.filter((index) => index !== 0)) : 0;
  const rotateAt = rotator === 0 ? rng.int(400, 440) : rng.int(60, 250);
  // Past the rotation's bound (a lease and the drift margin after its save): it has resolved.
  const restartAt = rotateAt + rng.int(350, 420);
  // A dump (one every 20 ms from 10 ms) from before the rotation, and from after 50 ms, when a table stands.
  const lastDump = 10 + 20 * Math.floor((restartAt - 10) / 20);
  const age = Math.min(
    Math.floor((lastDump - rotateAt) / 20) + 1 + rng.int(0, 1),
    Math.floor((lastDump - 50) / 20) + 1,
  );
  const heal = restartAt + rng.int(5, 40);
  const cut = rng.int(25, 55);
  const faults: Fault[] = [
    { at: cut, kind: 'partition', instance: target, length: heal - cut, drop: true, way: 'both' },
    { at: rotateAt, kind: 'rotate', instance: rotator },
    { at: restartAt, kind: 'restart-dump', age },
  ];
  for (const other of others) {
    const length = rng.int(80, 250);
    faults.push({
      at: restartAt - rng.int(0, 10),
      kind: 'partition',
      instance: other,
      length,
      drop: true,
      way: 'both',
    });
  }
  return faults;
}

export const SCENARIOS: readonly Scenario[] = [
  { name: 'era-first-without-run-id', salt: 0x5a17e4, share: 0.05, faults: eraFirstWithoutRunId },
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

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

export const SCENARIOS: readonly Scenario[] = [];

/** The faults of every scenario that the plan of `seed` draws. */
export function scenarioFaults(seed: number, shape: Shape): Fault[] {
  const faults: Fault[] = [];
  for (const scenario of SCENARIOS) {
    const rng = new Prng(seed ^ scenario.salt);
    if (rng.chance(scenario.share)) faults.push(...scenario.faults(rng, shape));
  }
  return faults;
}

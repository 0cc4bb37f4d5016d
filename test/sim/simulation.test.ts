// 20,000 seeded schedules of the Redis store's protocol under every fault the simulator knows: no invariant broken.
// A failure names its seed and a minimal trace; `npm run simulate -- --seed N` replays it.
import { describe, expect, it } from 'vitest';
import { explore } from './run.js';
import { planFor, simulate } from './world.js';

const SCHEDULES = 20_000;

describe('the Redis protocol under deterministic simulation', () => {
  it(`holds every invariant over ${SCHEDULES} schedules`, () => {
    const result = explore(1, SCHEDULES);
    if (result.failure !== undefined) console.error(result.failure.report);
    expect(result.failure?.seed).toBeUndefined();
    expect(result.schedules).toBe(SCHEDULES);
    // Every schedule did something: thousands of events on average, not an empty loop.
    expect(result.events).toBeGreaterThan(SCHEDULES * 100);
  }, 240_000);

  it('seed 88108: an instance whose first renewal was lost, then Redis back from an older dump, never trusts the revoked key', () => {
    // The instance read its first record from the Redis that was later restored: its first answered renewal finds
    // another Redis and quarantines, instead of starting its era there on the revoked record.
    const seed = 88108;
    const result = simulate(seed, planFor(seed), undefined, true);
    expect(result.trace.join('\n')).toContain('restarted from a snapshot');
    expect(result.violation).toBeUndefined();
  });

  it('replays a seed exactly', () => {
    const seed = 4242;
    const first = simulate(seed, planFor(seed), undefined, true);
    const second = simulate(seed, planFor(seed), undefined, true);
    expect(second.trace).toEqual(first.trace);
    expect(first.trace.length).toBeGreaterThan(20);
    expect(
      first.outcomes.resolved + first.outcomes.conflict + first.outcomes.superseded + first.outcomes.uncertain,
    ).toBeGreaterThan(0);
  });
});

// The second half of CI's schedules (see simulation.test.ts), in a worker of its own.
import { describe, expect, it } from 'vitest';
import { explore } from './run.js';
import { CI_SCHEDULES as SCHEDULES } from './plan.js';

describe('the Redis protocol under deterministic simulation (second half)', () => {
  it(`holds every invariant over schedules ${SCHEDULES / 2 + 1} to ${SCHEDULES}`, async () => {
    const result = await explore(SCHEDULES / 2 + 1, SCHEDULES / 2);
    if (result.failure !== undefined) console.error(result.failure.report);
    expect(result.failure?.seed).toBeUndefined();
    expect(result.schedules).toBe(SCHEDULES / 2);
    expect(result.events).toBeGreaterThan((SCHEDULES / 2) * 200);
  }, 1_800_000);
});

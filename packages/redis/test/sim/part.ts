// The tier's schedules (`npm test`: seeds 1 to QUICK_SCHEDULES; `npm run test:deep`: the next ones up to
// DEEP_SCHEDULES), split in parts
// (`simulation.test.ts` and `simulation.part*.test.ts`, one part each): more parts than workers, so that a worker
// that finishes early takes the next one.
import { describe, expect, it } from 'vitest';
import { budget } from '../../../../test/support/machine.js';
import { deepOr } from '../../../../test/support/tier.js';
import { DEEP_SCHEDULES, QUICK_SCHEDULES } from './plan.js';
import { explore } from './run.js';

export const PARTS = 4;

/** The test of part `part` (1 to {@link PARTS}): its seeds, every invariant held. */
export function explorePart(part: number): void {
  const first = deepOr(QUICK_SCHEDULES + 1, 1);
  const count = (deepOr(DEEP_SCHEDULES, QUICK_SCHEDULES) - first + 1) / PARTS;
  const from = first + (part - 1) * count;
  describe(`the Redis protocol under deterministic simulation (part ${part} of ${PARTS})`, () => {
    it(
      `holds every invariant over schedules ${from} to ${from + count - 1}`,
      { timeout: budget(1_800_000) },
      async () => {
        const result = await explore(from, count);
        if (result.failure !== undefined) console.error(result.failure.report);
        expect(result.failure?.seed).toBeUndefined();
        expect(result.schedules).toBe(count);
        // Every schedule did something: hundreds of events on average, not an empty loop.
        expect(result.events).toBeGreaterThan(count * 200);
      },
    );
  });
}

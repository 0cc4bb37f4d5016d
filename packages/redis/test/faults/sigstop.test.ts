// Redis SIGSTOPped around rotate() for longer than a lease, 20 trials in the deep tier (4 in `npm test`): every
// outcome true to its code once the dust settles.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { budget } from '../../../../test/support/machine.js';
import { until } from '../../../../test/support/poll.js';
import { SKIP_REASON } from '../../../../test/support/redis-server.js';
import { deepOr } from '../../../../test/support/tier.js';
import { FAULT_MS, PreconditionMissed, outcomeOf, trials } from './trials.js';

const TRIALS = deepOr(20, 4);

/** Whether the process is stopped now, from its state letter in /proc (Linux); undefined elsewhere. */
function stopped(pid: number | undefined): boolean | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'T';
  } catch {
    return undefined;
  }
}

describe.skipIf(SKIP_REASON !== undefined)('rotate() while Redis is stopped (SIGSTOP for longer than a lease)', () => {
  it(
    `${TRIALS} trials: each outcome matches the final state`,
    async () => {
      const { tally, completed, retries } = await trials(TRIALS, 4, 10, async ({ redis, members }) => {
        const [a] = members;
        const oldKeyId = a?.authority.keyId ?? '';
        redis.process.kill('SIGSTOP');
        // eslint-disable-next-line launcher-auth-tests/no-wall-clock-wait -- how long the fault lasts is the scenario
        const woken = new Promise((resolve) => setTimeout(resolve, FAULT_MS)).then(() => redis.process.kill('SIGCONT'));
        // The fault took hold before rotate() began, or this trial tests nothing.
        if (!(await until(() => stopped(redis.process.pid) !== false, 1000, 1))) {
          await woken;
          throw new PreconditionMissed('redis-server was not stopped yet');
        }
        const result = await outcomeOf(a?.authority.rotate() ?? Promise.reject(new Error('no instance')));
        await woken;
        return { ...result, oldKeyId };
      });
      console.log('SIGSTOP outcomes:', JSON.stringify(tally), `retries: ${retries}`);
      // At most 10 trials may miss their precondition: more, and fewer than TRIALS complete.
      expect(completed).toBe(TRIALS);
    },
    budget(140_000),
  );
});

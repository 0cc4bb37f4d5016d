// CLIENT PAUSE for longer than a lease at the moment of rotate(), 20 trials in the deep tier (4 in `npm test`):
// every outcome true to its code once the dust settles.
import { describe, expect, it } from 'vitest';
import { createClient } from 'redis';
import { budget } from '../../../../test/support/machine.js';
import { SKIP_REASON } from '../../../../test/support/redis-server.js';
import { deepOr } from '../../../../test/support/tier.js';
import { FAULT_MS, PreconditionMissed, outcomeOf, trials } from './trials.js';

const TRIALS = deepOr(20, 4);

describe.skipIf(SKIP_REASON !== undefined)('rotate() while Redis is paused (CLIENT PAUSE)', () => {
  it(
    `${TRIALS} trials: each outcome matches the final state`,
    async () => {
      const { tally, completed, retries } = await trials(TRIALS, 4, 10, async ({ redis, members }) => {
        const [a] = members;
        const oldKeyId = a?.authority.keyId ?? '';
        const probe = createClient({ url: redis.url });
        probe.on('error', () => undefined);
        try {
          await probe.connect();
          // Redis said OK: the pause holds from here on, for FAULT_MS.
          if ((await probe.sendCommand<string>(['CLIENT', 'PAUSE', String(FAULT_MS)])) !== 'OK')
            throw new PreconditionMissed('CLIENT PAUSE refused');
          const result = await outcomeOf(a?.authority.rotate() ?? Promise.reject(new Error('no instance')));
          // A command of this client's own is answered only once the pause is over: then the dust may settle.
          await probe.ping();
          return { ...result, oldKeyId };
        } finally {
          probe.destroy();
        }
      });
      console.log('CLIENT PAUSE outcomes:', JSON.stringify(tally), `retries: ${retries}`);
      // At most 10 trials may miss their precondition: more, and fewer than TRIALS complete.
      expect(completed).toBe(TRIALS);
    },
    budget(140_000),
  );
});

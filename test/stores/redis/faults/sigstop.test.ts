// Redis SIGSTOPped around rotate() for 3 s, 20 trials: every outcome true to its code once the dust settles.
import { describe, expect, it } from 'vitest';
import { SKIP_REASON } from '../../../support/redis-server.js';
import { outcomeOf, trials } from './trials.js';

describe.skipIf(SKIP_REASON !== undefined)('rotate() while Redis is stopped (SIGSTOP for 3 s)', () => {
  it('20 trials: each outcome matches the final state', async () => {
    const tally = await trials(20, 4, async ({ redis, members }) => {
      const [a] = members;
      const oldKeyId = a?.authority.keyId ?? '';
      redis.process.kill('SIGSTOP');
      const woken = new Promise((resolve) => setTimeout(resolve, 3000)).then(() => redis.process.kill('SIGCONT'));
      const result = await outcomeOf(a?.authority.rotate() ?? Promise.reject(new Error('no instance')));
      await woken;
      return { ...result, oldKeyId };
    });
    console.log('SIGSTOP 3 s outcomes:', JSON.stringify(tally));
    expect(Object.values(tally).reduce((sum, n) => sum + n, 0)).toBe(20);
  }, 140_000);
});

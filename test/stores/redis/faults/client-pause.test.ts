// CLIENT PAUSE 3000 at the moment of rotate(), 20 trials: every outcome true to its code once the dust settles.
import { describe, expect, it } from 'vitest';
import { createClient } from 'redis';
import { SKIP_REASON } from '../../../support/redis-server.js';
import { outcomeOf, trials } from './trials.js';

describe.skipIf(SKIP_REASON !== undefined)('rotate() while Redis is paused (CLIENT PAUSE 3000)', () => {
  it('20 trials: each outcome matches the final state', async () => {
    const tally = await trials(20, 4, async ({ redis, members }) => {
      const [a] = members;
      const oldKeyId = a?.authority.keyId ?? '';
      const probe = createClient({ url: redis.url });
      probe.on('error', () => undefined);
      await probe.connect();
      await probe.sendCommand(['CLIENT', 'PAUSE', '3000']);
      probe.destroy();
      const result = await outcomeOf(a?.authority.rotate() ?? Promise.reject(new Error('no instance')));
      await new Promise((resolve) => setTimeout(resolve, 3000));
      return { ...result, oldKeyId };
    });
    console.log('CLIENT PAUSE 3000 outcomes:', JSON.stringify(tally));
    expect(Object.values(tally).reduce((sum, n) => sum + n, 0)).toBe(20);
  }, 140_000);
});

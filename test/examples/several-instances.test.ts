// examples/several-instances.ts and the demo's --redis against a real redis-server: a regenerate on one instance,
// the old token refused on the other.
import { describe, expect, it, onTestFinished } from 'vitest';
import { startDemo } from '../../examples/demo/main.ts';
import { main } from '../../examples/several-instances.ts';
import { SKIP_REASON, sharedRedis } from '../stores/redis/server.js';

describe.skipIf(SKIP_REASON !== undefined)('examples/several-instances.ts', () => {
  const shared = sharedRedis();

  it('instance B accepts the token before, refuses it after the regenerate on A, accepts the new one', async () => {
    expect(await main(shared.server.url)).toEqual([200, 401, 200]);
  });
});

describe.skipIf(SKIP_REASON !== undefined)('the demo with --redis', () => {
  const shared = sharedRedis();

  it('two demos on one Redis: a regenerate on one refuses the old token on the other', async () => {
    const redisUrl = shared.server.url;
    const first = await startDemo({ apiPort: 0, settingsPort: 0, redisUrl });
    onTestFinished(() => first.close());
    const second = await startDemo({ apiPort: 0, settingsPort: 0, redisUrl });
    onTestFinished(() => second.close());
    const old = first.authority.issue();
    expect((await second.authority.verify(old)).ok).toBe(true);
    const fresh = await first.authority.rotate();
    expect((await second.authority.verify(old)).ok).toBe(false);
    expect((await second.authority.verify(fresh)).ok).toBe(true);
    const answer = await fetch(`${second.apiUrl}/apps`, { headers: { authorization: `Bearer ${old}` } });
    expect(answer.status).toBe(401);
    expect((await answer.arrayBuffer()).byteLength).toBe(0);
  });
});

// examples/several-instances.ts and the demo's --redis against a real redis-server: a regenerate on one instance,
// the old token refused on the other.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startDemo } from '../../../examples/demo/main.ts';
import { main } from '../examples/several-instances.ts';
import { SKIP_REASON, freePort, sharedRedis } from '../../../test/support/redis-server.js';

describe.skipIf(SKIP_REASON !== undefined)('examples/several-instances.ts', () => {
  const shared = sharedRedis();

  it('instance B accepts the token before, refuses it after the regenerate on A, accepts the new one', async () => {
    expect(await main(shared.server.url)).toEqual([200, 401, 200]);
  });
});

describe('examples/several-instances.ts without Redis', () => {
  it('says at once that Redis is not running there, naming where it looked', async () => {
    const port = await freePort();
    await expect(main(`redis://user:password@127.0.0.1:${port}`)).rejects.toThrow(
      new RegExp(
        `^Cannot reach Redis \\(connect ECONNREFUSED [^)]+\\): is Redis running at 127\\.0\\.0\\.1:${port}\\?$`,
      ),
    );
  });
});

describe.skipIf(SKIP_REASON !== undefined)('the demo with --redis', () => {
  const shared = sharedRedis();

  it('two demos on one Redis: a regenerate on one refuses the old token on the other', async () => {
    const redisUrl = shared.server.url;
    // The demo keeps its settings page's address in its data folder, even when the secret is in Redis.
    const dataDir = await mkdtemp(join(tmpdir(), 'launcher-auth-demo-redis-'));
    onTestFinished(() => rm(dataDir, { recursive: true, force: true }));
    const first = await startDemo({ apiPort: 0, settingsPort: 0, redisUrl, dataDir: join(dataDir, 'first') });
    onTestFinished(() => first.close());
    const second = await startDemo({ apiPort: 0, settingsPort: 0, redisUrl, dataDir: join(dataDir, 'second') });
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

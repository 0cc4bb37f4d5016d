// Two instances rotating at once while a third is cut off by a proxy, 20 trials: a rotate() that resolved returned a
// token that every instance still trusting accepted at that moment; the other one says it did not win.
import { describe, expect, it, onTestFinished } from 'vitest';
import { SKIP_REASON, startRedis } from '../../../support/redis-server.js';
import { eventually, member } from './instances.js';
import { outcomeOf } from './trials.js';
import { startProxy } from './proxy.js';

describe.skipIf(SKIP_REASON !== undefined)('two rotations at once with an instance cut off', () => {
  it('20 trials: no rotate() resolves with a token an instance refuses while trusting', async () => {
    const tally: Record<string, number> = {};
    let resolvedRefused = 0;
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < 20) {
        const index = (next += 1);
        const redis = await startRedis();
        const proxy = await startProxy(redis.port);
        onTestFinished(async () => {
          await proxy.close();
          await redis.kill();
        });
        const key = `overlap:${index}`;
        const a = await member(redis.port, key);
        const b = await member(redis.port, key);
        const c = await member(proxy.port, key);
        const old = a.authority.issue();
        proxy.cut();
        const check = async (rotation: Promise<string>): Promise<void> => {
          const { outcome, token } = await outcomeOf(rotation);
          tally[outcome] = (tally[outcome] ?? 0) + 1;
          if (token === undefined) return;
          // At the moment it resolved: accepted by both instances that can reach Redis, the old token by none.
          for (const { authority } of [a, b]) if (!(await authority.verify(token)).ok) resolvedRefused += 1;
          for (const { authority } of [a, b, c]) expect((await authority.verify(old)).ok).toBe(false);
        };
        await Promise.all([check(a.authority.rotate()), check(b.authority.rotate())]);
        proxy.heal();
        expect(await eventually(() => a.authority.keyId === b.authority.keyId && b.authority.keyId === c.authority.keyId, 8000)).toBe(true);
        await proxy.close();
        await redis.kill();
      }
    };
    await Promise.all([worker(), worker(), worker(), worker()]);
    console.log('two rotations with one instance cut off:', JSON.stringify(tally), `resolved tokens refused: ${resolvedRefused}`);
    expect(resolvedRefused).toBe(0);
    expect(Object.values(tally).reduce((sum, n) => sum + n, 0)).toBe(40);
    expect(Object.keys(tally).every((code) => ['resolved', 'ERR_SAVE_CONFLICT', 'ERR_ROTATION_SUPERSEDED', 'ERR_SAVE_UNCERTAIN'].includes(code))).toBe(true);
  }, 140_000);
});

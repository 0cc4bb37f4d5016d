// Redis restarted without persistence while one instance is cut off by a proxy: the next rotate() cannot prove the
// instance table complete, waits out the lease, and no instance accepts the pre-restart token after it resolved.
// Then Redis comes back empty with every instance's trust gone: no busy loop, one report, recovery by rotate().
import { describe, expect, it } from 'vitest';
import { createClient } from 'redis';
import { SKIP_REASON, startRedis } from '../../../support/redis-server.js';
import { acceptances, eventually, member } from './instances.js';
import { startProxy } from './proxy.js';

/** Commands the clients sent (a script counts once, not once per call it makes inside). */
async function commandsSent(port: number): Promise<number> {
  const { createClient } = await import('redis');
  const probe = createClient({ url: `redis://127.0.0.1:${port}` });
  probe.on('error', () => undefined);
  await probe.connect();
  const info = await probe.info('commandstats');
  probe.destroy();
  let sent = 0;
  for (const [, name, calls] of info.matchAll(/^cmdstat_([a-z|]+):calls=(\d+)/gm)) {
    // Commands run inside scripts are counted under their own names too: count what clients send.
    if (name === 'eval' || name === 'evalsha' || name === 'publish' || name === 'subscribe' || name === 'ping') sent += Number(calls);
  }
  return sent;
}

describe.skipIf(SKIP_REASON !== undefined)('RedisSecretStore when Redis restarts empty', () => {
  it('a cut-off instance and a restart: 0 pre-restart tokens accepted after rotate() resolved', async () => {
    let redis = await startRedis();
    const proxy = await startProxy(redis.port);
    try {
      const key = 'restart:cut';
      const a = await member(redis.port, key);
      const b = await member(redis.port, key);
      const c = await member(proxy.port, key);
      const old = a.authority.issue();
      expect((await c.authority.verify(old)).ok).toBe(true);
      proxy.cut();
      await redis.kill();
      redis = await startRedis({ port: redis.port });
      // The instances that still trust their key write it back; once the quarantine after the restart is over, they
      // trust it again; then a rotation.
      const probe = createClient({ url: `redis://127.0.0.1:${redis.port}` });
      probe.on('error', () => undefined);
      await probe.connect();
      expect(await eventually(async () => (await probe.get(key)) !== null)).toBe(true);
      probe.destroy();
      await new Promise((resolve) => setTimeout(resolve, 1300));
      expect(await eventually(async () => (await a.authority.verify(old)).ok && (await b.authority.verify(old)).ok)).toBe(true);
      expect(a.errors).toEqual(['ERR_STORE_ROLLBACK']);
      const started = performance.now();
      const fresh = await a.authority.rotate();
      const took = performance.now() - started;
      const after = await acceptances([a, b, c], old, 1500);
      console.log(`empty restart, one instance cut off: rotate() took ${took.toFixed(0)} ms; old token accepted ${after.accepted} of ${after.checks} checks after it resolved`);
      expect(after.accepted).toBe(0);
      expect(after.checks).toBeGreaterThan(30);
      expect((await b.authority.verify(fresh)).ok).toBe(true);
      proxy.heal();
      expect(await eventually(async () => (await c.authority.verify(fresh)).ok)).toBe(true);
    } finally {
      await proxy.close();
      await redis.kill();
    }
  }, 30_000);

  it('Redis back empty after every lease ran out: no busy loop, one report each, every token refused until rotate()', async () => {
    let redis = await startRedis();
    try {
      const key = 'restart:late';
      const members = [await member(redis.port, key), await member(redis.port, key), await member(redis.port, key)];
      const [a] = members as [Awaited<ReturnType<typeof member>>];
      const old = a.authority.issue();
      await redis.kill();
      // Longer than the lease: nobody trusts the key any more, so nobody may write it back.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      redis = await startRedis({ port: redis.port });
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const before = await commandsSent(redis.port);
      const started = performance.now();
      await new Promise((resolve) => setTimeout(resolve, 3000));
      const perSecond = ((await commandsSent(redis.port)) - before) / ((performance.now() - started) / 1000);
      console.log(`Redis back empty, trust gone: ${perSecond.toFixed(1)} commands/s for 3 instances`);
      // A few per instance per second at most.
      expect(perSecond).toBeLessThan(10);
      for (const { authority } of members) expect((await authority.verify(old)).ok).toBe(false);
      for (const { errors } of members) expect(errors.filter((code) => code === 'ERR_STORE_ROLLBACK').length).toBeLessThanOrEqual(1);
      expect(members.some(({ errors }) => errors.includes('ERR_STORE_ROLLBACK'))).toBe(true);
      // The operator regenerates: service resumes everywhere with the new token.
      const fresh = await a.authority.rotate();
      for (const { authority } of members) expect(await eventually(async () => (await authority.verify(fresh)).ok)).toBe(true);
      expect((await a.authority.verify(old)).ok).toBe(false);
    } finally {
      await redis.kill();
    }
  }, 30_000);
});

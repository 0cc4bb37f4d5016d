// An instance cut off past its lease while a rotation went on: the rotating instance removed its entry from the
// instance table (its lease was over). Nothing was lost (same server, same table), so once back the instance takes
// the new key and trusts it at its next renewals, without sitting out a quarantine of `leaseMs + driftMargin`.
import { randomBytes } from 'node:crypto';
import { describe, expect, it, onTestFinished } from 'vitest';
import { budget } from '../../../../test/support/machine.js';
import { until } from '../../../../test/support/poll.js';
import { startProxy } from '../../../../test/support/redis-proxy.js';
import { SKIP_REASON, connectedClient, startRedis } from '../../../../test/support/redis-server.js';
import { acceptingNow, member, TIMING } from './instances.js';

describe.skipIf(SKIP_REASON !== undefined)('an instance whose table entry was removed while it was cut off', () => {
  it(
    'takes the new key and trusts it within three renewals of being back: no quarantine',
    async () => {
      const redis = await startRedis();
      const proxy = await startProxy(redis.port);
      const client = await connectedClient(`redis://127.0.0.1:${redis.port}`);
      onTestFinished(async () => {
        client.destroy();
        await proxy.close();
        await redis.kill();
      });
      const key = `dropped:${randomBytes(6).toString('hex')}`;
      const table = `{${key}}:instances`;
      const a = await member(redis.port, key);
      const c = await member(proxy.port, key);
      expect(await until(() => acceptingNow([a, c], a.authority.issue()) === 2)).toBe(true);
      const entries = async (): Promise<Record<string, string>> => await client.hGetAll(table);
      const names = (table: Record<string, string>): string[] => Object.keys(table).filter((name) => name !== '@epoch');
      const before = names(await entries());
      expect(before).toHaveLength(2);

      proxy.cut();
      // Resolves once c's lease is over, and removes c's entry then or soon after.
      await a.authority.rotate();
      expect(await until(async () => names(await entries()).length === 1, 10_000)).toBe(true);
      const [kept] = names(await entries());
      const removed = before.find((name) => name !== kept) ?? '';
      expect(acceptingNow([c], a.authority.issue())).toBe(0);

      // Back over new connections (the old ones were reset while it was cut off): the announcement of the rotation
      // is lost with them, so the first answer c takes in is a renewal that finds another record, and no entry.
      proxy.moveTo(redis.port);
      proxy.heal();
      // c's entry comes back with its next renewal; from then on, each renewal bumps its number.
      const seqOf = async (): Promise<number> => Number((await entries())[removed]?.split(':', 1)[0] ?? Number.NaN);
      expect(await until(async () => !Number.isNaN(await seqOf()), 10_000)).toBe(true);
      const back = await seqOf();
      // A quarantine would last `leaseMs + driftMargin`: more than five renewals.
      expect(TIMING.leaseMs + TIMING.driftMargin).toBeGreaterThan(5 * TIMING.renewInterval);
      expect(
        await until(async () => acceptingNow([c], a.authority.issue()) === 1 || (await seqOf()) >= back + 3, 10_000),
      ).toBe(true);
      expect(c.authority.keyId).toBe(a.authority.keyId);
      expect(acceptingNow([c], a.authority.issue())).toBe(1);
      expect(c.errors).toEqual([]);
    },
    budget(60_000),
  );
});

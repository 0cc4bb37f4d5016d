// Redis's wall clock stepped (an NTP step on the Redis host) on a real redis-server, through Debian's libfaketime:
// forward by more than a lease with an instance cut off, and back an hour with a killed instance in the table.
// Expiries are measured on the instances' monotonic clocks, so neither step may change what rotate() waits for.
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { connectedClient, missingTool, startRedis, type RedisServer } from '../../../../test/support/redis-server.js';
import { budget } from '../../../../test/support/machine.js';
import { until } from '../../../../test/support/poll.js';
import { startInstance } from '../processes.js';
import { RENEWALS_PAST_A_LEASE, TIMING, acceptances, member } from './instances.js';
import { renewed } from '../topology.js';
import { startProxy } from '../../../../test/support/redis-proxy.js';

const MISSING = missingTool('faketime', 'faketime');

/** Where Debian (any architecture) or a source build put the preload library; the faketime command needs it too. */
function libfaketime(): string {
  const dirs = ['/usr/local/lib', ...readdirSync('/usr/lib').map((name) => join('/usr/lib', name))];
  const found = dirs.map((dir) => join(dir, 'faketime', 'libfaketime.so.1')).find((path) => existsSync(path));
  if (found === undefined)
    throw new Error('faketime is installed but libfaketime.so.1 was not found under /usr/lib/*/faketime');
  return found;
}

interface SteppedRedis {
  readonly redis: RedisServer;
  /** A client of it, for the tests' own reads. */
  readonly probe: Awaited<ReturnType<typeof connectedClient>>;
  /**
   * Sets Redis's wall clock `offset` from the true time (libfaketime's syntax: "+1h", "-1h") and returns how far
   * Redis's `TIME` moved across the change, in seconds: the proof that the step took effect.
   */
  step(offset: string): Promise<number>;
  close(): Promise<void>;
}

async function startSteppedRedis(): Promise<SteppedRedis> {
  const dir = await mkdtemp(join(tmpdir(), 'launcher-auth-clock-'));
  const file = join(dir, 'faketimerc');
  // Replaced whole by a rename: with FAKETIME_NO_CACHE, libfaketime reads the file at every clock call and must
  // never see it half written.
  const setOffset = async (offset: string): Promise<void> => {
    await writeFile(`${file}.next`, `${offset}\n`);
    await rename(`${file}.next`, file);
  };
  await setOffset('+0');
  const redis = await startRedis({
    env: {
      ...process.env,
      // Debian's redis-server allocates through libjemalloc, which reads the clock while libfaketime is still
      // starting (libfaketime refuses, and redis-server dies). libc.so.6 preloaded after libfaketime puts glibc's
      // malloc ahead of jemalloc's; the clock calls still reach libfaketime first.
      LD_PRELOAD: `${libfaketime()} libc.so.6`,
      FAKETIME_TIMESTAMP_FILE: file,
      FAKETIME_NO_CACHE: '1',
      // A step of the host's time moves the wall clock only; Redis's event loop keeps its real monotonic clock.
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    },
  });
  const probe = await connectedClient(redis.url);
  const redisTime = async (): Promise<number> => {
    const [seconds, micros] = await probe.sendCommand<[string, string]>(['TIME']);
    return Number(seconds) + Number(micros) / 1e6;
  };
  return {
    redis,
    probe,
    async step(offset) {
      const before = await redisTime();
      await setOffset(offset);
      return (await redisTime()) - before;
    },
    async close() {
      probe.destroy();
      await redis.kill();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Renewals enough for an instance to know the instance table complete (longer than a lease), so that
 * acknowledgements alone may end a wait.
 */
const TABLE_KNOWN = RENEWALS_PAST_A_LEASE;

describe.skipIf(MISSING !== undefined)("RedisSecretStore when Redis's wall clock steps", () => {
  it(
    'forward by an hour while an instance is cut off: 0 old tokens accepted after rotate() resolved',
    async () => {
      const server = await startSteppedRedis();
      const proxy = await startProxy(server.redis.port);
      try {
        const key = 'clock:forward';
        const a = await member(server.redis.port, key);
        const b = await member(server.redis.port, key);
        const c = await member(proxy.port, key);
        expect(await renewed(server.probe, key, TABLE_KNOWN)).toBe(true);
        const old = a.authority.issue();
        expect((await c.authority.verify(old)).ok).toBe(true);
        proxy.cut();
        const cutAt = performance.now();
        // When the cut-off instance last accepted the old token, taken before each check began: its trust lasted at
        // least until then.
        let lastAcceptedAt = cutAt;
        let watching = true;
        const watcher = until(
          async () => {
            const at = performance.now();
            if ((await c.authority.verify(old)).ok) lastAcceptedAt = at;
            return !watching;
          },
          60_000,
          2,
        );
        const jump = await server.step('+1h');
        expect(jump).toBeGreaterThan(3599);
        expect(jump).toBeLessThan(3610);
        // The rotation has an instance to wait for: the cut-off one still trusts the old key.
        expect((await c.authority.verify(old)).ok).toBe(true);
        const started = performance.now();
        const fresh = await a.authority.rotate();
        const resolvedAt = performance.now();
        // Checked until the live instances have renewed for longer than a lease after the resolution.
        let leaseOver = false;
        const lease = renewed(server.probe, key, RENEWALS_PAST_A_LEASE).then((over) => (leaseOver = over));
        const after = await acceptances([a, b, c], [old], () => leaseOver);
        await lease;
        watching = false;
        expect(await watcher).toBe(true);
        console.log(
          `Redis's clock +1 h, one instance cut off: rotate() took ${(resolvedAt - started).toFixed(0)} ms; the cut-off ` +
            `instance last accepted the old token ${(lastAcceptedAt - cutAt).toFixed(0)} ms after the cut; old token ` +
            `accepted ${after.accepted} of ${after.checks} checks after rotate() resolved`,
        );
        expect(after.ended).toBe(true);
        expect(after.accepted).toBe(0);
        // The cut-off instance's trust ended before rotate() resolved: an order, not a duration. (That it ends within
        // a lease of its last confirmed renewal is the lease's rule, checked on its own clock by test/sim/.)
        expect(lastAcceptedAt).toBeLessThan(resolvedAt);
        expect((await b.authority.verify(fresh)).ok).toBe(true);
        proxy.heal();
        expect(await until(async () => (await c.authority.verify(fresh)).ok)).toBe(true);
      } finally {
        await proxy.close();
        await server.close();
      }
    },
    budget(20_000),
  );

  it(
    'back an hour with a killed instance in the table: rotate() does not wait out the lease over and over',
    async () => {
      const server = await startSteppedRedis();
      const key = 'clock:back';
      const killed = await startInstance(server.redis.url, key, TIMING.leaseMs);
      try {
        const a = await member(server.redis.port, key);
        const b = await member(server.redis.port, key);
        expect(await renewed(server.probe, key, TABLE_KNOWN)).toBe(true);
        // SIGKILL: its entry stays in the table, never renewed again.
        await killed.kill();
        const jump = await server.step('-1h');
        expect(jump).toBeGreaterThan(-3601);
        expect(jump).toBeLessThan(-3590);
        // Until every lease the killed instance was granted has run out: the live ones renewed for longer than a lease.
        expect(await renewed(server.probe, key, RENEWALS_PAST_A_LEASE)).toBe(true);
        const took: number[] = [];
        const entries = async (): Promise<number> =>
          Object.keys(await server.probe.hGetAll(`{${key}}:instances`)).filter((name) => name !== '@epoch').length;
        expect(await entries()).toBe(3);
        for (let rotation = 0; rotation < 5; rotation += 1) {
          const before = a.authority.issue();
          const started = performance.now();
          const fresh = await a.authority.rotate();
          took.push(performance.now() - started);
          expect((await b.authority.verify(before)).ok).toBe(false);
          expect((await b.authority.verify(fresh)).ok).toBe(true);
        }
        console.log(
          `Redis's clock -1 h, one instance killed: 5 rotate() took ${took.map((ms) => ms.toFixed(0)).join(', ')} ms`,
        );
        // A rotation waits out the lease only for an entry still in the table: the dead one is dropped, whatever
        // Redis's clock says, and the two live ones stay. Each later rotation has nobody dead to wait for.
        expect(await until(async () => (await entries()) === 2)).toBe(true);
      } finally {
        await killed.kill();
        await server.close();
      }
    },
    budget(20_000),
  );
});

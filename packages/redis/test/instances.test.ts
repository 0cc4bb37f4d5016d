// Strict revocation across instances, proven with real processes on a real redis-server: three instances, each
// node:http through withAuth on one RedisSecretStore key. Counts and outcomes only; no timed assertions.
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { RedisSecretStore } from '@launcher-auth/redis';
import { startInstance, statusWith, tokenOf, type Instance } from './processes.js';
import {
  SKIP_REASON,
  connectedClient,
  sharedRedis,
  startRedis,
  type Client,
  type RedisServer,
} from '../../../test/support/redis-server.js';
import { budget } from '../../../test/support/machine.js';
import { until } from '../../../test/support/poll.js';

const LEASE = 1000;
let keys = 0;
const uniqueKey = (): string => `instances:${process.pid}:${(keys += 1)}`;

describe.skipIf(SKIP_REASON !== undefined)('RedisSecretStore across instance processes', () => {
  const shared = sharedRedis();
  let server: RedisServer;
  let client: Client;
  beforeAll(() => {
    ({ server, client } = shared);
  });

  async function cluster(url: string, key: string, count = 3): Promise<Instance[]> {
    const started: Instance[] = [];
    onTestFinished(async () => {
      await Promise.all(started.map((instance) => instance.kill()));
    });
    // One after another: the first creates the secret, the others read it.
    for (let index = 0; index < count; index += 1) started.push(await startInstance(url, key, LEASE));
    return started;
  }

  async function currentToken(key: string): Promise<{ id: string; token: string }> {
    const record = await new RedisSecretStore({ client, key }).load();
    if (record === undefined) throw new Error('nothing stored');
    return { id: record.id, token: await tokenOf(record) };
  }

  it(
    '100 rotations on varying instances: no old token accepted after its rotate() resolved',
    async () => {
      const key = uniqueKey();
      const instances = await cluster(server.url, key);
      let acceptedAfter = 0;
      let refusedAfter = 0;
      let currentRefused = 0;
      let rotations = 0;
      for (let round = 0; round < 100; round += 1) {
        const { token: old } = await currentToken(key);
        // The current token, while all are healthy: accepted everywhere.
        for (const instance of instances) if ((await statusWith(instance.port, old)) !== 200) currentRefused += 1;
        const rotating = instances[round % 3] as Instance;
        let resolved = false;
        let stop = false;
        const stream = async (instance: Instance): Promise<void> => {
          // Bounded: stops 5 requests after the rotation resolved, or after 20,000 requests in all.
          for (let sent = 0, after = 0; sent < 20_000 && after < 5 && !stop; sent += 1) {
            const resolvedBefore = resolved;
            const status = await statusWith(instance.port, old);
            if (resolvedBefore) {
              after += 1;
              if (status === 200) acceptedAfter += 1;
              else refusedAfter += 1;
            }
          }
        };
        const streams = instances.map(stream);
        rotating.send('rotate');
        const outcome = await rotating.next(['rotated', 'failed']);
        resolved = true;
        expect(outcome.startsWith('rotated')).toBe(true);
        rotations += 1;
        await Promise.all(streams);
        stop = true;
        const { id, token } = await currentToken(key);
        expect(outcome).toBe(`rotated ${id}`);
        for (const instance of instances) if ((await statusWith(instance.port, token)) !== 200) currentRefused += 1;
      }
      expect(rotations).toBe(100);
      expect(acceptedAfter).toBe(0);
      expect(refusedAfter).toBe(100 * 3 * 5);
      expect(currentRefused).toBe(0);
    },
    budget(60_000),
  );

  it(
    'an instance frozen during a rotation: rotate() resolves, and once thawed it refuses the old token at once',
    async () => {
      const key = uniqueKey();
      const [a, b, c] = (await cluster(server.url, key)) as [Instance, Instance, Instance];
      const { token: old } = await currentToken(key);
      expect(await statusWith(c.port, old)).toBe(200);
      c.process.kill('SIGSTOP');
      onTestFinished(() => {
        c.process.kill('SIGCONT');
      });
      a.send('rotate');
      // It ends despite the frozen instance (by its lease); a wait with no end would reach next()'s deadline.
      expect((await a.next(['rotated', 'failed'])).startsWith('rotated')).toBe(true);
      expect(await statusWith(b.port, old)).toBe(401);
      c.process.kill('SIGCONT');
      // Its very first request after it wakes.
      expect(await statusWith(c.port, old)).toBe(401);
      const { token } = await currentToken(key);
      expect(await until(async () => (await statusWith(c.port, token)) === 200, 5_000, 50)).toBe(true);
      expect(await statusWith(c.port, old)).toBe(401);
    },
    budget(30_000),
  );

  it(
    'the rotating instance killed in the middle of rotate(): afterwards every instance accepts the same one key',
    async () => {
      for (const delay of [0, 1, 3, 10]) {
        const key = uniqueKey();
        const [a, b, c] = (await cluster(server.url, key)) as [Instance, Instance, Instance];
        const { token: old } = await currentToken(key);
        // A frozen peer keeps the rotation waiting, so that the kill lands inside rotate().
        c.process.kill('SIGSTOP');
        a.send('rotate');
        await a.next(['rotating']);
        // eslint-disable-next-line launcher-auth-tests/no-wall-clock-wait -- where the kill lands inside rotate() is what varies
        await new Promise((resolve) => setTimeout(resolve, delay));
        await a.kill();
        c.process.kill('SIGCONT');
        const { token: stored } = await currentToken(key);
        const candidates = [old, stored];
        // Both survivors settle on the stored key: bounded polling, then exact outcomes.
        const settled = (instance: Instance): Promise<boolean> =>
          until(async () => (await statusWith(instance.port, stored)) === 200, 5_000, 50);
        expect(await settled(b)).toBe(true);
        expect(await settled(c)).toBe(true);
        for (const instance of [b, c]) {
          const accepted = [];
          for (const token of new Set(candidates)) accepted.push((await statusWith(instance.port, token)) === 200);
          expect(accepted.filter(Boolean)).toHaveLength(1);
        }
        await b.kill();
        await c.kill();
      }
    },
    budget(60_000),
  );

  it(
    'Redis killed: everything refused after the lease; Redis back with the same data: the same token works again',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'launcher-auth-redis-'));
      onTestFinished(() => rm(dir, { recursive: true, force: true }));
      let own = await startRedis({ dir });
      onTestFinished(() => own.kill());
      const key = uniqueKey();
      const instances = await cluster(own.url, key, 2);
      const probe = await connectedClient(own.url);
      const record = await new RedisSecretStore({ client: probe, key }).load();
      if (record === undefined) throw new Error('nothing stored');
      const token = await tokenOf(record);
      await probe.sendCommand(['SAVE']);
      probe.destroy();
      for (const instance of instances) expect(await statusWith(instance.port, token)).toBe(200);

      await own.kill();
      const statuses = async (): Promise<number[]> =>
        Promise.all(instances.map((instance) => statusWith(instance.port, token)));
      expect(await until(async () => (await statuses()).every((status) => status === 401), 5_000, 50)).toBe(true);
      // Still refused a lease later, by the instances' own clocks: a listener on Redis's port hangs up on each of
      // their reconnections, which come at most every 50 ms per connection (instance.ts's reconnectStrategy; two
      // connections each, the second for pub/sub), so this many mean a lease has passed for every instance.
      let reconnections = 0;
      const hangUp = createServer((socket) => {
        reconnections += 1;
        socket.destroy();
      });
      await new Promise<void>((resolve) => hangUp.listen(own.port, '127.0.0.1', resolve));
      const leaseOfReconnections = 2 * instances.length * (Math.ceil(LEASE / 50) + 1);
      expect(await until(() => reconnections >= leaseOfReconnections, 20_000, 20)).toBe(true);
      await new Promise<void>((resolve) => hangUp.close(() => resolve()));
      for (const instance of instances) expect(await statusWith(instance.port, token)).toBe(401);

      own = await startRedis({ dir, port: own.port });
      expect(await until(async () => (await statuses()).every((status) => status === 200), 10_000, 50)).toBe(true);
    },
    budget(40_000),
  );
});

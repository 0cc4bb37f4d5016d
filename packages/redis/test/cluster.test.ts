// RedisSecretStore on a node-redis Cluster client against a real three-primary Redis Cluster on loopback: the
// conformance kit, scripts on the key's primary (WAIT and run_id included), and rotations on three instances while
// the key's slot moves to another primary and while its primary fails over to its replica.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { TokenAuthority } from 'launcher-auth';
import { RedisSecretStore } from '@launcher-auth/redis';
import { connectionOf } from '../src/connections.js';
import { authErrorOf, until } from '../../../test/support/async.js';
import { SKIP_REASON, startCluster, type ClusterDeployment } from '../../../test/support/redis-cluster.js';
import { command, field } from '../../../test/support/redis-sentinel.js';
import {
  FAST,
  checkOwnTokens,
  expectConformance,
  expectSafeThrough,
  openInstances,
  openTrusting,
  renewalNumbers,
} from './topology.js';
import { budget } from '../../../test/support/machine.js';

/** Every key of this file hashes to one slot (the part in braces), the slot the deployment has a replica for. */
const TAG = `{launcher-${randomBytes(4).toString('hex')}}`;
let keys = 0;
const uniqueKey = (): string => `${TAG}:${(keys += 1)}`;

describe.skipIf(SKIP_REASON !== undefined)('RedisSecretStore on Redis Cluster', () => {
  let deployment: ClusterDeployment;
  beforeAll(async () => {
    deployment = await startCluster(TAG);
  }, budget(30_000));
  afterAll(async () => {
    await deployment?.stop();
  });

  it(
    'passes the conformance kit',
    async () => {
      await expectConformance(await deployment.client(), uniqueKey());
    },
    budget(30_000),
  );

  it("runs a script on the key's primary, with WAIT on the script's connection", async () => {
    const client = await deployment.client();
    const connection = connectionOf(client);
    if (connection === undefined) throw new Error('not a connection');
    const key = uniqueKey();
    const result = await connection.run("return redis.call('SET', KEYS[1], ARGV[1])", [key, `${key}:x`], ['x'], {
      wait: { replicas: 1, timeout: 2000 },
    });
    expect(result.reply).toBe('OK');
    expect(result.replicas).toBe(1);
    const owner = await deployment.ownerPort();
    expect(String(await command(owner, ['GET', key]))).toBe('x');
  });

  it('runs a script whose slot is half moved (TRYAGAIN, then ASK) and after the move (MOVED), once each time', async () => {
    const client = await deployment.client();
    const connection = connectionOf(client);
    if (connection === undefined) throw new Error('not a connection');
    const [first, second] = [uniqueKey(), uniqueKey()];
    // Counts its runs in a third key of the slot, so that a script sent again after it ran would show.
    const runs = uniqueKey();
    await client.set(first, 'a');
    await client.set(second, 'b');
    await client.set(runs, '0');
    const script = "redis.call('INCR', KEYS[3]); return redis.call('GET', KEYS[1]) .. redis.call('GET', KEYS[2])";
    const before = await deployment.ownerPort();
    const move = await deployment.beginMove();
    await move.migrate(first);
    // One key moved, the others not: the source answers TRYAGAIN until they have moved too, then ASK.
    const halfMoved = connection.run(script, [first, second, runs], []);
    // eslint-disable-next-line launcher-auth-tests/no-wall-clock-wait -- room to meet TRYAGAIN first; the reply is the same either way
    await new Promise((resolve) => setTimeout(resolve, 100));
    await move.migrate(second);
    await move.migrate(runs);
    expect((await halfMoved).reply).toBe('ab');
    await move.finish();
    // The client's slot table still names the old owner: MOVED.
    expect((await connection.run(script, [first, second, runs], [])).reply).toBe('ab');
    expect(await command(move.to, ['GET', runs])).toBe('2');
    await deployment.moveSlot({ to: before });
  });

  it(
    "three instances rotating while the key's slot moves: no revoked token accepted, and service resumes",
    async () => {
      const authorities = await openInstances(() => deployment.client(), uniqueKey());
      const before = await deployment.ownerPort();
      await expectSafeThrough('Cluster slot move during rotations', authorities, () =>
        deployment.moveSlot({ pauseMs: 100 }),
      );
      expect(await deployment.ownerPort()).not.toBe(before);
      // Back to the primary that has the replica, for the failover case.
      await deployment.moveSlot({ to: before });
    },
    budget(60_000),
  );

  it(
    'a slot move refuses no check of the current token: each instance reaches the new owner while its trust lasts',
    async () => {
      const key = uniqueKey();
      const authorities = await openTrusting(() => deployment.client(), key);
      const client = await deployment.client();
      const table = `${key}:instances`;
      const renewals = (): Promise<number[]> => renewalNumbers(client, table);
      const checking = checkOwnTokens(authorities);
      const move = await deployment.moveSlot({ pauseMs: 100 });
      // Back where it was at the end, whatever the outcome: the tests after this one expect the slot on its first owner.
      onTestFinished(async () => {
        if ((await deployment.ownerPort()) !== move.from) await deployment.moveSlot({ to: move.from });
      });
      // Every instance renews six times on the new owner: past the end of the trust its last renewal on the old one
      // granted (`leaseMs - driftMargin`), so a quarantine, had the change of server started one, would show. Six
      // renewals at one a second take six seconds: the deadline is one only a stuck run reaches.
      const after = await renewals();
      expect(after).toHaveLength(3);
      expect(
        await until(async () => (await renewals()).every((seq, index) => seq >= (after[index] ?? 0) + 6), 30_000),
      ).toBe(true);
      const { checks, refused } = await checking.stop();
      console.info('Cluster slot move without a rotation:', JSON.stringify({ checks, refused, moveMs: move.ms }));
      expect(checks).toBeGreaterThan(0);
      expect(refused).toBe(0);
    },
    budget(60_000),
  );

  it("with the default replicas, a save waits for the replica of the slot's primary; a primary without one needs none", async () => {
    await deployment.replicated();
    const owner = await deployment.ownerPort();
    let replica: (typeof deployment.nodes)[number] | undefined;
    for (const node of deployment.nodes) {
      const info = await command(node.port, ['INFO', 'replication']);
      if (field(info, 'role') === 'slave' && field(info, 'master_port') === String(owner)) replica = node;
    }
    if (replica === undefined) throw new Error("no replica of the slot's primary");
    // A key whose slot another primary owns: those have no replica.
    const slots = (await command(owner, ['CLUSTER', 'SLOTS'])) as Array<[number, number, [string, number]]>;
    let elsewhere = '';
    for (let index = 0; elsewhere === ''; index += 1) {
      const candidate = `replica-less:${index}`;
      const slot = Number(await command(owner, ['CLUSTER', 'KEYSLOT', candidate]));
      const range = slots.find(([start, end]) => start <= slot && slot <= end);
      if (range !== undefined && range[2][1] !== owner) elsewhere = candidate;
    }
    const client = await deployment.client();
    const authorities: TokenAuthority[] = [];
    onTestFinished(async () => {
      await Promise.all(authorities.map((authority) => authority.close()));
    });
    const open = async (key: string, replicas?: false): Promise<TokenAuthority> => {
      const store = new RedisSecretStore({ ...FAST, client, key, ...(replicas === false ? { replicas } : {}) });
      const authority = await TokenAuthority.open({ store, onStoreError: () => undefined });
      authorities.push(authority);
      return authority;
    };
    const waiting = await open(uniqueKey());
    const optedOut = await open(uniqueKey(), false);
    const alone = await open(elsewhere);
    const connection = connectionOf(client);
    const counted = await connection?.run("return redis.call('SET', KEYS[1], ARGV[1])", [`${elsewhere}:x`], ['x'], {
      wait: { replicas: 'majority', timeout: 1000 },
    });
    expect({ replicas: counted?.replicas, required: counted?.required }).toEqual({ replicas: 0, required: 0 });
    // The replica stopped (its replication link stays open, so the primary still lists it): WAIT cannot count it.
    replica.process.kill('SIGSTOP');
    try {
      expect((await authErrorOf(waiting.rotate())).code).toBe('ERR_SAVE_UNCERTAIN');
      // The control: the same save without the wait resolves, and so does one on a primary without a replica.
      expect(typeof (await optedOut.rotate())).toBe('string');
      expect(typeof (await alone.rotate())).toBe('string');
    } finally {
      replica.process.kill('SIGCONT');
    }
    expect(
      await until(
        () =>
          waiting.rotate().then(
            () => true,
            () => false,
          ),
        10_000,
        50,
      ),
    ).toBe(true);
    await deployment.replicated();
  });

  it(
    "three instances with replicas: 1 rotating while the key's primary fails over: no revoked token accepted, and service resumes",
    async () => {
      const authorities = await openInstances(() => deployment.client(), uniqueKey(), {
        replicas: { count: 1, timeout: 1000 },
      });
      const before = await deployment.ownerPort();
      await expectSafeThrough('Cluster failover during rotations', authorities, () => deployment.failover());
      expect(await deployment.ownerPort()).not.toBe(before);
    },
    budget(60_000),
  );

  it(
    "three instances with replicas: 1 rotating while the key's primary freezes and the cluster fails it over: no revoked token accepted",
    async () => {
      await deployment.replicated();
      const authorities = await openInstances(() => deployment.client(), uniqueKey(), {
        replicas: { count: 1, timeout: 1000 },
      });
      await expectSafeThrough('Cluster failover of a frozen primary during rotations', authorities, async () => {
        const failover = await deployment.freezePrimary();
        await deployment.replicated();
        return failover;
      });
    },
    budget(60_000),
  );
});

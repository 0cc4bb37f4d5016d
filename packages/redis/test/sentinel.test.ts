// RedisSecretStore on a node-redis Sentinel client against Debian's redis-sentinel: a primary, a replica and three
// sentinels on loopback. The conformance kit, WAIT on the script's own connection, and rotations on three
// instances while Sentinel fails the primary over.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { TokenAuthority, isLauncherAuthError } from 'launcher-auth';
import { RedisSecretStore } from '@launcher-auth/redis';
import { connectionOf } from '../src/connections.js';
import { until } from '../../../test/support/async.js';
import { connectedClient } from '../../../test/support/redis-server.js';
import { SKIP_REASON, command, startSentinel, type SentinelDeployment } from '../../../test/support/redis-sentinel.js';
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

/** Every rotation waits until the replica has it, so that the replica Sentinel promotes holds the last one. */
const ONE_REPLICA = { count: 1, timeout: 1000 };
const uniqueKey = (): string => `sentinel:${randomBytes(6).toString('hex')}`;

describe.skipIf(SKIP_REASON !== undefined)('RedisSecretStore on Redis Sentinel', () => {
  let deployment: SentinelDeployment;
  beforeAll(async () => {
    deployment = await startSentinel();
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

  it("runs a script on the primary and counts the replica's acknowledgement on the script's connection", async () => {
    const client = await deployment.client();
    const connection = connectionOf(client);
    if (connection === undefined) throw new Error('not a connection');
    const key = uniqueKey();
    const result = await connection.run("return redis.call('SET', KEYS[1], ARGV[1])", [key], ['x'], {
      wait: { replicas: 1, timeout: 2000 },
    });
    expect(result.reply).toBe('OK');
    expect(result.replicas).toBe(1);
    // 'majority': the primary lists one replica, so one must confirm.
    const majority = await connection.run("return redis.call('SET', KEYS[1], ARGV[1])", [key], ['y'], {
      wait: { replicas: 'majority', timeout: 2000 },
    });
    expect({ reply: majority.reply, replicas: majority.replicas, required: majority.required }).toEqual({
      reply: 'OK',
      replicas: 1,
      required: 1,
    });
    const primary = await deployment.primaryPort();
    expect(String(await command(primary, ['GET', key]))).toBe('y');
    expect(connection.endpoint).toBe(`127.0.0.1:${primary} (primary named by Redis Sentinel)`);
  });

  it("on a plain client: WAIT counts the replica only when it provably ran on the script's connection", async () => {
    const url = `redis://127.0.0.1:${await deployment.primaryPort()}`;
    const [one, other] = [await connectedClient(url), await connectedClient(url)];
    onTestFinished(() => {
      one.destroy();
      other.destroy();
    });
    const script = "return redis.call('SET', KEYS[1], ARGV[1])";
    const wait = { replicas: 1, timeout: 2000 };
    const plain = connectionOf(one);
    expect(plain?.endpoint).toBe(url.slice('redis://'.length));
    const same = await plain?.run(script, [uniqueKey()], ['x'], { wait });
    expect(same?.replicas).toBe(1);
    // The same client, except that WAIT and the last CLIENT INFO go out on another connection, as after a reconnection.
    let clientInfos = 0;
    const split = connectionOf({
      isOpen: true,
      isReady: true,
      eval: (text: string, options: { keys: string[]; arguments: string[] }) => one.eval(text, options),
      duplicate: () => one.duplicate(),
      sendCommand: (args: string[]) =>
        (args[0] === 'WAIT' || (args[0] === 'CLIENT' && (clientInfos += 1) === 2) ? other : one).sendCommand(args),
    });
    const moved = await split?.run(script, [uniqueKey()], ['x'], { wait });
    expect(moved?.reply).toBe('OK');
    expect(moved?.replicas).toBeUndefined();
  });

  it('with `replicas: false`, says once through onStoreError that a failover may bring back a revoked secret; with the default, says nothing', async () => {
    const key = uniqueKey();
    const told: string[] = [];
    const quiet: string[] = [];
    const codeOf = (error: Error) => (isLauncherAuthError(error) ? error.code : 'other');
    const optedOut = await TokenAuthority.open({
      store: new RedisSecretStore({ client: await deployment.client(), key, ...FAST, replicas: false }),
      onStoreError: (error) => told.push(codeOf(error)),
    });
    const byDefault = await TokenAuthority.open({
      store: new RedisSecretStore({ client: await deployment.client(), key, ...FAST }),
      onStoreError: (error) => quiet.push(codeOf(error)),
    });
    onTestFinished(async () => {
      await Promise.all([optedOut.close(), byDefault.close()]);
    });
    expect(await until(() => told.length > 0)).toBe(true);
    // Every report had its chance: a rotation made by the other instance was adopted here, by a later reload.
    const token = await byDefault.rotate();
    expect(await until(async () => (await optedOut.verify(token)).ok)).toBe(true);
    expect(told).toEqual(['ERR_STORE_UNREPLICATED']);
    expect(quiet).toEqual([]);
  });

  it('without onStoreError, says it once by a process warning naming the option; a plain client says nothing', async () => {
    const key = uniqueKey();
    const warnings: Array<{ code: string; namesOption: boolean; hasToken: (token: string) => boolean }> = [];
    const listener = (warning: Error & { code?: string }) =>
      warnings.push({
        code: warning.code ?? '',
        namesOption: warning.message.includes('`replicas: false`'),
        hasToken: (token) => warning.message.includes(token),
      });
    process.on('warning', listener);
    const plainClient = await connectedClient(`redis://127.0.0.1:${await deployment.primaryPort()}`);
    const authorities: TokenAuthority[] = [];
    onTestFinished(async () => {
      process.off('warning', listener);
      await Promise.all(authorities.map((authority) => authority.close()));
      plainClient.destroy();
    });
    const sentinel = await TokenAuthority.open({
      store: new RedisSecretStore({ client: await deployment.client(), key, ...FAST, replicas: false }),
    });
    authorities.push(sentinel);
    const plain = await TokenAuthority.open({
      store: new RedisSecretStore({ client: plainClient, key, ...FAST, replicas: false }),
    });
    authorities.push(plain);
    const ours = () => warnings.filter((warning) => warning.code === 'LAUNCHER_AUTH_REDIS_REPLICAS_OFF');
    expect(await until(() => ours().length > 0)).toBe(true);
    // Both had their chance: each adopted a rotation made by the other after it opened.
    const token = await plain.rotate();
    expect(await until(async () => (await sentinel.verify(token)).ok)).toBe(true);
    const back = await sentinel.rotate();
    expect(await until(async () => (await plain.verify(back)).ok)).toBe(true);
    expect(ours().map(({ namesOption }) => namesOption)).toEqual([true]);
    expect(ours().some(({ hasToken }) => hasToken(token) || hasToken(sentinel.issue()))).toBe(false);
  });

  it(
    'a failover to a replica that holds the current record refuses no check of the current token: each instance reaches the new primary while its trust lasts',
    async () => {
      await deployment.replicated();
      const key = uniqueKey();
      const authorities = await openTrusting(() => deployment.client(), key);
      await deployment.replicated();
      const observer = await deployment.client();
      const renewals = (): Promise<number[]> => renewalNumbers(observer, `{${key}}:instances`);
      const checking = checkOwnTokens(authorities);
      const failover = await deployment.failover();
      // Every instance renews six times on the new primary: past the end of the trust its last renewal on the old
      // one granted (`leaseMs - driftMargin`), so a quarantine, had the change of server started one, would show.
      expect(await until(async () => (await renewals()).length === 3)).toBe(true);
      const after = await renewals();
      expect(
        await until(async () => (await renewals()).every((seq, index) => seq >= (after[index] ?? 0) + 6), 30_000),
      ).toBe(true);
      const { checks, refused } = await checking.stop();
      // The deposed primary back as a replica in sync: the tests after this one count on one.
      await deployment.replicated();
      console.info(
        'Sentinel failover without a rotation:',
        JSON.stringify({ checks, refused, failoverMs: failover.ms }),
      );
      expect(checks).toBeGreaterThan(0);
      expect(refused).toBe(0);
    },
    budget(60_000),
  );

  it(
    'three instances with replicas: 1 rotating through a Sentinel failover: no revoked token accepted, and service resumes',
    async () => {
      const authorities = await openInstances(() => deployment.client(), uniqueKey(), { replicas: ONE_REPLICA });
      const before = await deployment.primaryPort();
      await expectSafeThrough('Sentinel failover during rotations', authorities, () => deployment.failover());
      expect(await deployment.primaryPort()).not.toBe(before);
    },
    budget(60_000),
  );

  it(
    'three instances with replicas: 1 rotating while the primary freezes, is failed over, and wakes still a primary: no revoked token accepted',
    async () => {
      await deployment.replicated();
      const authorities = await openInstances(() => deployment.client(), uniqueKey(), { replicas: ONE_REPLICA });
      let wokeAs: string | undefined;
      await expectSafeThrough('Sentinel failover of a frozen primary during rotations', authorities, async () => {
        const failover = await deployment.freezePrimary();
        wokeAs = failover.wokeAs;
        await deployment.replicated();
        return failover;
      });
      expect(wokeAs).toBe('master');
    },
    budget(60_000),
  );
});

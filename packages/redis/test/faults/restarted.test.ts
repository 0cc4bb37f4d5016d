// Instances restarted while Redis was down, and Redis back from a dump older than the last rotation: each fresh
// process remembers the newest record in its generation file, so it treats the older one as a rollback. open()
// succeeds refusing, every instance reports ERR_STORE_ROLLBACK once, the revoked token is never accepted, and a
// rotate() on any of them (or on one opened over the rollback marker) resolves with a token that every instance,
// the rotating one included, accepts in the very tick it resolves.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { TokenAuthority, isLauncherAuthError, tokenView } from 'launcher-auth';
import { RedisSecretStore } from '@launcher-auth/redis';
import { encodeMarker } from '../../src/codec.js';
import { budget } from '../../../../test/support/machine.js';
import { SKIP_REASON, connectedClient, startRedis, type RedisServer } from '../../../../test/support/redis-server.js';
import { until } from '../../../../test/support/poll.js';
import { TIMING, acceptances, acceptingNow, type Member } from './instances.js';

/** An instance on `port` remembering its newest record in `generationFile` (or none); closed when the test ends. */
async function instance(port: number, key: string, generationFile: string | false): Promise<Member> {
  const client = await connectedClient(`redis://127.0.0.1:${port}`);
  const errors: string[] = [];
  const authority = await TokenAuthority.open({
    store: new RedisSecretStore({ client, key, generationFile, ...TIMING }),
    onStoreError: (error) => errors.push(isLauncherAuthError(error) ? error.code : 'other'),
  });
  onTestFinished(async () => {
    await authority.close();
    client.destroy();
  });
  return { authority, errors };
}

describe.skipIf(SKIP_REASON !== undefined)('RedisSecretStore: a process started while Redis went back', () => {
  it(
    'restarted while Redis was down, Redis back from an older dump: 0 revoked tokens accepted, each reports, rotate() recovers',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'launcher-auth-restarted-'));
      onTestFinished(() => rm(dir, { recursive: true, force: true }));
      const files = [0, 1, 2].map((index) => join(dir, 'state', `instance-${index}.json`));
      const key = 'restarted:dump';
      let redis: RedisServer = await startRedis({ dir });
      try {
        const before = [];
        for (const file of files) before.push(await instance(redis.port, key, file));
        const [a, b] = before as [Member, Member];
        // The dump holds the record of the first rotation; the second one, which revokes it, is lost.
        const revoked = await a.authority.rotate();
        const probe = await connectedClient(redis.url);
        await probe.sendCommand(['SAVE']);
        probe.destroy();
        const last = await b.authority.rotate();
        expect(acceptingNow(before, revoked)).toBe(0);
        await redis.kill();
        // Every instance is replaced while Redis is down (a deploy, a reboot): only its generation file remains.
        for (const { authority } of before) await authority.close();
        redis = await startRedis({ dir });
        const after: Member[] = [];
        for (const file of files) after.push(await instance(redis.port, key, file));
        // open() succeeded on each, refusing, and each said why, once.
        for (const { errors } of after) expect(errors).toEqual(['ERR_STORE_ROLLBACK']);
        for (const { authority } of after) expect(tokenView(authority).state).toBe('lost');
        const client = await connectedClient(redis.url);
        onTestFinished(() => client.destroy());
        // The rollback marker replaces the older record (the first renewal of the first of them writes it).
        expect(await until(async () => (await client.get(key))?.includes('"rolledBack":true') ?? false)).toBe(true);
        // The revoked token and the lost newest one, checked on every instance until a rotation on one of them
        // (which waits out the leases a fresh process cannot see) has resolved.
        let resolved = false;
        const checking = acceptances(after, [revoked, last], () => resolved);
        const [c] = after as [Member];
        const fresh = await c.authority.rotate();
        // In the tick rotate() resolved in: no await between the resolution and the checks.
        const accepting = acceptingNow(after, fresh);
        resolved = true;
        const marked = await checking;
        console.log(
          `restarted over an older dump: the revoked and the lost tokens accepted ${marked.accepted} of ${marked.checks} ` +
            `checks; the new token accepted by ${accepting} of 3 at resolution`,
        );
        expect(marked.ended).toBe(true);
        expect(marked.accepted).toBe(0);
        expect(accepting).toBe(3);
        expect(acceptingNow(after, revoked)).toBe(0);
        for (const { errors } of after) expect(errors).toEqual(['ERR_STORE_ROLLBACK']);
        for (const { authority } of after) expect(tokenView(authority).state).not.toBe('lost');
      } finally {
        await redis.kill();
      }
    },
    budget(60_000),
  );

  it(
    'open() over the rollback marker succeeds refusing; rotate() replaces it; all 3, the rotating one included, accept at resolution',
    async () => {
      const redis = await startRedis();
      onTestFinished(() => redis.kill());
      const key = 'restarted:marker';
      const client = await connectedClient(redis.url);
      onTestFinished(() => client.destroy());
      // What running instances write when Redis lost the secret and none of them could write it back.
      await client.set(key, encodeMarker('lost', 7, 'before'));
      const warnings: string[] = [];
      const onWarning = (warning: Error & { code?: string }): void => void warnings.push(warning.code ?? warning.name);
      process.on('warning', onWarning);
      onTestFinished(() => void process.off('warning', onWarning));
      const members = [
        await instance(redis.port, key, false),
        await instance(redis.port, key, false),
        await instance(redis.port, key, false),
      ];
      for (const { errors } of members) expect(errors).toEqual(['ERR_STORE_ROLLBACK']);
      for (const { authority } of members) {
        expect(tokenView(authority).state).toBe('lost');
        expect(await authority.verify(authority.issue())).toEqual({ ok: false, reason: 'suspended' });
      }
      const placeholders = members.map(({ authority }) => authority.keyId);
      const [, rotating] = members as [Member, Member];
      const token = await rotating.authority.rotate();
      // In the tick rotate() resolved in: no await between the resolution and the checks.
      const accepting = acceptingNow(members, token);
      console.log(`open() over the marker, then rotate(): the new token accepted by ${accepting} of 3 at resolution`);
      expect(accepting).toBe(3);
      expect(members.map(({ authority }) => authority.keyId).some((id, index) => id === placeholders[index])).toBe(
        false,
      );
      expect((await client.get(key))?.includes('"rolledBack":true')).toBe(false);
      // Still one report each, and none as a process warning (each has onStoreError).
      for (const { errors } of members) expect(errors).toEqual(['ERR_STORE_ROLLBACK']);
      expect(warnings.filter((code) => code.startsWith('LAUNCHER_AUTH_'))).toEqual([]);
      expect(await until(() => members.every(({ authority }) => tokenView(authority).state !== 'lost'))).toBe(true);
    },
    budget(30_000),
  );

  it('open() over the marker without onStoreError: one process warning, and every token refused', async () => {
    const redis = await startRedis();
    onTestFinished(() => redis.kill());
    const key = 'restarted:warned';
    const client = await connectedClient(redis.url);
    onTestFinished(() => client.destroy());
    await client.set(key, encodeMarker('lost', 2, 'before'));
    const warnings: string[] = [];
    const onWarning = (warning: Error & { code?: string }): void => void warnings.push(warning.code ?? warning.name);
    process.on('warning', onWarning);
    onTestFinished(() => void process.off('warning', onWarning));
    const store = new RedisSecretStore({ client, key, generationFile: false, ...TIMING });
    const authority = await TokenAuthority.open({ store });
    onTestFinished(() => authority.close());
    // A warning is emitted on the next tick: wait for the event, not for a time.
    expect(await until(() => warnings.includes('LAUNCHER_AUTH_STORE_ROLLBACK'))).toBe(true);
    expect(await authority.verify(authority.issue())).toEqual({ ok: false, reason: 'suspended' });
    // A rotation elsewhere (a second instance) ends it: no second warning meanwhile.
    const other = await instance(redis.port, key, false);
    await other.authority.rotate();
    expect(await until(() => authority.keyId === other.authority.keyId)).toBe(true);
    expect(warnings.filter((code) => code === 'LAUNCHER_AUTH_STORE_ROLLBACK')).toHaveLength(1);
  });
});

// Lost writes on a real redis-server: restarted from a dump older than the last rotation. The revoked token is
// never accepted again, the last rotation's token comes back, and ERR_STORE_ROLLBACK is reported. And the secret
// kept out of SLOWLOG.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createClient } from 'redis';
import { budget } from '../../../../test/support/machine.js';
import { SKIP_REASON, connectedClient, startRedis, type RedisServer } from '../../../../test/support/redis-server.js';
import { until } from '../../../../test/support/poll.js';
import { renewed } from '../topology.js';
import { TIMING, acceptances, member } from './instances.js';
import { startProxy } from '../../../../test/support/redis-proxy.js';

/**
 * An instance writes the newer record forward over an older one only while its own trust lasts (lease.ts);
 * after that it can only mark the key rolled back, and every token is refused until a rotation. A restart that
 * took longer than the trust, as one may on a loaded machine, would test the marker and not the write-forward.
 * So the restarted server is started first, from the same dump, and the proxy the instances reach Redis through
 * moves them to it at once: however long redis-server takes to start, the instances only see their connections
 * close and a new server, with the older record, answer. A lease twice the usual leaves the reconnection and the
 * next renewal more than a second and a half to spare.
 */
const TRUSTING = { ...TIMING, leaseMs: 2 * TIMING.leaseMs };
/** Renewals whose intervals add up to more than a TRUSTING lease and its drift margin (see RENEWALS_PAST_A_LEASE). */
const TRUSTING_RENEWALS = Math.ceil((TRUSTING.leaseMs + TRUSTING.driftMargin) / TRUSTING.renewInterval) + 1;

describe.skipIf(SKIP_REASON !== undefined)('RedisSecretStore when Redis loses writes', () => {
  it(
    'restarted from an older dump: 0 revoked tokens accepted, the last token works again, the rollback reported once',
    async () => {
      // Every member has onStoreError: the rollback reaches the host there, once, and never as a process warning.
      const warnings: string[] = [];
      const onWarning = (warning: Error & { code?: string }): void => void warnings.push(warning.code ?? warning.name);
      process.on('warning', onWarning);
      onTestFinished(() => void process.off('warning', onWarning));
      const dir = await mkdtemp(join(tmpdir(), 'launcher-auth-rollback-'));
      const first = await startRedis({ dir });
      const proxy = await startProxy(first.port);
      let restarted: RedisServer | undefined;
      try {
        const key = 'rollback:dump';
        const members = [
          await member(proxy.port, key, TRUSTING),
          await member(proxy.port, key, TRUSTING),
          await member(proxy.port, key, TRUSTING),
        ];
        const [a, b] = members as [Awaited<ReturnType<typeof member>>, Awaited<ReturnType<typeof member>>];
        await a.authority.rotate();
        const revoked = a.authority.issue();
        const probe = createClient({ url: first.url });
        probe.on('error', () => undefined);
        await probe.connect();
        await probe.sendCommand(['SAVE']);
        probe.destroy();
        const last = await b.authority.rotate();
        expect((await a.authority.verify(revoked)).ok).toBe(false);
        restarted = await startRedis({ dir });
        proxy.moveTo(restarted.port);
        await first.kill();
        // Until the rollback is reported, the instances have renewed for longer than a lease since (the quarantine
        // after the restart is over), and trust has come back: in the last key, never the revoked one.
        const observer = await connectedClient(restarted.url);
        onTestFinished(() => observer.destroy());
        let quarantineOver = false;
        const quarantine = until(() => members.some(({ errors }) => errors.includes('ERR_STORE_ROLLBACK')), 20_000)
          .then(async (reported) => reported && (await renewed(observer, key, TRUSTING_RENEWALS)))
          .then((over) => (quarantineOver = over));
        const trustedLast = async (): Promise<boolean> =>
          quarantineOver &&
          (await Promise.all(members.map(async ({ authority }) => (await authority.verify(last)).ok))).every(Boolean);
        const after = await acceptances(members, [revoked], trustedLast);
        await quarantine;
        console.log(`restart from an older dump: revoked token accepted ${after.accepted} of ${after.checks} checks`);
        expect(after.ended).toBe(true);
        expect(after.accepted).toBe(0);
        for (const { authority } of members)
          expect(await until(async () => (await authority.verify(last)).ok)).toBe(true);
        expect(members.some(({ errors }) => errors.includes('ERR_STORE_ROLLBACK'))).toBe(true);
        for (const { errors } of members)
          expect(errors.filter((code) => code === 'ERR_STORE_ROLLBACK').length).toBeLessThanOrEqual(1);
        expect(warnings.filter((code) => code === 'LAUNCHER_AUTH_STORE_ROLLBACK')).toEqual([]);
      } finally {
        await proxy.close();
        await first.kill();
        await restarted?.kill();
        await rm(dir, { recursive: true, force: true });
      }
    },
    budget(30_000),
  );

  it(
    "a save's arguments as SLOWLOG keeps them hold no byte of the key",
    async () => {
      const redis = await startRedis();
      try {
        const probe = createClient({ url: redis.url });
        probe.on('error', () => undefined);
        await probe.connect();
        await probe.configSet('slowlog-log-slower-than', '0');
        await probe.configSet('slowlog-max-len', '1000');
        const a = await member(redis.port, 'slowlog:key');
        await a.authority.rotate();
        const stored = JSON.parse((await probe.get('slowlog:key')) ?? '{}') as { key?: string };
        const entries = await probe.sendCommand<unknown[][]>(['SLOWLOG', 'GET', '1000']);
        const argumentsSeen = entries.flatMap((entry) => (entry[3] as unknown[]).map(String));
        expect(typeof stored.key === 'string' && stored.key.length > 40).toBe(true);
        // No 16-character piece of the key's text in any kept argument.
        const secret = stored.key ?? '';
        const leaked = argumentsSeen.filter((argument) => {
          for (let at = 0; at + 16 <= secret.length; at += 1)
            if (argument.includes(secret.slice(at, at + 16))) return true;
          return false;
        });
        expect(leaked.length).toBe(0);
        probe.destroy();
      } finally {
        await redis.kill();
      }
    },
    budget(30_000),
  );
});

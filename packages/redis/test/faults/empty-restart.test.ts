// Redis restarted without persistence while one instance is cut off by a proxy: the next rotate() cannot prove the
// instance table complete, waits out the lease, and no instance accepts the pre-restart token after it resolved.
// Then Redis comes back empty with every instance's trust gone: no busy loop, one report, recovery by rotate().
import { describe, expect, it } from 'vitest';
import { createClient } from 'redis';
import { budget } from '../../../../test/support/machine.js';
import { SKIP_REASON, connectedClient, startRedis, type RedisServer } from '../../../../test/support/redis-server.js';
import { until } from '../../../../test/support/poll.js';
import { RENEWALS_PAST_A_LEASE, TIMING, acceptances, acceptingNow, member } from './instances.js';
import { renewed } from '../topology.js';
import { startProxy } from '../../../../test/support/redis-proxy.js';
import { markerOf } from '../../src/codec.js';
import { PreconditionMissed, outcomeOf, setUp } from './trials.js';

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
    if (name === 'eval' || name === 'evalsha' || name === 'publish' || name === 'subscribe' || name === 'ping')
      sent += Number(calls);
  }
  return sent;
}

/**
 * The renewal backoff's ceiling with the trust gone (lease.ts: a second, or a quarter of the lease when that is
 * less, or the renewal interval when that is more): about one renewal per instance per period.
 */
const CEILING_MS = Math.max(TIMING.renewInterval, Math.min(1000, TIMING.leaseMs / 4));

/**
 * One trial: Redis restarted empty while one instance is cut off; the instances that still trust their key write it
 * back, a rotation follows, and no instance accepts the pre-restart token after it resolved. {@link PreconditionMissed}
 * when every instance that met the empty server first had outlived its trust (the rollback marker stands instead).
 */
async function cutOffAndRestart(attempt: number): Promise<void> {
  // The restart is a move: the empty server is started first and the front proxy sends every connection to it at
  // once. A restart that took longer than the trust, as a kill and a spawn may on a loaded machine, would test the
  // end of trust (the next test) and not the write-back.
  const first = await startRedis();
  const front = await startProxy(first.port);
  const proxy = await startProxy(front.port);
  let restarted: RedisServer | undefined;
  try {
    const key = `restart:cut:${attempt}`;
    const [a, b, c] = await setUp(async () => [
      await member(front.port, key),
      await member(front.port, key),
      await member(proxy.port, key),
    ]);
    const old = a.authority.issue();
    expect((await c.authority.verify(old)).ok).toBe(true);
    proxy.cut();
    restarted = await startRedis();
    front.moveTo(restarted.port);
    await first.kill();
    // The instances that still trust their key write it back; once the quarantine after the restart is over, they
    // trust it again (polled: the quarantine's length is the store's business); then a rotation.
    const probe = createClient({ url: restarted.url });
    probe.on('error', () => undefined);
    await probe.connect();
    let stored: string | null = null;
    expect(await until(async () => (stored = await probe.get(key)) !== null)).toBe(true);
    probe.destroy();
    if (markerOf(stored) !== undefined) throw new PreconditionMissed('the rollback marker stands, not the write-back');
    expect(await until(async () => (await a.authority.verify(old)).ok && (await b.authority.verify(old)).ok)).toBe(
      true,
    );
    // The instance whose renewal meets the empty server first reports the rollback and writes its record back; one
    // whose first renewal comes after that write-back finds its record in place, with nothing to report. So: at
    // least one report between a and b, at most one each, and no other error.
    const reports = [...a.errors, ...b.errors];
    expect(reports.length).toBeGreaterThanOrEqual(1);
    expect(reports.filter((code) => code !== 'ERR_STORE_ROLLBACK')).toEqual([]);
    expect(a.errors.length).toBeLessThanOrEqual(1);
    expect(b.errors.length).toBeLessThanOrEqual(1);
    // A write-back still in flight from b may land after a's view of the record: the same record one generation
    // on, which the rotation saves over (no ERR_SAVE_CONFLICT: no other rotation happened).
    const rotation = await outcomeOf(a.authority.rotate());
    // In the tick rotate() resolved in, the rotating instance accepts the new token.
    const accepting = acceptingNow([a], rotation.token ?? '');
    expect(rotation.outcome).toBe('resolved');
    expect(accepting).toBe(1);
    const fresh = rotation.token as string;
    // Checked until the live instances have renewed for longer than a lease after the resolution.
    const observer = await connectedClient(restarted.url);
    let leaseOver = false;
    const lease = renewed(observer, key, RENEWALS_PAST_A_LEASE).then((over) => (leaseOver = over));
    const after = await acceptances([a, b, c], [old], () => leaseOver);
    await lease;
    observer.destroy();
    console.log(
      `empty restart, one instance cut off: old token accepted ${after.accepted} of ${after.checks} checks after rotate() resolved`,
    );
    expect(after.ended).toBe(true);
    expect(after.accepted).toBe(0);
    expect((await b.authority.verify(fresh)).ok).toBe(true);
    proxy.heal();
    expect(await until(async () => (await c.authority.verify(fresh)).ok)).toBe(true);
  } finally {
    await proxy.close();
    await front.close();
    await first.kill();
    await restarted?.kill();
  }
}

describe.skipIf(SKIP_REASON !== undefined)('RedisSecretStore when Redis restarts empty', () => {
  it(
    'a cut-off instance and a restart: 0 pre-restart tokens accepted after rotate() resolved',
    async () => {
      // The write-back needs the trust of an instance that meets the empty server to last until then. On a loaded
      // machine a renewal can come too late (its event loop stalled past the trust): the instance then rightly writes
      // the rollback marker instead, and the trial did not reach its precondition. It is run again, and counted.
      let missed = 0;
      for (;;) {
        try {
          await cutOffAndRestart(missed);
          break;
        } catch (error) {
          if (!(error instanceof PreconditionMissed)) throw error;
          missed += 1;
          expect(missed).toBeLessThan(3);
        }
      }
      if (missed > 0) console.log(`empty restart, one instance cut off: ${missed} trial(s) missed the write-back`);
    },
    budget(90_000),
  );

  it(
    'Redis back empty after every lease ran out: no busy loop, one report each, every token refused until rotate()',
    async () => {
      let redis = await startRedis();
      try {
        const key = 'restart:late';
        const members = [await member(redis.port, key), await member(redis.port, key), await member(redis.port, key)];
        const [a] = members as [Awaited<ReturnType<typeof member>>];
        const old = a.authority.issue();
        await redis.kill();
        // Until the lease is over: nobody trusts the key any more, so nobody may write it back.
        for (const { authority } of members)
          expect(await until(async () => !(await authority.verify(old)).ok)).toBe(true);
        redis = await startRedis({ port: redis.port });
        // The instances have met the empty Redis: the rollback is reported.
        expect(await until(() => members.some(({ errors }) => errors.includes('ERR_STORE_ROLLBACK')))).toBe(true);
        const before = await commandsSent(redis.port);
        const started = performance.now();
        // An observation window of a few backoff periods' worth of commands, ended by their count: a busy loop ends
        // it within a period, a loaded machine only later.
        const port = redis.port;
        let sent = 0;
        const enough = members.length * 2 * 3;
        expect(await until(async () => (sent = (await commandsSent(port)) - before) >= enough, 20_000, 50)).toBe(true);
        const periods = Math.ceil((performance.now() - started) / CEILING_MS);
        console.log(`Redis back empty, trust gone: ${sent} commands from 3 instances in ${periods} backoff periods`);
        // No busy loop: per instance, at most two commands (a renewal and its pub/sub) in each backoff period, and
        // one more period for the window's edges. A loaded machine sends fewer, never more.
        expect(sent).toBeLessThanOrEqual(members.length * 2 * (periods + 1));
        for (const { authority } of members) expect((await authority.verify(old)).ok).toBe(false);
        for (const { errors } of members)
          expect(errors.filter((code) => code === 'ERR_STORE_ROLLBACK').length).toBeLessThanOrEqual(1);
        expect(members.some(({ errors }) => errors.includes('ERR_STORE_ROLLBACK'))).toBe(true);
        // The operator regenerates: service resumes everywhere with the new token.
        const fresh = await a.authority.rotate();
        // In the tick rotate() resolved in: every instance, the rotating one included, though none trusted any key.
        expect(acceptingNow(members, fresh)).toBe(members.length);
        expect((await a.authority.verify(old)).ok).toBe(false);
      } finally {
        await redis.kill();
      }
    },
    budget(30_000),
  );
});

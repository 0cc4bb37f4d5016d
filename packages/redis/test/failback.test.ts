// A Sentinel failback on real processes (redis-server, redis-sentinel): Sentinel promotes the replica R; the former
// primary P replicates R again but lags (its replication link is cut, and still looks up); a rotation on R resolves
// (replicas: false, so no WAIT); Sentinel promotes P again, which lacks that rotation's record yet keeps its run_id
// and the instance table's epoch. Instance C, cut off from before the first failover until after the failback, must
// take P for a new server (its replication id is new) and never accept the token the rotation revoked; A and B, which
// saw the newer record, are cut off around the failback and come back during C's quarantine. Counts and ids only:
// no token or key is ever printed.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { TokenAuthority } from 'launcher-auth';
import { RedisSecretStore } from '@launcher-auth/redis';
import { until } from '../../../test/support/async.js';
import { budget } from '../../../test/support/machine.js';
import { SKIP_REASON, startFailbackSentinel } from '../../../test/support/redis-sentinel-failback.js';
import { command, field, waitFor, type SentinelClient } from '../../../test/support/redis-sentinel.js';

/** Long enough that A and B come back and write the newer record over P's within C's quarantine, even when loaded. */
const LEASE = { leaseMs: budget(3000), renewInterval: budget(300), driftMargin: budget(200) } as const;

/** The id of the record (or marker) a stored value holds; never its key. */
function idOf(value: string | null): string {
  return value === null ? 'none' : String((JSON.parse(value) as { id?: unknown }).id);
}

describe.skipIf(SKIP_REASON !== undefined)('RedisSecretStore through a Sentinel failback', () => {
  it(
    'an instance cut off throughout never accepts the token that a rotation on the promoted replica revoked, when the lagging former primary is promoted again',
    async () => {
      const began = performance.now();
      /** Seconds since the start at each step, for the printed run. */
      const steps: Record<string, number> = {};
      const step = (name: string): void => {
        steps[name] = Math.round(performance.now() - began) / 1000;
      };
      const deployment = await startFailbackSentinel();
      step('deployed');
      const dir = await mkdtemp(join(tmpdir(), 'launcher-auth-failback-state-'));
      const authorities: TokenAuthority[] = [];
      onTestFinished(async () => {
        await Promise.all(authorities.map((authority) => authority.close()));
        await deployment.stop();
        await rm(dir, { recursive: true, force: true });
      });
      const { primary: p, replica: r } = deployment.ports;
      const key = `failback:${randomBytes(6).toString('hex')}`;
      const table = `{${key}}:instances`;
      const open = async (client: SentinelClient, name: string): Promise<TokenAuthority> => {
        // Each its own generation file, as on three machines: C must not learn the newer record from A's.
        const store = new RedisSecretStore({
          ...LEASE,
          client,
          key,
          replicas: false,
          generationFile: join(dir, `${name}.generation`),
        });
        const authority = await TokenAuthority.open({
          store,
          saveTimeout: budget(20_000),
          onStoreError: () => undefined,
        });
        authorities.push(authority);
        return authority;
      };
      const trusting = async (authority: TokenAuthority): Promise<boolean> =>
        until(async () => (await authority.verify(authority.issue())).ok, budget(15_000), 20);
      const abSide = await deployment.side();
      const cSide = await deployment.side();
      const a = await open(await abSide.client(), 'a');
      const b = await open(await abSide.client(), 'b');
      const c = await open(await cSide.client(), 'c');
      for (const authority of [a, b, c]) expect(await trusting(authority)).toBe(true);
      const olderId = idOf(await deployment.get(p, key));
      await waitFor('R to hold the record', async () => idOf(await deployment.get(r, key)) === olderId);
      const runIdOfP = field(await command(p, ['INFO', 'server']), 'run_id');
      const olderToken = c.issue();

      step('opened');
      cSide.cut();
      await deployment.failover(r);
      step('failover');
      await deployment.replicateThroughProxy(key);
      // A and B trust still (a quick failover to a replica that holds their record), or again once they renewed on R.
      for (const authority of [a, b]) expect(await trusting(authority)).toBe(true);
      step('lagging');
      deployment.cutReplication();
      const newerToken = await a.rotate();
      step('rotated');
      const newerId = idOf(await deployment.get(r, key));
      expect(newerId).not.toBe(olderId);
      expect((await b.verify(newerToken)).ok).toBe(true);

      // From here on, every instance is asked about the revoked token without pause.
      let checks = 0;
      let accepted = 0;
      let checksOnC = 0;
      let acceptedOnC = 0;
      let cReachedP = false;
      let checksOnCAfterReach = 0;
      let writtenOver = olderId;
      let done = false;
      const checker = until(
        async () => {
          for (const authority of [a, b, c]) {
            const ok = (await authority.verify(olderToken)).ok;
            checks += 1;
            if (ok) accepted += 1;
            if (authority === c) {
              checksOnC += 1;
              if (ok) acceptedOnC += 1;
              if (cReachedP) checksOnCAfterReach += 1;
            }
          }
          return done;
        },
        300_000,
        2,
      );
      try {
        abSide.cut();
        await deployment.failover(p);
        step('failback');
        // The failback as intended: P is the primary again, under the same run_id, and lacks the rotation's record.
        const promotedId = idOf(await deployment.get(p, key));
        const promotedRunId = field(await command(p, ['INFO', 'server']), 'run_id');
        expect(promotedId).toBe(olderId);
        expect(promotedRunId).toBe(runIdOfP);

        // Only C can change P's instance table now: A and B are still cut off.
        const entries = async (): Promise<Record<string, string>> =>
          (await command(p, ['HGETALL', table])) as Record<string, string>;
        let before = await entries();
        cSide.heal();
        // C renewed on P twice, the second time after the first was seen: it has had P's answers.
        for (let time = 0; time < 2; time += 1) {
          await waitFor(
            'C to renew on P',
            async () => {
              const now = await entries();
              if (!Object.keys(now).some((name) => name !== '@epoch' && now[name] !== before[name])) return false;
              before = now;
              return true;
            },
            budget(20_000),
          );
        }
        cReachedP = true;
        step('cReachedP');
        abSide.heal();
        await waitFor(
          'A or B to write over the older record on P',
          async () => (writtenOver = idOf(await deployment.get(p, key))) !== olderId,
          budget(20_000),
        );
        step('writtenOver');
        // A positive sign that C heard of that write: a rotation, which C acknowledges, and whose token it accepts.
        const latest = await a.rotate();
        expect(await until(async () => (await c.verify(latest)).ok, budget(15_000), 20)).toBe(true);
      } finally {
        done = true;
        await checker;
      }
      step('end');
      const run = {
        steps,
        checks,
        accepted,
        checksOnC,
        acceptedOnC,
        checksOnCAfterReach,
        // What A or B wrote over P's older record: the newer record back, or the rollback marker.
        writtenOver: writtenOver === newerId ? 'newer' : writtenOver.startsWith('rollback:') ? 'marker' : 'other',
      };
      console.info('Sentinel failback:', JSON.stringify(run));
      expect(checksOnCAfterReach).toBeGreaterThan(100);
      expect(acceptedOnC).toBe(0);
      expect(accepted).toBe(0);
    },
    budget(90_000),
  );
});

// Rotations on several in-process instances while Redis's topology changes under them (a Sentinel failover, a
// Cluster slot move or failover): counts revoked tokens accepted after their rotate() resolved, and whether
// service resumes. Counts and codes only: no token is ever printed.
import { expect, onTestFinished } from 'vitest';
import { TokenAuthority, isLauncherAuthError } from 'launcher-auth';
import { RedisSecretStore, type RedisAnyClient, type RedisSecretStoreOptions } from '@launcher-auth/redis';
import { checkSecretStore } from 'launcher-auth/testing';
import { until } from '../../../test/support/poll.js';

/** Short leases keep the tests quick; the margins stay proportionate. */
export const FAST = { leaseMs: 1000, renewInterval: 200, driftMargin: 100 } as const;

/**
 * Asserts that checkSecretStore passes on `client` (an empty `key`). A short lease: a save that cannot prove who
 * holds the key waits it out, and the kit saves many times.
 */
export async function expectConformance(client: RedisAnyClient, key: string): Promise<void> {
  const short = { leaseMs: 300, renewInterval: 60, driftMargin: 30 };
  const report = await checkSecretStore(() => new RedisSecretStore({ client, key, ...short }), { sameBacking: true });
  expect(report.cases.filter((row) => !row.ok)).toEqual([]);
  expect(report.ok).toBe(true);
}

/** `count` authorities on `key`, each with a client of its own (as separate processes would have), closed after the test. */
export async function openInstances(
  client: () => Promise<RedisAnyClient>,
  key: string,
  options: Partial<RedisSecretStoreOptions> = {},
  count = 3,
): Promise<TokenAuthority[]> {
  const authorities: TokenAuthority[] = [];
  onTestFinished(async () => {
    await Promise.all(authorities.map((authority) => authority.close()));
  });
  for (let index = 0; index < count; index += 1) {
    const store = new RedisSecretStore({ ...FAST, ...options, client: await client(), key });
    authorities.push(await TokenAuthority.open({ store, saveTimeout: 5000 }));
  }
  return authorities;
}

export interface TopologyRun {
  /** rotate() calls that resolved, before and after the change. */
  readonly resolved: number;
  readonly resolvedAfter: number;
  /** rotate() rejections by code. */
  readonly rejected: Readonly<Record<string, number>>;
  /** Checks of a revoked token (on every instance) made after its revoking rotate() resolved, and how many passed. */
  readonly checks: number;
  readonly acceptedRevoked: number;
  /** What the change reported (e.g. its duration). */
  readonly change: unknown;
}

/** After a rejected rotation, room for the change under way (a failover answers nothing for a while). */
const backoff = (): Promise<void> =>
  // eslint-disable-next-line launcher-auth-tests/no-wall-clock-wait -- paces the rotations, waits for nothing
  new Promise((resolve) => setTimeout(resolve, 50));

/**
 * Rotates on the instances in turn, one rotation at a time: `before` rotations, then `change()` while rotations go
 * on, then until `after` more have resolved (bounded by `maxRotations`). A checker verifies, on every instance,
 * each token revoked by a resolved rotation, from the moment it resolved to the end.
 */
export async function rotateThrough(
  authorities: readonly TokenAuthority[],
  change: () => Promise<unknown>,
  { before = 5, after = 5, maxRotations = 400 } = {},
): Promise<TopologyRun> {
  const revoked: string[] = [];
  const rejected: Record<string, number> = {};
  let resolved = 0;
  let resolvedAfter = 0;
  let checks = 0;
  let acceptedRevoked = 0;
  let done = false;
  let rounds = 0;
  const checker = until(
    async () => {
      // The latest few revoked tokens: the older ones were checked already, and stay refused by the same rule.
      for (const token of revoked.slice(-4)) {
        for (const authority of authorities) {
          checks += 1;
          if ((await authority.verify(token)).ok) acceptedRevoked += 1;
        }
      }
      rounds += 1;
      return done;
    },
    300_000,
    2,
  );

  let changed: Promise<unknown> | undefined;
  let changeResult: unknown;
  let changeDone = false;
  let changeFailed: { error: unknown } | undefined;
  try {
    for (let round = 0; round < maxRotations; round += 1) {
      if (resolved === before && changed === undefined) {
        changed = change().then(
          (result) => {
            changeResult = result;
            changeDone = true;
          },
          (error: unknown) => {
            changeFailed = { error };
          },
        );
      }
      if (changeFailed !== undefined || (changeDone && resolvedAfter >= after)) break;
      // Every token any instance would hand out now: all are earlier than the rotation about to start.
      const earlier = new Set(authorities.map((authority) => authority.issue()));
      const rotating = authorities[round % authorities.length] as TokenAuthority;
      const endedBeforeStart = changeDone;
      try {
        const token = await rotating.rotate();
        resolved += 1;
        if (endedBeforeStart) resolvedAfter += 1;
        for (const old of earlier) if (old !== token) revoked.push(old);
      } catch (error) {
        const code = isLauncherAuthError(error) ? error.code : 'other';
        rejected[code] = (rejected[code] ?? 0) + 1;
        await backoff();
      }
    }
    await changed;
    if (changeFailed !== undefined) throw changeFailed.error;
    // Let the checker see the last revocation for a number of its rounds.
    const roundsAtEnd = rounds;
    await until(() => rounds >= roundsAtEnd + 20, 10_000, 2);
  } finally {
    done = true;
    await checker;
  }
  return { resolved, resolvedAfter, rejected, checks, acceptedRevoked, change: changeResult };
}

/** Whether every instance accepts the token of a fresh rotation, tried until one is (it resolved: they must). */
export function resumed(authorities: readonly TokenAuthority[], ms = 10_000): Promise<boolean> {
  return until(
    async () => {
      const token = await (authorities[0] as TokenAuthority).rotate().catch(() => undefined);
      if (token === undefined) return false;
      const results = await Promise.all(authorities.map((authority) => authority.verify(token)));
      return results.every((result) => result.ok);
    },
    ms,
    100,
  );
}

/**
 * Rotations through `change` (see {@link rotateThrough}), then the claims: revoked tokens were checked and none was
 * accepted, rotations resolved after the change, and a fresh rotation is accepted everywhere. Prints the counts.
 */
export async function expectSafeThrough(
  label: string,
  authorities: readonly TokenAuthority[],
  change: () => Promise<unknown>,
): Promise<TopologyRun> {
  const run = await rotateThrough(authorities, change);
  console.info(`${label}:`, JSON.stringify(run));
  expect(run.checks).toBeGreaterThan(0);
  expect(run.acceptedRevoked).toBe(0);
  expect(run.resolvedAfter).toBeGreaterThanOrEqual(5);
  expect(await resumed(authorities)).toBe(true);
  return run;
}

/** Each instance's renewal number in the instance table `table`, as `client` reads it now. */
export async function renewalNumbers(
  client: { hGetAll(key: string): Promise<unknown> },
  table: string,
): Promise<number[]> {
  const entries = (await client.hGetAll(table)) as Record<string, string>;
  return Object.entries(entries)
    .filter(([name]) => name !== '@epoch')
    .map(([, entry]) => Number(entry.split(':', 1)[0]));
}

/**
 * Waits until every instance of `key` that renews at all has renewed `times` more times since this call, as Redis's
 * instance table shows. A renewal timer never fires early, so at least `times` renewal intervals have then passed on
 * each live instance's own clock: a wait measured in the store's own events, whatever the machine's load. An entry
 * that stops renewing (a killed or cut-off instance) is not waited for. False at a deadline only a stuck run reaches.
 */
export async function renewed(
  client: { hGetAll(key: string): Promise<unknown> },
  key: string,
  times: number,
): Promise<boolean> {
  const table = `{${key}}:instances`;
  const numbers = async (): Promise<Map<string, number>> =>
    new Map(
      Object.entries((await client.hGetAll(table)) as Record<string, string>)
        .filter(([name]) => name !== '@epoch')
        .map(([name, entry]) => [name, Number(entry.split(':', 1)[0])]),
    );
  const first = await numbers();
  return until(
    async () => {
      const now = await numbers();
      for (const [name, number] of now) if (!first.has(name)) first.set(name, number);
      const advanced = [...now].filter(([name, number]) => number > (first.get(name) ?? number));
      return advanced.length > 0 && advanced.every(([name, number]) => number >= (first.get(name) ?? 0) + times);
    },
    30_000,
    20,
  );
}

/**
 * Checks each authority's own current token, round after round, until `stop()`, which resolves with how many
 * checks were made and how many were refused.
 */
export function checkOwnTokens(authorities: readonly TokenAuthority[]): {
  stop(): Promise<{ checks: number; refused: number }>;
} {
  let checks = 0;
  let refused = 0;
  let checking = true;
  const checker = (async () => {
    while (checking) {
      for (const authority of authorities) {
        checks += 1;
        if (!(await authority.authenticate(`Bearer ${authority.issue()}`)).ok) refused += 1;
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
  })();
  return {
    async stop() {
      checking = false;
      await checker;
      return { checks, refused };
    },
  };
}

/** The default lease (5 s): a failover or a slot move takes a second or two, well within the last renewal's trust. */
export const DEFAULT_LEASE = { leaseMs: 5000, renewInterval: 1000, driftMargin: 250 } as const;

/** Three authorities on `key` with the default lease, once each accepts its own current token. */
export async function openTrusting(client: () => Promise<RedisAnyClient>, key: string): Promise<TokenAuthority[]> {
  const authorities = await openInstances(client, key, DEFAULT_LEASE);
  const accepted = async (authority: TokenAuthority): Promise<boolean> =>
    (await authority.authenticate(`Bearer ${authority.issue()}`)).ok;
  expect(await until(async () => (await Promise.all(authorities.map(accepted))).every(Boolean))).toBe(true);
  return authorities;
}

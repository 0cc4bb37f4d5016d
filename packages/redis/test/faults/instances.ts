// Authorities on RedisSecretStore, each on its own connection (direct or through a proxy), for the fault tests;
// and the count of old-token acceptances after a rotation resolved.
import { onTestFinished } from 'vitest';
import { TokenAuthority, isLauncherAuthError } from 'launcher-auth';
import { RedisSecretStore } from '@launcher-auth/redis';
import { budget } from '../../../../test/support/machine.js';
import { connectedClient } from '../../../../test/support/redis-server.js';
import { until } from '../../../../test/support/poll.js';
import { decideNow } from 'launcher-auth/store-kit';

/**
 * The store's timing in these tests: a short lease, so that a fault outlasts it in seconds, stretched by the
 * machine factor (one factor for all four, so that their ratios, which the protocol checks, stay those of a quiet
 * machine). A command answered on a quiet machine in a millisecond must still be answered in time under load: a
 * set-up that times out is not the fault under test.
 */
export const TIMING = {
  leaseMs: budget(1000),
  renewInterval: budget(200),
  driftMargin: budget(100),
  commandTimeout: budget(900),
} as const;

export type Timing = Readonly<Record<keyof typeof TIMING, number>>;

/**
 * A number of renewals whose intervals add up to more than a lease and its drift margin: once every live instance
 * has renewed this many times ({@link renewed}), any lease granted before has run out on its own clock.
 */
export const RENEWALS_PAST_A_LEASE = Math.ceil((TIMING.leaseMs + TIMING.driftMargin) / TIMING.renewInterval) + 1;

export interface Member {
  readonly authority: TokenAuthority;
  /** Codes reported through onStoreError, in order. */
  readonly errors: string[];
}

export async function member(port: number, key: string, timing: Timing = TIMING): Promise<Member> {
  const client = await connectedClient(`redis://127.0.0.1:${port}`);
  const errors: string[] = [];
  const authority = await TokenAuthority.open({
    store: new RedisSecretStore({ client, key, ...timing }),
    onStoreError: (error) => errors.push(isLauncherAuthError(error) ? error.code : 'other'),
  });
  onTestFinished(async () => {
    await authority.close();
    client.destroy();
  });
  return { authority, errors };
}

/** How many of `members` accept `token` now, decided synchronously (the gate's own call, no await). */
export function acceptingNow(members: readonly Member[], token: string): number {
  return members.filter(({ authority }) => {
    const result = decideNow(authority, `Bearer ${token}`);
    return !(result instanceof Promise) && result.ok;
  }).length;
}

/**
 * Checks each of `tokens` on every member, round after round, until `done()` holds (an event: trust back in the last
 * key, a rotation resolved, a number of renewals): how many checks accepted one, how many were made, and whether
 * `done()` came (false only at a deadline a stuck run reaches).
 */
export async function acceptances(
  members: readonly Member[],
  tokens: readonly string[],
  done: () => boolean | Promise<boolean>,
): Promise<{ accepted: number; checks: number; ended: boolean }> {
  let accepted = 0;
  let checks = 0;
  const ended = await until(
    async () => {
      for (const { authority } of members) {
        for (const token of tokens) {
          checks += 1;
          if ((await authority.verify(token)).ok) accepted += 1;
        }
      }
      return done();
    },
    30_000,
    2,
  );
  return { accepted, checks, ended };
}

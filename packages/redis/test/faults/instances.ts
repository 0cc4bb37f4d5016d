// Authorities on RedisSecretStore, each on its own connection (direct or through a proxy), for the fault tests;
// and the count of old-token acceptances after a rotation resolved.
import { onTestFinished } from 'vitest';
import { TokenAuthority, isLauncherAuthError } from 'launcher-auth';
import { RedisSecretStore } from '@launcher-auth/redis';
import { budget } from '../../../../test/support/machine.js';
import { connectedClient } from '../../../../test/support/redis-server.js';
import { decideNow } from 'launcher-auth/store-kit';

export { until as eventually } from '../../../../test/support/poll.js';

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

/** Checks `token` on every member for `ms` milliseconds; how many checks accepted it. */
export async function acceptances(
  members: readonly Member[],
  token: string,
  ms: number,
): Promise<{ accepted: number; checks: number }> {
  let accepted = 0;
  let checks = 0;
  const deadline = performance.now() + ms;
  while (performance.now() < deadline) {
    for (const { authority } of members) {
      checks += 1;
      if ((await authority.verify(token)).ok) accepted += 1;
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  return { accepted, checks };
}

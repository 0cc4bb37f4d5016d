// The driver of an instance's lease (follower.ts) on a simulated clock: when a saved rotation's own renewals go out
// and when the rotation may resolve, after the server it renews on changed.
import { describe, expect, it } from 'vitest';
import type { Runtime } from 'launcher-auth/store-kit';
import { Follower, type FollowerIo } from '../src/follower.js';
import type { ConfirmReply } from '../src/lease.js';
import { instance } from './instance.js';
import { Clock } from '../../../test/support/virtual-clock.js';

const OPTIONS = { leaseMs: 1000, renewInterval: 100, driftMargin: 100 } as const;
/** Every command's round trip. */
const RTT = 1;

describe("Follower: a saved rotation's renewals after the server changed", () => {
  it('resolve at the first renewal answered once its quarantine ended, not up to a renewal interval later', async () => {
    const clock = new Clock();
    const runtime: Runtime = { now: () => clock.now, timer: clock.timer, random: (bytes) => Buffer.alloc(bytes) };
    // The instance holds 'a' and saved 'b' over it; its renewals go to server 'one', then to 'two' (a slot moved).
    const { lease, history, era } = instance(OPTIONS);
    history.see(1, 'a', '');
    history.wrote(2, 'b');
    let server = 'one';
    const io: FollowerIo = {
      confirm: (_held, _saving, seq) =>
        new Promise<ConfirmReply>((resolve) => {
          const from = server;
          clock.timer(RTT, () =>
            resolve({ status: 'ok', generation: 2, id: 'b', prev: 'a', serverId: from, epoch: from, ownSeq: seq }),
          );
        }),
      overwrite: () => Promise.resolve(),
      subscribe: () => Promise.resolve({ close: () => undefined }),
      leave: () => Promise.resolve(),
      savingId: () => 'b',
      renewHeld: () => true,
      holds: () => true,
      report: () => undefined,
    };
    const link = { keyId: 'a', trustUntil: () => undefined, reportsErrors: false };
    const follower = new Follower({ lease, history, era }, link, io, () => Promise.resolve(), runtime);
    const started = follower.start();
    await clock.advance(50);
    await started;
    expect(era.mayTrust(clock.now)).toBe(true);

    server = 'two';
    // The next renewal reaches 'two' and starts a quarantine of a lease and its margin.
    for (let waited = 0; era.mayTrust(clock.now) && waited < 1_000; waited += 1) await clock.advance(1);
    expect(era.mayTrust(clock.now)).toBe(false);
    const quarantineUntil = era.quarantineUntil;
    expect(quarantineUntil).toBeGreaterThan(clock.now);
    // The save's wait for a lease begins at a time no renewal is aligned with.
    await clock.advance(47);

    let resolvedAt: number | undefined;
    const leased = follower.renewUntilLeased().then((lasts) => {
      resolvedAt = clock.now;
      return lasts;
    });
    await clock.advance(quarantineUntil + 10 * OPTIONS.renewInterval - clock.now);
    expect(await leased).toBe(true);
    // Never inside the quarantine, and at most one round trip after it: a renewal sent as it ends.
    expect(resolvedAt).toBeGreaterThanOrEqual(quarantineUntil);
    expect(resolvedAt).toBeLessThanOrEqual(quarantineUntil + RTT);
    await follower.stop();
  });
});

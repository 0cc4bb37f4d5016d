// The driver of an instance's lease (follower.ts) on a simulated clock: when a saved rotation's own renewals go out
// and when the rotation may resolve, after the server it renews on changed.
import { describe, expect, it } from 'vitest';
import type { Runtime } from 'launcher-auth/store-kit';
import { Era } from '../src/era.js';
import { Follower, type FollowerIo } from '../src/follower.js';
import { History } from '../src/history.js';
import { Lease, type ConfirmReply } from '../src/lease.js';

const OPTIONS = { leaseMs: 1000, renewInterval: 100, driftMargin: 100 } as const;
/** Every command's round trip. */
const RTT = 1;

/** Simulated time: timers fire in time order, and every promise reaction settles before the next one. */
class Clock {
  time = 0;
  #order = 0;
  readonly #timers: Array<{ at: number; order: number; fire: () => void; done: boolean }> = [];
  readonly runtime: Runtime = {
    now: () => this.time,
    timer: (ms, fire) => {
      const timer = { at: this.time + Math.max(ms, 0), order: (this.#order += 1), fire, done: false };
      this.#timers.push(timer);
      return () => {
        timer.done = true;
      };
    },
    random: (bytes) => Buffer.alloc(bytes),
  };

  /** Runs the timers due by `limit`, in order, until `done()` holds. */
  async runUntil(limit: number, done: () => boolean = () => false): Promise<void> {
    await settled();
    while (!done()) {
      const next = this.#timers
        .filter((timer) => !timer.done)
        .sort((one, other) => one.at - other.at || one.order - other.order)[0];
      if (next === undefined || next.at > limit) break;
      next.done = true;
      this.time = next.at;
      next.fire();
      await settled();
    }
    if (!done()) this.time = Math.max(this.time, limit);
  }
}

/** After every promise reaction queued so far (and those they queue) has run. */
const settled = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe("Follower: a saved rotation's renewals after the server changed", () => {
  it('resolve at the first renewal answered once its quarantine ended, not up to a renewal interval later', async () => {
    const clock = new Clock();
    // The instance holds 'a' and saved 'b' over it; its renewals go to server 'one', then to 'two' (a slot moved).
    const [era, history] = [new Era(OPTIONS.leaseMs, OPTIONS.driftMargin), new History()];
    const lease = new Lease(OPTIONS, { era, history });
    history.see(1, 'a', '');
    history.wrote(2, 'b');
    let server = 'one';
    const io: FollowerIo = {
      confirm: (_held, _saving, seq) =>
        new Promise<ConfirmReply>((resolve) => {
          const from = server;
          clock.runtime.timer(RTT, () =>
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
    const follower = new Follower({ lease, history, era }, link, io, () => Promise.resolve(), clock.runtime);
    const started = follower.start();
    await clock.runUntil(50);
    await started;
    expect(era.mayTrust(clock.time)).toBe(true);

    server = 'two';
    await clock.runUntil(1_000, () => !era.mayTrust(clock.time));
    const quarantineUntil = era.quarantineUntil;
    expect(quarantineUntil).toBeGreaterThan(clock.time);
    await clock.runUntil(clock.time + 47);

    let resolvedAt: number | undefined;
    const leased = follower.renewUntilLeased().then((lasts) => {
      resolvedAt = clock.time;
      return lasts;
    });
    await clock.runUntil(quarantineUntil + 10 * OPTIONS.renewInterval, () => resolvedAt !== undefined);
    expect(await leased).toBe(true);
    // Never inside the quarantine, and at most one round trip after it: a renewal sent as it ends.
    expect(resolvedAt).toBeGreaterThanOrEqual(quarantineUntil);
    expect(resolvedAt).toBeLessThanOrEqual(quarantineUntil + RTT);
    await follower.stop();
  });
});

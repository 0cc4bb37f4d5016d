// The process's monotonic clock, timers and randomness, as one object passed in: Node's own in production, a
// simulated world's in a store's simulator (launcher-auth/store-kit exports it), so that the authority and the
// stores run unchanged under a seeded simulation.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';

export interface Runtime {
  /** Monotonic milliseconds, as `performance.now()`. */
  readonly now: () => number;
  /** Calls `callback` after `ms` milliseconds; returns its cancel. It never keeps the process alive. */
  readonly timer: (ms: number, callback: () => void) => () => void;
  /** `bytes` random bytes. */
  readonly random: (bytes: number) => Buffer;
}

export const nodeRuntime: Runtime = Object.freeze({
  now: () => performance.now(),
  timer: (ms: number, callback: () => void) => {
    // Unreferenced: a pending timer of the library must not be what keeps the host process alive.
    const timer = setTimeout(callback, ms).unref();
    return () => clearTimeout(timer);
  },
  random: (bytes: number) => randomBytes(bytes),
});

/** A random identifier of `bytes` bytes, as base64url text. */
export function randomId(runtime: Runtime, bytes: number): string {
  return runtime.random(bytes).toString('base64url');
}

// The machine factor: how much slower than a quiet 2-core machine this one runs now. Every budget a real-process
// test still needs (a set-up timeout, a deadline only a stuck run reaches, a lease given to Redis instances) is
// `budget(ms)`: written for a quiet machine, stretched here. LAUNCHER_AUTH_TEST_SLOWNESS sets it; otherwise the
// config measures it once at start and hands it to every worker through the same variable.
import { createHash } from 'node:crypto';

const VARIABLE = 'LAUNCHER_AUTH_TEST_SLOWNESS';
/** What the probe below takes on a quiet core of the reference machine (2 cores, Node 22), in milliseconds. */
const REFERENCE_MS = 20;
/** A factor past this means the machine is too busy for any budget to mean much; it is clamped, not trusted. */
const MAX = 4;

/**
 * Times a fixed piece of hashing (CPU and the event loop's turn both count: the child processes the tests start
 * compete for the same cores) and compares it with the reference. Best of three, so that one unlucky preemption
 * does not inflate every budget.
 */
export function measureSlowness(): number {
  let best = Number.POSITIVE_INFINITY;
  // The first round warms the JIT and is not counted.
  for (let round = 0; round < 4; round += 1) {
    const started = performance.now();
    let digest = Buffer.alloc(32);
    for (let i = 0; i < 10_000; i += 1) digest = createHash('sha256').update(digest).digest();
    if (round > 0) best = Math.min(best, performance.now() - started);
  }
  return Math.min(MAX, Math.max(1, Math.round((best / REFERENCE_MS) * 10) / 10));
}

function configured(): number | undefined {
  const text = process.env[VARIABLE];
  if (text === undefined || text === '') return undefined;
  const value = Number(text);
  if (!Number.isFinite(value) || value < 1)
    throw new TypeError(`${VARIABLE} must be a number of at least 1, got "${text}".`);
  return value;
}

/**
 * The factor for this run: the variable when set, else measured now and written to the variable, so that the
 * workers and child processes started after this agree with the process that measured it.
 */
export function slowness(): number {
  const set = configured();
  if (set !== undefined) return set;
  const measured = measureSlowness();
  process.env[VARIABLE] = String(measured);
  return measured;
}

export const SLOWNESS = slowness();

/** `ms`, a budget that holds on a quiet machine, stretched by the machine factor. */
export function budget(ms: number): number {
  return Math.ceil(ms * SLOWNESS);
}

// The one polling helper. A test waits for an event by polling a condition, never for a duration: the deadline is
// one that only a stuck run reaches (stretched by the machine factor), and a timeout is a failure, not a result.
import { budget } from './machine.js';

/**
 * Polls `condition` every `every` ms until it holds; true as soon as it does, false once `timeout` ms (a quiet
 * machine's figure, stretched by the machine factor) have passed. Assert the result:
 * `expect(await until(() => seen > 0)).toBe(true)`.
 */
export async function until(condition: () => boolean | Promise<boolean>, timeout = 5_000, every = 5): Promise<boolean> {
  const deadline = performance.now() + budget(timeout);
  for (;;) {
    if (await condition()) return true;
    if (performance.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, every));
  }
}

/**
 * Resolves after the event loop's next turn: every promise reaction and every callback already queued has run.
 * The positive sign for a "nothing happened" check whose event is in-process and needs no I/O: by then it had its
 * chance.
 */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Calls `expire` once `ms` (a quiet machine's figure, stretched by the machine factor) have passed, unless the
 * returned function is called first: a deadline that only a stuck run reaches (a child that never exits, an answer
 * that never comes), never a wait for something to happen.
 */
export function deadline(ms: number, expire: () => void): () => void {
  const timer = setTimeout(expire, budget(ms));
  return () => clearTimeout(timer);
}

/** `promise`, or a rejection naming `what` at a deadline only a stuck run reaches: a hang fails instead of stalling. */
export function within<T>(promise: Promise<T>, what: string, ms = 5_000): Promise<T> {
  let cancel = (): void => undefined;
  const expired = new Promise<never>((_, reject) => {
    cancel = deadline(ms, () => reject(new Error(`${what}: still pending after ${budget(ms)} ms`)));
  });
  return Promise.race([promise, expired]).finally(cancel);
}

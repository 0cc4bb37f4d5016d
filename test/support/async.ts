// Waiting helpers shared by the tests. None renders what a promise resolved with: a wrongly loaded record or a
// wrongly accepted token must never reach a failing test's message.
import { expect } from 'vitest';
import { LauncherAuthError } from 'launcher-auth';

/** The rejection of `promise`; a resolution fails the test without printing the value. */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  const outcome: unknown = await promise.then(
    () => 'resolved',
    (error: unknown) => error,
  );
  expect(outcome).not.toBe('resolved');
  return outcome;
}

/** The rejection of `promise`, which must be this package's (source) LauncherAuthError. */
export async function authErrorOf(promise: Promise<unknown>): Promise<LauncherAuthError> {
  const outcome = await rejectionOf(promise);
  expect(outcome).toBeInstanceOf(LauncherAuthError);
  return outcome as LauncherAuthError;
}

export { nextTurn, until } from './poll.js';

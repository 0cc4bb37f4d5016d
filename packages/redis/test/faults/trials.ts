// Trials of rotate() under a Redis fault, run a few at a time on separate redis-servers, each checked to its final
// state: whatever rotate() said, once the dust settles every instance holds and accepts the same key, the one that
// Redis holds, and that key is the one the outcome promised. A trial whose set-up could not be reached (an
// instance's first command timed out on a loaded machine, or the fault did not take hold) is not a result: it is
// not a result: another is started in its place, and it is counted. Trials stop once `count` have completed or
// `count + maxRetries` have been started, so that `completed` is a count the test asserts, which a machine too busy
// for the fault to take hold makes fall short.
import { expect } from 'vitest';
import { isLauncherAuthError } from 'launcher-auth';
import { RedisSecretStore } from '@launcher-auth/redis';
import { budget } from '../../../../test/support/machine.js';
import { until } from '../../../../test/support/poll.js';
import { connectedClient, startRedis, type RedisServer } from '../../../../test/support/redis-server.js';
import { member, type Member } from './instances.js';

export interface Trial {
  readonly redis: RedisServer;
  readonly members: readonly Member[];
  readonly key: string;
}

export type Outcome = 'resolved' | string;

/** Thrown by a trial (or its set-up) that could not reach its precondition: the trial is run again. */
export class PreconditionMissed extends Error {}

/** What a run of trials ended with. */
export interface Trials {
  /** How many trials ended in each outcome. */
  readonly tally: Record<string, number>;
  /** Trials that reached their fault and passed their final check: `count` unless too many missed. */
  readonly completed: number;
  /** Trials that missed their precondition, each replaced by another while attempts were left. */
  readonly retries: number;
}

/**
 * Runs set-up steps that must succeed for a trial to mean anything; a store that gave no answer in time (the
 * instance could not even subscribe) becomes {@link PreconditionMissed}.
 */
export async function setUp<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (isLauncherAuthError(error, 'ERR_STORE_UNAVAILABLE'))
      throw new PreconditionMissed('an instance could not reach Redis in time');
    throw error;
  }
}

/**
 * Runs trials, `parallel` at a time, each on its own redis-server, until `count` have completed or
 * `count + maxRetries` have been started; a trial that missed its precondition is replaced by another.
 */
export async function trials(
  count: number,
  parallel: number,
  maxRetries: number,
  run: (trial: Trial) => Promise<{ outcome: Outcome; token?: string; oldKeyId: string }>,
): Promise<Trials> {
  const tally: Record<string, number> = {};
  let started = 0;
  let running = 0;
  let completed = 0;
  let retries = 0;
  const worker = async (): Promise<void> => {
    while (completed + running < count && started < count + maxRetries) {
      const index = (started += 1);
      running += 1;
      const redis = await startRedis();
      try {
        const key = `trial:${index}`;
        const members = await setUp(async () => [
          await member(redis.port, key),
          await member(redis.port, key),
          await member(redis.port, key),
        ]);
        const { outcome, token, oldKeyId } = await run({ redis, members, key });
        await settled({ redis, members, key }, outcome, token, oldKeyId);
        tally[outcome] = (tally[outcome] ?? 0) + 1;
        completed += 1;
      } catch (error) {
        if (!(error instanceof PreconditionMissed)) throw error;
        retries += 1;
      } finally {
        running -= 1;
        await redis.kill();
      }
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return { tally, completed, retries };
}

/** The code of a rejection, or 'resolved'. */
export async function outcomeOf(rotation: Promise<string>): Promise<{ outcome: Outcome; token?: string }> {
  try {
    return { outcome: 'resolved', token: await rotation };
  } catch (error) {
    return { outcome: isLauncherAuthError(error) ? error.code : 'other' };
  }
}

async function settled(trial: Trial, outcome: Outcome, token: string | undefined, oldKeyId: string): Promise<void> {
  expect(['resolved', 'ERR_SAVE_FAILED', 'ERR_SAVE_UNCERTAIN']).toContain(outcome);
  const client = await connectedClient(trial.redis.url);
  try {
    const storedId = async (): Promise<string | undefined> =>
      (await new RedisSecretStore({ client, key: trial.key }).load())?.id;
    // Every instance converges on what Redis holds, and accepts its token.
    const converged = await until(
      async () => {
        const id = await storedId();
        return trial.members.every(({ authority }) => authority.keyId === id);
      },
      8000,
      20,
    );
    expect(converged).toBe(true);
    const current = trial.members[0]?.authority.issue() ?? '';
    for (const { authority } of trial.members)
      expect(await until(async () => (await authority.verify(current)).ok, 5000, 20)).toBe(true);
    const finalId = await storedId();
    if (outcome === 'resolved') expect(token).toBeSameToken(current);
    // ERR_SAVE_FAILED promises that nothing changed: the old key is still the one.
    if (outcome === 'ERR_SAVE_FAILED') expect(finalId).toBe(oldKeyId);
  } finally {
    client.destroy();
  }
}

/** How long a fault lasts: longer than a lease on a quiet machine, stretched like the lease. */
export const FAULT_MS = budget(3000);

// Trials of rotate() under a Redis fault, run a few at a time on separate redis-servers, each checked to its final
// state: whatever rotate() said, once the dust settles every instance holds and accepts the same key, the one that
// Redis holds, and that key is the one the outcome promised.
import { expect } from 'vitest';
import { isLauncherAuthError } from 'launcher-auth';
import { RedisSecretStore } from 'launcher-auth/redis';
import { connectedClient, startRedis, type RedisServer } from '../../../support/redis-server.js';
import { eventually, member, type Member } from './instances.js';

export interface Trial {
  readonly redis: RedisServer;
  readonly members: readonly Member[];
  readonly key: string;
}

export type Outcome = 'resolved' | string;

/** Runs `count` trials, `parallel` at a time, each on its own redis-server; returns how many ended in each outcome. */
export async function trials(
  count: number,
  parallel: number,
  run: (trial: Trial) => Promise<{ outcome: Outcome; token?: string; oldKeyId: string }>,
): Promise<Record<string, number>> {
  const tally: Record<string, number> = {};
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const index = (next += 1);
      const redis = await startRedis();
      try {
        const key = `trial:${index}`;
        const members = [await member(redis.port, key), await member(redis.port, key), await member(redis.port, key)];
        const { outcome, token, oldKeyId } = await run({ redis, members, key });
        tally[outcome] = (tally[outcome] ?? 0) + 1;
        await settled({ redis, members, key }, outcome, token, oldKeyId);
      } finally {
        await redis.kill();
      }
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return tally;
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
  const client = await connectedClient(trial.redis.url);
  try {
    const storedId = async (): Promise<string | undefined> => (await new RedisSecretStore({ client, key: trial.key }).load())?.id;
    // Every instance converges on what Redis holds, and accepts its token.
    const converged = await eventually(async () => {
      const id = await storedId();
      return trial.members.every(({ authority }) => authority.keyId === id);
    }, 8000);
    expect(converged).toBe(true);
    const current = trial.members[0]?.authority.issue() ?? '';
    for (const { authority } of trial.members) expect(await eventually(async () => (await authority.verify(current)).ok, 5000)).toBe(true);
    const finalId = await storedId();
    if (outcome === 'resolved') expect(token === current).toBe(true);
    // ERR_SAVE_FAILED promises that nothing changed: the old key is still the one.
    if (outcome === 'ERR_SAVE_FAILED') expect(finalId).toBe(oldKeyId);
    expect(['resolved', 'ERR_SAVE_FAILED', 'ERR_SAVE_UNCERTAIN']).toContain(outcome);
  } finally {
    client.destroy();
  }
}

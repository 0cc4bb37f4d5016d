// An instance remembers a record (its generation file) before it acknowledges it: a rotation that counts this
// instance then finds the record in the file, and a crash between the two can only leave the file ahead of the
// instance table, never behind it. Checked on a real Redis with a generation file whose write is held: the
// rotation then resolves at its bound, when the silent instance's lease has run out, without its acknowledgement.
import { describe, expect, it, onTestFinished } from 'vitest';
import { TokenAuthority } from 'launcher-auth';
import { RedisSecretStore } from '@launcher-auth/redis';
import { storeInternals } from '../src/internal.js';
import type { Seen } from '../src/lease.js';
import type { GenerationFileIo } from '../src/generation-file.js';
import { keyNames } from '../src/scripts.js';
import { until } from '../../../test/support/poll.js';
import { SKIP_REASON, connectedClient, sharedRedis } from '../../../test/support/redis-server.js';

const TIMING = { leaseMs: 1000, renewInterval: 200, driftMargin: 100 };

/** A generation file whose writes of `id` wait until `release()`. */
function heldGenerationFile(): GenerationFileIo & { hold(id: string): void; release(): void; readonly held: boolean } {
  let holding = '';
  let waiting: (() => void) | undefined;
  let remembered: Seen | undefined;
  return {
    read: () => Promise.resolve(remembered),
    write(seen: Seen): Promise<void> {
      if (seen.id !== holding) {
        remembered = seen;
        return Promise.resolve();
      }
      return new Promise((resolve) => {
        waiting = () => {
          remembered = seen;
          resolve();
        };
      });
    },
    hold(id: string): void {
      holding = id;
    },
    release(): void {
      holding = '';
      waiting?.();
    },
    get held(): boolean {
      return waiting !== undefined;
    },
  };
}

describe.skipIf(SKIP_REASON !== undefined)('the generation file before the acknowledgement', () => {
  const shared = sharedRedis();

  it('an instance acknowledges a new record only once its generation file holds it', async () => {
    const key = 'remember-first';
    const client = await connectedClient(shared.server.url);
    onTestFinished(() => client.destroy());
    const generationFile = heldGenerationFile();
    const follower = await TokenAuthority.open({
      store: new RedisSecretStore({ client, key, ...TIMING, [storeInternals]: { generationFile } } as never),
    });
    onTestFinished(() => follower.close());
    const table = (): Promise<Record<string, string>> => shared.client.hGetAll(keyNames(key).instances);
    // The only entry yet: the follower's.
    const [own] = Object.keys(await table()).filter((name) => name !== '@epoch');
    const rotating = await TokenAuthority.open({
      store: new RedisSecretStore({ client: shared.client, key, ...TIMING, generationFile: false }),
    });
    onTestFinished(() => rotating.close());

    // The rotation's record is not known before it is saved: hold every write of a record other than the current.
    const before = follower.keyId;
    const writes: string[] = [];
    const write = generationFile.write.bind(generationFile);
    generationFile.write = (seen) => {
      writes.push(seen.id);
      if (seen.id !== before) generationFile.hold(seen.id);
      return write(seen);
    };
    const rotation = rotating.rotate();
    // The follower adopted the new record and began to remember it.
    expect(await until(() => generationFile.held)).toBe(true);
    const fresh = writes.at(-1) ?? '';
    expect(fresh).not.toBe(before);
    const acknowledged = async (): Promise<boolean> => (await table())[own ?? '']?.endsWith(`:${fresh}`) === true;
    // The rotation resolves without the follower's acknowledgement, once its lease ran out: the follower never sent
    // it while its generation file did not hold the record.
    await rotation;
    expect(await acknowledged()).toBe(false);
    generationFile.release();
    expect(await until(acknowledged)).toBe(true);
    expect(follower.keyId).toBe(rotating.keyId);
  });
});

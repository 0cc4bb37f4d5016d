// What a simulator passes to RedisSecretStore under an option that no export of the package names: its own
// connection to a simulated Redis and its own clock, timers and randomness. A host always gets node-redis and Node's.
import type { Runtime } from 'launcher-auth/store-kit';
import type { RedisConnection } from './client.js';
import type { GenerationFileIo } from './generation-file.js';

export const storeInternals: unique symbol = Symbol('launcher-auth.redis.internals');

export interface StoreInternals {
  readonly connection?: RedisConnection;
  readonly runtime?: Runtime;
  /**
   * Where this instance remembers the newest record it trusted or saved, instead of `generationFile`; with internals
   * and without it, nowhere (a simulator never writes a file).
   */
  readonly generationFile?: GenerationFileIo;
}

/** The options of RedisSecretStore as a simulator gives them. */
export interface WithInternals {
  readonly [storeInternals]?: StoreInternals;
}

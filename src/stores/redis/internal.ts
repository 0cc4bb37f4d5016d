// What a simulator passes to RedisSecretStore under an option that no export of the package names. A host always
// gets the generation file its options describe.
import type { GenerationMemory } from './memory.js';

export const storeInternals: unique symbol = Symbol('launcher-auth.redis.internals');

export interface StoreInternals {
  /**
   * Where this instance remembers the newest record it trusted or saved, instead of `generationFile`; with internals
   * and without it, nowhere (a simulator never writes a file).
   */
  readonly memory?: GenerationMemory;
}

/** The options of RedisSecretStore as a simulator gives them. */
export interface WithInternals {
  readonly [storeInternals]?: StoreInternals;
}

// launcher-auth/store-kit: what a secret store's author needs beyond the `SecretStore` interface, the same pieces
// the file store is built from. A store that coordinates several instances (the Redis store in @launcher-auth/redis,
// one on PostgreSQL or etcd) is written against this entry and `launcher-auth` alone. See docs/stores.md.
import { authenticateNow } from './authority/internal.js';
import type { TokenAuthority } from './authority/token-authority.js';
import type { VerifyResult } from './authority/types.js';

export { generateRecord, recordProblem, MIN_KEY_BYTES } from './authority/record.js';
export { parseRecord, serializeRecord, FORMAT_VERSION } from './stores/record-json.js';
export { syncDirectory, temporaryName, writeTemporary } from './stores/file/write.js';
export { readPrivateFile } from './stores/file/private-file.js';
export type { Subject } from './stores/file/permissions.js';
export { printable } from './authority/errors.js';
export { nodeRuntime, randomId, type Runtime } from './authority/runtime.js';
export { runtimeOption, type WithRuntime } from './authority/internal.js';

/**
 * The decision an adapter gets for a raw Authorization value: the result itself when it needs no wait (the
 * current token, every cheap refusal), else a promise of it. For a store's simulation, which checks at one
 * simulated instant whether an authority accepts a token; a host uses `authority.authenticate()`.
 */
export function decideNow(
  authority: TokenAuthority,
  authorization: string | readonly string[] | undefined,
): VerifyResult | Promise<VerifyResult> {
  return authority[authenticateNow](authorization);
}

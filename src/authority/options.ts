// The options of TokenAuthority.open(), checked once, with a TypeError that names the option.
import { resolveMaxTokenLength } from './bearer.js';
import { runtimeOption, type WithRuntime } from './internal.js';
import { nodeRuntime, type Runtime } from './runtime.js';
import type { SecretStore, TokenAuthorityOptions } from './types.js';

/** What `rotate()` waits for a save by default: long enough for any disk, short enough to see a hung store. */
const DEFAULT_SAVE_TIMEOUT = 60_000;
/** The longest delay `setTimeout` honours; a larger one would fire at once. */
const MAX_TIMEOUT = 2 ** 31 - 1;

export interface OpenOptions {
  readonly store: SecretStore;
  readonly issuer: string | undefined;
  readonly audience: string | undefined;
  readonly onStoreError: ((error: Error) => void) | undefined;
  readonly saveTimeout: number;
  readonly maxTokenLength: number;
  readonly runtime: Runtime;
}

/** `options` checked, with the defaults filled in. @throws TypeError naming the first wrong option. */
export function openOptions(options: TokenAuthorityOptions): OpenOptions {
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('TokenAuthority.open: options must be an object with a `store`.');
  }
  const { store, issuer, audience, onStoreError, saveTimeout = DEFAULT_SAVE_TIMEOUT } = options;
  const maxTokenLength = resolveMaxTokenLength(options.maxTokenLength, 'TokenAuthority.open');
  if (
    typeof store !== 'object' ||
    store === null ||
    typeof store.load !== 'function' ||
    typeof store.save !== 'function'
  ) {
    throw new TypeError('TokenAuthority.open: `store` must be a SecretStore (an object with load() and save()).');
  }
  if (store.watch !== undefined && typeof store.watch !== 'function') {
    throw new TypeError('TokenAuthority.open: `store.watch` must be a function when present.');
  }
  if (issuer !== undefined && (typeof issuer !== 'string' || issuer.length === 0)) {
    throw new TypeError('TokenAuthority.open: `issuer` must be a non-empty string when set.');
  }
  if (audience !== undefined && (typeof audience !== 'string' || audience.length === 0)) {
    throw new TypeError('TokenAuthority.open: `audience` must be a non-empty string when set.');
  }
  if (onStoreError !== undefined && typeof onStoreError !== 'function') {
    throw new TypeError('TokenAuthority.open: `onStoreError` must be a function when set.');
  }
  if (!Number.isInteger(saveTimeout) || saveTimeout < 0 || saveTimeout > MAX_TIMEOUT) {
    throw new TypeError(
      `TokenAuthority.open: \`saveTimeout\` must be a whole number of milliseconds from 0 (no limit) to ${MAX_TIMEOUT}.`,
    );
  }
  const runtime = (options as WithRuntime)[runtimeOption] ?? nodeRuntime;
  return { store, issuer, audience, onStoreError, saveTimeout, maxTokenLength, runtime };
}

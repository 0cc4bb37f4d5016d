// Members of TokenAuthority that the HTTP gate calls (store-kit's `decideNow` too) and that no export of the package
// names: the symbol lives only here, and the declarations leave these members out (`@internal`, stripped by the
// build). And the option under which a simulator passes its own clock.
import type { Runtime } from './runtime.js';

/**
 * The decision adapters ask for: a result at once when it can be had without waiting (the current token, any cheap
 * rejection), else a promise.
 */
export const authenticateNow: unique symbol = Symbol('launcher-auth.authenticateNow');

/** Whether the authority's current token is accepted now, and why not, for the settings helpers (settings.ts). */
export const tokenState: unique symbol = Symbol('launcher-auth.tokenState');

/**
 * The option under which a simulator passes its own {@link Runtime} to `TokenAuthority.open()`. Only
 * `launcher-auth/store-kit` exports it (for a store's simulation tests); a host that never names it runs on Node's
 * clock and timers.
 */
export const runtimeOption: unique symbol = Symbol('launcher-auth.runtime');

/** What a simulator adds to the options of `TokenAuthority.open()`. */
export interface WithRuntime {
  readonly [runtimeOption]?: Runtime;
}

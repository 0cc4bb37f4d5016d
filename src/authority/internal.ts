// Members of TokenAuthority that the HTTP gate calls and that no export of the package names: the symbol lives only
// here, and the declarations leave these members out (`@internal`, stripped by the build).

/**
 * The decision adapters ask for: a result at once when it can be had without waiting (the current token, any cheap
 * rejection), else a promise.
 */
export const authenticateNow: unique symbol = Symbol('launcher-auth.authenticateNow');

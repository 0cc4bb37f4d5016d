import type { JWTPayload } from 'jose';

export type { JWTPayload };

/** One signing secret, as a {@link SecretStore} keeps it. */
export interface SecretRecord {
  /** A short random identifier; it is the token's `kid` and `jti`. Visible ASCII, 1 to 128 characters. */
  id: string;
  /** The HMAC-SHA256 key: at least 32 bytes (RFC 7518 §3.2). */
  key: Uint8Array;
  /** When the secret was generated; the token's `iat`. */
  createdAt: Date;
}

/** What `rotate()` passes to {@link SecretStore.save}. */
export interface SaveOptions {
  /**
   * Aborted (with a `TimeoutError` DOMException) when the authority gives up waiting for this save
   * (`saveTimeout`). A store that can must then leave what it holds unchanged and reject promptly: check the signal
   * before the step that makes the record current, such as a rename. The authority waits a short grace after the
   * abort (as long as `saveTimeout`, at most 1 s): a save that rejects within it, the store unchanged, makes
   * `rotate()` reject with `ERR_SAVE_FAILED`; one still running after it makes `rotate()` reject with
   * `ERR_SAVE_UNCERTAIN`, and the authority then follows what the store holds.
   */
  signal?: AbortSignal;
}

/**
 * What the authority hands to {@link SecretStore.watch}: for a store that coordinates several instances (leases,
 * acknowledgements), the means to bound how long this instance may trust its key without asking the store.
 */
export interface StoreLink {
  /** The id of the key this authority holds now (the token's `kid`); not secret. */
  readonly keyId: string;
  /**
   * Trust tokens until `deadline`, a `performance.now()` time in milliseconds; from then on every token is
   * refused (reason `suspended`) until the store calls this again with a later deadline. `Infinity` lifts the
   * bound; a time in the past refuses at once. The bound is checked on every request against the monotonic
   * clock, so a process that was frozen past it refuses its very first request after it wakes.
   *
   * With `keyId`, the bound is for that key only: for the current key, as without it; for another (the record a
   * rotation is saving), it applies from the moment the authority makes that key current, and the current key's
   * bound stays as it is until then.
   * @default Infinity (a store that never calls it is trusted as long as the authority is open)
   */
  trustUntil(deadline: number, keyId?: string): void;
  /**
   * True when the host passed `onStoreError`: the store's failures reach the host through it (a reload that
   * rejects), so a store reports a condition there alone, not also as a process warning.
   */
  readonly reportsErrors: boolean;
}

/** Where the launcher keeps its secret: a file, an OS keychain, a database. */
export interface SecretStore {
  /**
   * The stored record, or `undefined` when nothing is stored yet. Rejects when what is stored is unusable.
   *
   * A store with {@link SecretStore.watch} may reject with `ERR_STORE_ROLLBACK` when what it holds went back to an
   * older secret than one already in use (or stands for one that was lost): `TokenAuthority.open()` then succeeds
   * all the same, on a placeholder key that is never saved and whose tokens are refused (`suspended`) until the store
   * vouches for a key through {@link StoreLink.trustUntil}; a rotation saves over what the store holds.
   */
  load(): Promise<SecretRecord | undefined>;
  /**
   * Replaces the stored record, atomically. What its outcome tells the authority (and so what `rotate()` says):
   * - resolve: the record is stored durably (and, for a store that coordinates several instances, confirmed by
   *   every instance that may accept tokens);
   * - reject with a `LauncherAuthError` of code `ERR_SAVE_CONFLICT`: nothing was stored by this save, another
   *   writer's record stands (the authority loads it and makes it current);
   * - reject with `ERR_SAVE_UNCERTAIN`: the record may or may not be stored; the store reports the final state
   *   through {@link SecretStore.watch}'s `onChange`;
   * - reject with `ERR_ROTATION_SUPERSEDED`: the record was stored, then replaced by a newer one before it was
   *   confirmed (the authority loads the newer one and makes it current);
   * - any other rejection, or a synchronous throw: the store claims nothing changed. The authority checks with
   *   `load()`: a store holding the new record after all counts as saved; one holding what it held makes
   *   `rotate()` reject with `ERR_SAVE_FAILED`, which promises that nothing will change later, so a save must not
   *   go on writing after it rejected; a `load()` that fails makes the outcome uncertain.
   * See {@link SaveOptions.signal} for a save that takes longer than `saveTimeout`.
   */
  save(record: SecretRecord, options?: SaveOptions): Promise<void>;
  /**
   * Optional: calls `onChange` when another process may have changed the secret; the promise `onChange` returns
   * settles once the authority has reloaded (whatever the outcome), so that a store can then read `link.keyId`.
   * Returns the unsubscribe function, or a promise of it: `TokenAuthority.open()` waits for it, and fails when it
   * rejects (a store that must reach a server before it can vouch for a key). The unsubscribe function may return
   * a promise: `close()` waits for it (a store that must tell a server it is leaving), and ignores its rejection.
   */
  watch?(
    onChange: () => Promise<void>,
    link: StoreLink,
  ): (() => void | Promise<void>) | Promise<() => void | Promise<void>>;
}

/** What a successful verification yields; adapters attach it to the request as `auth`. */
export interface AuthContext {
  /** The verified claims (frozen). */
  readonly claims: JWTPayload;
  /** The id of the key that verified the token. */
  readonly keyId: string;
  /** Aborts when that key is rotated away: end long-lived responses (SSE, WebSocket) on it. */
  readonly signal: AbortSignal;
}

/**
 * Why a token was refused, for the host's log (the HTTP answer is the same 401 whatever the reason):
 * - `missing`: no Authorization value;
 * - `malformed`: not a single well-formed Bearer JWT;
 * - `invalid`: it does not verify (a forgery, a token of another key, a closed authority);
 * - `rotated`: a token of one of the last keys that "Regenerate token" replaced (a script still using an old token);
 * - `suspended`: the store has not confirmed the current key in time (see {@link StoreLink.trustUntil}).
 */
export type RejectReason = 'missing' | 'malformed' | 'invalid' | 'rotated' | 'suspended';

/**
 * Whether the authority accepts its current token now, and why not:
 * - `ok`: it does;
 * - `suspended`: every token is refused because the secret store cannot be reached to confirm the key (see
 *   {@link StoreLink.trustUntil}); tokens work again once it answers;
 * - `lost`: the store lost the secret (it went back to an older one, `ERR_STORE_ROLLBACK`): every token is refused
 *   until "Regenerate token" makes one that works;
 * - `stopped`: the authority was closed.
 */
export type TokenState = 'ok' | 'suspended' | 'lost' | 'stopped';

export type VerifyResult =
  ({ readonly ok: true } & AuthContext) | { readonly ok: false; readonly reason: RejectReason };

/** Passed to `onRotate` listeners. */
export interface RotateEvent {
  /** The id of the key now in use. */
  keyId: string;
  /** The id of the key that was rotated away. */
  previousKeyId: string;
}

export interface TokenAuthorityOptions {
  /** Where the secret lives. */
  store: SecretStore;
  /**
   * Sets the token's `iss` claim. Tokens are then accepted only when their `iss` equals it.
   * @default undefined (no `iss` claim, none required)
   */
  issuer?: string;
  /**
   * Sets the token's `aud` claim, and accepts a token only when its `aud` is (or contains) this value. Without
   * it, a token that carries any `aud` is refused: a JWT meant for some other recipient is never accepted here
   * (RFC 7519 §4.1.3).
   * @default undefined (no `aud` claim; any token with one is refused)
   */
  audience?: string;
  /**
   * Called when reloading the secret after the store reported an external change fails (for example the
   * file became corrupt or was deleted). The authority keeps the key it has. Never receives a key. Also called
   * once by `open()` when the store's secret went back (`ERR_STORE_ROLLBACK`, see {@link SecretStore.load}): the
   * authority then refuses every token until a rotation.
   * @default undefined (the failure is ignored)
   */
  onStoreError?: (error: Error) => void;
  /**
   * How long `rotate()` waits for `store.save()` to settle, in milliseconds; `0` waits forever. When the time
   * runs out, the save's `signal` is aborted and the authority waits a grace as long as `saveTimeout`, at most
   * 1000 ms, for the store to settle. A save still running then makes `rotate()` reject with
   * `ERR_SAVE_UNCERTAIN`: the new secret may yet land. Later rotations and reloads are no longer held up by
   * it, and the authority converges to what the store holds: it reads the store at once, again as soon as that
   * save settles (resolved or rejected), and at every change the store reports through `watch()`; `onRotate`
   * fires if the key changed. The exception: a record of a save given up on that lands after another key became
   * current is stale, and the authority writes the current record back over it. Only a save that never settles
   * and lands after that first read, in a store without `watch()`, stays unseen until the next rotation replaces
   * it. Applies to `rotate()` only, not to the first save in `open()`.
   * @default 60000
   */
  saveTimeout?: number;
  /**
   * The longest token checked at all, in characters: a longer one is refused as `malformed` before any decoding
   * or HMAC, so that a forged token costs no more than the current one. Tokens this authority issues are about
   * 170 characters plus the lengths of `issuer` and `audience`; raise it only to accept longer tokens signed
   * with the same key by other tools. From 512 to 4096; `open()` refuses a value shorter than its own token.
   * @default 1024
   */
  maxTokenLength?: number;
}

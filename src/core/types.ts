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
   * Aborted when the authority gives up on this save (`saveTimeout`). A store that can must then leave what it
   * holds unchanged and reject (check it before the step that makes the record current, such as a rename).
   * A save that lands after all is undone by the authority: an abandoned record never becomes current.
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
   * @default Infinity (a store that never calls it is trusted as long as the authority is open)
   */
  trustUntil(deadline: number): void;
}

/** Where the launcher keeps its secret: a file, an OS keychain, a database. */
export interface SecretStore {
  /** The stored record, or `undefined` when nothing is stored yet. Rejects when what is stored is unusable. */
  load(): Promise<SecretRecord | undefined>;
  /** Replaces the stored record. Must be durable and atomic once it resolves. See {@link SaveOptions.signal}. */
  save(record: SecretRecord, options?: SaveOptions): Promise<void>;
  /**
   * Optional: calls `onChange` when another process may have changed the secret; the promise `onChange` returns
   * settles once the authority has reloaded (whatever the outcome), so that a store can then read `link.keyId`.
   * Returns the unsubscribe function, or a promise of it: `TokenAuthority.open()` waits for it, and fails when it
   * rejects (a store that must reach a server before it can vouch for a key).
   */
  watch?(onChange: () => Promise<void>, link: StoreLink): (() => void) | Promise<() => void>;
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

export type VerifyResult =
  | ({ readonly ok: true } & AuthContext)
  | { readonly ok: false; readonly reason: RejectReason };

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
   * file became corrupt or was deleted). The authority keeps the key it has. Never receives a key.
   * @default undefined (the failure is ignored)
   */
  onStoreError?: (error: Error) => void;
  /**
   * How long `rotate()` waits for `store.save()` to settle, in milliseconds; `0` waits forever. When the time
   * runs out, `rotate()` rejects with `ERR_SAVE_FAILED` (its message says the save timed out), the current
   * token stays valid, and later rotations and reloads are no longer held up by the hung save. Should that
   * save settle after all, resolved or rejected, the authority reloads the store as it does after an external
   * change and adopts whatever the store then holds (calling `onRotate` if that is a new key): the store, not
   * the abandoned rotation, has the last word. Applies to `rotate()` only, not to the first save in `open()`.
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

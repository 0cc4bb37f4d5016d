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

/** Where the launcher keeps its secret: a file, an OS keychain, a database. */
export interface SecretStore {
  /** The stored record, or `undefined` when nothing is stored yet. Rejects when what is stored is unusable. */
  load(): Promise<SecretRecord | undefined>;
  /** Replaces the stored record. Must be durable and atomic once it resolves. */
  save(record: SecretRecord): Promise<void>;
  /** Optional: calls `onChange` when another process may have changed the secret. Returns an unsubscribe function. */
  watch?(onChange: () => void): () => void;
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

/** Why a token was refused: no Authorization value; one that is not a single well-formed Bearer JWT; or one that does not verify. */
export type RejectReason = 'missing' | 'malformed' | 'invalid';

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
}

// TokenAuthority: holds the current secret, issues its one token, verifies, rotates, and follows the store.
import { createSecretKey, timingSafeEqual, webcrypto, type KeyObject } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { jwtVerify, type JWTVerifyOptions } from 'jose';
import { MAX_TOKEN_LENGTH, bearerToken, singleValue } from './bearer.js';
import { LauncherAuthError } from './errors.js';
import { copyRecord, generateRecord } from './record.js';
import { checkStructure, signToken, signatureMatches, splitCompact, tokenClaims } from './token.js';
import type {
  JWTPayload,
  RejectReason,
  RotateEvent,
  SecretRecord,
  SecretStore,
  TokenAuthorityOptions,
  VerifyResult,
} from './types.js';

type Rejected = Extract<VerifyResult, { ok: false }>;
type Accepted = Extract<VerifyResult, { ok: true }>;

/** What `rotate()` waits for a save by default: long enough for any disk, short enough to see a hung store. */
const DEFAULT_SAVE_TIMEOUT = 60_000;
/** The longest delay `setTimeout` honours; a larger one would fire at once. */
const MAX_TIMEOUT = 2 ** 31 - 1;
/** Rejection of a save that outlived `saveTimeout`; never leaves this module. */
const SAVE_TIMED_OUT: unique symbol = Symbol('launcher-auth.save-timed-out');

const REJECTED: Readonly<Record<RejectReason, Rejected>> = Object.freeze({
  missing: Object.freeze({ ok: false, reason: 'missing' }),
  malformed: Object.freeze({ ok: false, reason: 'malformed' }),
  invalid: Object.freeze({ ok: false, reason: 'invalid' }),
});
/** The same refusals, already settled: a cheap refusal through `verify()`/`authenticate()` allocates nothing. */
const REJECTED_PROMISES: Readonly<Record<RejectReason, Promise<VerifyResult>>> = Object.freeze({
  missing: Promise.resolve(REJECTED.missing),
  malformed: Promise.resolve(REJECTED.malformed),
  invalid: Promise.resolve(REJECTED.invalid),
});
/**
 * How many rotated-away tokens are kept to refuse without an HMAC: the script still sending the token from before
 * "Regenerate token" is the usual 401. A fixed number, set at rotation: nothing a client sends can grow it.
 */
const RETIRED_KEPT = 2;

/**
 * Everything derived from one secret, built before it is swapped in so that a swap is one assignment.
 * The key bytes live only in the two imported keys; the strings here are the public token.
 */
interface KeyState {
  readonly record: SecretRecord;
  readonly token: string;
  readonly tokenBytes: Buffer;
  /** `Bearer <token>`: the common header spelling, compared whole without slicing the header value. */
  readonly headerBytes: Buffer;
  /** Reused for the constant-time comparisons, so the current-token path allocates nothing. */
  readonly headerScratch: Buffer;
  readonly tokenScratch: Buffer;
  readonly hmacKey: KeyObject;
  readonly cryptoKey: CryptoKey;
  readonly controller: AbortController;
  /** The frozen result returned for the current token, and the same already settled. */
  readonly accepted: Accepted;
  readonly acceptedPromise: Promise<VerifyResult>;
  /** The token's signing input (`header.payload`), as a view of `tokenBytes`, and the same view of `tokenScratch`. */
  readonly signingInput: Buffer;
  readonly signingInputScratch: Buffer;
  readonly joseOptions: JWTVerifyOptions;
}

async function buildState(record: SecretRecord, issuer: string | undefined): Promise<KeyState> {
  const cryptoKey = await webcrypto.subtle.importKey(
    'raw',
    record.key,
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign', 'verify'],
  );
  const claims = tokenClaims(record, issuer);
  const token = await signToken(record, claims, cryptoKey);
  const controller = new AbortController();
  // Every open SSE stream or WebSocket of this key listens on the one signal: no listener cap, no warning.
  setMaxListeners(0, controller.signal);
  const headerBytes = Buffer.from(`Bearer ${token}`, 'latin1');
  const tokenBytes = Buffer.from(token, 'latin1');
  const tokenScratch = Buffer.alloc(token.length);
  const signingInputLength = token.lastIndexOf('.');
  // The claims are flat (jti, iat, iss): freezing the object freezes them all, so one result can be shared.
  const accepted: Accepted = Object.freeze({
    ok: true,
    claims: Object.freeze({ ...claims }) as JWTPayload,
    keyId: record.id,
    signal: controller.signal,
  });
  return {
    record,
    token,
    tokenBytes,
    headerBytes,
    headerScratch: Buffer.alloc(headerBytes.length),
    tokenScratch,
    hmacKey: createSecretKey(record.key),
    cryptoKey,
    controller,
    accepted,
    acceptedPromise: Promise.resolve(accepted),
    signingInput: tokenBytes.subarray(0, signingInputLength),
    signingInputScratch: tokenScratch.subarray(0, signingInputLength),
    joseOptions: issuer === undefined ? { algorithms: ['HS256'] } : { algorithms: ['HS256'], issuer },
  };
}

/**
 * True when `value` has exactly the bytes of `expected`. Written as UTF-8 into a reused buffer: any non-ASCII
 * character becomes bytes of 0x80 and above, which the ASCII `expected` never holds, so no other string can
 * compare equal. The caller has checked that the lengths agree.
 */
function sameBytes(value: string, expected: Buffer, scratch: Buffer): boolean {
  return scratch.write(value, 0, 'utf8') === expected.length && timingSafeEqual(scratch, expected);
}

function sameRecord(a: SecretRecord, b: SecretRecord): boolean {
  return (
    a.id === b.id &&
    a.createdAt.getTime() === b.createdAt.getTime() &&
    a.key.byteLength === b.key.byteLength &&
    timingSafeEqual(a.key, b.key)
  );
}

/**
 * The decision adapters ask for: a result at once when it can be had without waiting (the current token, any
 * cheap rejection), else a promise. Not part of the public surface (the barrel does not export it).
 */
export let authenticateNow: (
  authority: TokenAuthority,
  authorization: string | readonly string[] | undefined,
) => VerifyResult | Promise<VerifyResult>;

export class TokenAuthority {
  #state: KeyState;
  readonly #store: SecretStore;
  readonly #issuer: string | undefined;
  readonly #onStoreError: ((error: Error) => void) | undefined;
  readonly #saveTimeout: number;
  readonly #listeners = new Set<(event: RotateEvent) => void>();
  /** Rotations and reloads run one after another in this chain; the last one wins. */
  #queue: Promise<unknown> = Promise.resolve();
  #reloadQueued = false;
  #unwatch: (() => void) | undefined;
  #closed = false;
  /** The last {@link RETIRED_KEPT} rotated-away tokens, newest first. */
  #retired: readonly Buffer[] = [];

  static {
    authenticateNow = (authority, authorization) => authority.#authenticateNow(authorization);
  }

  private constructor(
    state: KeyState,
    store: SecretStore,
    issuer: string | undefined,
    onStoreError: ((error: Error) => void) | undefined,
    saveTimeout: number,
  ) {
    this.#state = state;
    this.#store = store;
    this.#issuer = issuer;
    this.#onStoreError = onStoreError;
    this.#saveTimeout = saveTimeout;
  }

  /**
   * Loads the secret from `store`, or generates one and saves it when the store is empty, and starts following
   * the store's changes when it can report them.
   * @throws TypeError when an option is wrong; LauncherAuthError when the store cannot be read or saved.
   */
  static async open(options: TokenAuthorityOptions): Promise<TokenAuthority> {
    if (typeof options !== 'object' || options === null) {
      throw new TypeError('TokenAuthority.open: options must be an object with a `store`.');
    }
    const { store, issuer, onStoreError, saveTimeout = DEFAULT_SAVE_TIMEOUT } = options;
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
    if (onStoreError !== undefined && typeof onStoreError !== 'function') {
      throw new TypeError('TokenAuthority.open: `onStoreError` must be a function when set.');
    }
    if (!Number.isInteger(saveTimeout) || saveTimeout < 0 || saveTimeout > MAX_TIMEOUT) {
      throw new TypeError(
        `TokenAuthority.open: \`saveTimeout\` must be a whole number of milliseconds from 0 (no limit) to ${MAX_TIMEOUT}.`,
      );
    }

    const loaded = await store.load();
    let record: SecretRecord;
    if (loaded === undefined) {
      record = generateRecord();
      await store.save(record);
    } else {
      record = copyRecord(loaded);
    }
    const authority = new TokenAuthority(await buildState(record, issuer), store, issuer, onStoreError, saveTimeout);
    authority.#unwatch = store.watch?.(() => authority.#storeChanged());
    return authority;
  }

  /** The current token: the same string on every call until the next rotation. */
  issue(): string {
    return this.#state.token;
  }

  /** The id of the current key (the token's `kid`); not secret. */
  get keyId(): string {
    return this.#state.record.id;
  }

  /**
   * "Regenerate token": makes a new secret, saves it, then makes it current. From the moment this resolves,
   * every token of the previous key is refused and the new token is accepted. Concurrent calls run one after
   * another. When the store cannot save, rejects with `ERR_SAVE_FAILED` and nothing changes. When the save has
   * not settled within `saveTimeout`, rejects with `ERR_SAVE_FAILED` too, and the next rotation or reload goes
   * ahead; should that save settle later, the authority reloads the store and adopts what it then holds.
   */
  rotate(): Promise<string> {
    const run = this.#queue.then(() => this.#rotateNow());
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /** Verifies a bare token (without the `Bearer ` prefix). Never throws or rejects. */
  verify(token: string): Promise<VerifyResult> {
    return this.#settled(this.#verifyNow(token));
  }

  /**
   * Verifies a raw Authorization value, or the list of them (Node's `req.headersDistinct.authorization`), so
   * that two Authorization headers are refused. Never throws or rejects.
   */
  authenticate(authorization: string | readonly string[] | undefined): Promise<VerifyResult> {
    return this.#settled(this.#authenticateNow(authorization));
  }

  /** Calls `listener` after each rotation, including one made by another process. Returns the unsubscribe. */
  onRotate(listener: (event: RotateEvent) => void): () => void {
    if (typeof listener !== 'function') throw new TypeError('onRotate: `listener` must be a function.');
    const entry = (event: RotateEvent): void => listener(event);
    this.#listeners.add(entry);
    return () => {
      this.#listeners.delete(entry);
    };
  }

  /**
   * Stops following the store. From then on every verification is refused, `rotate()` rejects with
   * `ERR_CLOSED`, and the current key's `signal` aborts so that long-lived responses end.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#unwatch?.();
    this.#unwatch = undefined;
    this.#state.controller.abort(new LauncherAuthError('ERR_CLOSED', 'The token authority was closed.'));
  }

  /** A synchronous result as one of the promises settled in advance; only jose's path makes a new one. */
  #settled(result: VerifyResult | Promise<VerifyResult>): Promise<VerifyResult> {
    if (result instanceof Promise) return result;
    // A synchronous acceptance is always the current key's shared result (jose's path is the asynchronous one).
    return result.ok ? this.#state.acceptedPromise : REJECTED_PROMISES[result.reason];
  }

  #authenticateNow(authorization: string | readonly string[] | undefined): VerifyResult | Promise<VerifyResult> {
    const value = singleValue(authorization);
    if (value === 'missing' || value === 'malformed' || value === 'invalid') return REJECTED[value];
    const state = this.#state;
    // The common spelling of the current token, compared whole: no slice, no allocation.
    if (
      value.length === state.headerBytes.length &&
      !this.#closed &&
      sameBytes(value, state.headerBytes, state.headerScratch)
    ) {
      return state.accepted;
    }
    const token = bearerToken(value);
    if (token === 'missing' || token === 'malformed' || token === 'invalid') return REJECTED[token];
    return this.#verifyNow(token);
  }

  #verifyNow(token: string): VerifyResult | Promise<VerifyResult> {
    if (typeof token !== 'string' || token.length === 0) return REJECTED.missing;
    if (token.length > MAX_TOKEN_LENGTH) return REJECTED.malformed;
    if (this.#closed) return REJECTED.invalid;
    const state = this.#state;
    const sameLength = token.length === state.tokenBytes.length;
    if (sameLength && sameBytes(token, state.tokenBytes, state.tokenScratch)) return state.accepted;
    const parts = splitCompact(token);
    if (parts === 'malformed') return REJECTED.malformed;
    // Two forgeries refused without an HMAC, compared in constant time against the bytes sameBytes left in the
    // scratch (exactly the token's: splitCompact has just shown it is ASCII): a token from before a recent
    // rotation, and the current token's header and claims under another signature (the only valid signature
    // for that signing input is the current token's own).
    if (
      sameLength &&
      ((parts.payloadEnd === state.signingInput.length && timingSafeEqual(state.signingInputScratch, state.signingInput)) ||
        this.#isRetired(state.tokenScratch))
    ) {
      return REJECTED.invalid;
    }
    if (!signatureMatches(token, parts.payloadEnd, state.hmacKey)) return REJECTED.invalid;
    const problem = checkStructure(token, parts.headerEnd, parts.payloadEnd);
    if (problem !== undefined) return REJECTED[problem];
    return this.#verifyWithJose(token, state);
  }

  /** Whether `bytes` are one of the recently rotated-away tokens; every kept token of that length is compared. */
  #isRetired(bytes: Buffer): boolean {
    let found = false;
    for (const retired of this.#retired) {
      if (retired.length === bytes.length && timingSafeEqual(retired, bytes)) found = true;
    }
    return found;
  }

  /** Only reached by a token signed with the current key: jose has the last word on it. */
  async #verifyWithJose(token: string, state: KeyState): Promise<VerifyResult> {
    let claims: JWTPayload;
    try {
      ({ payload: claims } = await jwtVerify(token, state.cryptoKey, state.joseOptions));
    } catch {
      return REJECTED.invalid;
    }
    // Linearizability: a verification that settles after a rotation resolved never accepts the old key.
    if (this.#state !== state || this.#closed) return REJECTED.invalid;
    return Object.freeze({ ok: true, claims: Object.freeze(claims), keyId: state.record.id, signal: state.controller.signal });
  }

  async #rotateNow(): Promise<string> {
    if (this.#closed) throw new LauncherAuthError('ERR_CLOSED', 'The token authority was closed.');
    const record = generateRecord();
    const next = await buildState(record, this.#issuer);
    try {
      await this.#saveWithin(record);
    } catch (cause) {
      if (cause === SAVE_TIMED_OUT) {
        throw new LauncherAuthError(
          'ERR_SAVE_FAILED',
          `The secret store's save() did not settle within ${this.#saveTimeout} ms (timed out); nothing changed ` +
            'and the current token stays valid. Should that save finish later, the store is reloaded and what ' +
            'it then holds is adopted.',
        );
      }
      throw new LauncherAuthError(
        'ERR_SAVE_FAILED',
        'Could not save the new secret; nothing changed and the current token stays valid.',
        { cause },
      );
    }
    if (this.#closed) {
      // close() came while saving: a closed authority trusts nothing and tells no listener of a new key.
      throw new LauncherAuthError(
        'ERR_CLOSED',
        'The token authority was closed while the new secret was being saved; the store holds the new secret.',
      );
    }
    this.#install(next);
    return next.token;
  }

  /**
   * `store.save(record)`, given up on after `saveTimeout` ms. A save that settles after that, either way, may have
   * changed the store behind the rotation that gave up on it: reconcile exactly as after an external change.
   */
  #saveWithin(record: SecretRecord): Promise<void> {
    let saving: Promise<void>;
    try {
      saving = Promise.resolve(this.#store.save(record));
    } catch (error) {
      return Promise.reject(error);
    }
    const limit = this.#saveTimeout;
    if (limit === 0) return saving;
    return new Promise<void>((resolve, reject) => {
      let late = false;
      // Unreferenced: a pending rotation must not be what keeps the host process alive.
      const timer = setTimeout(() => {
        late = true;
        reject(SAVE_TIMED_OUT);
      }, limit).unref();
      saving.then(
        () => {
          if (late) this.#storeChanged();
          else {
            clearTimeout(timer);
            resolve();
          }
        },
        (error: unknown) => {
          if (late) this.#storeChanged();
          else {
            clearTimeout(timer);
            reject(error);
          }
        },
      );
    });
  }

  #storeChanged(): void {
    if (this.#closed || this.#reloadQueued) return;
    this.#reloadQueued = true;
    this.#queue = this.#queue.then(async () => {
      this.#reloadQueued = false;
      if (this.#closed) return;
      try {
        const loaded = await this.#store.load();
        if (loaded === undefined) {
          throw new LauncherAuthError(
            'ERR_STORE_IO',
            'The secret disappeared from the store; the current key stays in use until a rotation saves a new one.',
          );
        }
        const record = copyRecord(loaded);
        if (sameRecord(record, this.#state.record)) return;
        const next = await buildState(record, this.#issuer);
        if (!this.#closed) this.#install(next);
      } catch (error) {
        try {
          this.#onStoreError?.(error instanceof Error ? error : new Error(String(error)));
        } catch {
          // The host's handler failed; the chain must stay usable for the next rotation.
        }
      }
    });
  }

  #install(next: KeyState): void {
    const previous = this.#state;
    this.#state = next;
    // A store may bring back an earlier secret (a restored backup): its token is then current, never retired.
    this.#retired = [previous.tokenBytes, ...this.#retired]
      .filter((retired) => !retired.equals(next.tokenBytes))
      .slice(0, RETIRED_KEPT);
    previous.controller.abort(
      new LauncherAuthError('ERR_KEY_ROTATED', 'The key that authenticated this request was rotated away.'),
    );
    const event: RotateEvent = { keyId: next.record.id, previousKeyId: previous.record.id };
    for (const listener of [...this.#listeners]) {
      try {
        listener(event);
      } catch (error) {
        // A listener's bug must not undo a rotation already made; surface it like an EventEmitter would.
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }
}

// TokenAuthority: holds the current secret, issues its one token and verifies; rotation and following the store
// are in rotation.ts.
import { timingSafeEqual } from 'node:crypto';
import { jwtVerify } from 'jose';
import { MALFORMED, MISSING, SCHEME_LENGTH, bearerToken, singleValue, startsWithScheme } from './bearer.js';
import { LauncherAuthError } from './errors.js';
import { authenticateNow, tokenState } from './internal.js';
import { buildState, deepFreeze, type ClaimOptions, type KeyState, type Scratch } from './key-state.js';
import { openOptions } from './options.js';
import { initialRecord } from './record.js';
import { Rotations } from './rotation.js';
import type { Runtime } from './runtime.js';
import { checkStructure, isCanonicalBase64url, signatureMatches, splitCompact } from './token.js';
import type {
  JWTPayload,
  RejectReason,
  RotateEvent,
  SecretStore,
  StoreLink,
  TokenAuthorityOptions,
  TokenState,
  VerifyResult,
} from './types.js';

type Rejected = Extract<VerifyResult, { ok: false }>;

const REJECTED: Readonly<Record<RejectReason, Rejected>> = Object.freeze({
  missing: MISSING,
  malformed: MALFORMED,
  invalid: Object.freeze({ ok: false, reason: 'invalid' }),
  rotated: Object.freeze({ ok: false, reason: 'rotated' }),
  suspended: Object.freeze({ ok: false, reason: 'suspended' }),
});
/** The same refusals, already settled: a cheap refusal through `verify()`/`authenticate()` allocates nothing. */
const REJECTED_PROMISES: Readonly<Record<RejectReason, Promise<VerifyResult>>> = Object.freeze({
  missing: Promise.resolve(REJECTED.missing),
  malformed: Promise.resolve(REJECTED.malformed),
  invalid: Promise.resolve(REJECTED.invalid),
  rotated: Promise.resolve(REJECTED.rotated),
  suspended: Promise.resolve(REJECTED.suspended),
});
/**
 * How many rotated-away tokens are kept to refuse without an HMAC: the script still sending the token from before
 * "Regenerate token" is the usual 401. A fixed number, set at rotation: nothing a client sends can grow it.
 */
const RETIRED_KEPT = 2;
const DOT = 0x2e;

export class TokenAuthority {
  #state: KeyState;
  readonly #claimOptions: ClaimOptions;
  readonly #onStoreError: ((error: Error) => void) | undefined;
  /** `maxTokenLength`: set once in open(), right after construction. */
  #maxTokenLength = 0;
  readonly #listeners = new Set<(event: RotateEvent) => void>();
  readonly #rotations: Rotations<KeyState>;
  #unwatch: (() => void | Promise<void>) | undefined;
  #closed = false;
  /**
   * Until when (a `performance.now()` time) tokens are trusted: `Infinity` unless a store bounds it through its
   * {@link StoreLink}; `-Infinity` once closed. Checked on every verification.
   */
  #trustUntil = Infinity;
  /** The last {@link RETIRED_KEPT} rotated-away tokens, newest first. */
  #retired: readonly Buffer[] = [];
  /** The monotonic clock that {@link #trustUntil} is measured on (Node's `performance.now()` outside a simulator). */
  readonly #now: () => number;
  /** A bound the store set for the key a rotation is saving: it applies when that key becomes current. */
  #pendingTrust: { readonly keyId: string; readonly deadline: number } | undefined;
  /** The key is a placeholder, never saved: the store's secret went back (see SecretStore.load). */
  #placeholder = false;

  private constructor(
    state: KeyState,
    store: SecretStore,
    claimOptions: ClaimOptions,
    onStoreError: ((error: Error) => void) | undefined,
    saveTimeout: number,
    runtime: Runtime,
  ) {
    this.#state = state;
    this.#now = runtime.now;
    this.#claimOptions = claimOptions;
    this.#onStoreError = onStoreError;
    this.#rotations = new Rotations(
      store,
      saveTimeout,
      {
        current: () => this.#state.record,
        closed: () => this.#closed,
        prepare: (record) => buildState(record, claimOptions),
        install: (next) => this.#install(next),
        token: (next) => next.token,
        storeError: (error) => this.#onStoreError?.(error),
      },
      runtime,
    );
  }

  /**
   * Loads the secret from `store`, or generates one and saves it when the store is empty, and starts following
   * the store's changes when it can report them.
   * @throws TypeError when an option is wrong; LauncherAuthError when the store cannot be read or saved.
   */
  static async open(options: TokenAuthorityOptions): Promise<TokenAuthority> {
    const { store, issuer, audience, onStoreError, saveTimeout, maxTokenLength, runtime } = openOptions(options);

    const { record, lost } = await initialRecord(store, runtime.random);
    const claimOptions: ClaimOptions = Object.freeze({ issuer, audience });
    const authority = new TokenAuthority(
      await buildState(record, claimOptions),
      store,
      claimOptions,
      onStoreError,
      saveTimeout,
      runtime,
    );
    authority.#maxTokenLength = maxTokenLength;
    if (authority.issue().length > maxTokenLength) {
      throw new TypeError(
        `TokenAuthority.open: \`maxTokenLength\` (${maxTokenLength}) is shorter than this authority's own token ` +
          `(${authority.issue().length} characters, with this \`issuer\` and \`audience\`).`,
      );
    }
    if (lost !== undefined) {
      authority.#placeholder = true;
      authority.#trustUntil = -Infinity;
    }
    if (store.watch !== undefined) {
      const link: StoreLink = Object.freeze({
        get keyId(): string {
          return authority.#state.record.id;
        },
        trustUntil(deadline: number, keyId?: string): void {
          authority.#setTrust(deadline, keyId);
        },
        reportsErrors: onStoreError !== undefined,
      });
      // A store that must reach a server before it can vouch for the key makes open() wait, or fail.
      const unwatch = await store.watch(() => authority.#rotations.reload(), link);
      if (typeof unwatch !== 'function') {
        await authority.close();
        throw new TypeError(
          'TokenAuthority.open: `store.watch` must return an unsubscribe function (or a promise of one).',
        );
      }
      authority.#unwatch = unwatch;
    }
    try {
      if (lost !== undefined) onStoreError?.(lost);
    } catch {
      // The host's handler failed; the authority is open all the same.
    }
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
   * "Regenerate token": makes a new secret, saves it, then makes it current. Concurrent calls run one after another.
   * - Resolves with the new token once it is saved and current: from then on it is accepted and every earlier
   *   token is refused.
   * - `ERR_SAVE_FAILED`: the save failed and the store holds what it held: nothing changed and nothing will; the
   *   current token stays valid.
   * - `ERR_SAVE_CONFLICT`: another rotation, made elsewhere, came first and its secret is now current here
   *   (`onRotate` reports it); `ERR_ROTATION_SUPERSEDED`: this one was saved, then replaced by another before it
   *   was confirmed, whose secret is now current here.
   * - `ERR_SAVE_UNCERTAIN`: whether the secret was saved is not known (the save did not settle within
   *   `saveTimeout` and the grace after it was told to stop, or the store could not tell). The authority reads the
   *   store at once, again when that save settles, and at each change the store reports, and adopts what it holds;
   *   `onRotate` reports it if the key changes. The later rotations and reloads are not held up.
   * - `ERR_CLOSED`: the authority was closed.
   */
  rotate(): Promise<string> {
    return this.#rotations.rotate();
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
    return this.#settled(this[authenticateNow](authorization));
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
   * `ERR_CLOSED`, and the current key's `signal` aborts so that long-lived responses end. Resolves once the store
   * has stopped watching (a shared store leaves its instance table first), so that the host may then close the
   * store's connection.
   */
  async close(): Promise<void> {
    this.#closed = true;
    this.#trustUntil = -Infinity;
    const unwatch = this.#unwatch;
    this.#unwatch = undefined;
    this.#state.controller.abort(new LauncherAuthError('ERR_CLOSED', 'The token authority was closed.'));
    try {
      await unwatch?.();
    } catch {
      // The store could not say goodbye; the authority is closed all the same.
    }
  }

  /** A synchronous result as one of the promises settled in advance; only jose's path makes a new one. */
  #settled(result: VerifyResult | Promise<VerifyResult>): Promise<VerifyResult> {
    if (result instanceof Promise) return result;
    // A synchronous acceptance is always the current key's shared result (jose's path is the asynchronous one).
    return result.ok ? this.#state.acceptedPromise : REJECTED_PROMISES[result.reason];
  }

  /** @internal The gate's decision (see internal.ts): synchronous whenever no signature needs jose. */
  [authenticateNow](authorization: string | readonly string[] | undefined): VerifyResult | Promise<VerifyResult> {
    const value = singleValue(authorization);
    if (typeof value !== 'string') return value;
    const state = this.#state;
    // The common spelling (the scheme, one space, a token as long as the current one) is compared in place: no
    // slice, so the current token allocates nothing, and one comparison serves both the header and the token.
    if (
      value.length === state.bearer.whole.length &&
      this.#trusted() &&
      startsWithScheme(value) &&
      value.charCodeAt(SCHEME_LENGTH) !== 0x20
    ) {
      return this.#known(value, state, state.bearer) ?? this.#verifySigned(value.slice(SCHEME_LENGTH), state);
    }
    const token = bearerToken(value);
    if (typeof token !== 'string') return token;
    return this.#verifyNow(token);
  }

  #verifyNow(token: string): VerifyResult | Promise<VerifyResult> {
    if (typeof token !== 'string' || token.length === 0) return REJECTED.missing;
    if (token.length > this.#maxTokenLength) return REJECTED.malformed;
    if (!this.#trusted()) return this.#closed ? REJECTED.invalid : REJECTED.suspended;
    const state = this.#state;
    if (token.length === state.tokenBytes.length) {
      const known = this.#known(token, state, state.bare);
      if (known !== undefined) return known;
    }
    return this.#verifySigned(token, state);
  }

  /**
   * The answer for `text` (a token as long as the current one, at `scratch.offset`) when it is a token this
   * authority knows, compared in constant time: the current token is accepted; a token from before a recent
   * rotation, and the current header and claims under another signature (the only valid signature for them is
   * the current token's own), are refused without an HMAC. `undefined` for any other text.
   */
  #known(text: string, state: KeyState, scratch: Scratch): VerifyResult | undefined {
    const { offset } = scratch;
    // Public shape first: a text without dots where the current token has them (garbage) is none of these, and is
    // refused several times faster for it (npm run bench, garbage).
    if (text.charCodeAt(offset + state.headerEnd) !== DOT || text.charCodeAt(offset + state.payloadEnd) !== DOT) {
      return undefined;
    }
    // Written as UTF-8: a non-ASCII character becomes bytes of 0x80 and above, which no token holds, so only the
    // very same string can compare equal. A text that does not fill the scratch (it would leave an earlier text's
    // bytes behind) is compared with nothing.
    if (scratch.whole.write(text) !== scratch.whole.length) return undefined;
    if (timingSafeEqual(scratch.token, state.tokenBytes)) return state.accepted;
    if (this.#isRetired(scratch.token)) return REJECTED.rotated;
    if (timingSafeEqual(scratch.signingInput, state.signingInput)) {
      // Refused either way; the reason is the one the syntax checks would give.
      return isCanonicalBase64url(text, offset + state.payloadEnd + 1, text.length)
        ? REJECTED.invalid
        : REJECTED.malformed;
    }
    return undefined;
  }

  /** Syntax, the HMAC, the header rules, then jose: for a token that is not one {@link #known} recognises. */
  #verifySigned(token: string, state: KeyState): VerifyResult | Promise<VerifyResult> {
    const parts = splitCompact(token);
    if (parts === 'malformed') return REJECTED.malformed;
    if (!signatureMatches(token, parts.payloadEnd, state.hmacKey)) {
      // A recently rotated-away token of another length than the current one (ids of other lengths) is named too.
      return this.#isRetired(Buffer.from(token)) ? REJECTED.rotated : REJECTED.invalid;
    }
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
      ({ payload: claims } = await jwtVerify(token, state.hmacKey, state.joseOptions));
    } catch {
      return REJECTED.invalid;
    }
    // Linearizability: a verification that settles after a rotation resolved never accepts the old key.
    if (this.#state !== state || this.#closed) return REJECTED.invalid;
    if (!this.#trusted()) return REJECTED.suspended;
    // RFC 7519 §4.1.3: a token meant for an audience is refused by a recipient that has none (jose checks `aud`
    // only when asked to).
    if (this.#claimOptions.audience === undefined && Object.hasOwn(claims, 'aud')) return REJECTED.invalid;
    // The signal is left as it is: it must still be able to abort.
    return Object.freeze({
      ok: true,
      claims: deepFreeze(claims),
      keyId: state.record.id,
      signal: state.controller.signal,
    });
  }

  /** Whether tokens may be accepted now: open, and within the bound a store set (checked on the monotonic clock). */
  #trusted(): boolean {
    const until = this.#trustUntil;
    // Without a bound the clock is not read: reading it costs each request a heap number (npm run bench).
    return until === Infinity || this.#now() < until;
  }

  /** @internal For the settings helpers: whether the current token is accepted now, and why not. */
  [tokenState](): TokenState {
    if (this.#closed) return 'stopped';
    if (this.#placeholder) return 'lost';
    return this.#trusted() ? 'ok' : 'suspended';
  }

  #setTrust(deadline: number, keyId: string | undefined): void {
    if (typeof deadline !== 'number' || Number.isNaN(deadline)) {
      throw new TypeError('StoreLink.trustUntil: `deadline` must be a performance.now() time in milliseconds.');
    }
    if (this.#closed) return;
    if (keyId === undefined || keyId === this.#state.record.id) this.#trustUntil = deadline;
    else this.#pendingTrust = { keyId, deadline };
  }

  #install(next: KeyState): void {
    const previous = this.#state;
    const pending = this.#pendingTrust;
    this.#pendingTrust = undefined;
    this.#placeholder = false;
    this.#state = next;
    if (pending?.keyId === next.record.id) this.#setTrust(Math.max(this.#trustUntil, pending.deadline), undefined);
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

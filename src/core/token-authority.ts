// TokenAuthority: holds the current secret, issues its one token, verifies, rotates, and follows the store.
import { createSecretKey, timingSafeEqual, webcrypto, type KeyObject } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import { performance } from 'node:perf_hooks';
import { jwtVerify, type JWTVerifyOptions } from 'jose';
import { SCHEME_LENGTH, bearerToken, resolveMaxTokenLength, singleValue, startsWithScheme } from './bearer.js';
import { LauncherAuthError } from './errors.js';
import { copyRecord, generateRecord } from './record.js';
import { checkStructure, isCanonicalBase64url, signToken, signatureMatches, splitCompact, tokenClaims } from './token.js';
import type {
  JWTPayload,
  RejectReason,
  RotateEvent,
  SecretRecord,
  SecretStore,
  StoreLink,
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
/** How many ids of records this authority tried to save are remembered, to tell its own abandoned saves apart. */
const OWN_RECORDS_KEPT = 32;
/**
 * How many rotated-away tokens are kept to refuse without an HMAC: the script still sending the token from before
 * "Regenerate token" is the usual 401. A fixed number, set at rotation: nothing a client sends can grow it.
 */
const RETIRED_KEPT = 2;
const DOT = 0x2e;

/**
 * A buffer reused for the constant-time comparisons of texts as long as `offset` + the current token, so that the
 * current-token path allocates nothing, and its views on the token and on the token's signing input.
 */
interface Scratch {
  /** Where the token starts in the text: 0 for a bare token, {@link SCHEME_LENGTH} after `Bearer `. */
  readonly offset: number;
  readonly whole: Buffer;
  readonly token: Buffer;
  readonly signingInput: Buffer;
}

function scratchFor(offset: number, tokenLength: number, signingInputLength: number): Scratch {
  const whole = Buffer.alloc(offset + tokenLength);
  return { offset, whole, token: whole.subarray(offset), signingInput: whole.subarray(offset, offset + signingInputLength) };
}

/** Freezes `value` and everything reachable from it: for claims, which are JSON (no cycles, no accessors). */
function deepFreeze<T>(value: T): T {
  const pending: unknown[] = [value];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if (typeof next !== 'object' || next === null || Object.isFrozen(next)) continue;
    Object.freeze(next);
    for (const child of Object.values(next)) pending.push(child);
  }
  return value;
}

/**
 * Everything derived from one secret, built before it is swapped in so that a swap is one assignment.
 * The key bytes live only in the two imported keys; the strings here are the public token.
 */
interface KeyState {
  readonly record: SecretRecord;
  readonly token: string;
  readonly tokenBytes: Buffer;
  /** The token's signing input (`header.payload`), as a view of `tokenBytes`. */
  readonly signingInput: Buffer;
  /** Where the token's two dots are: public, since the lengths of its header and claims are. */
  readonly headerEnd: number;
  readonly payloadEnd: number;
  /** For a bare token (`verify()`), and for `Bearer <token>` compared in place without slicing the header value. */
  readonly bare: Scratch;
  readonly bearer: Scratch;
  readonly hmacKey: KeyObject;
  readonly cryptoKey: CryptoKey;
  readonly controller: AbortController;
  /** The frozen result returned for the current token, and the same already settled. */
  readonly accepted: Accepted;
  readonly acceptedPromise: Promise<VerifyResult>;
  readonly joseOptions: JWTVerifyOptions;
}

/** The claims that the options add to the token, and require of any other token. */
interface ClaimOptions {
  readonly issuer: string | undefined;
  readonly audience: string | undefined;
}

async function buildState(record: SecretRecord, claimOptions: ClaimOptions): Promise<KeyState> {
  const { issuer, audience } = claimOptions;
  const cryptoKey = await webcrypto.subtle.importKey(
    'raw',
    record.key,
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign', 'verify'],
  );
  const claims = tokenClaims(record, issuer, audience);
  const token = await signToken(record, claims, cryptoKey);
  const controller = new AbortController();
  // Every open SSE stream or WebSocket of this key listens on the one signal: no listener cap, no warning.
  setMaxListeners(0, controller.signal);
  const tokenBytes = Buffer.from(token, 'latin1');
  const headerEnd = token.indexOf('.');
  const payloadEnd = token.lastIndexOf('.');
  // One result shared by every request with the current token: frozen all the way down, so no handler can change
  // what the next request is told.
  const accepted: Accepted = Object.freeze({
    ok: true,
    claims: deepFreeze({ ...claims }) as JWTPayload,
    keyId: record.id,
    signal: controller.signal,
  });
  return {
    record,
    token,
    tokenBytes,
    signingInput: tokenBytes.subarray(0, payloadEnd),
    headerEnd,
    payloadEnd,
    bare: scratchFor(0, token.length, payloadEnd),
    bearer: scratchFor(SCHEME_LENGTH, token.length, payloadEnd),
    hmacKey: createSecretKey(record.key),
    cryptoKey,
    controller,
    accepted,
    acceptedPromise: Promise.resolve(accepted),
    joseOptions: {
      algorithms: ['HS256'],
      ...(issuer === undefined ? {} : { issuer }),
      ...(audience === undefined ? {} : { audience }),
    },
  };
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
  readonly #claimOptions: ClaimOptions;
  readonly #onStoreError: ((error: Error) => void) | undefined;
  readonly #saveTimeout: number;
  /** `maxTokenLength`: set once in open(), right after construction. */
  #maxTokenLength = 0;
  readonly #listeners = new Set<(event: RotateEvent) => void>();
  /** Rotations and reloads run one after another in this chain; the last one wins. */
  #queue: Promise<unknown> = Promise.resolve();
  /** The reload queued and not yet started, which further change reports join. */
  #pendingReload: Promise<void> | undefined;
  #unwatch: (() => void) | undefined;
  #closed = false;
  /**
   * Until when (a `performance.now()` time) tokens are trusted: `Infinity` unless a store bounds it through its
   * {@link StoreLink}; `-Infinity` once closed. Checked on every verification.
   */
  #trustUntil = Infinity;
  /** Ids of the records this authority saved or tried to save, newest last: its own, should one land late. */
  #ownRecords: string[] = [];
  /** The last {@link RETIRED_KEPT} rotated-away tokens, newest first. */
  #retired: readonly Buffer[] = [];

  static {
    authenticateNow = (authority, authorization) => authority.#authenticateNow(authorization);
  }

  private constructor(
    state: KeyState,
    store: SecretStore,
    claimOptions: ClaimOptions,
    onStoreError: ((error: Error) => void) | undefined,
    saveTimeout: number,
  ) {
    this.#state = state;
    this.#store = store;
    this.#claimOptions = claimOptions;
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

    const loaded = await store.load();
    let record: SecretRecord;
    if (loaded === undefined) {
      record = generateRecord();
      await store.save(record);
    } else {
      record = copyRecord(loaded);
    }
    const claimOptions: ClaimOptions = Object.freeze({ issuer, audience });
    const authority = new TokenAuthority(await buildState(record, claimOptions), store, claimOptions, onStoreError, saveTimeout);
    authority.#remember(record.id);
    authority.#maxTokenLength = maxTokenLength;
    if (authority.issue().length > maxTokenLength) {
      throw new TypeError(
        `TokenAuthority.open: \`maxTokenLength\` (${maxTokenLength}) is shorter than this authority's own token ` +
          `(${authority.issue().length} characters, with this \`issuer\` and \`audience\`).`,
      );
    }
    if (store.watch !== undefined) {
      const link: StoreLink = Object.freeze({
        get keyId(): string {
          return authority.#state.record.id;
        },
        trustUntil(deadline: number): void {
          authority.#setTrust(deadline);
        },
      });
      // A store that must reach a server before it can vouch for the key makes open() wait, or fail.
      const unwatch = await store.watch(() => authority.#storeChanged(), link);
      if (typeof unwatch !== 'function') {
        await authority.close();
        throw new TypeError('TokenAuthority.open: `store.watch` must return an unsubscribe function (or a promise of one).');
      }
      authority.#unwatch = unwatch;
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
    this.#trustUntil = -Infinity;
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
    if (token === 'missing' || token === 'malformed' || token === 'invalid') return REJECTED[token];
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
    // Public shape first: a text without dots where the current token has them (garbage) is none of these.
    if (text.charCodeAt(offset + state.headerEnd) !== DOT || text.charCodeAt(offset + state.payloadEnd) !== DOT) {
      return undefined;
    }
    // Written as UTF-8: a non-ASCII character becomes bytes of 0x80 and above, which no token holds, so only the
    // very same string can compare equal. A text that does not fill the scratch (it would leave an earlier text's
    // bytes behind) is compared with nothing.
    if (scratch.whole.write(text, 0, 'utf8') !== scratch.whole.length) return undefined;
    if (timingSafeEqual(scratch.token, state.tokenBytes)) return state.accepted;
    if (this.#isRetired(scratch.token)) return REJECTED.rotated;
    if (timingSafeEqual(scratch.signingInput, state.signingInput)) {
      // Refused either way; the reason is the one the syntax checks would give.
      return isCanonicalBase64url(text, offset + state.payloadEnd + 1, text.length) ? REJECTED.invalid : REJECTED.malformed;
    }
    return undefined;
  }

  /** Syntax, the HMAC, the header rules, then jose: for a token that is not one {@link #known} recognises. */
  #verifySigned(token: string, state: KeyState): VerifyResult | Promise<VerifyResult> {
    const parts = splitCompact(token);
    if (parts === 'malformed') return REJECTED.malformed;
    if (!signatureMatches(token, parts.payloadEnd, state.hmacKey)) {
      // A recently rotated-away token of another length than the current one (ids of other lengths) is named too.
      return this.#isRetiredText(token) ? REJECTED.rotated : REJECTED.invalid;
    }
    const problem = checkStructure(token, parts.headerEnd, parts.payloadEnd);
    if (problem !== undefined) return REJECTED[problem];
    return this.#verifyWithJose(token, state);
  }

  /** {@link #isRetired} for a token text, which is turned into bytes only when a kept token has its length. */
  #isRetiredText(token: string): boolean {
    for (const retired of this.#retired) {
      if (retired.length === token.length) return this.#isRetired(Buffer.from(token, 'latin1'));
    }
    return false;
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
    if (!this.#trusted()) return REJECTED.suspended;
    // RFC 7519 §4.1.3: a token meant for an audience is refused by a recipient that has none (jose checks `aud`
    // only when asked to).
    if (this.#claimOptions.audience === undefined && Object.hasOwn(claims, 'aud')) return REJECTED.invalid;
    // The signal is left as it is: it must still be able to abort.
    return Object.freeze({ ok: true, claims: deepFreeze(claims), keyId: state.record.id, signal: state.controller.signal });
  }

  /** Whether tokens may be accepted now: open, and within the bound a store set (checked on the monotonic clock). */
  #trusted(): boolean {
    const until = this.#trustUntil;
    return until === Infinity || performance.now() < until;
  }

  #setTrust(deadline: number): void {
    if (typeof deadline !== 'number' || Number.isNaN(deadline)) {
      throw new TypeError('StoreLink.trustUntil: `deadline` must be a performance.now() time in milliseconds.');
    }
    if (!this.#closed) this.#trustUntil = deadline;
  }

  #remember(id: string): void {
    this.#ownRecords.push(id);
    if (this.#ownRecords.length > OWN_RECORDS_KEPT) this.#ownRecords.shift();
  }

  async #rotateNow(): Promise<string> {
    if (this.#closed) throw new LauncherAuthError('ERR_CLOSED', 'The token authority was closed.');
    const record = generateRecord();
    const next = await buildState(record, this.#claimOptions);
    this.#remember(record.id);
    try {
      await this.#saveWithin(record);
    } catch (cause) {
      if (cause === SAVE_TIMED_OUT) {
        throw new LauncherAuthError(
          'ERR_SAVE_FAILED',
          `The secret store's save() did not settle within ${this.#saveTimeout} ms (timed out); nothing changed ` +
            'and the current token stays valid. Should that save land later, it is undone.',
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
   * `store.save(record, { signal })`, given up on after `saveTimeout` ms: the signal is aborted, and should the save
   * settle after that, either way, the store is reconciled (an abandoned record of this authority's is replaced by
   * the current one; anything else is adopted as an external change).
   */
  #saveWithin(record: SecretRecord): Promise<void> {
    const limit = this.#saveTimeout;
    const controller = new AbortController();
    let saving: Promise<void>;
    try {
      saving = Promise.resolve(this.#store.save(record, { signal: controller.signal }));
    } catch (error) {
      return Promise.reject(error);
    }
    if (limit === 0) return saving;
    return new Promise<void>((resolve, reject) => {
      let late = false;
      // Unreferenced: a pending rotation must not be what keeps the host process alive.
      const timer = setTimeout(() => {
        late = true;
        controller.abort(new LauncherAuthError('ERR_SAVE_FAILED', 'The save was given up on (saveTimeout).'));
        reject(SAVE_TIMED_OUT);
      }, limit).unref();
      const settled = (error: unknown, failed: boolean): void => {
        if (late) {
          void this.#reload(true);
          return;
        }
        clearTimeout(timer);
        if (failed) reject(error);
        else resolve();
      };
      saving.then(
        () => settled(undefined, false),
        (error: unknown) => settled(error, true),
      );
    });
  }

  /** A change reported by the store: reload once, joining a reload already queued and not yet started. */
  #storeChanged(): Promise<void> {
    return this.#reload(false);
  }

  /**
   * Reads the store in the rotation queue and adopts what it holds. After an abandoned save (`repair`), a record
   * that this authority itself tried to save, and that is not its current one, is a rotation that gave up: the
   * current record is written back instead, so the token the last successful `rotate()` returned stays valid.
   */
  #reload(repair: boolean): Promise<void> {
    if (this.#closed) return Promise.resolve();
    if (!repair && this.#pendingReload !== undefined) return this.#pendingReload;
    const run = this.#queue.then(async () => {
      if (!repair) this.#pendingReload = undefined;
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
        if (repair && this.#ownRecords.includes(record.id)) {
          await this.#saveWithin(this.#state.record);
          return;
        }
        const next = await buildState(record, this.#claimOptions);
        if (!this.#closed) this.#install(next);
      } catch (error) {
        try {
          this.#onStoreError?.(error instanceof Error ? error : new Error(String(error)));
        } catch {
          // The host's handler failed; the chain must stay usable for the next rotation.
        }
      }
    });
    this.#queue = run;
    if (!repair) this.#pendingReload = run;
    return run;
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

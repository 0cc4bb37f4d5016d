// Everything derived from one secret (its token, its keys, the buffers the hot path compares in place), built
// before it is swapped in so that a swap is one assignment.
import { createSecretKey, type KeyObject } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import type { JWTVerifyOptions } from 'jose';
import { SCHEME_LENGTH } from './bearer.js';
import { signToken, tokenClaims } from './token.js';
import type { SecretRecord, VerifyResult } from './types.js';

type Accepted = Extract<VerifyResult, { ok: true }>;

/**
 * A buffer reused for the constant-time comparisons of texts as long as `offset` + the current token, so that the
 * current-token path allocates nothing, and its views on the token and on the token's signing input.
 */
export interface Scratch {
  /** Where the token starts in the text: 0 for a bare token, {@link SCHEME_LENGTH} after `Bearer `. */
  readonly offset: number;
  readonly whole: Buffer;
  readonly token: Buffer;
  readonly signingInput: Buffer;
}

function scratchFor(offset: number, tokenLength: number, signingInputLength: number): Scratch {
  const whole = Buffer.alloc(offset + tokenLength);
  return {
    offset,
    whole,
    token: whole.subarray(offset),
    signingInput: whole.subarray(offset, offset + signingInputLength),
  };
}

/** Freezes `value` and everything reachable from it: for claims, which are JSON (no cycles, no accessors). */
export function deepFreeze<T>(value: T): T {
  const pending: unknown[] = [value];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    // A primitive (null too) counts as frozen, and so does what was frozen already.
    if (Object.isFrozen(next)) continue;
    Object.freeze(next);
    for (const child of Object.values(next as object)) pending.push(child);
  }
  return value;
}

/**
 * Everything derived from one secret, built before it is swapped in so that a swap is one assignment.
 * The key bytes live only in the imported key; the strings here are the public token.
 */
export interface KeyState {
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
  /**
   * The key, for the HMAC of the hot path and for jose (which turns it into a WebCrypto key on its first use and
   * keeps that: most keys never reach jose, and a rotation imports nothing it may never need).
   */
  readonly hmacKey: KeyObject;
  readonly controller: AbortController;
  /** The frozen result returned for the current token, and the same already settled. */
  readonly accepted: Accepted;
  readonly acceptedPromise: Promise<VerifyResult>;
  readonly joseOptions: JWTVerifyOptions;
}

/** The claims that the options add to the token, and require of any other token. */
export interface ClaimOptions {
  readonly issuer: string | undefined;
  readonly audience: string | undefined;
}

export async function buildState(record: SecretRecord, claimOptions: ClaimOptions): Promise<KeyState> {
  const { issuer, audience } = claimOptions;
  const claims = tokenClaims(record, issuer, audience);
  const hmacKey = createSecretKey(record.key);
  const token = signToken(record, claims, hmacKey);
  const controller = new AbortController();
  // Every open SSE stream or WebSocket of this key listens on the one signal: no listener cap, no warning.
  setMaxListeners(0, controller.signal);
  const tokenBytes = Buffer.from(token);
  const headerEnd = token.indexOf('.');
  const payloadEnd = token.lastIndexOf('.');
  // One result shared by every request with the current token: frozen all the way down, so no handler can change
  // what the next request is told.
  const accepted: Accepted = Object.freeze({
    ok: true,
    claims: deepFreeze({ ...claims }),
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
    hmacKey,
    controller,
    accepted,
    acceptedPromise: Promise.resolve(accepted),
    // jose checks `iss` and `aud` only when the option is set: undefined is the same as absent.
    joseOptions: { algorithms: ['HS256'], issuer, audience } as JWTVerifyOptions,
  };
}

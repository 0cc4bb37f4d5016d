// What a settings window needs from the authority: the token to show (and a masked form of it), and "Regenerate
// token" with every outcome of rotate() turned into something the window can show as is. Never throws for a store.
import { isLauncherAuthError, type LauncherAuthError, type LauncherAuthErrorCode } from './errors.js';
import { tokenState } from './internal.js';
import { assertAuthority } from './assert-authority.js';
import type { TokenAuthority } from './token-authority.js';
import type { TokenState } from './types.js';

/**
 * What "Regenerate token" did, one meaning each (the rotate() outcome it stands for in brackets):
 * - `regenerated`: a new token works and every earlier one is refused (rotate() resolved);
 * - `unchanged`: nothing changed, and nothing will: the token from before still works (`ERR_SAVE_FAILED`);
 * - `regenerated-elsewhere`: another regeneration, made in another window or instance, came first or replaced this
 *   one; its token is the one that works now, given once the authority holds it: when the store could not be read
 *   to learn it, no token is given yet (`ERR_SAVE_CONFLICT`, `ERR_ROTATION_SUPERSEDED`);
 * - `unconfirmed`: the secret store has not said yet which secret it holds, so the window cannot know yet which
 *   token works; no token is given, and `onRotate` fires if the key changes (`ERR_SAVE_UNCERTAIN`);
 * - `stopped`: the authority was closed: no token works any more (`ERR_CLOSED`).
 */
export type RegenerateOutcome = 'regenerated' | 'unchanged' | 'regenerated-elsewhere' | 'unconfirmed' | 'stopped';

/** What {@link regenerateToken} resolves to. */
export interface RegenerateResult {
  /** What happened; see {@link RegenerateOutcome}. */
  readonly outcome: RegenerateOutcome;
  /** Whether the authority accepts its token at this moment, and why not; see {@link TokenState}. */
  readonly state: TokenState;
  /**
   * The token that works now: one the authority accepts at this moment. `undefined` when none does (`state` is not
   * `ok`) or which one does is not known yet (`unconfirmed`, or `regenerated-elsewhere` before the authority holds
   * the other regeneration's key).
   */
  readonly token: string | undefined;
  /** One short sentence, for the user, that a settings window can show as is. It never contains a token. */
  readonly message: string;
  /**
   * For the host's log when the regeneration did not simply succeed: the code of the error `rotate()` rejected with
   * (`ERR_SAVE_FAILED`, `ERR_SAVE_CONFLICT`, `ERR_ROTATION_SUPERSEDED`, `ERR_SAVE_UNCERTAIN`, `ERR_CLOSED`).
   */
  readonly code?: LauncherAuthErrorCode;
  /**
   * That error itself, whose own `cause` is the store's failure when there was one (an `EACCES` from the file
   * system, a Redis error). Holds no token and no key.
   */
  readonly cause?: LauncherAuthError;
}

/** What a settings window shows of the current token. */
export interface TokenView {
  /** The token itself: shown after "Show", and what "Copy" copies. */
  readonly token: string;
  /** A form safe to leave on screen: dots and the token's last 4 characters, enough to tell two tokens apart. */
  readonly masked: string;
  /** The id of the key that signs the token (its `kid`); not secret. */
  readonly keyId: string;
  /**
   * Whether the token is accepted at this moment, and why not: show the token only when `ok`. `suspended`: the
   * secret store cannot be reached and every token is refused until it answers; `lost`: the store lost the secret
   * (`ERR_STORE_ROLLBACK`) and every token is refused until "Regenerate token" makes one that works; `stopped`: the
   * authority was closed. See {@link TokenState}.
   */
  readonly state: TokenState;
}

/** What happened, the first half of each message. */
const HAPPENED: Readonly<Record<Exclude<RegenerateOutcome, 'stopped'>, string>> = {
  regenerated: 'New token created',
  unchanged: 'Could not regenerate the token',
  'regenerated-elsewhere': 'The token was regenerated elsewhere (another window or launcher) at the same time',
  unconfirmed: 'The secret store has not confirmed the regeneration yet',
};

const NOT_KNOWN = 'which token works is not known yet; check again in a moment.';

/** Which token works, the second half, while the authority accepts its token. */
const WHAT_WORKS: Readonly<Record<Exclude<RegenerateOutcome, 'stopped'>, string>> = {
  regenerated: 'the previous token no longer works.',
  unchanged: 'nothing changed, and the current token still works.',
  'regenerated-elsewhere': 'the token shown now is the one that works.',
  unconfirmed: NOT_KNOWN,
};

/** Why no token works, the second half, while the authority refuses every token. */
const REFUSED: Readonly<Record<Exclude<TokenState, 'ok'>, string>> = {
  suspended: 'the secret store cannot be reached, so every token is refused until it answers again.',
  lost: 'the secret store lost the secret, so every token is refused until "Regenerate token" makes a new one.',
  stopped: 'the automation API has stopped: no token works until the launcher starts it again.',
};

/** The whole message of `stopped`: the refusal's own sentence. */
const STOPPED = `T${REFUSED.stopped.slice(1)}`;

/** The rotate() codes that are outcomes, and what each means for a settings window. */
const OUTCOMES = [
  ['ERR_SAVE_FAILED', 'unchanged'],
  ['ERR_SAVE_CONFLICT', 'regenerated-elsewhere'],
  ['ERR_ROTATION_SUPERSEDED', 'regenerated-elsewhere'],
  ['ERR_SAVE_UNCERTAIN', 'unconfirmed'],
  ['ERR_CLOSED', 'stopped'],
] as const;

/**
 * "Regenerate token" for a settings window: `authority.rotate()`, with each of its outcomes as a result. The token
 * given is one the authority accepts at the moment the result is made, and the message never says that a refused
 * token works. Resolves, whatever the store did; rejects only with a `TypeError` when `authority` is not a
 * TokenAuthority, or with what is not an outcome of rotate() at all (a bug).
 */
export async function regenerateToken(authority: TokenAuthority): Promise<RegenerateResult> {
  assertAuthority(authority, 'regenerateToken');
  const keyBefore = authority.keyId;
  let outcome: RegenerateOutcome;
  let failure: { readonly code?: LauncherAuthErrorCode; readonly cause?: LauncherAuthError } = {};
  try {
    await authority.rotate();
    outcome = 'regenerated';
  } catch (error) {
    const match = OUTCOMES.find(([code]) => isLauncherAuthError(error, code));
    if (match === undefined) throw error;
    outcome = match[1];
    // isLauncherAuthError checked the name and the code: rotate() rejects with this copy's class.
    failure = { code: match[0], cause: error as LauncherAuthError };
  }
  const state = authority[tokenState]();
  if (outcome === 'stopped') return { outcome, state, token: undefined, message: STOPPED, ...failure };
  // The other regeneration's token is known once the authority holds its key: a store that could not be read
  // after its conflict leaves the key from before in place until a reload adopts the other one.
  const known = outcome !== 'unconfirmed' && !(outcome === 'regenerated-elsewhere' && authority.keyId === keyBefore);
  const then = state !== 'ok' ? REFUSED[state] : known ? WHAT_WORKS[outcome] : NOT_KNOWN;
  const message = `${HAPPENED[outcome]}${state === 'ok' ? ': ' : '; '}${then}`;
  return { outcome, state, token: state === 'ok' && known ? authority.issue() : undefined, message, ...failure };
}

/** The current token as a settings window shows it: the token, a masked form, the key id, and whether it works. */
export function tokenView(authority: TokenAuthority): TokenView {
  assertAuthority(authority, 'tokenView');
  const token = authority.issue();
  return {
    token,
    masked: `${'•'.repeat(12)}${token.slice(-4)}`,
    keyId: authority.keyId,
    state: authority[tokenState](),
  };
}

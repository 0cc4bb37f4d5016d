// What a settings window needs from the authority: the token to show (and a masked form of it), and "Regenerate
// token" with every outcome of rotate() turned into something the window can show as is. Never throws for a store.
import { isLauncherAuthError } from './errors.js';
import { assertAuthority, holdsPlaceholder } from './internal.js';
import type { TokenAuthority } from './token-authority.js';

/**
 * What "Regenerate token" did, one meaning each (the rotate() outcome it stands for in brackets):
 * - `regenerated`: a new token works and every earlier one is refused (rotate() resolved);
 * - `unchanged`: nothing changed, and nothing will: the token from before still works (`ERR_SAVE_FAILED`);
 * - `regenerated-elsewhere`: another regeneration, made in another window or instance, came first or replaced this
 *   one; its token is the one that works now (`ERR_SAVE_CONFLICT`, `ERR_ROTATION_SUPERSEDED`);
 * - `unconfirmed`: the secret store has not said yet whether the new secret was saved; the token works at this
 *   moment, and `onRotate` fires if the store turns out to hold another (`ERR_SAVE_UNCERTAIN`);
 * - `stopped`: the authority was closed: no token works any more (`ERR_CLOSED`).
 */
export type RegenerateOutcome = 'regenerated' | 'unchanged' | 'regenerated-elsewhere' | 'unconfirmed' | 'stopped';

/** What {@link regenerateToken} resolves to. */
export interface RegenerateResult {
  /** What happened; see {@link RegenerateOutcome}. */
  readonly outcome: RegenerateOutcome;
  /** The token that works now, or `undefined` when none does (`stopped`). */
  readonly token: string | undefined;
  /** One short sentence, for the user, that a settings window can show as is. It never contains a token. */
  readonly message: string;
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
   * True when the secret store lost the secret (it went back to an older one: `ERR_STORE_ROLLBACK`) and the
   * authority holds a placeholder: the token shown works nowhere, and every token is refused until "Regenerate
   * token" makes one that works. Show that instead of the token.
   */
  readonly lost: boolean;
}

const MESSAGES: Readonly<Record<RegenerateOutcome, string>> = {
  regenerated: 'New token created: the previous token no longer works.',
  unchanged: 'Could not regenerate the token: nothing changed, and the current token still works.',
  'regenerated-elsewhere':
    'The token was regenerated elsewhere (another window or launcher) at the same time: the token shown now is the one that works.',
  unconfirmed:
    'The secret store has not confirmed the regeneration yet: the token shown works for now; check again in a moment.',
  stopped: 'The automation API has stopped: no token works until the launcher starts it again.',
};

/** The rotate() codes that leave a token that works, and what each means for a settings window. */
const OUTCOMES = [
  ['ERR_SAVE_FAILED', 'unchanged'],
  ['ERR_SAVE_CONFLICT', 'regenerated-elsewhere'],
  ['ERR_ROTATION_SUPERSEDED', 'regenerated-elsewhere'],
  ['ERR_SAVE_UNCERTAIN', 'unconfirmed'],
] as const;

/**
 * "Regenerate token" for a settings window: `authority.rotate()`, with each of its outcomes as a result.
 * Resolves, whatever the store did; rejects only with a `TypeError` when `authority` is not a TokenAuthority, or
 * with what is not an outcome of rotate() at all (a bug).
 */
export async function regenerateToken(authority: TokenAuthority): Promise<RegenerateResult> {
  assertAuthority(authority, 'regenerateToken');
  try {
    const token = await authority.rotate();
    return { outcome: 'regenerated', token, message: MESSAGES.regenerated };
  } catch (error) {
    if (isLauncherAuthError(error, 'ERR_CLOSED'))
      return { outcome: 'stopped', token: undefined, message: MESSAGES.stopped };
    const match = OUTCOMES.find(([code]) => isLauncherAuthError(error, code));
    if (match === undefined) throw error;
    const outcome = match[1];
    // Each of these leaves the authority on the token that works: its own, or the one adopted from the store.
    return { outcome, token: authority.issue(), message: MESSAGES[outcome] };
  }
}

/** The current token as a settings window shows it: the token, a masked form, the key id, and whether it is lost. */
export function tokenView(authority: TokenAuthority): TokenView {
  assertAuthority(authority, 'tokenView');
  const token = authority.issue();
  return {
    token,
    masked: `${'•'.repeat(12)}${token.slice(-4)}`,
    keyId: authority.keyId,
    lost: authority[holdsPlaceholder](),
  };
}

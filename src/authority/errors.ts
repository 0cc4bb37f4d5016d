// The library's one error class. Messages name paths and problems, never a token, a key or a header value.

/** Every code a {@link LauncherAuthError} can carry. */
export type LauncherAuthErrorCode =
  /** A stored secret could not be parsed: bad JSON, unknown version, bad field. */
  | 'ERR_STORE_CORRUPT'
  /**
   * The secret file (or `RedisSecretStore`'s generation file) or a folder on its way is not private to the
   * process's user (POSIX): a file open to group or others or owned by another user, a symbolic link at the path,
   * or a folder that another user owns or may write; for the generation file also a FIFO, a device or a file
   * over its size.
   */
  | 'ERR_STORE_PERMISSIONS'
  /** Reading or writing the store failed (I/O error, read-only directory, full disk). */
  | 'ERR_STORE_IO'
  /**
   * The store's backing service cannot be reached or used (an OS keychain with no Secret Service or a locked
   * keyring, a server or call that does not answer), or the store's optional package is not installed.
   */
  | 'ERR_STORE_UNAVAILABLE'
  /** A store returned a record that is not a valid {@link SecretRecord} (for example a key under 32 bytes). */
  | 'ERR_INVALID_RECORD'
  /**
   * A save lost to a newer one made elsewhere (a compare-and-set on the stored generation failed): this rotation
   * did not happen. From `rotate()`: the other rotation's secret is now current here (`onRotate` reported it), so
   * `issue()` returns the token that works now; the token from before the call no longer does.
   */
  | 'ERR_SAVE_CONFLICT'
  /**
   * `rotate()` could not save the new secret, and the store was found to hold what it held: nothing changed and
   * nothing will; the token from before the call stays valid.
   */
  | 'ERR_SAVE_FAILED'
  /**
   * `rotate()` cannot know at this moment whether the new secret was saved (a save sent and not answered, one
   * still running when it was given up on, or a failed save that could not be checked). The authority follows
   * what the store finally holds (it reads the store at once, when that save settles, and at every change the
   * store reports), and `onRotate` fires if that is a new key: `issue()` then returns the token that works.
   */
  | 'ERR_SAVE_UNCERTAIN'
  /**
   * `rotate()` saved its secret, but another rotation (made elsewhere) replaced it before it was confirmed
   * everywhere: it never resolves with a token already dead. The token now is the other rotation's, already
   * current here when this rejects (`onRotate` reported it), so `issue()` returns it.
   */
  | 'ERR_ROTATION_SUPERSEDED'
  /**
   * The store went back to an older secret than one already seen (a restore from an old backup, a failover that
   * lost the last rotation); the older secret is never adopted.
   */
  | 'ERR_STORE_ROLLBACK'
  /**
   * Not a failure: a risk the store was configured into, told once through `onStoreError`. `RedisSecretStore` on
   * Redis Sentinel or Cluster with `replicas: false`: a failover may bring back a revoked secret.
   */
  | 'ERR_STORE_UNREPLICATED'
  /** The authority was closed. */
  | 'ERR_CLOSED'
  /** The reason of an `auth.signal` abort: the key that authenticated the request was rotated away. */
  | 'ERR_KEY_ROTATED';

const CODES: ReadonlySet<string> = new Set<LauncherAuthErrorCode>([
  'ERR_STORE_CORRUPT',
  'ERR_STORE_PERMISSIONS',
  'ERR_STORE_IO',
  'ERR_STORE_UNAVAILABLE',
  'ERR_INVALID_RECORD',
  'ERR_SAVE_CONFLICT',
  'ERR_SAVE_FAILED',
  'ERR_SAVE_UNCERTAIN',
  'ERR_ROTATION_SUPERSEDED',
  'ERR_STORE_ROLLBACK',
  'ERR_STORE_UNREPLICATED',
  'ERR_CLOSED',
  'ERR_KEY_ROTATED',
]);

/** C0 and C1 control characters and DEL: what a terminal or a log viewer may take as a command. */
// eslint-disable-next-line no-control-regex -- matching control characters is this pattern's purpose
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

/**
 * `text` with every C0 and C1 control character and DEL written as `\xHH`, so that a message quoting a path, a
 * host or an environment value cannot move a terminal's cursor, write its clipboard or erase what came before.
 * Every message passes here: each {@link LauncherAuthError}'s, and every line the CLI prints. A backslash is kept
 * as it is, so that a message escaped twice reads the same.
 */
export function printable(text: string): string {
  return text.replace(CONTROL, (char) => `\\x${char.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/**
 * The error every failure of launcher-auth rejects or throws with (bad configuration aside: that is a `TypeError`).
 * Its message shows a control character as `\xHH` ({@link printable}).
 */
export class LauncherAuthError extends Error {
  readonly code: LauncherAuthErrorCode;

  constructor(code: LauncherAuthErrorCode, message: string, options?: { cause?: unknown }) {
    super(printable(message), options);
    this.name = 'LauncherAuthError';
    this.code = code;
  }
}

/**
 * True when `value` is a {@link LauncherAuthError} (optionally with the given code). Checks the `code`, not only
 * `instanceof`, so it also holds for an error from another copy of the package.
 */
export function isLauncherAuthError<C extends LauncherAuthErrorCode>(
  value: unknown,
  code?: C,
): value is LauncherAuthError & { code: C } {
  if (typeof value !== 'object' || value === null) return false;
  const actual = (value as { code?: unknown }).code;
  if (typeof actual !== 'string' || !CODES.has(actual)) return false;
  if ((value as { name?: unknown }).name !== 'LauncherAuthError') return false;
  return code === undefined || actual === code;
}

// The store's errors that name its Redis key or server: never a value, a key's bytes or a password.
import { LauncherAuthError } from 'launcher-auth';
import { MARKER_PREFIX } from './history.js';

/** The error for a store whose record went back, or was replaced by a rollback marker. */
export function rollbackError(key: string): LauncherAuthError {
  return new LauncherAuthError(
    'ERR_STORE_ROLLBACK',
    `Redis key "${key}" holds an older secret than one already in use (Redis restarted without it, was restored ` +
      'from an older snapshot, or failed over to a replica that had not received it). It is not adopted: the ' +
      'instances that hold the newer secret write it back; where none can, every token is refused until the ' +
      'secret is regenerated (rotate()).',
  );
}

/** A save whose outcome is not known: Redis may or may not hold it. */
export function uncertainError(key: string, why: string): LauncherAuthError {
  return new LauncherAuthError(
    'ERR_SAVE_UNCERTAIN',
    `The new secret for Redis key "${key}" may or may not stand: ${why}. Every instance follows what Redis finally holds.`,
  );
}

/**
 * A save that changed nothing because Redis holds a newer record: another rotation's, or (`ownLine`) one that replaced
 * the record being saved on this instance's own line, such as its own rotation's that landed after it was given up on.
 */
export function conflictError(key: string, ownLine = false): LauncherAuthError {
  return new LauncherAuthError(
    'ERR_SAVE_CONFLICT',
    ownLine
      ? `Redis key "${key}" holds a newer secret that replaced the one being saved; nothing was changed.`
      : `Another instance rotated the secret in Redis key "${key}" first; nothing was changed. Try again.`,
  );
}

export function corruptError(key: string): LauncherAuthError {
  return new LauncherAuthError(
    'ERR_STORE_CORRUPT',
    `The secret in Redis key "${key}" is unusable (not a record with a generation); it was left untouched.`,
  );
}

export function notConnectedError(endpoint: string): LauncherAuthError {
  return new LauncherAuthError(
    'ERR_STORE_UNAVAILABLE',
    `The Redis client for ${endpoint} is not open; call its connect() before opening the authority.`,
  );
}

export function supersededError(key: string): LauncherAuthError {
  return new LauncherAuthError(
    'ERR_ROTATION_SUPERSEDED',
    `The new secret was saved in Redis key "${key}", then another rotation replaced it before every ` +
      "instance had confirmed it; the other rotation's secret is current.",
  );
}

/**
 * Why the rotation of a saved record (`saved`) whose acknowledgements came in cannot resolve, if it cannot. This
 * instance's lease is over (`leased` false: it was cut off or frozen since; `undefined` without a watch, which takes
 * no lease): a rotation elsewhere may have replaced the record meanwhile without waiting for this instance. Or another
 * record is the newest seen (`newest`): superseded by another rotation's, or, when `newest` is the rollback marker,
 * lost (no rotation's secret is current then).
 */
export function unresolvedError(
  key: string,
  saved: string,
  leased: boolean | undefined,
  newest: string,
): LauncherAuthError | undefined {
  if (newest !== saved) {
    return newest.startsWith(MARKER_PREFIX)
      ? uncertainError(key, 'Redis no longer holds it (it lost writes)')
      : supersededError(key);
  }
  if (leased === false) return uncertainError(key, 'this instance could not renew its lease on it in time');
  return undefined;
}

/**
 * A Sentinel or Cluster deployment whose saves do not wait for replicas: told once, as a risk, not a failure. Names
 * the option, never a value.
 */
export function replicasOffError(key: string): LauncherAuthError {
  return new LauncherAuthError(
    'ERR_STORE_UNREPLICATED',
    `RedisSecretStore for Redis key "${key}" runs on Redis Sentinel or Cluster with \`replicas: false\`: rotate() ` +
      'resolves before any replica has the new secret, so a failover (or a network split in which a replica is ' +
      'promoted) can bring back the revoked secret on the instances that follow the promoted replica. Leave ' +
      "`replicas` at its default ({ count: 'majority' }) to close that window.",
  );
}

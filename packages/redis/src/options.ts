// RedisSecretStore's options: what each means, and their validation at construction (a TypeError names the option).
import { isAbsolute } from 'node:path';
import type { RedisAnyClient } from './client.js';

/** Options of {@link RedisSecretStore}. */
export interface RedisSecretStoreOptions {
  /**
   * A node-redis client of the `redis` package, connected (or connecting) by the host: `createClient()` (5.x or
   * 6.x), `createSentinel()` or `createCluster()` (6.x). The store never closes it. It follows rotations on a
   * connection of its own: a duplicate of a plain client, or the pub/sub connection that a Sentinel or Cluster
   * client keeps.
   */
  client: RedisAnyClient;
  /**
   * The Redis key of the record. The instance table is `{key}:instances` (same hash slot) and rotations are
   * announced on the channel `key:rotated`.
   * @default 'launcher-auth:secret'
   */
  key?: string;
  /**
   * How long an instance may trust its key without Redis confirming it, in milliseconds: the longest a frozen or
   * cut-off instance can hold up `rotate()`, and how long a Redis outage is bridged before every request is refused.
   * @default 5000
   */
  leaseMs?: number;
  /**
   * How often the lease is renewed (and the current generation checked, in case a pub/sub message was missed),
   * in milliseconds. Must be less than `leaseMs - driftMargin`; a third of that or less rides out a slow answer.
   * @default 1000
   */
  renewInterval?: number;
  /**
   * Room for the rates of two instances' monotonic clocks to differ over one lease, in milliseconds: an instance
   * stops trusting `driftMargin` before its lease ends, and `save()` waits `leaseMs + driftMargin` at most for an
   * instance that does not acknowledge. Redis's own clock is never used.
   * @default 250
   */
  driftMargin?: number;
  /**
   * How long a command may take before the store reports Redis unavailable (`ERR_STORE_UNAVAILABLE`) or gives up
   * on a renewal, in milliseconds; less than `leaseMs + driftMargin`, so that a late answer still finds the trust
   * it may have to end.
   * @default 2000, or `leaseMs + driftMargin - 1` when that is less
   */
  commandTimeout?: number;
  /**
   * How often `save()` checks whether every other live instance has acknowledged the new key, in milliseconds,
   * besides checking at once whenever an acknowledgement is announced by pub/sub (on the channel `key:acked`).
   * @default 5
   */
  ackPollInterval?: number;
  /**
   * Durability on replicas: `rotate()` resolves only once Redis `WAIT`, on the connection that carried the save,
   * confirms that the save reached `count` replicas within `timeout` milliseconds. When it cannot confirm,
   * `rotate()` rejects with `ERR_SAVE_UNCERTAIN` (the save may be lost by a failover, or may stand).
   *
   * - `count: 'majority'`: at each save, the primary is asked how many replicas it has now (`INFO replication`,
   *   on the same connection), and `WAIT` must confirm more than half of them (none with no replica). An answer
   *   that cannot be read, or that did not provably come over the save's connection, is "not confirmed".
   * - `count: n` (a whole number from 1): `n` replicas, however many the primary has.
   * - `false`: no wait. On a Sentinel or Cluster client the store then says once, when watching starts, that a
   *   failover may bring back a revoked secret (through `onStoreError`, or a process warning with code
   *   `LAUNCHER_AUTH_REDIS_REPLICAS_OFF`).
   *
   * `timeout` defaults to 1000.
   * @default { count: 'majority', timeout: 1000 } for a Sentinel or Cluster client; `false` for a plain client
   */
  replicas?: { count: number | 'majority'; timeout?: number } | false;
  /**
   * The file where this instance remembers the newest record it trusted or saved: its generation and id, never its
   * key (an absolute path). A process started while Redis holds an older record than that one (restored from an
   * older snapshot, restarted empty) then treats it as the rollback it is: it refuses every token, reports
   * `ERR_STORE_ROLLBACK` and replaces the older record with the rollback marker, instead of trusting a key that a
   * rotation revoked. Written atomically (mode 0600, its folder 0700) when that record changes, never on a request.
   * It gets the secret file's checks: a symbolic link, a FIFO or a device at the path, a file of another user, one
   * open to group or others, one over 4 KB, or a folder on its way that another user owns or may write makes
   * `load()` (and so `open()`) reject with `ERR_STORE_PERMISSIONS` naming it, and it is never replaced.
   * A damaged file makes `load()` (and so `open()`) reject with `ERR_STORE_CORRUPT` naming it; a folder that cannot
   * be written is told once by a process warning, and the store then runs without it. `false`: no file (a process
   * then starts from whatever Redis holds).
   * @default a file named after `key` and the deployment (a plain client's host:port or socket path and database,
   * a Cluster client's root nodes) in `launcher-auth/redis/` under the per-user state folder: `$XDG_STATE_HOME` when
   * set, else `~/.local/state` (Linux), `~/Library/Application Support` (macOS), `%LOCALAPPDATA%` (Windows)
   */
  generationFile?: string | false;
}

const DEFAULT_KEY = 'launcher-auth:secret';
const MAX_MS = 2 ** 31 - 1;
function milliseconds(name: string, value: unknown, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > MAX_MS) {
    throw new TypeError(
      `RedisSecretStore: \`${name}\` must be a whole number of milliseconds from ${min} to ${MAX_MS}.`,
    );
  }
  return value;
}

/** `commandTimeout` when not given and the lease allows it. */
const DEFAULT_COMMAND_TIMEOUT = 2000;

/** How many replicas `WAIT` must confirm: a number, or more than half of those the primary reports at save time. */
export interface ReplicasWait {
  readonly count: number | 'majority';
  readonly timeout: number;
}

/** The default of `replicas` for a Sentinel or Cluster client. */
export const MAJORITY: ReplicasWait = Object.freeze({ count: 'majority', timeout: 1000 });

/** `undefined` when the option is not given: its default depends on the client (see the store). */
function replicasOption(value: unknown): ReplicasWait | false | undefined {
  if (value === undefined || value === false) return value;
  const { count, timeout } = (typeof value === 'object' && value !== null ? value : {}) as {
    count?: unknown;
    timeout?: unknown;
  };
  if (count !== 'majority' && (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > 1000)) {
    throw new TypeError(
      "RedisSecretStore: `replicas` must be `false` or `{ count, timeout }`, with `replicas.count` 'majority' or a whole number from 1 to 1000.",
    );
  }
  return { count, timeout: milliseconds('replicas.timeout', timeout, 1000, 1) };
}

/** The options after validation, with every default filled in. */
export interface ResolvedRedisOptions {
  readonly key: string;
  readonly leaseMs: number;
  readonly driftMargin: number;
  readonly renewInterval: number;
  readonly commandTimeout: number;
  readonly ackPollInterval: number;
  /** `undefined`: not given (the store picks the default for its client). */
  readonly replicas: ReplicasWait | false | undefined;
  /** `undefined`: the default file. */
  readonly generationFile: string | false | undefined;
}

/** Validates every option but `client` (which the caller checks first); the `TypeError` names the option. */
export function resolveRedisOptions(options: RedisSecretStoreOptions): ResolvedRedisOptions {
  const { key = DEFAULT_KEY } = options;
  if (typeof key !== 'string' || key.length === 0)
    throw new TypeError('RedisSecretStore: `key` must be a non-empty string.');
  const leaseMs = milliseconds('leaseMs', options.leaseMs, 5000, 100);
  const driftMargin = milliseconds('driftMargin', options.driftMargin, 250, 0);
  const renewInterval = milliseconds('renewInterval', options.renewInterval, 1000, 1);

  const ackPollInterval = milliseconds('ackPollInterval', options.ackPollInterval, 5, 1);
  const replicas = replicasOption(options.replicas);
  if (driftMargin >= leaseMs / 2) {
    throw new TypeError('RedisSecretStore: `driftMargin` must be less than half of `leaseMs`.');
  }
  if (renewInterval >= leaseMs - driftMargin) {
    throw new TypeError('RedisSecretStore: `renewInterval` must be less than `leaseMs - driftMargin`.');
  }
  // A late answer must still find the instance's trust in force when it arrives: an answer that comes after its
  // command's timeout is ignored, and the trust it would have ended has then run out on its own. The default keeps
  // below that bound for a short lease too.
  const commandTimeout = milliseconds(
    'commandTimeout',
    options.commandTimeout,
    Math.min(DEFAULT_COMMAND_TIMEOUT, leaseMs + driftMargin - 1),
    1,
  );
  if (commandTimeout >= leaseMs + driftMargin) {
    throw new TypeError('RedisSecretStore: `commandTimeout` must be less than `leaseMs + driftMargin`.');
  }
  const { generationFile } = options;
  if (
    generationFile !== undefined &&
    generationFile !== false &&
    (typeof generationFile !== 'string' || !isAbsolute(generationFile) || generationFile.includes('\0'))
  ) {
    throw new TypeError('RedisSecretStore: `generationFile` must be an absolute file path, or false for none.');
  }
  return { key, leaseMs, driftMargin, renewInterval, commandTimeout, ackPollInterval, replicas, generationFile };
}

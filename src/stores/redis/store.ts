// RedisSecretStore: the secret shared by every instance of a service, revoked on all of them when rotate() resolves.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { LauncherAuthError } from '../../core/errors.js';
import { recordProblem } from '../../core/record.js';
import type { SaveOptions, SecretRecord, SecretStore, StoreLink } from '../../core/types.js';
import { answered, connectionOf, subscriberOf, type RedisAnyClient, type RedisConnection } from './client.js';
import { Follower } from './follower.js';
import { decodeRecord, encodeRecord } from './record.js';
import { CONFIRM, PENDING, SAVE, keyNames, type KeyNames } from './scripts.js';

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
   * How much earlier than Redis's expiry an instance stops trusting its key, in milliseconds: room for the rates
   * of the instance's monotonic clock and Redis's clock to differ over one lease. Also added to the longest wait
   * of `save()` when Redis stops answering during it.
   * @default 250
   */
  driftMargin?: number;
  /**
   * How long a command may take before the store reports Redis unavailable (`ERR_STORE_UNAVAILABLE`) or gives up
   * on a renewal, in milliseconds.
   * @default 2000
   */
  commandTimeout?: number;
  /**
   * How often `save()` checks whether every other live instance has acknowledged the new key, in milliseconds.
   * @default 5
   */
  ackPollInterval?: number;
}

const DEFAULT_KEY = 'launcher-auth:secret';
const MAX_MS = 2 ** 31 - 1;

function milliseconds(name: string, value: unknown, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > MAX_MS) {
    throw new TypeError(`RedisSecretStore: \`${name}\` must be a whole number of milliseconds from ${min} to ${MAX_MS}.`);
  }
  return value;
}

/**
 * Keeps the secret in one Redis value and makes "Regenerate token" revoke the old token on every instance that
 * shares it: from the moment `rotate()` resolves on any instance, no instance accepts a token of an earlier key.
 *
 * - `save()` is a compare-and-set on the record's generation: a save that lost to another rotation rejects with
 *   `ERR_SAVE_CONFLICT` and changes nothing. It then waits until every other live instance has acknowledged the
 *   new key, or its lease has run out (at most `leaseMs`, plus `driftMargin` if Redis stops answering).
 * - Each watching instance holds a lease that it renews only while it holds the current key; its authority
 *   trusts tokens only until shortly before that lease ends, measured on the monotonic clock. An instance that
 *   cannot renew (Redis unreachable, the process frozen) refuses every token until it has reloaded.
 * - A damaged value is refused like a damaged file (`ERR_STORE_CORRUPT`) and never overwritten.
 *
 * One store per `TokenAuthority`: the store is this instance's identity in the instance table.
 */
export class RedisSecretStore implements SecretStore {
  /** The Redis key of the record. */
  readonly key: string;
  readonly #client: RedisConnection;
  readonly #names: KeyNames;
  readonly #endpoint: string;
  readonly #leaseMs: number;
  readonly #renewInterval: number;
  readonly #driftMargin: number;
  readonly #commandTimeout: number;
  readonly #ackPollInterval: number;
  /** This instance's name in the instance table. */
  readonly #instanceId = randomBytes(9).toString('base64url');
  /**
   * The generation last read or written by this store: what the next save must find. 0: nothing stored; -1 after
   * reading a damaged value, which no save may then replace.
   */
  #generation = 0;
  /** The id of the record being saved, while its save runs: this instance still holds the previous key. */
  #savingId = '';
  /** Saves of this store run one after another, each expecting the generation the previous one wrote. */
  #saves: Promise<unknown> = Promise.resolve();

  constructor(options: RedisSecretStoreOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new TypeError('RedisSecretStore: options must be an object with a `client`.');
    }
    const { client, key = DEFAULT_KEY } = options;
    const connection = connectionOf(client);
    if (connection === undefined) {
      throw new TypeError(
        'RedisSecretStore: `client` must be a client of the `redis` package (createClient(), createSentinel() or createCluster()).',
      );
    }
    if (typeof key !== 'string' || key.length === 0) throw new TypeError('RedisSecretStore: `key` must be a non-empty string.');
    this.#leaseMs = milliseconds('leaseMs', options.leaseMs, 5000, 100);
    this.#driftMargin = milliseconds('driftMargin', options.driftMargin, 250, 0);
    this.#renewInterval = milliseconds('renewInterval', options.renewInterval, 1000, 1);
    this.#commandTimeout = milliseconds('commandTimeout', options.commandTimeout, 2000, 1);
    this.#ackPollInterval = milliseconds('ackPollInterval', options.ackPollInterval, 5, 1);
    if (this.#driftMargin >= this.#leaseMs / 2) {
      throw new TypeError('RedisSecretStore: `driftMargin` must be less than half of `leaseMs`.');
    }
    if (this.#renewInterval >= this.#leaseMs - this.#driftMargin) {
      throw new TypeError('RedisSecretStore: `renewInterval` must be less than `leaseMs - driftMargin`.');
    }
    this.key = key;
    this.#client = connection;
    this.#names = keyNames(key);
    this.#endpoint = connection.endpoint;
  }

  async load(): Promise<SecretRecord | undefined> {
    const value = await this.#run(
      async () => (await this.#client.run("return redis.call('GET', KEYS[1])", [this.#names.record], [])).reply,
      'read the secret',
    );
    if (value === null || value === undefined) {
      this.#generation = 0;
      return undefined;
    }
    this.#generation = -1;
    const { record, generation } = decodeRecord(value, this.key);
    this.#generation = generation;
    return record;
  }

  save(record: SecretRecord, options?: SaveOptions): Promise<void> {
    const run = this.#saves.then(() => this.#saveNow(record, options?.signal));
    this.#saves = run.catch(() => undefined);
    return run;
  }

  async watch(onChange: () => Promise<void>, link: StoreLink): Promise<() => void> {
    const names = this.#names;
    const follower = new Follower(
      {
        leaseMs: this.#leaseMs,
        renewInterval: this.#renewInterval,
        driftMargin: this.#driftMargin,
        commandTimeout: this.#commandTimeout,
        endpoint: this.#endpoint,
        channel: names.channel,
        confirm: async (heldId) =>
          (
            await this.#client.run(
              CONFIRM,
              [names.record, names.instances],
              [this.#instanceId, heldId, this.#savingId, String(this.#leaseMs)],
            )
          ).reply === 'ok',
        leave: () =>
          this.#client.run("return redis.call('HDEL', KEYS[1], ARGV[1])", [names.instances], [this.#instanceId]),
      },
      link,
      onChange,
    );
    if (!this.#client.isOpen) throw this.#notConnected();
    try {
      await follower.start(subscriberOf(this.#client));
    } catch (error) {
      follower.stop();
      throw error;
    }
    return () => follower.stop();
  }

  async #saveNow(record: SecretRecord, signal: AbortSignal | undefined): Promise<void> {
    const problem = recordProblem(record);
    if (problem !== undefined) {
      throw new LauncherAuthError('ERR_INVALID_RECORD', `Refusing to save an unusable record to Redis key "${this.key}": ${problem}.`);
    }
    signal?.throwIfAborted();
    const expected = this.#generation;
    this.#savingId = record.id;
    try {
      const outcome = await this.#run(
        async () =>
          (
            await this.#client.run(
              SAVE,
              [this.#names.record],
              [String(expected), encodeRecord(record, expected + 1), this.#names.channel],
            )
          ).reply,
        'save the secret',
      );
      if (outcome === 'corrupt') {
        throw new LauncherAuthError(
          'ERR_STORE_CORRUPT',
          `The secret in Redis key "${this.key}" is unusable (not a record with a generation); it was left untouched.`,
        );
      }
      if (outcome === 'conflict') {
        // Two instances creating the first secret at once: the other one's stands, and this instance adopts it
        // before it trusts any key (its lease is confirmed only for the key Redis holds).
        if (expected === 0) return;
        throw new LauncherAuthError(
          'ERR_SAVE_CONFLICT',
          `Another instance rotated the secret in Redis key "${this.key}" first; nothing was changed. Try again.`,
        );
      }
      this.#generation = expected + 1;
      // Read after the answer, so after the save was carried out: the bound below is counted from a moment no
      // earlier than the save itself, however long the command was on its way.
      await this.#acknowledged(expected + 1, performance.now());
    } finally {
      this.#savingId = '';
    }
  }

  /**
   * Waits until every other live instance has acknowledged `generation` or its lease ran out. Without an answer
   * from Redis, `leaseMs + driftMargin` after the save's answer came (`savedAt`) is enough: every lease of an
   * instance holding an older key was granted before the save was carried out (a renewal after it is refused to
   * such an instance), so each ran out, and its instance stopped trusting, before then.
   */
  async #acknowledged(generation: number, savedAt: number): Promise<void> {
    const bound = savedAt + this.#leaseMs + this.#driftMargin;
    // Acknowledgements usually come within a millisecond or two: poll at 1, 2, 4 ms, then every ackPollInterval.
    let pause = 1;
    for (let left = bound - performance.now(); left > 0; left = bound - performance.now()) {
      try {
        const waiting = await answered(
          this.#client.run(PENDING, [this.#names.instances], [this.#instanceId, String(generation)]).then((r) => r.reply),
          Math.max(1, Math.min(this.#commandTimeout, Math.ceil(left))),
          this.#endpoint,
          'read the acknowledgements',
        );
        if (waiting === 0) return;
      } catch {
        // Redis did not answer: the bound above still holds.
      }
      await sleep(Math.max(1, Math.min(pause, this.#ackPollInterval, Math.ceil(bound - performance.now()))));
      pause *= 2;
    }
  }

  /** `command()` within `commandTimeout`, any failure to reach Redis as `ERR_STORE_UNAVAILABLE`. */
  async #run<T>(command: () => Promise<T>, what: string): Promise<T> {
    if (!this.#client.isOpen) throw this.#notConnected();
    let sent: Promise<T>;
    try {
      sent = command();
    } catch (error) {
      sent = Promise.reject(error);
    }
    return answered(sent, this.#commandTimeout, this.#endpoint, what);
  }

  #notConnected(): LauncherAuthError {
    return new LauncherAuthError(
      'ERR_STORE_UNAVAILABLE',
      `The Redis client for ${this.#endpoint} is not open; call its connect() before opening the authority.`,
    );
  }
}

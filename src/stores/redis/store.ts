// RedisSecretStore: the secret shared by every instance of a service, revoked on all of them when rotate() resolves.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { LauncherAuthError } from '../../authority/errors.js';
import { recordProblem } from '../../authority/record.js';
import type { SaveOptions, SecretRecord, SecretStore, StoreLink } from '../../authority/types.js';
import { AckWait } from './acks.js';
import { answered, connectionOf, unavailable, type RedisAnyClient, type RedisConnection } from './client.js';
import { Follower } from './follower.js';
import { Lease, type Overwrite } from './lease.js';
import { decodeRecord, encodeMarker, encodeRecord, rolledBack } from './record.js';
import { observation, pendingOf } from './wire.js';
import { CONFIRM, DROP, LOAD, PENDING, SAVE, SAVE_PADDING, keyNames, type KeyNames } from './scripts.js';

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
   * on a renewal, in milliseconds.
   * @default 2000
   */
  commandTimeout?: number;
  /**
   * How often `save()` checks whether every other live instance has acknowledged the new key, in milliseconds,
   * besides checking at once whenever an acknowledgement is announced by pub/sub (on the channel `key:acked`).
   * @default 5
   */
  ackPollInterval?: number;
  /**
   * Durability on replicas: `rotate()` resolves only once Redis `WAIT` confirms that the save reached `count`
   * replicas within `timeout` milliseconds. When it cannot confirm, `rotate()` rejects with `ERR_SAVE_UNCERTAIN`
   * (the save may be lost by a failover, or may stand).
   * @default undefined (no wait for replicas)
   */
  replicas?: { count: number; timeout: number };
}

const DEFAULT_KEY = 'launcher-auth:secret';
const MAX_MS = 2 ** 31 - 1;
/** How many records (the held one, the one being saved) the store keeps to write forward after a rollback. */
const RECORDS_KEPT = 4;

function milliseconds(name: string, value: unknown, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > MAX_MS) {
    throw new TypeError(`RedisSecretStore: \`${name}\` must be a whole number of milliseconds from ${min} to ${MAX_MS}.`);
  }
  return value;
}

function replicasOption(value: unknown): { count: number; timeout: number } | undefined {
  if (value === undefined) return undefined;
  const { count, timeout } = (typeof value === 'object' && value !== null ? value : {}) as { count?: unknown; timeout?: unknown };
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > 1000) {
    throw new TypeError('RedisSecretStore: `replicas.count` must be a whole number from 1 to 1000.');
  }
  return { count, timeout: milliseconds('replicas.timeout', timeout, 1000, 1) };
}

const uncertain = (key: string, why: string): LauncherAuthError =>
  new LauncherAuthError(
    'ERR_SAVE_UNCERTAIN',
    `The new secret for Redis key "${key}" may or may not stand: ${why}. Every instance follows what Redis finally holds.`,
  );

/**
 * Keeps the secret in one Redis value and makes "Regenerate token" revoke the old token on every instance that
 * shares it: from the moment `rotate()` resolves on any instance, no instance accepts a token of an earlier key.
 *
 * - `save()` is a compare-and-set on the record's generation and id: a save that lost to another rotation rejects
 *   with `ERR_SAVE_CONFLICT` and changes nothing. It then waits until every other instance has acknowledged the new
 *   key, or until every lease granted before the save has run out (`leaseMs + driftMargin`, on this instance's
 *   monotonic clock). Early only when the instance table is provably complete (same Redis `run_id`, same table,
 *   both known for longer than a lease).
 * - Each watching instance renews its lease only while it holds the current key; its authority trusts tokens only
 *   until shortly before that lease ends, measured on its monotonic clock.
 * - Redis going back (restarted empty, an older snapshot, a lagging replica) is detected: an older record is never
 *   adopted (`ERR_STORE_ROLLBACK`), and an instance that still holds the newer one writes it back.
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
  readonly #commandTimeout: number;
  readonly #ackPollInterval: number;
  readonly #replicas: { count: number; timeout: number } | undefined;
  /** This instance's name in the instance table. */
  readonly #instanceId = randomBytes(9).toString('base64url');
  /** The protocol's state for this instance: what it has seen, its era, its trust, its backoff. */
  readonly #lease: Lease;
  /** The last records read or written, by id: the held one is what a write-forward writes. */
  readonly #records = new Map<string, SecretRecord>();
  /** The id of the record being saved, while its save runs: renewals go on with it. */
  #savingId = '';
  /** Whether those renewals extend the trust in the held key (it was the newest when the save began). */
  #renewHeld = false;
  #link: StoreLink | undefined;
  /** A rollback seen by a renewal and not yet told to the authority: the next load() rejects with it, once. */
  #rollbackUntold = false;
  /** Conditions already told by a process warning (once each). */
  readonly #warned = new Set<string>();
  /** Saves of this store run one after another. */
  #saves: Promise<unknown> = Promise.resolve();
  /** The first value read was damaged: no save may replace it. */
  #corrupt = false;
  /** Acknowledgements of the record being saved heard by pub/sub: a waiting save reads the table at once. */
  #acksHeard = 0;
  /** Ends the pause of a waiting save early (set while it pauses). */
  #wakeSave: (() => void) | undefined;
  /** Housekeeping of the instance table after resolved saves (see `AckStep.dropAt`). */
  readonly #dropTimers = new Set<ReturnType<typeof setTimeout>>();

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
    const leaseMs = milliseconds('leaseMs', options.leaseMs, 5000, 100);
    const driftMargin = milliseconds('driftMargin', options.driftMargin, 250, 0);
    const renewInterval = milliseconds('renewInterval', options.renewInterval, 1000, 1);
    this.#commandTimeout = milliseconds('commandTimeout', options.commandTimeout, 2000, 1);
    this.#ackPollInterval = milliseconds('ackPollInterval', options.ackPollInterval, 5, 1);
    this.#replicas = replicasOption(options.replicas);
    if (driftMargin >= leaseMs / 2) {
      throw new TypeError('RedisSecretStore: `driftMargin` must be less than half of `leaseMs`.');
    }
    if (renewInterval >= leaseMs - driftMargin) {
      throw new TypeError('RedisSecretStore: `renewInterval` must be less than `leaseMs - driftMargin`.');
    }
    this.key = key;
    this.#client = connection;
    this.#names = keyNames(key);
    this.#endpoint = connection.endpoint;
    this.#lease = new Lease({ leaseMs, renewInterval, driftMargin });
  }

  async load(): Promise<SecretRecord | undefined> {
    if (this.#rollbackUntold) {
      // Told even when the record was written back meanwhile: the host learns that Redis lost writes.
      this.#rollbackUntold = false;
      throw this.#rolledBack();
    }
    // Each answer is judged against the highest record seen when its read was sent (see Lease.see).
    for (;;) {
      const sent = this.#lease.highest;
      const reply = await this.#run(LOAD, [this.#names.record, this.#names.instances], [this.#instanceId], 'read the secret');
      const head = observation(reply);
      if (head === undefined) throw unavailable(this.#endpoint, 'read the secret', new Error('an unexpected answer'));
      const value = (reply as unknown[])[7];
      let loaded: { record: SecretRecord; generation: number; prev: string } | undefined;
      if (head.status !== 'missing') {
        try {
          loaded = decodeRecord(value, this.key);
        } catch (error) {
          if (this.#lease.highest.generation === 0) this.#corrupt = true;
          throw error;
        }
      }
      const sighting = this.#lease.see(loaded?.generation ?? 0, loaded?.record.id ?? null, loaded?.prev ?? '', sent);
      if (sighting === 'rollback') throw this.#rolledBack();
      if (sighting === 'adopted') {
        if (loaded === undefined) return undefined;
        this.#corrupt = false;
        this.#keep(loaded.record);
        return loaded.record;
      }
      // Late: Redis answered before a newer record was written (this instance's own save or write-forward, or one a
      // renewal saw), and that record's answer was taken in first. Not a rollback. The newer record, when this
      // instance holds it, was in Redis while this load() ran: returned without another round trip. One seen only
      // by a renewal is read: a further read is late only if yet another record was seen during it, so the reads
      // end as soon as the rotations pause.
      const newer = this.#records.get(this.#lease.highest.id);
      if (newer !== undefined) return newer;
    }
  }

  save(record: SecretRecord, options?: SaveOptions): Promise<void> {
    const run = this.#saves.then(() => this.#saveNow(record, options?.signal));
    this.#saves = run.catch(() => undefined);
    return run;
  }

  async watch(onChange: () => Promise<void>, link: StoreLink): Promise<() => void> {
    if (!this.#client.isOpen) throw this.#notConnected();
    const names = this.#names;
    this.#link = link;
    const follower = new Follower(
      this.#lease,
      link,
      {
        confirm: async (heldId, savingId, seq) => {
          try {
            const reply = await this.#run(
              CONFIRM,
              [names.record, names.instances],
              [this.#instanceId, heldId, savingId, String(seq), randomBytes(9).toString('base64url'), names.acked],
              'renew the lease',
            );
            const head = observation(reply);
            if (head === undefined || head.status === 'corrupt') return undefined;
            return { status: head.status === 'ok' ? 'ok' : 'stale', ...head.observed };
          } catch {
            return undefined;
          }
        },
        overwrite: (over, marker) => this.#overwrite(over, marker),
        subscribe: (onMessage) =>
          answered(
            this.#client.subscribe([names.channel, names.acked], (message, channel) => {
              if (channel === names.acked) this.#heardAck(message);
              else onMessage(message);
            }),
            this.#commandTimeout,
            this.#endpoint,
            'subscribe to rotations',
          ),
        leave: () => this.#run("return redis.call('HDEL', KEYS[1], ARGV[1])", [names.instances], [this.#instanceId], 'leave the instance table'),
        savingId: () => this.#savingId,
        renewHeld: () => this.#renewHeld,
        holds: (id) => this.#records.has(id),
        report: (condition) => this.#report(condition),
      },
      onChange,
    );
    try {
      await follower.start();
    } catch (error) {
      follower.stop();
      this.#link = undefined;
      throw error;
    }
    // The authority's close() waits for this: the entry is gone from the table (or Redis did not answer within
    // `commandTimeout`) before the host may close its client, so that no rotation waits a lease for it. Not while
    // the connection is down: the goodbye would wait out `commandTimeout` for nothing.
    return () => {
      this.#link = undefined;
      for (const timer of this.#dropTimers) clearTimeout(timer);
      this.#dropTimers.clear();
      const leaving = follower.stop();
      return this.#client.isReady ? leaving : undefined;
    };
  }

  async #saveNow(record: SecretRecord, signal: AbortSignal | undefined): Promise<void> {
    const problem = recordProblem(record);
    if (problem !== undefined) {
      throw new LauncherAuthError('ERR_INVALID_RECORD', `Refusing to save an unusable record to Redis key "${this.key}": ${problem}.`);
    }
    if (this.#corrupt) throw this.#corruptError();
    signal?.throwIfAborted();
    // Not sent at all: certainly nothing changed.
    if (!this.#client.isOpen) throw this.#notConnected();
    const lease = this.#lease;
    const { generation: expected, id: expectedId } = lease.highest;
    const generation = expected + 1;
    const heldId = this.#link?.keyId;
    // The held key is renewed on the new record while it is saved only when the held key is the newest seen.
    this.#savingId = record.id;
    this.#renewHeld = heldId !== undefined && lease.mayRenewWhileSaving(heldId);
    this.#keep(record);
    try {
      const value = encodeRecord(record, generation, expectedId);
      let result: { reply: unknown; replicas?: number };
      try {
        result = await this.#runFull(SAVE, this.#saveKeys(), this.#saveArgs(expected, expectedId, value), 'save the secret', true);
      } catch (error) {
        // Sent and not answered: Redis may still run it. The follower adopts whatever Redis finally holds.
        if (error instanceof LauncherAuthError && error.code === 'ERR_STORE_UNAVAILABLE') {
          throw uncertain(this.key, 'Redis did not answer the save in time');
        }
        throw error;
      }
      const savedAt = performance.now();
      const head = observation(result.reply);
      if (head === undefined) throw uncertain(this.key, 'Redis answered the save with something unexpected');
      if (head.status === 'corrupt') throw this.#corruptError();
      if (head.status === 'conflict') {
        // Two instances creating the first secret at once: the other one's stands, and this instance adopts it
        // before it trusts any key (its lease is confirmed only for the key Redis holds).
        if (expected === 0 && this.#link === undefined) return;
        throw new LauncherAuthError(
          'ERR_SAVE_CONFLICT',
          `Another instance rotated the secret in Redis key "${this.key}" first; nothing was changed. Try again.`,
        );
      }
      lease.wrote(generation, record.id);
      if (this.#replicas !== undefined && (result.replicas ?? -1) < this.#replicas.count) {
        throw uncertain(this.key, `Redis WAIT did not confirm the save on ${this.#replicas.count} replica(s) in time`);
      }
      await this.#acknowledged(new AckWait(generation, record.id, savedAt, head.observed, lease.era, {
        leaseMs: lease.options.leaseMs,
        driftMargin: lease.options.driftMargin,
        commandTimeout: this.#commandTimeout,
      }));
    } finally {
      this.#savingId = '';
    }
  }

  /**
   * Reads the acknowledgements until the wait decides: at once after each one announced by pub/sub, and otherwise
   * at 1, 2, 4 ms, then every `ackPollInterval` (an announcement can be missed; a dead instance's lease runs out).
   */
  async #acknowledged(wait: AckWait): Promise<void> {
    const names = this.#names;
    for (let read = 0; ; read += 1) {
      const heard = this.#acksHeard;
      let answer: unknown;
      try {
        answer = await this.#run(PENDING, [names.record, names.instances], [this.#instanceId, wait.id], 'read the acknowledgements');
      } catch {
        answer = undefined;
      }
      const now = performance.now();
      const pending = pendingOf(answer);
      // Without a watch there is no lease: such a store's authority trusts without bound.
      const leaseUntil = this.#link === undefined ? Infinity : this.#lease.leaseUntil;
      const step = pending === undefined ? wait.unanswered(now) : wait.read(pending, now, leaseUntil);
      this.#drop(step.drop);
      if (step.outcome === 'resolved') {
        this.#dropLater(step.dropAt ?? []);
        return;
      }
      if (step.outcome === 'superseded') {
        throw new LauncherAuthError(
          'ERR_ROTATION_SUPERSEDED',
          `The new secret was saved in Redis key "${this.key}", then another rotation replaced it before every ` +
            'instance had confirmed it; the other rotation\'s secret is current.',
        );
      }
      if (step.outcome === 'lost') throw uncertain(this.key, 'Redis no longer holds it (it lost writes)');
      if (step.outcome === 'uncertain') throw uncertain(this.key, 'Redis stopped answering before every instance had confirmed it');
      // Again at once when an acknowledgement was announced after this read was sent (its answer may lack it);
      // otherwise at the next poll, or at the bound if that comes first.
      const poll = Math.min(read < 3 ? 2 ** read : Infinity, this.#ackPollInterval);
      if (this.#acksHeard === heard) await this.#pause(now < wait.bound ? Math.min(poll, Math.ceil(wait.bound - now)) : poll);
    }
  }

  /** An acknowledgement announced by pub/sub: wakes the save waiting for it. */
  #heardAck(id: string): void {
    if (id !== this.#savingId || id === '') return;
    this.#acksHeard += 1;
    this.#wakeSave?.();
  }

  /** Waits `ms`, or less when an acknowledgement is heard. */
  #pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => wake(), ms);
      const wake = (): void => {
        clearTimeout(timer);
        this.#wakeSave = undefined;
        resolve();
      };
      this.#wakeSave = wake;
    });
  }

  /** Removes table entries if their renewal numbers are still those seen (housekeeping: failures are ignored). */
  #drop(entries: ReadonlyArray<readonly [instance: string, seq: number]>): void {
    if (!this.#client.isOpen) return;
    for (const [instance, seq] of entries) {
      void this.#client.run(DROP, [this.#names.instances], [instance, String(seq)]).catch(() => undefined);
    }
  }

  /** The same, once their time has come: one timer, at the latest of them, for all. */
  #dropLater(entries: ReadonlyArray<readonly [instance: string, seq: number, at: number]>): void {
    if (entries.length === 0) return;
    const at = Math.max(...entries.map(([, , time]) => time));
    const timer = setTimeout(() => {
      this.#dropTimers.delete(timer);
      this.#drop(entries.map(([instance, seq]) => [instance, seq] as const));
    }, Math.max(0, at - performance.now()) + 1);
    timer.unref();
    this.#dropTimers.add(timer);
  }

  /** Writes the held record (or a rollback marker) over what Redis holds after a rollback. */
  async #overwrite(over: Overwrite, marker: boolean): Promise<void> {
    const held = this.#link?.keyId;
    const record = held === undefined ? undefined : this.#records.get(held);
    if (!marker && record === undefined) return;
    const value = marker || record === undefined
      ? encodeMarker(randomBytes(9).toString('base64url'), over.generation, over.expectedId)
      : encodeRecord(record, over.generation, over.expectedId);
    const result = await this.#runFull(SAVE, this.#saveKeys(), this.#saveArgs(over.expected, over.expectedId, value), 'write the secret back', false);
    const head = observation(result.reply);
    if (head?.status === 'ok' && head.observed.id !== null) this.#lease.wrote(over.generation, head.observed.id);
  }

  #saveKeys(): string[] {
    return [this.#names.record, this.#names.instances];
  }

  #saveArgs(expected: number, expectedId: string, value: string): string[] {
    return [String(expected), expectedId, this.#names.channel, this.#instanceId, ...Array<string>(SAVE_PADDING).fill(''), value];
  }

  #keep(record: SecretRecord): void {
    this.#records.delete(record.id);
    this.#records.set(record.id, record);
    for (const id of this.#records.keys()) {
      if (this.#records.size <= RECORDS_KEPT) break;
      if (id !== this.#link?.keyId) this.#records.delete(id);
    }
  }

  #report(condition: string): void {
    if (condition !== 'rollback' && condition !== 'missing') {
      this.#warned.clear();
      return;
    }
    if (this.#warned.has(condition)) return;
    this.#warned.add(condition);
    this.#rollbackUntold = true;
    process.emitWarning(this.#rolledBack().message, { code: 'LAUNCHER_AUTH_STORE_ROLLBACK', type: 'LauncherAuthWarning' });
  }

  #rolledBack(): LauncherAuthError {
    return rolledBack(this.key);
  }

  #corruptError(): LauncherAuthError {
    return new LauncherAuthError(
      'ERR_STORE_CORRUPT',
      `The secret in Redis key "${this.key}" is unusable (not a record with a generation); it was left untouched.`,
    );
  }

  async #run(script: string, keys: string[], args: string[], what: string): Promise<unknown> {
    return (await this.#runFull(script, keys, args, what, false)).reply;
  }

  /** A script within `commandTimeout` (plus the replicas' timeout when waiting), any failure as `ERR_STORE_UNAVAILABLE`. */
  async #runFull(
    script: string,
    keys: string[],
    args: string[],
    what: string,
    waitReplicas: boolean,
  ): Promise<{ reply: unknown; replicas?: number }> {
    if (!this.#client.isOpen) throw this.#notConnected();
    const replicas = waitReplicas ? this.#replicas : undefined;
    let sent: Promise<{ reply: unknown; replicas?: number }>;
    try {
      sent = this.#client.run(script, keys, args, replicas === undefined ? undefined : { wait: { replicas: replicas.count, timeout: replicas.timeout } });
    } catch (error) {
      sent = Promise.reject(error);
    }
    return answered(sent, this.#commandTimeout + (replicas?.timeout ?? 0), this.#endpoint, what);
  }

  #notConnected(): LauncherAuthError {
    return new LauncherAuthError(
      'ERR_STORE_UNAVAILABLE',
      `The Redis client for ${this.#endpoint} is not open; call its connect() before opening the authority.`,
    );
  }
}

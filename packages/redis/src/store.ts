// RedisSecretStore: the secret shared by every instance of a service, revoked on all of them when rotate() resolves.
import {
  LauncherAuthError,
  type SaveOptions,
  type SecretRecord,
  type SecretStore,
  type StoreLink,
} from 'launcher-auth';
import { nodeRuntime, randomId, recordProblem, type Runtime } from 'launcher-auth/store-kit';
import { AckReader } from './ack-reader.js';
import { AckWait } from './acks.js';
import { answered, unavailable, type RedisConnection, type RunResult } from './client.js';
import { decodeRecord, encodeMarker, encodeRecord, markerOf } from './codec.js';
import { connectionOf, deploymentOf } from './connections.js';
import {
  conflictError,
  corruptError,
  notConnectedError,
  rollbackError,
  uncertainError,
  unresolvedError,
} from './errors.js';
import { RollbackReports } from './rollback-reports.js';
import { Era } from './era.js';
import { Follower, endTrustOn } from './follower.js';
import { History } from './history.js';
import { storeInternals, type WithInternals } from './internal.js';
import { Lease, type Overwrite, type Seen } from './lease.js';
import { GenerationFile, defaultGenerationFile, generationFileFor } from './generation-file.js';
import { resolveRedisOptions, type RedisSecretStoreOptions } from './options.js';
import { ReplicaWait } from './replicas.js';
import { loadOf, observation } from './reply.js';
import { CONFIRM, DROP, LEAVE, LOAD, PENDING, SAVE, keyNames, saveArgs, type KeyNames } from './scripts.js';

/** How many records (the held one, the one being saved) the store keeps to write forward after a rollback. */
const RECORDS_KEPT = 4;

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
  readonly #replicas: ReplicaWait;
  /** This instance's name in the instance table. */
  readonly #instanceId: string;
  /** The monotonic clock, timers and randomness (Node's, or a simulator's). */
  readonly #runtime: Runtime;
  readonly #history = new History();
  readonly #era: Era;
  readonly #lease: Lease;
  /** The last records read or written, by id: the held one is what a write-forward writes. */
  readonly #records = new Map<string, SecretRecord>();
  /** The id of the record being saved, while its save runs: renewals go on with it. */
  #savingId = '';
  /** Whether those renewals extend the trust in the held key (it was the newest when the save began). */
  #renewHeld = false;
  #link: StoreLink | undefined;
  /** Rollbacks told to the host, once each. */
  readonly #reports: RollbackReports;
  /** Saves of this store run one after another. */
  #saves: Promise<unknown> = Promise.resolve();
  /** The first value read was damaged: no save may replace it. */
  #corrupt = false;
  /** Reads the acknowledgements of a saved record. */
  readonly #acks: AckReader;
  /** Where the newest record trusted or saved is remembered across restarts (`generationFile`). */
  readonly #generationFile: GenerationFile;
  /** Renews the lease while the store is watched. */
  #follower: Follower | undefined;

  constructor(options: RedisSecretStoreOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new TypeError('RedisSecretStore: options must be an object with a `client`.');
    }
    const internals = (options as WithInternals)[storeInternals];
    const connection = internals?.connection ?? connectionOf(options.client);
    if (connection === undefined) {
      throw new TypeError(
        'RedisSecretStore: `client` must be a client of the `redis` package (createClient(), createSentinel() or createCluster()).',
      );
    }
    const { key, leaseMs, driftMargin, renewInterval, commandTimeout, ackPollInterval, replicas, generationFile } =
      resolveRedisOptions(options);
    this.#runtime = internals?.runtime ?? nodeRuntime;
    this.#instanceId = randomId(this.#runtime, 9);
    const file =
      internals === undefined ? (generationFile ?? defaultGenerationFile(key, deploymentOf(options.client))) : false;
    this.#generationFile = new GenerationFile(internals?.generationFile ?? generationFileFor(file));
    this.#reports = new RollbackReports(key);
    this.#commandTimeout = commandTimeout;
    this.#replicas = new ReplicaWait(replicas, connection.deployment, key);
    this.key = key;
    this.#client = connection;
    this.#names = keyNames(key);
    this.#endpoint = connection.endpoint;
    this.#era = new Era(leaseMs, driftMargin);
    this.#lease = new Lease({ leaseMs, renewInterval, driftMargin }, { era: this.#era, history: this.#history });
    const names = this.#names;
    this.#acks = new AckReader(
      {
        pending: (id) =>
          this.#run(PENDING, [names.record, names.instances], [this.#instanceId, id], 'read the acknowledgements'),
        drop: (instance, seq) => {
          if (!this.#client.isOpen) return;
          void this.#client.run(DROP, [names.instances], [instance, String(seq)]).catch(() => undefined);
        },
        leaseUntil: () => (this.#link === undefined ? Infinity : this.#lease.leaseUntil),
        seen: (observed, sentAt) => endTrustOn(this.#lease, this.#link, observed, sentAt),
      },
      ackPollInterval,
      key,
      this.#runtime,
    );
  }

  async load(): Promise<SecretRecord | undefined> {
    this.#replicas.tell(this.#link?.reportsErrors === true);
    // Told even when the record was written back meanwhile: the host learns that Redis lost writes.
    if (this.#reports.takeUntold()) throw rollbackError(this.key);
    // Before the first read: a record remembered from an earlier run makes an older one in Redis a rollback.
    await this.#generationFile.recall(this.#history);
    // Each answer is judged against the newest record seen when its read was sent (see History.see).
    for (;;) {
      const [sent, sentAt] = [this.#history.newest, this.#runtime.now()];
      const reply = await this.#run(
        LOAD,
        [this.#names.record, this.#names.instances],
        [this.#instanceId],
        'read the secret',
      );
      const head = loadOf(reply);
      if (head === undefined) throw unavailable(this.#endpoint, 'read the secret', new Error('an unexpected answer'));
      // The Redis the first record was read from starts the era (open() reads before any renewal): a first
      // renewal that finds another Redis (a restart from an older dump, a failover) quarantines as any change of
      // era does, instead of starting the era afresh on a record a rotation may have revoked meanwhile.
      this.#era.begin(head.observed, this.#runtime.now());
      const { value } = head;
      let loaded: ReturnType<typeof decodeRecord> | undefined;
      if (head.status !== 'missing') {
        try {
          loaded = decodeRecord(value, this.key);
        } catch (error) {
          const marker = markerOf(value);
          if (marker !== undefined) {
            // A rollback marker: taken in as a renewal takes it in, so that a save (the rotation that ends the
            // refusal) replaces it, even from a process that has only read it, such as `launcher-auth rotate`.
            this.#history.see(marker.generation, marker.id, marker.prev, sent, marker.line);
            throw this.#reports.found('rollback', this.#link !== undefined);
          }
          if (this.#history.newest.generation === 0) this.#corrupt = true;
          throw error;
        }
      }
      const [generation, id] = [loaded?.generation ?? 0, loaded?.record.id ?? null];
      const sighting = this.#history.see(generation, id, loaded?.prev ?? '', sent, loaded?.line);
      endTrustOn(this.#lease, this.#link, head.observed, sentAt);
      if (sighting === 'rollback') throw this.#reports.found(loaded ? 'rollback' : 'missing', this.#link !== undefined);
      if (sighting === 'adopted') {
        if (loaded === undefined) return undefined;
        this.#corrupt = false;
        this.#keep(loaded.record);
        return loaded.record;
      }
      // Late: Redis answered before a newer record was written (this instance's own save or write-forward, or one a
      // renewal saw), whose answer was taken in first: not a rollback. A newer record this instance holds was in
      // Redis while this load() ran: returned without another round trip. One seen only by a renewal is read again;
      // a further read is late only if yet another record was seen meanwhile, so the reads end once rotations pause.
      const newer = this.#records.get(this.#history.newest.id);
      if (newer !== undefined) return newer;
    }
  }

  save(record: SecretRecord, options?: SaveOptions): Promise<void> {
    const run = this.#saves.then(() => this.#saveNow(record, options?.signal));
    this.#saves = run.catch(() => undefined);
    return run;
  }

  async watch(onChange: () => Promise<void>, link: StoreLink): Promise<() => void> {
    if (!this.#client.isOpen) throw notConnectedError(this.#endpoint);
    const names = this.#names;
    this.#link = link;
    const follower = new Follower(
      { lease: this.#lease, history: this.#history, era: this.#era },
      link,
      {
        confirm: async (heldId, savingId, seq) => {
          // Remembered before it is acknowledged: a rotation that counts this instance finds it in the file.
          const newest = this.#history.newest;
          if (heldId === newest.id) await this.#generationFile.remember(newest);
          try {
            const reply = await this.#run(
              CONFIRM,
              [names.record, names.instances],
              [this.#instanceId, heldId, savingId, String(seq), randomId(this.#runtime, 9), names.acked],
              'renew the lease',
            );
            const head = observation(reply);
            if (head === undefined || head.status === 'corrupt') return undefined;
            return { status: head.status === 'ok' ? 'ok' : 'stale', ...head.observed };
          } catch {
            return undefined;
          }
        },
        overwrite: (over, options) => this.#overwrite(over, options),
        subscribe: (onMessage) =>
          answered(
            this.#client.subscribe([names.channel, names.acked], (message, channel) => {
              if (channel === names.acked) {
                if (message === this.#savingId && message !== '') this.#acks.heard();
              } else onMessage(message);
            }),
            this.#commandTimeout,
            this.#endpoint,
            'subscribe to rotations',
            this.#runtime,
          ),
        leave: () => this.#run(LEAVE, [names.instances], [this.#instanceId], 'leave the instance table'),
        savingId: () => this.#savingId,
        renewHeld: () => this.#renewHeld,
        holds: (id) => this.#records.has(id),
        report: (condition) => this.#reports.entered(condition, link.reportsErrors),
      },
      onChange,
      this.#runtime,
    );
    const { openedOver } = this.#reports;
    // open() reported the rollback it found (onStoreError): the renewals report only a change from it.
    if (openedOver !== undefined) this.#lease.assume(openedOver);
    try {
      await follower.start();
    } catch (error) {
      void follower.stop();
      this.#link = undefined;
      throw error;
    }
    if (this.#replicas.started(link.reportsErrors)) follower.reload();
    this.#follower = follower;
    if (openedOver !== undefined) this.#reports.opened(openedOver, link.reportsErrors);
    // The authority's close() waits for this: the entry is gone from the table (or Redis did not answer within
    // `commandTimeout`) before the host may close its client, so that no rotation waits a lease for it. Not while
    // the connection is down: the goodbye would wait out `commandTimeout` for nothing.
    // eslint-disable-next-line @typescript-eslint/no-misused-promises -- SecretStore.watch's unwatch may return a promise, which the authority's close() awaits; this declared type is the published one
    return () => {
      this.#link = undefined;
      this.#follower = undefined;
      this.#acks.cancelDrops();
      const leaving = follower.stop();
      return this.#client.isReady ? leaving : undefined;
    };
  }

  /** `over`: the record Redis holds, when it is not the newest seen (a rollback marker, an older record). */
  async #saveNow(record: SecretRecord, signal: AbortSignal | undefined, over?: Seen): Promise<void> {
    const problem = recordProblem(record);
    if (problem !== undefined) {
      throw new LauncherAuthError(
        'ERR_INVALID_RECORD',
        `Refusing to save an unusable record to Redis key "${this.key}": ${problem}.`,
      );
    }
    if (this.#corrupt) throw corruptError(this.key);
    // A key the authority fell behind on, written back over its own given-up save that landed: never brought back.
    if (this.#history.replaced(record.id)) throw conflictError(this.key, true);
    signal?.throwIfAborted();
    // Not sent at all: certainly nothing changed.
    if (!this.#client.isOpen) throw notConnectedError(this.#endpoint);
    const { generation: expected, id: expectedId } = over ?? this.#history.newest;
    const generation = Math.max(expected, this.#history.newest.generation) + 1;
    const heldId = this.#link?.keyId;
    // The held key is renewed on the new record while it is saved only when the held key is the newest seen.
    this.#savingId = record.id;
    this.#renewHeld = heldId !== undefined && this.#history.mayRenewWhileSaving(heldId, over);
    this.#keep(record);
    try {
      const line = this.#history.lineFor({ generation: expected, id: expectedId }, record.id);
      const value = encodeRecord(record, generation, expectedId, line);
      const [confirmedAtSend, sentAt] = [this.#era.confirmedSeq, this.#runtime.now()];
      let result: RunResult;
      try {
        result = await this.#runFull(
          SAVE,
          [this.#names.record, this.#names.instances],
          saveArgs(this.#names, this.#instanceId, expected, expectedId, value),
          'save the secret',
          true,
        );
      } catch (error) {
        // Sent and not answered: Redis may still run it. The follower adopts whatever Redis finally holds.
        if (error instanceof LauncherAuthError && error.code === 'ERR_STORE_UNAVAILABLE') {
          throw uncertainError(this.key, 'Redis did not answer the save in time');
        }
        throw error;
      }
      const savedAt = this.#runtime.now();
      const head = observation(result.reply);
      if (head === undefined) throw uncertainError(this.key, 'Redis answered the save with something unexpected');
      if (head.status === 'corrupt') throw corruptError(this.key);
      if (head.status === 'conflict') {
        // Two creating the first secret at once: a watching authority adopts the other's, one without reads it again.
        if (expected === 0 && over === undefined && this.#link === undefined) return;
        // Not another rotation (written forward, a marker, an older record): saved over, once. Seen either way.
        const again = this.#history.saveOver({ generation: expected, id: expectedId }, head.observed);
        endTrustOn(this.#lease, this.#link, head.observed, sentAt);
        if (again !== undefined && over === undefined) {
          await this.#saveNow(record, signal, again);
          return;
        }
        throw conflictError(this.key);
      }
      this.#history.wrote(generation, record.id, line);
      const remembered = this.#generationFile.remember({ generation, id: record.id });
      // The answer is taken into the era even when WAIT fails: a quarantine starts at the first answer of a new server.
      const saved = { generation, id: record.id, savedAt, saveReply: head.observed, confirmedAtSend, sentAt };
      const options = { ...this.#lease.options, commandTimeout: this.#commandTimeout };
      const wait = new AckWait({ ...saved, era: this.#era, options });
      this.#replicas.check(result);
      await this.#acks.wait(wait, this.#history);
      // A lease renewed on the saved record (unless a newer one or the marker was seen: this process was frozen while
      // other rotations went on), then trust in it from the moment the authority makes it current, even when it held
      // no trusted key before (the placeholder of an open() over the rollback marker).
      const leased = await this.#follower?.renewUntilLeased();
      const unresolved = unresolvedError(this.key, record.id, leased, this.#history.newest.id);
      if (unresolved !== undefined) throw unresolved;
      this.#link?.trustUntil(this.#lease.saveResolved(), record.id);
      await remembered;
    } finally {
      this.#savingId = '';
    }
  }

  /** Writes the held record (or the rollback marker) over what Redis holds after a rollback. */
  async #overwrite(over: Overwrite, { marker }: { readonly marker: boolean }): Promise<void> {
    const held = this.#link?.keyId;
    const record = held === undefined ? undefined : this.#records.get(held);
    if (!marker && record === undefined) return;
    const value =
      marker || record === undefined
        ? encodeMarker(randomId(this.#runtime, 9), over.generation, over.expectedId, over.line)
        : encodeRecord(record, over.generation, over.expectedId, over.line);
    const result = await this.#runFull(
      SAVE,
      [this.#names.record, this.#names.instances],
      saveArgs(this.#names, this.#instanceId, over.expected, over.expectedId, value),
      'write the secret back',
      false,
    );
    const { status, observed } = observation(result.reply) ?? {};
    if (status === 'ok' && observed?.id) this.#history.wrote(over.generation, observed.id, over.line);
  }

  #keep(record: SecretRecord): void {
    this.#records.delete(record.id);
    this.#records.set(record.id, record);
    for (const id of this.#records.keys()) {
      if (this.#records.size <= RECORDS_KEPT) break;
      if (id !== this.#link?.keyId) this.#records.delete(id);
    }
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
  ): Promise<RunResult> {
    if (!this.#client.isOpen) throw notConnectedError(this.#endpoint);
    // A synchronous throw (a bad argument) rejects the same way as a failed command.
    const sent = new Promise<RunResult>((resolve) =>
      resolve(this.#client.run(script, keys, args, waitReplicas ? this.#replicas.run : undefined)),
    );
    const timeout = this.#commandTimeout + (waitReplicas ? this.#replicas.timeout : 0);
    return answered(sent, timeout, this.#endpoint, what, this.#runtime);
  }
}

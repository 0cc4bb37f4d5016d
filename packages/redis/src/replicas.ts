// How many replicas a save waits for (the `replicas` option, or its default for the deployment), whether an answer
// confirms it, and the one notice that a deployment which fails over on its own runs without that wait.
import type { RedisConnection, RunOptions, RunResult } from './client.js';
import { replicasOffError, uncertainError } from './errors.js';
import { MAJORITY, type ReplicasWait } from './options.js';

export class ReplicaWait {
  /** What a save's run asks for, or `undefined` when saves wait for no replica. */
  readonly run: RunOptions | undefined;
  /** The longest the wait adds to a save's command timeout. */
  readonly timeout: number;
  readonly #wait: ReplicasWait | false;
  readonly #key: string;
  /** `replicas: false` on Sentinel or Cluster, not yet told. */
  #untold: boolean;

  constructor(option: ReplicasWait | false | undefined, deployment: RedisConnection['deployment'], key: string) {
    // A deployment that fails over on its own can promote a replica that lacks the last rotation: wait for a
    // majority of the replicas unless told otherwise.
    this.#wait = option ?? (deployment === undefined ? false : MAJORITY);
    this.#untold = option === false && deployment !== undefined;
    this.#key = key;
    this.run = this.#wait === false ? undefined : { wait: { replicas: this.#wait.count, timeout: this.#wait.timeout } };
    this.timeout = this.#wait === false ? 0 : this.#wait.timeout;
  }

  /** Rejects the save as `ERR_SAVE_UNCERTAIN` unless `result` confirms it on the replicas asked for. */
  check(result: RunResult): void {
    const wait = this.#wait;
    if (wait === false) return;
    // An unknown count (of replicas reached, or of replicas the primary has) is "not confirmed". A connection that
    // does not say how many it required asked for the number given, which only 'majority' leaves unknown.
    const required = result.required ?? (wait.count === 'majority' ? Infinity : wait.count);
    if ((result.replicas ?? -1) >= required) return;
    const wanted = wait.count === 'majority' ? "a majority of the primary's replicas" : `${wait.count} replica(s)`;
    throw uncertainError(this.#key, `Redis WAIT did not confirm the save on ${wanted} in time`);
  }

  /**
   * When watching starts: a host without `onStoreError` gets a process warning now; with one, `true` asks for a
   * reload, whose load() rejects with the notice ({@link ReplicaWait.tell}).
   */
  started(reportsErrors: boolean): boolean {
    if (!this.#untold || reportsErrors) return this.#untold;
    this.#untold = false;
    process.emitWarning(replicasOffError(this.#key).message, {
      code: 'LAUNCHER_AUTH_REDIS_REPLICAS_OFF',
      type: 'LauncherAuthWarning',
    });
    return false;
  }

  /** In load(): rejects once with the notice, for a host with `onStoreError` (the reload that started() asked for). */
  tell(reportsErrors: boolean): void {
    if (!this.#untold || !reportsErrors) return;
    this.#untold = false;
    throw replicasOffError(this.#key);
  }
}

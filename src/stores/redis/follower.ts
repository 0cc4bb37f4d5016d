// One instance's side of the lease: renew it while this instance holds the current key, bound the authority's
// trust by it, and follow rotations (pub/sub, and the renewal itself as the periodic re-check).
import { performance } from 'node:perf_hooks';
import type { StoreLink } from '../../core/types.js';
import { answered, type RedisSubscriberLike } from './client.js';

/** How many reload-and-confirm rounds one wake-up makes before leaving it to the next renewal. */
const ROUNDS = 3;
/** The pause before more rounds, when {@link ROUNDS} were not enough, in milliseconds. */
const RETRY_PAUSE = 20;

export interface FollowerOptions {
  readonly leaseMs: number;
  readonly renewInterval: number;
  readonly driftMargin: number;
  readonly commandTimeout: number;
  readonly endpoint: string;
  readonly channel: string;
  /** Runs the confirmation script for the key this instance holds: true when the lease was renewed. */
  readonly confirm: (heldId: string) => Promise<boolean>;
  /** Removes this instance from the table (best effort, on stop). */
  readonly leave: () => Promise<unknown>;
}

export class Follower {
  readonly #options: FollowerOptions;
  readonly #link: StoreLink;
  readonly #onChange: () => Promise<void>;
  #subscriber: RedisSubscriberLike | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  #running: Promise<void> | undefined;
  /** A rotation was reported (or the lease found stale) and the authority has not reloaded since. */
  #reloadWanted = false;
  #stopped = false;

  constructor(options: FollowerOptions, link: StoreLink, onChange: () => Promise<void>) {
    this.#options = options;
    this.#link = link;
    this.#onChange = onChange;
    // Nothing is trusted until Redis has confirmed that this instance holds the current key.
    link.trustUntil(-Infinity);
  }

  /** Registers the lease (reloading first if the key changed since it was read), then subscribes. */
  async start(subscriber: RedisSubscriberLike): Promise<void> {
    const { commandTimeout, endpoint, channel, renewInterval } = this.#options;
    this.#subscriber = subscriber;
    subscriber.on('error', () => {
      // Reconnection is the client's; a missed message is caught by the next renewal.
    });
    await answered(subscriber.connect(), commandTimeout, endpoint, 'open the pub/sub connection');
    await answered(
      subscriber.subscribe(channel, () => void this.#wake(true)),
      commandTimeout,
      endpoint,
      'subscribe to rotations',
    );
    await this.#wake(false);
    this.#timer = setInterval(() => void this.#wake(false), renewInterval);
    this.#timer.unref();
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#subscriber?.destroy();
    this.#subscriber = undefined;
    // After a renewal in flight, which would otherwise put the entry back with a live lease for a rotation to wait on.
    void (this.#running ?? Promise.resolve()).then(() => this.#options.leave()).catch(() => undefined);
  }

  /** One renewal, or a reload and then a renewal after a rotation; concurrent wake-ups share one run. */
  #wake(reload: boolean): Promise<void> {
    if (reload) this.#reloadWanted = true;
    if (this.#running !== undefined) return this.#running;
    const run = this.#rounds().then((settled) => {
      this.#running = undefined;
      if (!this.#reloadWanted || this.#stopped) return;
      // A report that came as the last round ended: at once. After rounds that all wanted another reload (rotations
      // in quick succession, or a reload that keeps failing): again shortly, at a bounded rate.
      if (settled) void this.#wake(false);
      else setTimeout(() => void this.#wake(false), RETRY_PAUSE).unref();
    });
    this.#running = run;
    return run;
  }

  /** True when it ended with the lease renewed, false when it gave up after {@link ROUNDS} stale rounds. */
  async #rounds(): Promise<boolean> {
    for (let round = 0; round < ROUNDS && !this.#stopped; round += 1) {
      if (this.#reloadWanted) {
        this.#reloadWanted = false;
        await this.#onChange();
      }
      // Stale: another key is current, so reload; a report that came meanwhile asks for the same.
      if ((await this.#renew()) === false) this.#reloadWanted = true;
      if (!this.#reloadWanted) return true;
    }
    return false;
  }

  /**
   * Confirms the held key. The deadline is taken from a time read before the request was sent, so it ends
   * before the expiry Redis computes on receipt, minus `driftMargin` for the two clocks' rates.
   * `undefined` when Redis did not answer (trust simply runs out).
   */
  async #renew(): Promise<boolean | undefined> {
    const { leaseMs, driftMargin, commandTimeout, endpoint } = this.#options;
    const sentAt = performance.now();
    const heldId = this.#link.keyId;
    let renewed: boolean;
    try {
      renewed = await answered(this.#options.confirm(heldId), commandTimeout, endpoint, 'renew the lease');
    } catch {
      return undefined;
    }
    if (renewed && !this.#stopped) this.#link.trustUntil(sentAt + leaseMs - driftMargin);
    return renewed;
  }
}

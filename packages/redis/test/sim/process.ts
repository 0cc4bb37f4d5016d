// One simulated process: its monotonic clock (its own rate and origin), its timers, its pauses, partitions and
// crashes, and its connection to the simulated Redis (a RedisConnection, as the store's connection layer gives one).
import type { Runtime } from 'launcher-auth/store-kit';
import type { RedisConnection, RedisSubscription, RunOptions, RunResult } from '../../src/client.js';
import type { Prng } from './prng.js';
import type { Deployment, RedisNode, Subscriber } from './redis.js';
import type { Scheduler } from './scheduler.js';

/**
 * How long a process may take to get to an answer after it arrived, in ms: answers that arrive closer together
 * than this (on its command and pub/sub connections) may be taken in either order.
 */
const TAKE_IN = 2;
/** The longest delay of a message each way, in ms, apart from the network's rare slow one. */
const DELAY = 3;
/** The same on loopback (a Redis on the process's own machine), and the longest it takes to get to an answer. */
const LOOPBACK = 0.1;

/** The commands that arrived at a stalled node, in order, whichever process sent them. */
const stalled = new WeakMap<RedisNode, Array<() => void>>();

/** What a pause holds back, and the cancel function of its event at the pause's end. */
interface Deferred {
  done: boolean;
  readonly run: () => void;
  cancel: () => void;
}

export interface Partition {
  readonly until: number;
  /** Messages sent meanwhile are lost (else held, and delivered once it heals). */
  readonly drop: boolean;
  /** Which way it cuts: both, only what the process sends, or only what it receives. */
  readonly way: 'both' | 'out' | 'in';
}

export class SimProcess {
  readonly name: string;
  /** The machine this process runs on (an instance's slot): a restart runs there again. */
  readonly slot: number;
  readonly rate: number;
  origin: number;
  alive = true;
  pausedUntil = 0;
  partition: Partition = { until: 0, drop: false, way: 'both' };
  /**
   * Until then its connection breaks and reconnects between a script and its WAIT: the count is unknown (the
   * connection layer answers without one, as for a WAIT that failed).
   */
  waitUnknownUntil = 0;
  /** The node this process's client takes for the primary, and since when (true time). */
  route: number;
  routedAt = 0;
  /**
   * Until when a message of this process is slow (the tail of the network's delays, or held by a partition), in
   * true time.
   */
  slowUntil = 0;
  readonly runtime: Runtime;
  readonly connection: RedisConnection;
  /** Commands and pub/sub: when the last message each way is delivered (each connection is FIFO). */
  #toRedisAt = 0;
  #fromRedisAt = 0;
  #pubsubAt = 0;
  readonly #subscriptions = new Set<{ node: RedisNode; subscriber: Subscriber }>();
  /** What waits for the present pause to end, in the order it was held back. */
  readonly #deferred: Deferred[] = [];
  readonly #scheduler: Scheduler;
  readonly #rng: Prng;
  readonly #redis: Deployment;
  readonly #sentinel: boolean;
  readonly #delayMax: number;
  readonly #takeIn: number;
  /**
   * Every answer that reached this process, how long after its command was sent (on this process's clock) and the
   * command's arguments, for the world's bookkeeping (never for a decision): an answer later than the store's
   * command timeout is ignored. `at`: when the command was sent and when its answer arrived, in true time, before
   * a pause held it back: the store takes it in exactly when it arrived before the timer it set when sending (a
   * timer due at the same time runs first, having been set first).
   */
  onAnswer: (
    reply: unknown,
    took: number,
    args: readonly string[],
    script: string,
    at: { readonly sent: number; readonly arrived: number },
  ) => void = () => undefined;
  /** A script run with WAIT: whether WAIT confirmed it on the replicas asked for (false when the count is unknown). */
  onWait: (args: readonly string[], reply: unknown, confirmed: boolean) => void = () => undefined;
  /** Every command Redis ran for this process and its answer, for a replay's trace. */
  onCommand: ((node: number, script: string, args: readonly string[], reply: unknown) => void) | undefined;

  constructor(options: {
    name: string;
    slot: number;
    scheduler: Scheduler;
    rng: Prng;
    redis: Deployment;
    rateSpread: number;
    /** Its clock's rate, when its machine's is given (else drawn within `rateSpread`). */
    rate?: number;
    /** Whether Redis runs on its machine (loopback: see {@link LOOPBACK}). */
    local?: boolean;
    /** Whether the client is a Sentinel client (its saves then wait for a majority of replicas by default). */
    sentinel: boolean;
  }) {
    const { name, slot, scheduler, rng, redis, rateSpread } = options;
    this.#sentinel = options.sentinel;
    this.name = name;
    this.slot = slot;
    this.#scheduler = scheduler;
    this.#rng = rng;
    this.#redis = redis;
    const drawn = 1 + (rng.float() * 2 - 1) * rateSpread;
    this.rate = options.rate ?? drawn;
    this.#delayMax = options.local === true ? LOOPBACK : DELAY;
    this.#takeIn = options.local === true ? LOOPBACK : TAKE_IN;
    this.origin = rng.int(0, 1_000_000);
    this.route = redis.primary;
    this.runtime = {
      now: () => this.local(),
      timer: (ms, callback) => this.#timer(ms, callback),
      random: (bytes) => {
        const buffer = Buffer.alloc(bytes);
        for (let index = 0; index < bytes; index += 4) buffer.writeUInt32LE(rng.next(), Math.min(index, bytes - 4));
        return buffer;
      },
    };
    this.connection = this.#connection();
  }

  /** The process's monotonic clock now. */
  local(): number {
    return this.origin + this.#scheduler.now * this.rate;
  }

  /** Whether it runs code now (not crashed, not paused). */
  get running(): boolean {
    return this.alive && this.#scheduler.now >= this.pausedUntil;
  }

  /** Gone: nothing it sent or set up happens any more. */
  crash(): void {
    this.alive = false;
    for (const { node, subscriber } of this.#subscriptions) node.subscribers.delete(subscriber);
    this.#subscriptions.clear();
  }

  /** Its client follows the sentinels to `node`: the subscriptions move there (messages meanwhile are lost). */
  reroute(node: number): void {
    if (this.route === node) return;
    this.route = node;
    this.routedAt = this.#scheduler.now;
    const target = this.#redis.nodes[node] as RedisNode;
    for (const entry of this.#subscriptions) {
      entry.node.subscribers.delete(entry.subscriber);
      entry.node = target;
      target.subscribers.add(entry.subscriber);
    }
  }

  /** Runs `run` now if the process runs, else when it resumes (in order); never after a crash. */
  whenRunning(run: () => void): void {
    if (!this.alive) return;
    if (this.#scheduler.now >= this.pausedUntil) return run();
    // Deferred in order; resume() runs them at once if the pause ends early, pause() keeps their order if it grows.
    // (The common case above makes no closure: this runs for every event of the process.)
    const entry: Deferred = { done: false, run: () => this.whenRunning(run), cancel: () => undefined };
    this.#deferred.push(entry);
    entry.cancel = this.#at(this.pausedUntil, entry);
  }

  /**
   * Freezes the process until `until` (a GC pause, SIGSTOP); a pause that begins during another one extends it. What
   * the first one held back still runs first when the process resumes, before what arrived during the second: a
   * timer that came due before an answer arrived runs before that answer is taken in, however the pauses overlap.
   */
  pause(until: number): void {
    if (until <= this.pausedUntil) return;
    const growing = this.#scheduler.now < this.pausedUntil;
    this.pausedUntil = until;
    if (!growing) return;
    const waiting = this.#deferred.splice(0).filter((entry) => !entry.done);
    for (const entry of waiting) {
      entry.cancel();
      entry.cancel = this.#at(until, entry);
    }
    this.#deferred.push(...waiting);
  }

  /** Runs a deferred entry at `at` (its place among the events of that time is taken now). */
  #at(at: number, entry: Deferred): () => void {
    return this.#scheduler.cancellable(at, () => {
      if (entry.done) return;
      entry.done = true;
      entry.run();
    });
  }

  /** Ends a pause now: what waited for it runs, in order. */
  resume(): void {
    if (this.#scheduler.now >= this.pausedUntil) return;
    this.pausedUntil = this.#scheduler.now;
    const waiting = this.#deferred.splice(0);
    for (const entry of waiting) {
      if (entry.done) continue;
      entry.done = true;
      this.#scheduler.push(this.#scheduler.now, entry.run);
    }
  }

  #timer(ms: number, callback: () => void): () => void {
    let cancelled = false;
    const drop = this.#scheduler.cancellable(this.#scheduler.now + Math.max(0, ms) / this.rate, () =>
      this.whenRunning(() => {
        if (!cancelled) callback();
      }),
    );
    return () => {
      cancelled = true;
      drop();
    };
  }

  #delay(): number {
    if (!this.#rng.chance(0.05)) return this.#rng.float() * this.#delayMax;
    const delay = this.#rng.int(5, 60);
    this.slowUntil = Math.max(this.slowUntil, this.#scheduler.now + delay);
    return delay;
  }

  /** When a message sent now on a connection arrives, or -1 when it is lost. */
  #arrival(outbound: boolean): number {
    const now = this.#scheduler.now;
    const { partition } = this;
    let at = now + this.#delay();
    const cut = partition.way === 'both' || (partition.way === 'out') === outbound;
    if (now < partition.until && cut) {
      if (partition.drop) return -1;
      at = partition.until + this.#delay();
      // Held on a FIFO connection, it holds back every later message there too, even if a later partition (which
      // replaces this one) ends sooner: the connection is slow until it lands.
      this.slowUntil = Math.max(this.slowUntil, at);
    }
    return at;
  }

  /**
   * Carries an answer back to the process, in order, taken in up to TAKE_IN later; lost if it crashed. `deliver`
   * hears when it arrived (true time), even if a pause then holds it back.
   */
  #answer(deliver: (arrived: number) => void, pubsub = false): void {
    let at = this.#arrival(false);
    if (at === -1) return;
    if (pubsub) {
      at = Math.max(at, this.#pubsubAt);
      this.#pubsubAt = at;
    } else {
      at = Math.max(at, this.#fromRedisAt);
      this.#fromRedisAt = at;
    }
    const arrived = at + this.#rng.float() * this.#takeIn;
    this.#scheduler.push(arrived, () => this.whenRunning(() => deliver(arrived)));
  }

  /** Runs a command on `node` when it arrives there, and carries its answer back. */
  #execute(
    node: RedisNode,
    script: string,
    keys: readonly string[],
    args: readonly string[],
    wait: RunOptions['wait'],
    /** When the command was sent, on this process's clock and in true time. */
    sentAt: number,
    sentTrue: number,
    resolve: (result: RunResult) => void,
    reject: (error: unknown) => void,
  ): void {
    if (!this.alive || node.role === 'down') return;
    // A stalled server runs the commands when it wakes, in the order they arrived: a stall that grows while they
    // wait (another one begins) must not let a later command overtake them, which a server never does (a renewal
    // run after a newer one would look like a table that lost writes).
    const waiting = stalled.get(node);
    if (waiting !== undefined || this.#scheduler.now < node.stalledUntil) {
      const run = (): void => this.#execute(node, script, keys, args, wait, sentAt, sentTrue, resolve, reject);
      if (waiting !== undefined) waiting.push(run);
      else {
        stalled.set(node, [run]);
        this.#wake(node);
      }
      return;
    }
    const redis = this.#redis;
    let reply: unknown;
    try {
      reply = redis.exec(node, script, keys, args);
      this.onCommand?.(node.index, script, args, reply);
    } catch (error) {
      this.#answer(() => reject(error));
      return;
    }
    if (wait === undefined) {
      this.#answer((arrived) => {
        this.onAnswer(reply, this.local() - sentAt, args, script, { sent: sentTrue, arrived });
        resolve({ reply });
      });
      return;
    }
    if (this.#scheduler.now < this.waitUnknownUntil) {
      this.onWait(args, reply, false);
      this.#answer((arrived) => {
        this.onAnswer(reply, this.local() - sentAt, args, script, { sent: sentTrue, arrived });
        resolve({ reply });
      });
      return;
    }
    // 'majority': more than half of the replicas the primary has now (none: no wait), as INFO replication tells.
    const have = redis.listedReplicas(node);
    const required = wait.replicas === 'majority' ? (have === 0 ? 0 : Math.floor(have / 2) + 1) : wait.replicas;
    redis.wait(node, required, wait.timeout, (replicas) => {
      this.onWait(args, reply, replicas >= required);
      this.#answer((arrived) => {
        this.onAnswer(reply, this.local() - sentAt, args, script, { sent: sentTrue, arrived });
        resolve({ reply, replicas, required });
      });
    });
  }

  /** Runs what waited on a stalled `node` once it wakes, in order; again later while its stall grows. */
  #wake(node: RedisNode): void {
    this.#scheduler.push(node.stalledUntil, () => {
      if (this.#scheduler.now < node.stalledUntil) return void this.#wake(node);
      const waiting = stalled.get(node) ?? [];
      stalled.delete(node);
      for (const run of waiting) run();
    });
  }

  #connection(): RedisConnection {
    const scheduler = this.#scheduler;
    const redis = this.#redis;
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the connection's getters and callbacks act on this process
    const process = this;
    return {
      endpoint: 'the simulated Redis',
      ...(this.#sentinel ? { deployment: 'sentinel' as const } : {}),
      get isOpen() {
        return process.alive;
      },
      get isReady() {
        return process.alive && scheduler.now >= process.partition.until;
      },
      run(script, keys, args, options) {
        const node = redis.nodes[process.route] as RedisNode;
        const sentAt = process.local();
        const sentTrue = scheduler.now;
        return new Promise<RunResult>((resolve, reject) => {
          let at = process.#arrival(true);
          if (at === -1) return;
          at = Math.max(at, process.#toRedisAt);
          process.#toRedisAt = at;
          scheduler.push(at, () =>
            process.#execute(node, script, keys, args, options?.wait, sentAt, sentTrue, resolve, reject),
          );
        });
      },
      subscribe(channels, onMessage) {
        const node = redis.nodes[process.route] as RedisNode;
        const entry = {
          node,
          subscriber: {
            channels: new Set(channels),
            deliver: (channel: string, message: string) =>
              process.#answer(() => {
                if (process.#subscriptions.has(entry)) onMessage(message, channel);
              }, true),
          },
        };
        return new Promise<RedisSubscription>((resolve) => {
          const at = process.#arrival(true);
          if (at === -1) return;
          scheduler.push(at, () => {
            if (!process.alive) return;
            entry.node = redis.nodes[process.route] as RedisNode;
            entry.node.subscribers.add(entry.subscriber);
            process.#subscriptions.add(entry);
            process.#answer(() =>
              resolve({
                close: () => {
                  entry.node.subscribers.delete(entry.subscriber);
                  process.#subscriptions.delete(entry);
                },
              }),
            );
          });
        });
      },
    };
  }
}

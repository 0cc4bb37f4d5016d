// The simulated Redis deployment: a primary and its replicas, each a keyspace that runs the store's own Lua
// scripts (keyspace.ts). Writes reach each replica after its own lag; WAIT counts the replicas that have them.
// Restarts (empty or from an older dump), stalls, failovers (a split brain included) and slot moves change it.
import { LOAD, PENDING } from '../../src/scripts.js';
import { Keyspace, type Data } from './keyspace.js';
import type { Prng } from './prng.js';
import type { Scheduler } from './scheduler.js';

/** One pub/sub subscription on a node: `deliver` carries a message to its process (or drops it). */
export interface Subscriber {
  readonly channels: ReadonlySet<string>;
  readonly deliver: (channel: string, message: string) => void;
}

export class RedisNode {
  readonly index: number;
  readonly keyspace: Keyspace;
  role: 'primary' | 'replica' | 'down' = 'replica';
  /** For a replica: the node it follows. */
  primary = -1;
  /** How many writes this node has applied of its primary's stream (its own, for a primary). */
  offset = 0;
  /** Commands wait until then (a stall: a slow disk, a long script, a fork). */
  stalledUntil = 0;
  /** Replication to this replica is held until then (a lagging link). */
  linkDownUntil = 0;
  /** When the last replicated write reaches this replica: writes arrive in order. */
  replicatedAt = 0;
  readonly subscribers = new Set<Subscriber>();
  /**
   * For a primary deposed by a split: the replicas it still lists (INFO replication's `connected_slaves`). Redis drops
   * a replica from the list only after `repl-timeout` (60 s by default) without an answer, longer than any split here.
   */
  listed: readonly RedisNode[] | undefined;
  /** WAIT commands waiting on this primary's replicas. */
  readonly waiting = new Set<{ readonly offset: number; readonly count: number; readonly done: (n: number) => void }>();

  constructor(index: number, serverId: string) {
    this.index = index;
    this.keyspace = new Keyspace({ serverId });
    this.keyspace.onPublish = (channel, message) => {
      for (const subscriber of this.subscribers)
        if (subscriber.channels.has(channel)) subscriber.deliver(channel, message);
    };
  }
}

/** Scripts that only read: they move no replication offset. */
const READS: ReadonlySet<string> = new Set([LOAD, PENDING]);

export class Deployment {
  readonly nodes: RedisNode[] = [];
  /** The node the sentinels (and every client they tell) take for the primary. */
  primary = 0;
  readonly #scheduler: Scheduler;
  readonly #rng: Prng;
  /** Each replica's usual lag, in ms. */
  readonly #lags: number[] = [];
  /** The primary's keyspace every 20 ms: what a restart from a dump may bring back. */
  readonly dumps: Data[] = [];
  /** How many promotions so far: each names a new replication id. */
  #promotions = 0;
  /** Called after every write a node applies (its own or replicated), for the invariants. */
  onWrite: (node: RedisNode) => void = () => undefined;

  constructor(scheduler: Scheduler, rng: Prng, replicas: number) {
    this.#scheduler = scheduler;
    this.#rng = rng;
    for (let index = 0; index <= replicas; index += 1) {
      const node = new RedisNode(index, rng.name());
      if (index === 0) node.role = 'primary';
      else node.primary = 0;
      this.nodes.push(node);
      this.#lags.push(rng.chance(0.3) ? rng.float() * 40 : rng.float() * 3);
    }
  }

  /** Runs EVAL on `node` as Redis would; a script error is thrown as node-redis rejects with it. */
  exec(node: RedisNode, script: string, keys: readonly string[], args: readonly string[]): unknown {
    if (node.role === 'primary' || READS.has(script)) {
      const reply = node.keyspace.eval(script, keys, args);
      if (!READS.has(script)) this.#wrote(node);
      return reply;
    }
    // A replica runs a script until it writes, which Redis refuses: the keyspace is left as it was.
    const before = node.keyspace.snapshot();
    const reply = node.keyspace.eval(script, keys, args);
    if (!same(before, node.keyspace.snapshot())) {
      node.keyspace.restore(before, node.keyspace.serverId);
      throw new Error("READONLY You can't write against a read only replica.");
    }
    return reply;
  }

  /** WAIT `count` `timeout` on `node` after a write: `done` gets how many of its replicas have every write so far. */
  wait(node: RedisNode, count: number, timeout: number, done: (replicas: number) => void): void {
    const entry = { offset: node.offset, count, done };
    const have = this.#acked(node, entry.offset);
    if (have >= count || count === 0) return done(have);
    node.waiting.add(entry);
    this.#scheduler.push(this.#scheduler.now + timeout, () => {
      if (node.waiting.delete(entry)) done(this.#acked(node, entry.offset));
    });
  }

  replicasOf(node: RedisNode): RedisNode[] {
    return this.nodes.filter((other) => other.role === 'replica' && other.primary === node.index);
  }

  /** Whether two nodes hold the same data (a replica that has every write of its primary). */
  sameData(a: RedisNode, b: RedisNode): boolean {
    return same(a.keyspace.snapshot(), b.keyspace.snapshot());
  }

  /** How many replicas `node` lists in INFO replication: a deposed primary still lists those it lost in the split. */
  listedReplicas(node: RedisNode): number {
    return node.listed?.length ?? this.replicasOf(node).length;
  }

  #acked(node: RedisNode, offset: number): number {
    return this.replicasOf(node).filter((replica) => replica.offset >= offset).length;
  }

  /** A write on `node`: counted, and streamed to its replicas in order, each after its lag. */
  #wrote(node: RedisNode): void {
    node.offset += 1;
    this.onWrite(node);
    if (node.role !== 'primary') return;
    const data = node.keyspace.snapshot();
    const offset = node.offset;
    for (const replica of this.replicasOf(node)) this.#replicate(node, replica, data, offset);
  }

  #replicate(from: RedisNode, replica: RedisNode, data: Data, offset: number): void {
    const scheduler = this.#scheduler;
    const at = Math.max(
      scheduler.now + (this.#lags[replica.index] ?? 1) * (0.5 + this.#rng.float()),
      replica.replicatedAt,
      replica.linkDownUntil,
    );
    replica.replicatedAt = at;
    const arrive = (): void => {
      // Held while the link is down; lost if the replica follows another primary by then (a resync replaces it).
      if (scheduler.now < replica.linkDownUntil) return scheduler.push(replica.linkDownUntil, arrive);
      if (replica.role !== 'replica' || replica.primary !== from.index || offset <= replica.offset) return;
      replica.keyspace.restore(data, replica.keyspace.serverId);
      replica.keyspace.replid = from.keyspace.replid;
      replica.offset = offset;
      this.onWrite(replica);
      for (const entry of from.waiting) {
        if (this.#acked(from, entry.offset) >= entry.count) {
          from.waiting.delete(entry);
          entry.done(this.#acked(from, entry.offset));
        }
      }
    };
    scheduler.push(at, arrive);
  }

  /** Keeps a dump of the primary now and then: what a restart from an older snapshot brings back. */
  dump(): void {
    const primary = this.nodes[this.primary] as RedisNode;
    this.dumps.push(primary.keyspace.snapshot());
    if (this.dumps.length > 40) this.dumps.shift();
  }

  /**
   * The primary restarts with `data` (empty, or an older dump) and a new run_id, after `downFor` ms without
   * answering; its replicas resync from it.
   */
  restart(data: Data | undefined, downFor: number): void {
    const primary = this.nodes[this.primary] as RedisNode;
    primary.keyspace.restore(data, this.#rng.name());
    primary.stalledUntil = Math.max(primary.stalledUntil, this.#scheduler.now + downFor);
    this.#resync(primary);
  }

  /**
   * A replica takes over as primary. The old one is gone, or (a split brain) goes on serving the clients still
   * routed to it until `until`, then rejoins as a replica of the new one, losing what it took meanwhile.
   */
  failover(to: number, until: number): RedisNode {
    const old = this.nodes[this.primary] as RedisNode;
    const promoted = this.nodes[to] as RedisNode;
    const split = until > this.#scheduler.now;
    const replicas = this.replicasOf(old);
    // In a split, each other replica is on the deposed primary's side or on the sentinels' side: the sentinels
    // reconfigure only those they reach; the others go on replicating from the deposed primary until it heals.
    const beside = split ? replicas.filter((node) => node !== promoted && this.#rng.chance(0.5)) : [];
    promoted.role = 'primary';
    promoted.primary = -1;
    // A promotion starts a new replication history (Redis's REPLICAOF NO ONE), named here without a draw of the PRNG.
    promoted.keyspace.replid = `${promoted.keyspace.serverId}p${(this.#promotions += 1)}`;
    this.primary = to;
    for (const node of this.nodes)
      if (node !== promoted && node !== old && node.role !== 'down' && !beside.includes(node)) node.primary = to;
    this.#resync(promoted);
    if (!split) {
      old.role = 'down';
      for (const entry of old.waiting) entry.done(0);
      old.waiting.clear();
    } else {
      old.listed = replicas;
      this.#scheduler.push(until, () => {
        old.listed = undefined;
        if (old.role !== 'primary' || this.primary === old.index) return;
        const primary = this.nodes[this.primary] as RedisNode;
        for (const node of [old, ...beside]) {
          if (node !== old && (node.role !== 'replica' || node.primary !== old.index)) continue;
          node.role = 'replica';
          node.primary = this.primary;
          node.offset = -1;
          this.#replicate(primary, node, primary.keyspace.snapshot(), 0);
        }
        for (const entry of old.waiting) entry.done(0);
        old.waiting.clear();
      });
    }
    return promoted;
  }

  /** The replicas of `primary` start again from its keyspace (a full resync). */
  #resync(primary: RedisNode): void {
    const data = primary.keyspace.snapshot();
    for (const replica of this.replicasOf(primary)) {
      replica.offset = -1;
      this.#replicate(primary, replica, data, primary.offset);
    }
  }
}

function same(a: Data, b: Data): boolean {
  if (a.size !== b.size) return false;
  for (const [key, value] of a) {
    const other = b.get(key);
    if (typeof value === 'string' || typeof other === 'string') {
      if (value !== other) return false;
    } else if (other?.size !== value.size || [...value].some(([f, v]) => other.get(f) !== v)) {
      return false;
    }
  }
  return true;
}

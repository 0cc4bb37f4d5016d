// A deterministic simulation of several instances sharing one secret through a simulated Redis. It runs the store's
// own pure protocol (Lease, AckWait); one seed decides every delay, partition, pause, crash, Redis stall, restart
// (empty or from an older snapshot), failover to a lagging replica, Redis clock step and rotation, and the order in
// which an instance takes in answers that arrive together. The invariants are checked after every event.
import { AckWait, type PendingReply } from '../../src/stores/redis/acks.js';
import { Lease, MARKER_PREFIX, type ConfirmReply, type Seen } from '../../src/stores/redis/lease.js';
import type { Observed } from '../../src/stores/redis/reply.js';
import { Prng } from './prng.js';

export const TIMING = { leaseMs: 300, renewInterval: 60, driftMargin: 30, commandTimeout: 100, ackPoll: 5 } as const;
/** Clock rates differ by up to this fraction (well inside driftMargin / leaseMs). */
const RATE_SPREAD = 0.02;
/**
 * How long an instance may take to get to an answer after it arrived, in ms (the driver's awaits differ from one
 * path to another): answers that arrive closer together than this may be taken in either order.
 */
const TAKE_IN = 2;
const DURATION = 1500;

export type Fault =
  | { readonly at: number; readonly kind: 'rotate'; readonly instance: number }
  | {
      readonly at: number;
      readonly kind: 'partition';
      readonly instance: number;
      readonly length: number;
      readonly drop: boolean;
    }
  | { readonly at: number; readonly kind: 'pause'; readonly instance: number; readonly length: number }
  | { readonly at: number; readonly kind: 'crash'; readonly instance: number; readonly length: number }
  | { readonly at: number; readonly kind: 'stall'; readonly length: number }
  | { readonly at: number; readonly kind: 'restart-empty' }
  | { readonly at: number; readonly kind: 'restart-snapshot' }
  | { readonly at: number; readonly kind: 'failover'; readonly lag: number }
  | { readonly at: number; readonly kind: 'clock-step'; readonly by: number };

/** The schedule's plan: how many instances and which faults when. Drawn from the seed, shrunk on failure. */
export interface Plan {
  readonly instances: number;
  readonly faults: readonly Fault[];
}

export function planFor(seed: number): Plan {
  const rng = new Prng(seed);
  const instances = rng.int(2, 4);
  const faults: Fault[] = [];
  const count = rng.int(2, 9);
  for (let index = 0; index < count; index += 1) {
    const at = rng.int(50, DURATION - 400);
    const instance = rng.int(0, instances - 1);
    const roll = rng.int(0, 99);
    if (roll < 35) faults.push({ at, kind: 'rotate', instance });
    else if (roll < 50)
      faults.push({ at, kind: 'partition', instance, length: rng.int(20, 700), drop: rng.chance(0.5) });
    else if (roll < 60) faults.push({ at, kind: 'pause', instance, length: rng.int(20, 700) });
    else if (roll < 66) faults.push({ at, kind: 'crash', instance, length: rng.int(50, 400) });
    else if (roll < 74) faults.push({ at, kind: 'stall', length: rng.int(20, 500) });
    else if (roll < 81) faults.push({ at, kind: 'restart-empty' });
    else if (roll < 87) faults.push({ at, kind: 'restart-snapshot' });
    else if (roll < 93) faults.push({ at, kind: 'failover', lag: rng.int(1, 300) });
    else faults.push({ at, kind: 'clock-step', by: rng.pick([-3_600_000, -2000, 2000, 3_600_000]) });
  }
  // At least one rotation, often two at once.
  faults.push({ at: rng.int(100, DURATION - 400), kind: 'rotate', instance: rng.int(0, instances - 1) });
  if (rng.chance(0.3)) {
    const at = rng.int(100, DURATION - 400);
    faults.push(
      { at, kind: 'rotate', instance: 0 },
      { at: at + rng.int(0, 5), kind: 'rotate', instance: instances - 1 },
    );
  }
  return { instances, faults: faults.sort((a, b) => a.at - b.at) };
}

/** What the simulator needs of the protocol: the real one, or a deliberately broken variant. */
export interface Variant {
  readonly ackWait: typeof AckWait;
  readonly lease: typeof Lease;
}

export const REAL: Variant = { ackWait: AckWait, lease: Lease };

/** Faults after which Redis may hold an older record than one an instance saw: the only causes of a rollback. */
const LOSSES: ReadonlySet<Fault['kind']> = new Set(['restart-empty', 'restart-snapshot', 'failover']);

interface Entry {
  seq: number;
  /** The id of the record the instance last confirmed holding. */
  acked: string;
}
interface RedisState {
  record: { generation: number; id: string; prev: string } | null;
  table: Map<string, Entry>;
  epoch: string | null;
}
const copyState = (state: RedisState): RedisState => ({
  record: state.record === null ? null : { ...state.record },
  table: new Map([...state.table].map(([name, entry]) => [name, { ...entry }])),
  epoch: state.epoch,
});

export class Violation extends Error {}

interface Event {
  readonly at: number;
  readonly order: number;
  readonly run: () => void;
}

class Queue {
  readonly #heap: Event[] = [];
  #order = 0;
  push(at: number, run: () => void): void {
    const heap = this.#heap;
    heap.push({ at, order: (this.#order += 1), run });
    let index = heap.length - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (!Queue.#before(heap[index] as Event, heap[parent] as Event)) break;
      [heap[index], heap[parent]] = [heap[parent] as Event, heap[index] as Event];
      index = parent;
    }
  }
  pop(): Event | undefined {
    const heap = this.#heap;
    const top = heap[0];
    const last = heap.pop();
    if (heap.length > 0 && last !== undefined) {
      heap[0] = last;
      let index = 0;
      for (;;) {
        const left = 2 * index + 1;
        const right = left + 1;
        let smallest = index;
        if (left < heap.length && Queue.#before(heap[left] as Event, heap[smallest] as Event)) smallest = left;
        if (right < heap.length && Queue.#before(heap[right] as Event, heap[smallest] as Event)) smallest = right;
        if (smallest === index) break;
        [heap[index], heap[smallest]] = [heap[smallest] as Event, heap[index] as Event];
        index = smallest;
      }
    }
    return top;
  }
  static #before(a: Event, b: Event): boolean {
    return a.at < b.at || (a.at === b.at && a.order < b.order);
  }
}

type Outcome = 'resolved' | 'conflict' | 'superseded' | 'uncertain' | 'failed';

class Instance {
  readonly index: number;
  name: string;
  alive = true;
  pausedUntil = 0;
  /** Monotonic clock: rate and origin of this process. */
  readonly rate: number;
  readonly origin: number;
  lease: Lease;
  held: string;
  trustUntil = -Infinity;
  savingId = '';
  renewHeld = false;
  partitionedUntil = 0;
  dropWhilePartitioned = false;
  /** Per-connection FIFO: when the last message each way is delivered. */
  toRedisAt = 0;
  fromRedisAt = 0;
  /** The authority's queue: rotations and reloads one after another. */
  busy = false;
  readonly tasks: Array<() => void> = [];
  reloadQueued = false;
  /** Bumped at every crash: events of an earlier life are ignored. */
  life = 0;
  /** The ids of the records its store holds whole (saved or read by it), as the store's own map (unbounded here). */
  readonly records = new Set<string>();

  constructor(index: number, rng: Prng, held: string, lease: typeof Lease) {
    this.index = index;
    this.name = `i${index}-${rng.name()}`;
    this.rate = 1 + (rng.float() * 2 - 1) * RATE_SPREAD;
    this.origin = rng.int(0, 1_000_000);
    this.lease = new lease(TIMING);
    this.held = held;
    this.records.add(held);
  }

  local(now: number): number {
    return this.origin + now * this.rate;
  }
}

export interface Result {
  readonly violation?: string;
  readonly trace: readonly string[];
  readonly events: number;
  readonly outcomes: Readonly<Record<Outcome, number>>;
}

/** One schedule. Throws nothing: a broken invariant is returned with the trace so far. */
export function simulate(seed: number, plan: Plan, variant: Variant = REAL, tracing = false): Result {
  const rng = new Prng(seed ^ 0x5eed);
  const queue = new Queue();
  const trace: string[] = [];
  // Lazy: the text is built only when tracing (a replay), never in the exploration's hot loop.
  const log = (now: number, text: () => string): void => {
    if (tracing) trace.push(`${now.toFixed(1).padStart(7)} ms  ${text()}`);
  };
  let now = 0;
  let events = 0;
  const outcomes: Record<Outcome, number> = { resolved: 0, conflict: 0, superseded: 0, uncertain: 0, failed: 0 };

  // Redis, its snapshots and its lagging replica.
  let runId = rng.name();
  let state: RedisState = { record: null, table: new Map(), epoch: null };
  let stalledUntil = 0;
  let clockOffset = 0;
  const history: Array<{ at: number; state: RedisState }> = [];
  const subscribers = new Set<Instance>();
  /** Every id in the order Redis first held it; revocation and "newer" are judged by this order. */
  const saveIndex = new Map<string, number>();
  let revokedBelow = 0;
  /**
   * Redis holds an older record than the newest it held (or none), and no instance has written the newest back
   * yet: a process starting afresh cannot know better, whether the lost record's rotation resolved or was pending.
   */
  let rollbackOutstanding = false;
  const behind = (): boolean =>
    state.record === null || (saveIndex.get(state.record.id) as number) < saveIndex.size - 1;
  const promised = new Map<string, Outcome>();
  const lossless = !plan.faults.some((fault) => LOSSES.has(fault.kind));

  const fail = (text: string): never => {
    throw new Violation(text);
  };

  // The initial secret, created by the first instance's open().
  const first = `k0`;
  state.record = { generation: 1, id: first, prev: '' };
  saveIndex.set(first, 0);
  const instances: Instance[] = [];
  for (let index = 0; index < plan.instances; index += 1) {
    const instance = new Instance(index, rng, first, variant.lease);
    instance.lease.see(1, first, '');
    instances.push(instance);
    subscribers.add(instance);
  }
  let keys = 0;

  const observed = (name: string): Observed => ({
    generation: state.record?.generation ?? 0,
    id: state.record?.id ?? null,
    prev: state.record?.prev ?? '',
    runId,
    epoch: state.epoch,
    ownSeq: state.table.get(name)?.seq ?? 0,
  });
  // open()'s load(): the Redis each instance read its first record from starts its era.
  for (const instance of instances) instance.lease.era.begin(observed(instance.name), instance.local(now));
  /** Stores a record as a save or a write-forward (`forward`) does, and publishes it. */
  const setRecord = (generation: number, id: string, forward = false): void => {
    const prev = state.record === null ? '' : state.record.id === id ? state.record.prev : state.record.id;
    state.record = { generation, id, prev };
    if (!saveIndex.has(id)) saveIndex.set(id, saveIndex.size);
    if ((saveIndex.get(id) as number) < revokedBelow) fail(`revoked key ${id} written current again`);
    // The newest resolved key written back: Redis holds again what the instances knew.
    if (forward) rollbackOutstanding = false;
    for (const subscriber of subscribers) deliver(subscriber, false, () => message(subscriber, id));
  };

  // --- the network: per-connection FIFO, random delays, partitions that hold or drop ---
  const delay = (): number => (rng.chance(0.05) ? rng.int(5, 60) : rng.float() * 3);
  /**
   * Schedules a message; returns when it is taken in, or -1 when it is dropped. `deferred` runs if it must wait
   * more. What Redis sends (answers, pub/sub messages) arrives in order, and is taken in up to {@link TAKE_IN} later.
   */
  function deliver(instance: Instance, toRedis: boolean, run: () => void, deferred?: () => void): number {
    const life = instance.life;
    let at = now + delay();
    if (now < instance.partitionedUntil) {
      if (instance.dropWhilePartitioned) return -1;
      at = instance.partitionedUntil + delay();
    }
    if (toRedis) {
      at = Math.max(at, instance.toRedisAt, stalledUntil);
      instance.toRedisAt = at;
    } else {
      at = Math.max(at, instance.fromRedisAt);
      instance.fromRedisAt = at;
      at += rng.float() * TAKE_IN;
    }
    queue.push(at, () => {
      if (instance.life !== life || !instance.alive) return;
      if (toRedis && now < stalledUntil) {
        // Redis is stalled: the command runs when it wakes, in order.
        deferred?.();
        awaken(() => stalledUntil, run);
        return;
      }
      if (!toRedis && now < instance.pausedUntil) {
        // The process is paused: it takes in what arrived meanwhile when it resumes, in order.
        deferred?.();
        awaken(() => instance.pausedUntil, run);
        return;
      }
      run();
    });
    return at;
  }
  /** Runs `run` at the end of a stall or pause, which may grow meanwhile: then at its new end, still in order. */
  function awaken(end: () => number, run: () => void): void {
    const wake = (): void => {
      if (now < end()) queue.push(end(), wake);
      else run();
    };
    queue.push(end(), wake);
  }
  /** Sends a command; `onReply` gets the answer, or `undefined` after commandTimeout (a late answer is ignored). */
  function command<T>(instance: Instance, execute: () => T, onReply: (reply: T | undefined) => void): void {
    let settled = false;
    const life = instance.life;
    const settle = (reply: T | undefined): void => {
      if (settled || instance.life !== life) return;
      settled = true;
      onReply(reply);
    };
    // The timeout is scheduled only when the answer may come after it: most commands need no extra event.
    const deadline = now + TIMING.commandTimeout / instance.rate;
    let armed = false;
    const arm = (): void => {
      if (armed) return;
      armed = true;
      at(instance, Math.max(0, (deadline - now) * instance.rate), () => settle(undefined));
    };
    const sent = deliver(
      instance,
      true,
      () => {
        const reply = execute();
        const back = deliver(instance, false, () => settle(reply), arm);
        if (back === -1 || back > deadline) arm();
      },
      arm,
    );
    if (sent === -1 || sent > deadline) arm();
  }
  /** Runs `run` after `ms` of `instance`'s clock, later if it is paused then. */
  function at(instance: Instance, ms: number, run: () => void): void {
    const life = instance.life;
    const wake = (): void => {
      if (instance.life !== life || !instance.alive) return;
      if (now < instance.pausedUntil) queue.push(instance.pausedUntil, wake);
      else run();
    };
    queue.push(now + ms / instance.rate, wake);
  }

  // --- the scripts, as Redis runs them (the same decisions as scripts.ts) ---
  const confirm = (name: string, heldId: string, savingId: string, seq: number, epoch: string): ConfirmReply => {
    const record = state.record;
    if (record !== null && (record.id === heldId || (savingId !== '' && record.id === savingId))) {
      state.epoch ??= epoch;
      const acked = record.id === heldId ? record.id : (state.table.get(name)?.acked ?? '');
      state.table.set(name, { seq, acked });
      return { status: 'ok', ...observed(name) };
    }
    return { status: 'stale', ...observed(name) };
  };
  const save = (
    name: string,
    expected: number,
    expectedId: string,
    generation: number,
    id: string,
    forward = false,
  ): { status: 'ok' | 'conflict' } & Observed => {
    if ((state.record?.generation ?? 0) !== expected || (state.record?.id ?? '') !== expectedId)
      return { status: 'conflict', ...observed(name) };
    setRecord(generation, id, forward);
    return { status: 'ok', ...observed(name) };
  };
  const pending = (name: string, id: string): PendingReply => {
    const waiting: Array<readonly [string, number]> = [];
    for (const [other, entry] of state.table)
      if (other !== name && entry.acked !== id) waiting.push([other, entry.seq]);
    return { waiting, ...observed(name) };
  };

  // --- an instance: renewals, pub/sub, the authority's queue (reloads and rotations) ---
  function enqueue(instance: Instance, task: (done: () => void) => void): void {
    instance.tasks.push(() =>
      task(() => {
        instance.busy = false;
        next(instance);
      }),
    );
    next(instance);
  }
  function next(instance: Instance): void {
    if (instance.busy) return;
    const task = instance.tasks.shift();
    if (task === undefined) return;
    instance.busy = true;
    task();
  }
  function adopt(instance: Instance, id: string): void {
    if (id === instance.held) return;
    // A late answer may show a key revoked meanwhile: adopting it is harmless as long as it is never trusted.
    log(now, () => `${instance.name} adopts ${id}`);
    instance.held = id;
  }
  /** A condition that only Redis losing writes may cause: never in a schedule where Redis lost none. */
  function reported(instance: Instance, condition: string): void {
    log(now, () => `${instance.name} reports ${condition}`);
    if (lossless) fail(`${instance.name} reports ${condition} though Redis lost no write`);
  }
  /** What the store's load() does: the record Redis holds, judged against the highest seen when it was read. */
  function load(instance: Instance, done: () => void): void {
    const sent: Seen = instance.lease.highest;
    command(
      instance,
      () => ({ record: state.record === null ? null : { ...state.record }, seen: observed(instance.name) }),
      (answer) => {
        if (answer === undefined) return done();
        const { record, seen } = answer;
        // As the store's load(): the answer's Redis starts the era when no answer has yet.
        instance.lease.era.begin(seen, instance.local(now));
        if (record?.id.startsWith(MARKER_PREFIX) === true) {
          reported(instance, 'a rollback marker read');
          return done();
        }
        const sighting = instance.lease.see(record?.generation ?? 0, record?.id ?? null, record?.prev ?? '', sent);
        if (sighting === 'rollback') {
          reported(instance, `a rollback read (${record?.id ?? 'missing'})`);
          return done();
        }
        if (sighting === 'adopted') {
          if (record !== null) {
            instance.records.add(record.id);
            adopt(instance, record.id);
          }
          return done();
        }
        const newer = instance.lease.highest.id;
        log(now, () => `${instance.name} read ${record?.id ?? 'nothing'} late (${newer} seen since)`);
        if (!instance.records.has(newer)) return load(instance, done);
        adopt(instance, newer);
        done();
      },
    );
  }
  function reload(instance: Instance): void {
    if (instance.reloadQueued) return;
    instance.reloadQueued = true;
    enqueue(instance, (done) => {
      instance.reloadQueued = false;
      load(instance, done);
    });
  }
  function message(instance: Instance, id: string): void {
    if (id !== instance.held && id !== instance.savingId) reload(instance);
  }
  function renew(instance: Instance): void {
    const sentAt = instance.local(now);
    const seq = instance.lease.nextSeq();
    const heldId = instance.held;
    const savingId = instance.savingId;
    const epoch = rng.name();
    command(
      instance,
      () => confirm(instance.name, heldId, savingId, seq, epoch),
      (reply) => {
        const lease = instance.lease;
        const decision =
          reply === undefined
            ? lease.unanswered()
            : lease.renewed(reply, {
                seq,
                sentAt,
                now: instance.local(now),
                heldId,
                canWriteForward: true,
                renewHeld: instance.renewHeld,
              });
        if (decision.report === 'rollback' || decision.report === 'missing')
          reported(instance, `${decision.report} after a renewal`);
        if (decision.trustUntil !== undefined) {
          instance.trustUntil = decision.trustUntil;
          log(
            now,
            () =>
              `${instance.name} trusts ${heldId} until +${((decision.trustUntil ?? 0) - instance.local(now)).toFixed(1)}`,
          );
        }
        if (decision.reload === true) reload(instance);
        if (decision.marker !== undefined) {
          const { expected, expectedId, generation } = decision.marker;
          const marker = `${MARKER_PREFIX}${rng.name()}`;
          log(now, () => `${instance.name} marks the rollback at ${generation}`);
          command(
            instance,
            () => save(instance.name, expected, expectedId, generation, marker),
            (written) => {
              if (written?.status === 'ok') instance.lease.wrote(generation, marker);
            },
          );
        }
        if (decision.writeForward !== undefined) {
          const { expected, expectedId, generation } = decision.writeForward;
          log(now, () => `${instance.name} writes ${heldId} forward at ${generation}`);
          command(
            instance,
            () => save(instance.name, expected, expectedId, generation, heldId, true),
            (written) => {
              if (written?.status === 'ok') instance.lease.wrote(generation, heldId);
            },
          );
        }
        at(instance, lease.nextDelay(instance.local(now)), () => renew(instance));
      },
    );
  }
  function rotate(instance: Instance): void {
    enqueue(instance, (done) => {
      keys += 1;
      const id = `k${keys}`;
      const expected = instance.lease.expectedGeneration;
      const expectedId = instance.lease.highest.id;
      const finish = (outcome: Outcome): void => {
        instance.savingId = '';
        outcomes[outcome] += 1;
        promised.set(id, outcome);
        log(now, () => `${instance.name} rotate(${id}) ${outcome}`);
        if (outcome === 'resolved') {
          revokedBelow = Math.max(revokedBelow, saveIndex.get(id) ?? fail(`resolved ${id} never saved`));
          // Resolved on an answer Redis gave before it lost the record, Redis may hold an older one now.
          rollbackOutstanding = behind();
          adopt(instance, id);
          for (const other of instances) {
            if (!trusting(other)) continue;
            if ((saveIndex.get(other.held) ?? -1) < (saveIndex.get(id) as number)) {
              fail(`rotate() resolved ${id} while ${other.name} trusts ${other.held}`);
            }
          }
        } else if (outcome !== 'failed') reload(instance);
        done();
      };
      instance.savingId = id;
      instance.records.add(id);
      instance.renewHeld = instance.lease.mayRenewWhileSaving(instance.held);
      log(now, () => `${instance.name} saves ${id} over generation ${expected}`);
      command(
        instance,
        () => save(instance.name, expected, expectedId, expected + 1, id),
        (reply) => {
          if (reply === undefined) return finish('uncertain');
          if (reply.status === 'conflict') return finish('conflict');
          const savedAt = instance.local(now);
          instance.lease.wrote(expected + 1, id);
          const wait = new variant.ackWait(expected + 1, id, savedAt, reply, instance.lease.era, TIMING);
          let read = 0;
          const drop = (entries: ReadonlyArray<readonly [string, number, ...unknown[]]>): void => {
            for (const [other, seq] of entries) {
              command(
                instance,
                () => {
                  if (state.table.get(other)?.seq === seq) state.table.delete(other);
                },
                () => undefined,
              );
            }
          };
          const poll = (): void => {
            command(
              instance,
              () => pending(instance.name, id),
              (answer) => {
                const local = instance.local(now);
                const step =
                  answer === undefined ? wait.unanswered(local) : wait.read(answer, local, instance.lease.leaseUntil);
                drop(step.drop);
                if (step.outcome === 'resolved') {
                  // The store's housekeeping after a resolved save: each entry still waited on, once its time has come.
                  const later = step.dropAt ?? [];
                  if (later.length > 0)
                    at(instance, Math.max(...later.map(([, , time]) => time)) - local + 1, () => drop(later));
                  return finish('resolved');
                }
                if (step.outcome === 'superseded') return finish('superseded');
                if (step.outcome !== undefined) return finish('uncertain');
                // As the store: 1, 2, 4 ms, then every ackPoll, never past the bound.
                const next = Math.min(read < 3 ? 2 ** read : Infinity, TIMING.ackPoll);
                read += 1;
                at(instance, local < wait.bound ? Math.min(next, Math.ceil(wait.bound - local)) : next, poll);
              },
            );
          };
          poll();
        },
      );
    });
  }
  function trusting(instance: Instance): boolean {
    return instance.alive && now >= instance.pausedUntil && instance.local(now) < instance.trustUntil;
  }
  function start(instance: Instance): void {
    at(instance, rng.float() * TIMING.renewInterval, () => renew(instance));
  }

  // --- the invariants, after every event ---
  function check(): void {
    for (const instance of instances) {
      if (!trusting(instance)) continue;
      const index = saveIndex.get(instance.held) ?? -1;
      if (index < revokedBelow) fail(`${instance.name} trusts revoked key ${instance.held}`);
    }
  }

  // --- the faults ---
  function redisLoses(next: RedisState, what: string): void {
    runId = rng.name();
    state = next;
    log(now, () => `redis ${what} (record ${state.record?.id ?? 'missing'})`);
    if (behind()) rollbackOutstanding = true;
  }
  const apply: { [K in Fault['kind']]: (fault: Extract<Fault, { kind: K }>) => void } = {
    rotate: (fault) => {
      const instance = instances[fault.instance] as Instance;
      if (instance.alive) at(instance, 0, () => rotate(instance));
    },
    partition: (fault) => {
      const instance = instances[fault.instance] as Instance;
      instance.partitionedUntil = now + fault.length;
      instance.dropWhilePartitioned = fault.drop;
    },
    pause: (fault) => {
      const instance = instances[fault.instance] as Instance;
      // A pause during a pause extends it; it never ends the first one early.
      instance.pausedUntil = Math.max(instance.pausedUntil, now + fault.length);
    },
    crash: (fault) => {
      const instance = instances[fault.instance] as Instance;
      // Every instance that knew the newest key gone while Redis lost it: what no store can recover, left out.
      if (!instance.alive || rollbackOutstanding) return;
      instance.alive = false;
      instance.life += 1;
      subscribers.delete(instance);
      queue.push(now + fault.length, () => {
        // Restarted with a new identity, reading what Redis holds (as open() does). After a rollback that no
        // running instance repaired yet, a fresh process cannot know better: that case is left out here.
        if (state.record === null || rollbackOutstanding || state.record.id.startsWith(MARKER_PREFIX)) return;
        const restarted = new Instance(instance.index, rng, state.record.id, variant.lease);
        restarted.lease.see(state.record.generation, state.record.id, state.record.prev);
        restarted.lease.era.begin(observed(restarted.name), restarted.local(now));
        adopt(restarted, state.record.id);
        instances[instance.index] = restarted;
        subscribers.add(restarted);
        start(restarted);
      });
    },
    stall: (fault) => {
      stalledUntil = Math.max(stalledUntil, now + fault.length);
    },
    'restart-empty': () => redisLoses({ record: null, table: new Map(), epoch: null }, 'restarted empty'),
    'restart-snapshot': () => {
      const older = history.length === 0 ? undefined : history[rng.int(0, history.length - 1)];
      redisLoses(
        older === undefined ? { record: null, table: new Map(), epoch: null } : copyState(older.state),
        'restarted from a snapshot',
      );
    },
    failover: (fault) => {
      let replica: RedisState | undefined;
      for (const entry of history) if (entry.at <= now - fault.lag) replica = entry.state;
      redisLoses(
        replica === undefined ? { record: null, table: new Map(), epoch: null } : copyState(replica),
        'failed over to a lagging replica',
      );
    },
    'clock-step': (fault) => {
      // The protocol never reads Redis's clock: a step must change nothing.
      clockOffset += fault.by;
      log(now, () => `redis clock steps ${fault.by} ms (offset ${clockOffset})`);
    },
  };

  try {
    for (const instance of instances) start(instance);
    for (const fault of plan.faults) {
      queue.push(fault.at, () => {
        log(now, () => `fault ${JSON.stringify(fault)}`);
        (apply[fault.kind] as (fault: Fault) => void)(fault);
      });
    }
    // Snapshots every 20 ms: what a restart from a dump or a lagging replica may bring back.
    for (let t = 10; t < DURATION; t += 20)
      queue.push(t, () => {
        history.push({ at: now, state: copyState(state) });
        if (history.length > 40) history.shift();
      });
    for (let event = queue.pop(); event !== undefined && event.at <= DURATION; event = queue.pop()) {
      now = event.at;
      event.run();
      events += 1;
      check();
    }
    // Outcome rules: a conflict stored nothing; a resolved or superseded rotation was stored.
    for (const [id, outcome] of promised) {
      if (outcome === 'conflict' && saveIndex.has(id)) fail(`rotate(${id}) rejected ERR_SAVE_CONFLICT but was stored`);
      if ((outcome === 'resolved' || outcome === 'superseded') && !saveIndex.has(id))
        fail(`rotate(${id}) ${outcome} but never stored`);
    }
  } catch (error) {
    if (!(error instanceof Violation)) throw error;
    log(now, () => `VIOLATION: ${error.message}`);
    return { violation: error.message, trace, events, outcomes };
  }
  return { trace, events, outcomes };
}

/** A plan with as few faults as still break the invariant (greedy removal, one fault at a time). */
export function shrink(seed: number, plan: Plan, variant: Variant = REAL): Plan {
  let current = plan;
  for (let index = current.faults.length - 1; index >= 0; index -= 1) {
    const candidate = { ...current, faults: current.faults.filter((_, at) => at !== index) };
    if (simulate(seed, candidate, variant).violation !== undefined) current = candidate;
  }
  return current;
}

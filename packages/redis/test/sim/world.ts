// A deterministic simulation of several launcher instances sharing one secret through Redis. Each instance runs the
// real TokenAuthority over the real RedisSecretStore (its follower, its acknowledgement reader), on a simulated
// process (process.ts) against a simulated Redis that runs the store's own Lua scripts (redis.ts, keyspace.ts).
// One seed decides every delay, fault and order; the invariants are checked after every event.
import { isLauncherAuthError, TokenAuthority, type SecretStore, type TokenAuthorityOptions } from 'launcher-auth';
import { decideNow, generateRecord, runtimeOption } from 'launcher-auth/store-kit';
import { storeInternals } from '../../src/internal.js';
import { parseLine, type Line } from '../../src/line.js';
import type { Seen } from '../../src/lease.js';
import type { GenerationFileIo } from '../../src/generation-file.js';
import type { RedisConnection } from '../../src/client.js';
import { HEAD_LENGTH, observation } from '../../src/reply.js';
import { encodeRecord } from '../../src/codec.js';
import { CONFIRM, DROP, LOAD, PENDING, SAVE, SAVE_PADDING, keyNames } from '../../src/scripts.js';
import { RedisSecretStore } from '../../src/store.js';
import { END, FAULTS_END, LOSSES, RATE_SPREAD, TIMING, type Fault, type Plan } from './plan.js';
import { LineCheck } from './lines.js';
import { SimProcess } from './process.js';
import { Prng } from './prng.js';
import { Deployment, type RedisNode } from './redis.js';
import { Scheduler } from './scheduler.js';

export { planFor, type Fault, type Plan } from './plan.js';

const KEY = 'launcher-auth:secret';
const SCRIPT_NAMES = new Map([
  [CONFIRM, 'CONFIRM'],
  [SAVE, 'SAVE'],
  [PENDING, 'PENDING'],
  [DROP, 'DROP'],
  [LOAD, 'LOAD'],
]);
const MARKER = 'rollback:';
/**
 * How long a rotation in a healthy world may take (true ms): some round trips to Redis (a few milliseconds on a LAN,
 * under 190 ms in every such plan measured on the simulated network), never a lease, which is what waiting for its
 * bound instead of the acknowledgements takes.
 */
const HEALTHY_ROTATION = TIMING.leaseMs;
/** The back-off's ceiling (lease.ts): once trust is gone and renewals keep failing, one renewal per this long. */
const BACKOFF = Math.max(TIMING.renewInterval, Math.min(1000, TIMING.leaseMs / 4));
/**
 * How long an instance may refuse the current token after it last could not renew (cut off, paused, routed to a
 * node that is not the primary, the primary stalled) or the record changed, when Redis lost nothing: the renewal
 * in flight times out (`commandTimeout`), the next one waits for the back-off (at most a quarter of the lease
 * here), and its answer grants trust. One lease in true time covers it.
 */
const REFUSAL_BOUND = TIMING.leaseMs;
/** How long a save waits for replicas (the `replicas` option's timeout), scaled as the lease is: 1 s of a 5 s lease. */
const REPLICA_TIMEOUT = TIMING.leaseMs / 5;

export class Violation extends Error {}

export interface Result {
  readonly violation?: string;
  readonly trace: readonly string[];
  readonly events: number;
  readonly outcomes: Readonly<Record<string, number>>;
  /** Acceptances of a revoked token that the documented exception covers (a write Redis lost without replicas). */
  readonly excused: number;
  /** Rotations that resolved while the rotating instance refused its own new token (it was quarantined). */
  readonly ownRefused: number;
  /**
   * Without a loss: the longest an instance refused the current token after it could renew again (or the record
   * changed), in true ms; the invariant fails it past {@link REFUSAL_BOUND}.
   */
  readonly refusedFor: number;
  /** Past that bound, the longest an instance refused after it first heard from another server (true ms). */
  readonly quarantinedFor: number;
}

/** One instance slot (a machine): the process running there now, and its authority once open() resolved. */
interface Instance {
  readonly slot: number;
  process: SimProcess;
  authority: TokenAuthority | undefined;
  /** The records this process has seen in an answer or saved (their ids). */
  readonly seen: Set<string>;
  /** Its rotate() calls not settled yet, oldest first, each with the fresh record its save carried (once saved). */
  readonly rotations: Array<{ id?: string }>;
  /** A one-shot command-line process (`launcher-auth rotate`): it closes after its rotation. */
  readonly oneShot: boolean;
  /** A one-shot process's caller: whether its rotation resolved. */
  readonly cliDone?: (resolved: boolean, slow: boolean) => void;
  /** When its process started (true time): its store's first answer comes soon after. */
  readonly startedAt: number;
  /** When its authority opened (true time), or NaN before. */
  openedAt: number;
  /** The `run_id` of the last answer it took in, when it first heard from another server, and whether it could
   * keep trusting then (it accepted its token, the record that server holds). */
  server?: { readonly serverId: string; readonly seenAt: number; readonly trusting: boolean };
}

/** One schedule. Never throws for a broken invariant: it is returned with the trace so far. */
export async function simulate(seed: number, plan: Plan, tracing = false): Promise<Result> {
  const rng = new Prng(seed ^ 0x5eed);
  // The bounds that depend on how far this plan's clocks may run from true time.
  const spread = plan.clocks?.spread ?? RATE_SPREAD;
  /**
   * How long after Redis holds the newest record again an instance that never saw it may still accept the token it
   * holds: until it hears of the write (pub/sub, or its next renewal), within one lease on its clock.
   */
  const EXCEPTION_AFTER_REPAIR = TIMING.leaseMs * (1 + 2 * spread);
  /** The shortest quarantine after a change of server, in true time: `leaseMs + driftMargin` on the fastest clock. */
  const QUARANTINE = (TIMING.leaseMs + TIMING.driftMargin) / (1 + spread);
  /** The longest quarantine after a change of server, in true time: `leaseMs + driftMargin` on the slowest clock. */
  const QUARANTINE_LONGEST = (TIMING.leaseMs + TIMING.driftMargin) / (1 - spread);
  /** When the operator first looks for the rollback marker: once the quarantines after the faults are over. */
  const OPERATOR_AT = FAULTS_END + QUARANTINE * 1.2;
  /**
   * Whether the operator is at work (its `launcher-auth rotate` runs, or runs again soon), and whether it began over a
   * marker written after its first look, which the healthy stretch may end before its rotation resolves.
   */
  let operating: 'no' | 'first' | 'late' = 'no';
  const scheduler = new Scheduler();
  const redis = new Deployment(scheduler, rng, plan.replicas);
  const trace: string[] = [];
  const log = (text: () => string): void => {
    if (tracing) trace.push(`${scheduler.now.toFixed(1).padStart(7)} ms  ${text()}`);
  };
  const fail = (text: string): never => {
    throw new Violation(text);
  };
  /** A broken invariant seen in a promise's reaction: thrown by the check that follows the event. */
  let flagged: string | undefined;
  const flag = (text: string): void => {
    flagged ??= text;
  };
  const outcomes: Record<string, number> = {};
  const lossless = !plan.faults.some((fault) => LOSSES.has(fault.kind));
  let excused = 0;
  /** When Redis last lost a write (a restart, a failover to a node that lacked some, a split): -Infinity if never. */
  let lossAt = -Infinity;
  let refusedFor = 0;
  let quarantinedFor = 0;
  /** Rotations that resolved while the rotating instance refused its own new token. */
  let ownRefused = 0;

  // --- what Redis has held: every record id in the order Redis first held it, and what rotations promised ---
  const order = new Map<string, number>();
  /** Every record up to this index was revoked by a resolved rotation. */
  let revokedBelow = 0;
  /** The newest record a resolved rotation made current (its index), -1 before any. */
  let newestResolved = -1;
  let newestResolvedId = '';
  let newestResolvedAt = -Infinity;
  const promised = new Map<string, string>();
  type Parsed = { id: string; generation: number; prev: string } | undefined;
  /** Every value parsed, by its text: the invariants read each node's record after every event, and few exist. */
  const parsedByValue = new Map<string, Parsed>();
  const recordOf = (node: RedisNode): Parsed => {
    const value = node.keyspace.data.get(KEY);
    return typeof value === 'string' ? parse(value) : undefined;
  };
  const parse = (value: string): Parsed => {
    // A command's last argument is most often no record at all (a key, a number): not handed to JSON.parse.
    if (!value.startsWith('{')) return undefined;
    if (parsedByValue.has(value)) return parsedByValue.get(value);
    let record: Parsed;
    try {
      const { id, generation, prev } = JSON.parse(value) as { id?: unknown; generation?: unknown; prev?: unknown };
      if (typeof id === 'string' && typeof generation === 'number')
        record = { id, generation, prev: typeof prev === 'string' ? prev : '' };
    } catch {
      record = undefined;
    }
    parsedByValue.set(value, record);
    return record;
  };
  /** The record each record (or marker) replaced, as Redis first held it: the lineage of the secret. */
  const prevOf = new Map<string, string>();
  /** Whether the record `id` is `ancestor` or was written over it, directly or through later records. */
  const descends = (id: string | undefined, ancestor: string): boolean => {
    for (let at = id, steps = 0; at !== undefined && at !== '' && steps <= prevOf.size; steps += 1) {
      if (at === ancestor) return true;
      at = prevOf.get(at);
    }
    return false;
  };
  /** The generation each record had when Redis first held it. */
  const generations = new Map<string, number>();
  /** When Redis first held each record. */
  const heldSince = new Map<string, number>();
  /** The records a primary replaced with another one written over them (a save, a write-forward, a marker). */
  const overwritten = new Set<string>();
  const lines = new LineCheck();
  /** The line of each record as a primary held it, by `id@generation` (a write-forward holds it at another). */
  const linesOf = new Map<string, Line | undefined>();
  /** The record id each node holds ('' for none), as of its last write or restore. */
  const held = new Map<RedisNode, string>();
  /** After a restore of the primary (a restart, a slot move): what it holds now. */
  const heldNow = (): void => {
    const node = redis.nodes[redis.primary] as RedisNode;
    held.set(node, recordOf(node)?.id ?? '');
  };
  redis.onWrite = (node) => {
    const record = recordOf(node);
    const before = held.get(node) ?? '';
    held.set(node, record?.id ?? '');
    if (record !== undefined && !linesOf.has(`${record.id}@${record.generation}`)) {
      const { line } = JSON.parse(node.keyspace.data.get(KEY) as string) as { line?: unknown };
      linesOf.set(`${record.id}@${record.generation}`, parseLine(line));
    }
    if (node.role === 'primary' && record !== undefined && record.id !== before) {
      overwritten.add(record.prev);
      const wrong = lines.written(record.id, record.generation, record.prev, node.keyspace.data.get(KEY) as string);
      if (wrong !== undefined) flag(wrong);
    }
    // A compare-and-set (a save, a write-forward, a marker) replaces only the record it names as its predecessor.
    if (node.role === 'primary' && record !== undefined && record.id !== before && record.prev !== before)
      flag(
        `node ${node.index} replaced ${before || 'nothing'} with ${record.id}, which names ${record.prev || 'nothing'} as its predecessor`,
      );
    if (record === undefined || order.has(record.id) || prevOf.has(record.id)) return;
    prevOf.set(record.id, record.prev);
    if (record.id.startsWith(MARKER)) {
      // The operator looks for the marker once the quarantines after the faults are over; one that a process started
      // by its user writes later is regenerated over as well (see restartedOver).
      if (node.role === 'primary' && scheduler.now >= OPERATOR_AT && operating === 'no' && restartedOver(record.prev)) {
        operating = 'late';
        scheduler.push(scheduler.now, () => operator(3));
      }
      return;
    }
    order.set(record.id, order.size);
    generations.set(record.id, record.generation);
    heldSince.set(record.id, scheduler.now);
    log(() => `redis node ${node.index} holds ${record.id} (generation ${record.generation})`);
  };
  /** The records whose save's WAIT did not confirm them on the replicas asked for (or whose count was unknown). */
  const unconfirmed = new Set<string>();
  /** The records whose save's answer its instance took in within `commandTimeout`. */
  const answeredSaves = new Set<string>();
  /** Every record id an authority has handed to save(). */
  const fresh = new Set<string>();
  const indexOf = (id: string | null | undefined): number => (id == null ? -1 : (order.get(id) ?? -1));

  // --- the instances ---
  /** Each machine's generation file: a process restarted there finds what the one before it remembered. */
  const generationFiles = new Map<number, { value?: Seen; readonly io: GenerationFileIo }>();
  const generationFileOf = (slot: number): GenerationFileIo => {
    let entry = generationFiles.get(slot);
    if (entry === undefined) {
      const created: { value?: Seen; io: GenerationFileIo } = {
        io: {
          read: () => Promise.resolve(created.value),
          write: (seen) => {
            if (created.value === undefined || seen.generation > created.value.generation) created.value = seen;
            return Promise.resolve();
          },
        },
      };
      entry = created;
      generationFiles.set(slot, entry);
    }
    return entry.io;
  };
  const instances: Instance[] = [];
  /**
   * Whether a launcher that holds no stored key yet (still opening, or open on the placeholder) runs on a machine
   * whose generation file remembers a record that `replaced` (the record a marker was written over) neither is nor
   * was written over, directly or through later records. docs/several-instances.md: "A process that starts while Redis holds an older record [...] takes it
   * for the rollback it is: `open()` succeeds on a placeholder key that is never saved, [...] and the process replaces
   * the older record with the marker", at whatever time its user starts it; and "`rotate()` on it, or `launcher-auth
   * rotate --redis <url>` from a shell, replaces the marker". Its user may start it during the healthy stretch (a
   * launcher whose open() failed is started again), after the operator first looked.
   */
  function restartedOver(replaced: string): boolean {
    return instances.some((instance) => {
      const remembered = generationFiles.get(instance.slot)?.value?.id;
      return (
        instance.process.alive &&
        !instance.oneShot &&
        indexOf(instance.authority?.keyId) === -1 &&
        remembered !== undefined &&
        !descends(replaced, remembered)
      );
    });
  }
  let names = 0;
  const processFor = (slot: number): SimProcess => {
    const process = new SimProcess({
      name: `p${(names += 1)}/s${slot}`,
      slot,
      scheduler,
      rng,
      redis,
      rateSpread: spread,
      ...(plan.clocks?.rates?.[slot] === undefined ? {} : { rate: plan.clocks.rates[slot] }),
      local: plan.local === true,
      sentinel: plan.replicas > 0,
    });
    return process;
  };
  function report(instance: Instance, error: Error): void {
    const code = isLauncherAuthError(error) ? error.code : error.name;
    log(() => `${instance.process.name} onStoreError ${code}`);
    if (code === 'ERR_STORE_ROLLBACK' && lossless)
      flag(`${instance.process.name} reports ${code} though Redis lost no write`);
  }
  /**
   * The records each instance has seen in Redis's answers that it took in (unlike `seen`, not those it handed to a
   * save: an abandoned save's record is one it never saw in Redis unless an answer showed it), as the store takes
   * them in: a renewal's, a read's, a save's that landed.
   */
  const inAnswers = new Map<Instance, Set<string>>();
  const answered = (instance: Instance): Set<string> => {
    let ids = inAnswers.get(instance);
    if (ids === undefined) inAnswers.set(instance, (ids = new Set()));
    return ids;
  };
  /**
   * What each instance's authority adopted, checked as docs/several-instances.md promises: an instance remembers the
   * newest record it has seen, and a record of a lower generation, or of the same generation with another id that did
   * not replace it, is never adopted. Each sighting in an answer is counted in the order taken in: the first of each
   * record with the highest generation it showed (late answers and conflicts too), and those the store surely took
   * in (`${id}@${generation}`: the first time).
   */
  let sightings = 0;
  const firstSeen = new Map<Instance, Map<string, { at: number; generation: number }>>();
  const surelySeen = new Map<Instance, Map<string, number>>();
  /** The records each instance's authority held (its key at open and after each change), and those it saved fresh. */
  const heldBy = new Map<Instance, Set<string>>();
  const ownFresh = new Map<Instance, Set<string>>();
  /**
   * The records each instance adopted by their generation alone over the newest one it had held or saved, which they
   * did not replace: docs/several-instances.md, "A record whose `line` does not reach back to the remembered record's
   * generation (more than 16 rotations since, or written by 0.2.0) is judged by its generation alone." Such a record
   * may be the other side's of a split brain (a rotation of 0.2.0 there), made before a rotation that resolved here.
   * With each, `revokedBelow` then: a rotation that resolves later waits for this instance as for any other.
   */
  const byGeneration = new Map<Instance, Map<string, number>>();
  const setOf = <T>(map: Map<Instance, T>, instance: Instance, make: () => T): T => {
    let value = map.get(instance);
    if (value === undefined) map.set(instance, (value = make()));
    return value;
  };
  function sighted(instance: Instance, id: string, generation: number, surely: boolean): void {
    sightings += 1;
    const first = setOf(firstSeen, instance, () => new Map<string, { at: number; generation: number }>());
    const known = first.get(id);
    if (known === undefined) first.set(id, { at: sightings, generation });
    else known.generation = Math.max(known.generation, generation);
    const sure = setOf(surelySeen, instance, () => new Map<string, number>());
    if (surely && !sure.has(`${id}@${generation}`)) sure.set(`${id}@${generation}`, sightings);
  }
  /**
   * The authority of `instance` now holds `id`. Refused if it had held or saved another record, surely seen at `id`'s
   * generation or above before `id` was first seen, and `id` replaced (directly or through others) none of the
   * records it held or saved at that generation or above: such a record never superseded what this instance knew as
   * newest (held or saved: what its generation file remembers).
   */
  function adopted(instance: Instance, id: string): void {
    const held = setOf(heldBy, instance, () => new Set<string>());
    const first = firstSeen.get(instance)?.get(id);
    const mine = id.startsWith(MARKER) || ownFresh.get(instance)?.has(id) === true;
    if (first !== undefined && !mine) {
      const above: Array<{ id: string; generation: number }> = [];
      let remembered: { id: string; generation: number } | undefined;
      for (const [seen, at] of surelySeen.get(instance) ?? []) {
        const split = seen.lastIndexOf('@');
        const earlier = { id: seen.slice(0, split), generation: Number(seen.slice(split + 1)) };
        const known = held.has(earlier.id) || ownFresh.get(instance)?.has(earlier.id) === true;
        if (at < first.at && earlier.id !== id && known && earlier.generation >= first.generation) above.push(earlier);
        if (at < first.at && known && earlier.generation > (remembered?.generation ?? 0)) remembered = earlier;
      }
      const line = linesOf.get(`${id}@${first.generation}`);
      if (
        remembered !== undefined &&
        remembered.id !== id &&
        first.generation > remembered.generation &&
        (line === undefined || line.floor > remembered.generation) &&
        !descends(id, remembered.id) &&
        !lines.replaced(id, remembered.id)
      )
        setOf(byGeneration, instance, () => new Map<string, number>()).set(id, revokedBelow);
      const successor = above.some((earlier) => descends(id, earlier.id) || lines.replaced(id, earlier.id));
      const [newest] = above.sort((a, b) => b.generation - a.generation);
      if (newest !== undefined && !successor)
        flag(
          `${instance.process.name} adopts ${id} (generation ${first.generation}) though it had held or saved ${newest.id} (generation ${newest.generation}), which ${id} did not replace`,
        );
    }
    held.add(id);
  }
  /**
   * Each process's server as its store judges it, exactly: the server of the last answer its store took in and
   * judged (a renewal's, a save's, an acknowledgement read's; a read's only when none came before), and the last
   * change of server among them: when (true time) and when the quarantine it begins ends, `leaseMs + driftMargin`
   * on its clock from that answer (docs/several-instances.md). Looser than the store where the docs leave room: a
   * renewal on the very record the new server holds ends the quarantine here even if the trust in it was over.
   */
  const servers = new Map<
    SimProcess,
    { id: string; change?: { readonly at: number; until: number }; left?: { readonly id: string; before: number } }
  >();
  /** The store's own timeout of a command (a save waits for replicas too), on its process's clock. */
  const timeoutOf = (script: string): number =>
    TIMING.commandTimeout + (script === SAVE && plan.waitFor !== 0 ? REPLICA_TIMEOUT : 0);
  function changeOfServer(
    instance: Instance,
    script: string,
    args: readonly string[],
    {
      status,
      observed,
    }: { readonly status: string; readonly observed: { readonly id: string | null; readonly serverId: string } },
    at: { readonly sent: number; readonly arrived: number },
  ): void {
    const { process } = instance;
    // Taken in only before the timer the store set when it sent the command (set first, it runs first at a tie).
    if (at.arrived >= at.sent + timeoutOf(script) / process.rate) return;
    const parsed = parse(args.at(-1) ?? '');
    const judged =
      (script === CONFIRM && status !== 'corrupt') ||
      script === PENDING ||
      (script === SAVE && status === 'ok' && parsed !== undefined && saves.get(process)?.has(parsed.id) === true);
    const server = servers.get(process);
    if (server === undefined) {
      if (judged || script === LOAD) servers.set(process, { id: observed.serverId });
      return;
    }
    if (!judged) return;
    // An answer of the server it left, to a command sent before the one whose answer showed the change, changes
    // nothing (era.ts): it tells nothing newer than that answer did.
    if (observed.serverId !== server.id && observed.serverId === server.left?.id && at.sent < server.left.before)
      return;
    if (observed.serverId !== server.id) {
      server.left = { id: server.id, before: at.sent };
      server.id = observed.serverId;
      server.change = { at: scheduler.now, until: process.local() + TIMING.leaseMs + TIMING.driftMargin };
    }
    // Renewed on the very record this server holds: not quarantined (the store asks that its trust still lasts).
    if (script === CONFIRM && status === 'ok' && args[1] === observed.id && server.change !== undefined)
      server.change.until = -Infinity;
  }
  /** The records each process's authority handed its store to save and that are not settled. */
  const saves = new Map<SimProcess, Set<string>>();
  function start(instance: Instance, then?: (authority: TokenAuthority) => void): void {
    const process = instance.process;
    // The record a save wrote is named by the command's value (its last argument), not by Redis's answer.
    process.onWait = (args, reply, confirmed) => {
      const saved = parse(args.at(-1) ?? '');
      if (!confirmed && observation(reply)?.status === 'ok' && saved !== undefined) unconfirmed.add(saved.id);
    };
    process.onAnswer = (reply, took, args, script, at) => {
      const saved = parse(args.at(-1) ?? '');
      if (saved !== undefined && took < TIMING.commandTimeout - 1) answeredSaves.add(saved.id);
      const head = observation(reply);
      if (head === undefined) return;
      const { serverId, id, generation } = head.observed;
      changeOfServer(instance, script, args, head, at);
      // What it knows: an answer after the command timeout is one the store no longer waits for (within a
      // millisecond of it, either; a paused process may still take it in, which is then not counted).
      const late = took >= TIMING.commandTimeout - 1;
      if (id != null) sighted(instance, id, generation, !late && head.status !== 'conflict');
      if (id != null && !late) {
        instance.seen.add(id);
        // A save that conflicted: the store only tells its rotation so (and reads again), unless it saves over.
        if (head.status !== 'conflict') answered(instance).add(id);
      }
      // Another server: judged at the first answer from it that the store surely takes in and judges the era by
      // (a read, LOAD's 'value' or 'missing', starts the era only when nothing else did).
      // (nor does a save that conflicted: the store reads only the record in its answer).
      const read = head.status === 'value' || head.status === 'missing' || head.status === 'conflict';
      if (instance.server?.serverId === serverId || ((late || read) && instance.server !== undefined)) return;
      // It keeps trusting only where the store ends the quarantine at once: a renewal (CONFIRM: instance, held id,
      // saving id, number...) of the very record that server holds, while its trust in it lasts.
      const { authority } = instance;
      const renewal = script === CONFIRM && head.status === 'ok' && args[1] === id;
      const trusting = renewal && authority?.keyId === id && accepts(authority);
      instance.server = { serverId, seenAt: instance.server === undefined ? -Infinity : scheduler.now, trusting };
    };
    if (tracing) {
      process.onCommand = (node, script, args, reply) => {
        const head = observation(reply);
        const what = SCRIPT_NAMES.get(script) ?? 'script';
        log(
          () =>
            `  ${process.name} ${what}(${what === 'SAVE' ? '' : args.slice(1, 4).join(',')}) on node ${node}: ${head === undefined ? JSON.stringify(reply) : `${head.status} ${head.observed.id ?? '-'}@${head.observed.generation} run ${head.observed.serverId} epoch ${head.observed.epoch ?? '-'} seq ${head.observed.ownSeq}`}${what === 'PENDING' && Array.isArray(reply) ? ` waiting ${reply.slice(HEAD_LENGTH).join(',')}` : ''}`,
        );
      };
    }
    /** The records the authority has handed to save() and that are not settled: any other SAVE writes forward. */
    const saving = new Set<string>();
    saves.set(process, saving);
    const store = new RedisSecretStore({
      client: undefined as never,
      key: KEY,
      leaseMs: TIMING.leaseMs,
      renewInterval: TIMING.renewInterval,
      driftMargin: TIMING.driftMargin,
      commandTimeout: TIMING.commandTimeout,
      ackPollInterval: TIMING.ackPollInterval,
      // 'majority' is the Sentinel client's default; its timeout scaled as the lease is (1 s of a 5 s lease).
      replicas: plan.waitFor === 0 ? false : { count: plan.waitFor, timeout: REPLICA_TIMEOUT },
      [storeInternals]: {
        connection: writesForward(instance, paced(instance, process.connection), saving),
        runtime: process.runtime,
        generationFile: generationFileOf(instance.slot),
      },
    } as ConstructorParameters<typeof RedisSecretStore>[0]);
    // Only watches what the authority hands the store: which records its rotations saved.
    const recording: SecretStore = {
      load: tracing
        ? () =>
            store.load().then(
              (record) => {
                log(() => `${process.name} load() returned ${record?.id ?? 'nothing'}`);
                return record;
              },
              (error: unknown) => {
                log(() => `${process.name} load() rejected ${isLauncherAuthError(error) ? error.code : String(error)}`);
                throw error;
              },
            )
        : () => store.load(),
      save: (record, options) => {
        // A record never saved before is a rotation's own (queued rotations save one after another); any other
        // save writes back a record already known.
        if (!fresh.has(record.id)) {
          fresh.add(record.id);
          setOf(ownFresh, instance, () => new Set<string>()).add(record.id);
          const waiting = instance.rotations.find((rotation) => rotation.id === undefined);
          if (waiting !== undefined) waiting.id = record.id;
        }
        instance.seen.add(record.id);
        saving.add(record.id);
        return store.save(record, options).finally(() => saving.delete(record.id));
      },
      watch: (onChange, link) => store.watch(onChange, link),
    };
    // `launcher-auth rotate` opens its authority with the store's watch: it joins the table for its rotation and
    // leaves it at close (src/cli/main.ts). Some plans open the one-shot process without it, over `load` and `save`
    // alone: it follows nothing, and no rotation waits for it.
    const unwatched = instance.oneShot && plan.unwatched === true;
    const options = {
      store: unwatched ? { load: recording.load, save: recording.save } : recording,
      saveTimeout: plan.saveTimeout ?? 20 * TIMING.leaseMs,
      onStoreError: (error: Error) => report(instance, error),
      [runtimeOption]: process.runtime,
    } as TokenAuthorityOptions;
    log(() => `${process.name} opens`);
    const failed = (error: unknown): void => {
      if (!process.alive) return;
      const code = isLauncherAuthError(error) ? error.code : String(error);
      log(() => `${process.name} open() failed: ${code}`);
      // A launcher that could not start is started again by its user: a new process, a moment later.
      process.crash();
      scheduler.push(scheduler.now + rng.int(20, 120), () => restart(instance, then));
    };
    const open = (): void => {
      TokenAuthority.open(options).then((authority) => {
        if (!process.alive) return void authority.close();
        instance.authority = authority;
        instance.openedAt = scheduler.now;
        adopted(instance, authority.keyId);
        authority.onRotate(({ keyId }) => adopted(instance, keyId));
        log(() => `${process.name} opened on ${authority.keyId}`);
        if (tracing) authority.onRotate(({ keyId }) => log(() => `${process.name} now holds ${keyId}`));
        then?.(authority);
      }, failed);
    };
    if (!unwatched) return open();
    const exit = (resolved: boolean): void => {
      instance.cliDone?.(resolved, slowLately(process));
      log(() => `${process.name} exits`);
      process.crash();
    };
    // Over the rollback marker, the command's rotation is a save of a new record, before any authority opens; with
    // no secret at all, it says so and exits (only `token --init` creates one).
    store.load().then(
      (loaded) => (loaded === undefined ? exit(false) : open()),
      (error: unknown) => {
        if (!process.alive) return;
        if (!isLauncherAuthError(error) || error.code !== 'ERR_STORE_ROLLBACK') return failed(error);
        const record = generateRecord(process.runtime.random);
        track(
          instance,
          () => recording.save(record),
          () => record.id,
          undefined,
          exit,
        );
      },
    );
  }
  function restart(instance: Instance, then?: (authority: TokenAuthority) => void): void {
    if (instances[instance.slot] !== instance) return;
    const fresh: Instance = {
      slot: instance.slot,
      process: processFor(instance.slot),
      authority: undefined,
      seen: new Set(),
      rotations: [],
      oneShot: instance.oneShot,
      ...(instance.cliDone === undefined ? {} : { cliDone: instance.cliDone }),
      startedAt: scheduler.now,
      openedAt: Number.NaN,
    };
    instances[instance.slot] = fresh;
    start(fresh, then);
  }
  function spawn(
    oneShot: boolean,
    then?: (authority: TokenAuthority) => void,
    cliDone?: (resolved: boolean, slow: boolean) => void,
  ): Instance {
    const slot = instances.length;
    const instance: Instance = {
      slot,
      process: processFor(slot),
      authority: undefined,
      seen: new Set(),
      rotations: [],
      oneShot,
      ...(cliDone === undefined ? {} : { cliDone }),
      startedAt: scheduler.now,
      openedAt: Number.NaN,
    };
    instances.push(instance);
    start(instance, then);
    return instance;
  }

  /**
   * `connection`, with the back-off that the docs promise checked (about one command per instance per second once
   * its trust is gone and renewals keep failing; lease.ts: doubling up to a second or a quarter of the lease): after
   * three renewals in a row for one key without an 'ok' answer, the last sent while the instance refused its token,
   * the next one waits at least that long on its clock after the last one's outcome (its answer, or its command
   * timeout). A renewal made at once for a reason (a new key to acknowledge, a save of its own) is not counted.
   */
  function paced(instance: Instance, connection: RedisConnection): RedisConnection {
    const renewals: Array<{
      readonly sent: number;
      readonly key: string | undefined;
      readonly refused: boolean;
      readonly busy: boolean;
      ok: boolean;
      answered: number;
    }> = [];
    const run: RedisConnection['run'] = (script, keys, args, options) => {
      const result = connection.run(script, keys, args, options);
      const { process, authority } = instance;
      if (script !== CONFIRM || instance.oneShot || authority === undefined) return result;
      const renewal = {
        sent: process.local(),
        key: authority.keyId,
        refused: !accepts(authority),
        busy: instance.rotations.length > 0,
        ok: false,
        answered: Infinity,
      };
      const [last] = renewals;
      if (
        last !== undefined &&
        renewals.length === 3 &&
        renewals.every((one) => !one.ok && !one.busy && one.key === renewal.key) &&
        last.refused &&
        !renewal.busy
      ) {
        const waited = renewal.sent - Math.min(last.answered, last.sent + TIMING.commandTimeout);
        if (waited < BACKOFF - 1e-6)
          flag(
            `${process.name} renews ${waited.toFixed(1)} ms after its third failed renewal in a row, not ${BACKOFF}`,
          );
      }
      renewals.unshift(renewal);
      renewals.length = Math.min(renewals.length, 3);
      void result.then(
        (answer) => {
          renewal.answered = process.local();
          renewal.ok = observation(answer.reply)?.status === 'ok';
        },
        () => {
          renewal.answered = process.local();
        },
      );
      return result;
    };
    return Object.assign(Object.create(connection) as RedisConnection, { run });
  }

  /** The records each instance had seen in Redis's answers when it sent its last renewal. */
  const decidedWith = new Map<Instance, readonly string[]>();
  /**
   * `connection`, with the write-forward after a rollback checked as the docs state it: an instance writes back the
   * record it holds only while it still trusts it; otherwise it writes the marker.
   */
  function writesForward(instance: Instance, connection: RedisConnection, saving: Set<string>): RedisConnection {
    const run: RedisConnection['run'] = (script, keys, args, options) => {
      const written = script === SAVE ? parse(args.at(-1) ?? '') : undefined;
      const { authority, process } = instance;
      if (
        written !== undefined &&
        !written.id.startsWith(MARKER) &&
        !saving.has(written.id) &&
        authority !== undefined
      ) {
        const over = args[1] ?? '';
        if (!accepts(authority))
          flag(`${process.name} writes ${written.id} forward over ${over || 'nothing'} though it no longer trusts it`);
        // docs/several-instances.md: only over a record of its own line (one that its record replaced, directly or
        // earlier) or over none; another line's record may have been made by a rotation that revoked it.
        if (over !== '' && over !== written.id && !lines.replaced(written.id, over))
          flag(`${process.name} writes ${written.id} forward over ${over}, which it never replaced`);
        // The record written back is the newest this instance had seen when it sent the renewal that found the
        // rollback (whose answer it judges against the record it held then; answers taken in with it, such as its
        // own save's, may not be judged yet): never one that a record it had seen replaced.
        for (const id of decidedWith.get(instance) ?? [])
          if (id !== written.id && !id.startsWith(MARKER) && lines.replaced(id, written.id))
            flag(`${process.name} writes ${written.id} forward though it had seen ${id}, which replaced it`);
      }
      if (script === CONFIRM) decidedWith.set(instance, [...answered(instance)]);
      return connection.run(script, keys, args, options);
    };
    return Object.assign(Object.create(connection) as RedisConnection, { run });
  }

  /** rotate() on `instance`'s authority, with every outcome checked against what Redis holds. */
  /** Whether a slow message held `process` up lately: enough to time a command out, or to hold back its answer. */
  function slowLately(process: SimProcess): boolean {
    return process.slowUntil > scheduler.now - 2 * TIMING.commandTimeout;
  }

  /**
   * `launcher-auth rotate`: a one-shot process that rotates, then exits; `done` hears whether rotate() resolved, and
   * whether a slow message held its process up near the end.
   */
  function cliRotate(done?: (resolved: boolean, slow: boolean, own: boolean) => void): void {
    const cli = spawn(
      true,
      (authority) => {
        const process = cli.process;
        rotate(cli, authority, (resolved) => {
          // Whether Redis holds the record this process saved, not another rotation's written over it.
          const held = recordOf(redis.nodes[redis.primary] as RedisNode)?.id ?? '';
          done?.(resolved, slowLately(process), ownFresh.get(cli)?.has(held) === true);
          void authority.close().then(() => {
            log(() => `${process.name} exits`);
            process.crash();
          });
        });
      },
      // An open that failed saved nothing.
      done && ((resolved, slow) => done(resolved, slow, false)),
    );
  }

  function rotate(instance: Instance, authority: TokenAuthority, then?: (resolved: boolean) => void): void {
    track(
      instance,
      () => authority.rotate(),
      () => authority.keyId,
      authority,
      then,
    );
  }

  /** A rotation (`run`; `idOf` names the key it made current) with every outcome checked against what Redis holds. */
  function track(
    instance: Instance,
    run: () => Promise<unknown>,
    idOf: () => string,
    authority: TokenAuthority | undefined,
    then?: (resolved: boolean) => void,
  ): void {
    const rotation: { id?: string } = {};
    instance.rotations.push(rotation);
    const settled = (): void => void instance.rotations.splice(instance.rotations.indexOf(rotation), 1);
    const process = instance.process;
    const calledAt = scheduler.now;
    // The only fault of its plan, made by an instance that has known the server and its table for longer than a
    // lease (so that it knows the table to be complete): it resolves on acknowledgements, not at its bound.
    const healthy =
      plan.faults.length === 1 &&
      plan.faults[0]?.kind === 'rotate' &&
      !instance.oneShot &&
      instance.startedAt + QUARANTINE_LONGEST < calledAt;
    const jumps = jumped.get(process) ?? 0;
    log(() => `${process.name} rotate()`);
    run().then(
      () => {
        settled();
        if (!process.alive) return;
        const id = idOf();
        const index = indexOf(id);
        outcomes.resolved = (outcomes.resolved ?? 0) + 1;
        promised.set(id, 'resolved');
        log(() => `${process.name} rotate() resolved ${id}`);
        if (index === -1) flag(`rotate() resolved ${id}, which Redis never held`);
        if (unconfirmed.has(id)) flag(`rotate() resolved ${id}, which WAIT did not confirm on the replicas asked for`);
        // A rotation never resolves with a token that is already dead (docs/errors.md): none that the record of a
        // rotation resolved before replaced, directly or through later records. Only while Redis lost nothing: a loss
        // may bring a revoked record back, as the documented exception says. And only for an authority that follows
        // the store: one over `load` and `save` alone holds no lease, as the same page says.
        if (lossAt === -Infinity && !(instance.oneShot && plan.unwatched === true))
          for (const [other, outcome] of promised)
            if (outcome === 'resolved' && other !== id && descends(other, id))
              flag(`rotate() resolved ${id}, which the resolved rotation of ${other} had revoked`);
        // The rotating instance takes its new token at once, in the very tick rotate() resolved: a change of server
        // during the rotation (a slot move, a failover) quarantines it as it does every instance, and the rotation
        // waits that quarantine out before it resolves.
        // (Unless it cannot reach Redis by then: cut off or routed elsewhere, it refuses every token.)
        if (authority !== undefined && !accepts(authority)) {
          ownRefused += 1;
          const reaches = process.partition.until <= scheduler.now && process.route === redis.primary;
          if (reaches) flag(`${process.name} refuses its own new token when rotate() resolved`);
        }
        // A change of server during the rotation: it resolves only once its instance's quarantine is over
        // (docs/several-instances.md). Not for a one-shot authority without the watch, which has no lease.
        const change = servers.get(process)?.change;
        if (authority !== undefined && !(instance.oneShot && plan.unwatched === true) && change !== undefined) {
          const early = change.until - process.local();
          if (change.at >= calledAt && early > 0)
            flag(`rotate() resolved ${id} ${early.toFixed(1)} ms before the quarantine of ${process.name} ended`);
        }
        if (rotation.id !== id) flag(`rotate() saved ${rotation.id ?? 'nothing'} but resolved with ${id}`);
        if (healthy && scheduler.now - calledAt > HEALTHY_ROTATION)
          flag(
            `rotate() took ${(scheduler.now - calledAt).toFixed(1)} ms in a healthy world (docs/several-instances.md: normally a few milliseconds)`,
          );
        revokedBelow = Math.max(revokedBelow, index);
        if (index > newestResolved) {
          newestResolved = index;
          newestResolvedId = id;
          newestResolvedAt = scheduler.now;
        }
        then?.(true);
      },
      (error: unknown) => {
        settled();
        const code = isLauncherAuthError(error) ? error.code : String(error);
        outcomes[code] = (outcomes[code] ?? 0) + 1;
        const { id } = rotation;
        if (id !== undefined) promised.set(id, code);
        if (code === 'ERR_ROTATION_SUPERSEDED' && id !== undefined && !replaced(id))
          flag(`rotate() rejected ${code}, but no record replaced ${id}`);
        // ERR_SAVE_UNCERTAIN is for a save or a read Redis did not answer in time, or a save WAIT did not confirm
        // (docs/errors.md); a change of server without a loss (a slot move) only makes the rotation wait out its
        // instance's quarantine before it resolves (docs/several-instances.md). So not after a save answered in time
        // while its instance reached Redis throughout: no partition, pause, stall, reroute or reconnection, no clock
        // step, no slow message near the end.
        if (
          code === 'ERR_SAVE_UNCERTAIN' &&
          lossless &&
          id !== undefined &&
          answeredSaves.has(id) &&
          !unconfirmed.has(id)
        ) {
          const primary = redis.nodes[redis.primary] as RedisNode;
          const blocked = Math.max(
            cutUntil.get(process) ?? 0,
            process.pausedUntil,
            process.routedAt,
            process.waitUnknownUntil,
            primary.stalledUntil,
          );
          const given = (plan.saveTimeout ?? 20 * TIMING.leaseMs) / (1 + RATE_SPREAD);
          // A slow message near the end may hold back the last acknowledgement reads past the bound's deadline.
          const slow = slowLately(process);
          if (!slow && blocked < calledAt && (jumped.get(process) ?? 0) === jumps && scheduler.now - calledAt < given)
            flag(`rotate() rejected ${code} though ${process.name} reached Redis throughout and Redis lost nothing`);
        }
        log(() => `${process.name} rotate() rejected ${code}${id === undefined ? '' : ` (${id})`}`);
        then?.(false);
      },
    );
  }

  /**
   * Whether another record replaced `id` (ERR_ROTATION_SUPERSEDED; a record that Redis lost and went back past is
   * ERR_SAVE_UNCERTAIN): one written over it, one stored after it, or one of a higher generation that a primary
   * holds (a rotation on the other side of a split).
   */
  const replaced = (id: string): boolean =>
    overwritten.has(id) ||
    indexOf(id) < order.size - 1 ||
    redis.nodes.some(
      (node) => node.role === 'primary' && (recordOf(node)?.generation ?? 0) > (generations.get(id) ?? Infinity),
    );

  /** Whether `authority` accepts its own current token now (the real, synchronous decision of the gate). */
  const accepts = (authority: TokenAuthority): boolean => {
    const result = decideNow(authority, `Bearer ${authority.issue()}`);
    return !(result instanceof Promise) && result.ok;
  };

  // --- the invariants, after every event ---
  /** The last time a primary held an older record than the newest resolved one (Redis had lost it). */
  let lostUntil = -Infinity;
  /**
   * From when an instance that opened before the present loss may accept the lost record's predecessor: the loss
   * (a restart, a failover) that took the newest resolved record away, plus its quarantine. -Infinity when that
   * record resolved after the last loss (on a primary already deposed): nothing changed server after it.
   */
  let lossQuarantined = -Infinity;
  /** The instances that had seen the newest resolved record when Redis lost it (or when it resolved during a loss). */
  let knew = new Set<Instance>();
  let knewOf = -1;
  /** How far each process's monotonic clock was stepped forward in all ('jump'). */
  const jumped = new Map<SimProcess, number>();
  /** The end of the latest partition of each process (the end of the faults heals it earlier). */
  const cutUntil = new Map<SimProcess, number>();
  /** The last time each instance was routed to a primary that a failover had deposed (a split brain). */
  const deposedUntil = new Map<Instance, number>();
  /**
   * What the primaries held, from when (and the latest loss then): a rotation may resolve after Redis lost its
   * record and got it (or a successor) back, as when a restore from an older dump is followed by one from a newer
   * dump, while its instance was cut off. The loss is then found in this history once the rotation resolves.
   */
  const primaries: Array<{ at: number; ids: readonly string[]; lossAt: number }> = [];
  let primariesKey = '';
  /** The newest resolved record whose history was searched for a loss already over. */
  let searchedOf = -1;
  /**
   * Whether `instance` had seen a record of `id`'s generation or above that `id` does not descend from before it first
   * saw `id` (or a successor): the other side of a split brain rotated to the same generation. docs/several-instances.md:
   * such a record "of the same generation with another id that did not replace it ... is never adopted"; the instance
   * keeps the one it saw first, as its side of the split does, until the split heals.
   */
  const sawSiblingFirst = (instance: Instance, id: string): boolean => {
    const seen = [...(firstSeen.get(instance) ?? [])];
    const first = Math.min(...seen.filter(([other]) => descends(other, id)).map(([, { at }]) => at));
    const generation = generations.get(id) ?? Infinity;
    return seen.some(
      ([other, { at }]) => at < first && (generations.get(other) ?? -Infinity) >= generation && !descends(id, other),
    );
  };
  /**
   * The instances that saw `id` (or a successor) but no sibling of it before (see {@link sawSiblingFirst}), or whose
   * machine's generation file remembers it.
   */
  const knowing = (id: string): Set<Instance> =>
    new Set(
      instances.filter(
        (instance) =>
          ([...instance.seen].some((seen) => descends(seen, id)) && !sawSiblingFirst(instance, id)) ||
          descends(generationFiles.get(instance.slot)?.value?.id, id),
      ),
    );
  function check(): void {
    if (flagged !== undefined) fail(flagged);
    for (const instance of instances) {
      const node = redis.nodes[instance.process.route] as RedisNode;
      if (node.role === 'primary' && node.index !== redis.primary) deposedUntil.set(instance, scheduler.now);
    }
    let lost = false;
    const ids: string[] = [];
    for (const node of redis.nodes) {
      if (node.role !== 'primary') continue;
      const id = recordOf(node)?.id ?? '';
      ids.push(id);
      // A primary whose record neither is the newest resolved one nor was written over it: Redis lost it there.
      if (newestResolved >= 0 && !descends(id, newestResolvedId)) lost = true;
    }
    const key = ids.join(' ');
    if (key !== primariesKey) {
      primariesKey = key;
      primaries.push({ at: scheduler.now, ids, lossAt });
    }
    if (lost) {
      if (scheduler.now > lostUntil + EXCEPTION_AFTER_REPAIR || knewOf !== newestResolved) {
        // A process knew it if it saw it (or a successor), or if its machine's generation file remembers it.
        knew = knowing(newestResolvedId);
        knewOf = newestResolved;
        lossQuarantined = lossAt >= newestResolvedAt ? lossAt : -Infinity;
      }
      lostUntil = scheduler.now;
    } else if (newestResolved >= 0 && knewOf !== newestResolved && searchedOf !== newestResolved) {
      // The newest resolved record is held, but Redis may have lost it and got it back since it was first held: the
      // same exception, until a lease after it got it back (the instances that never saw it hear of it by then).
      searchedOf = newestResolved;
      const since = heldSince.get(newestResolvedId) ?? Infinity;
      for (let index = primaries.length - 2; index >= 0 && (primaries[index + 1]?.at ?? 0) > since; index -= 1) {
        const entry = primaries[index] as (typeof primaries)[number];
        if (entry.at < since || entry.ids.every((id) => descends(id, newestResolvedId))) continue;
        knew = knowing(newestResolvedId);
        knewOf = newestResolved;
        lostUntil = (primaries[index + 1] as (typeof primaries)[number]).at;
        // The loss that took it away: an instance that opened on the server after it has nothing to compare with.
        lossQuarantined = entry.lossAt;
        break;
      }
    }
    for (const instance of instances) {
      const { authority, process } = instance;
      // A one-shot `launcher-auth rotate` serves no request.
      if (authority === undefined || !process.running || instance.oneShot) continue;
      const index = indexOf(authority.keyId);
      if (index >= revokedBelow || !accepts(authority)) continue;
      // An instance that adopted this record by its generation alone (see byGeneration), before any rotation that
      // resolved since, holds it as its newest.
      if (byGeneration.get(instance)?.get(authority.keyId) === revokedBelow) {
        excused += 1;
        continue;
      }
      // The documented exception: Redis lost the newest resolved record (no replica that took over had it), and
      // this instance never saw it: it cannot know better until an instance that saw it writes it back or replaces
      // it with the marker, and hears of that (pub/sub, or its next renewal: within a lease).
      // And a split brain: an instance still served by a deposed primary renews its lease there, where a rotation
      // on the new primary never hears of it; it trusts until it reaches the new primary, plus a lease.
      // Not at once, though: an instance whose era began before the loss (its open() read the server that then lost
      // the write) trusts nothing from the changed server before its quarantine ends, `leaseMs + driftMargin` on its
      // clock after its first answer there (after the loss, on a clock at most RATE_SPREAD fast and stepped forward
      // by its jumps). One that opened on the changed server has no earlier server to compare with: at once.
      const deposed = deposedUntil.get(instance) ?? -Infinity;
      const from =
        instance.openedAt >= lossQuarantined ? -Infinity : lossQuarantined + QUARANTINE - (jumped.get(process) ?? 0);
      if (
        (!knew.has(instance) && scheduler.now >= from && scheduler.now <= lostUntil + EXCEPTION_AFTER_REPAIR) ||
        scheduler.now <= deposed + EXCEPTION_AFTER_REPAIR
      ) {
        excused += 1;
        continue;
      }
      fail(`${process.name} accepts the token of ${authority.keyId}, revoked by a resolved rotation`);
    }
    if (lossAt === -Infinity) noRefusalWithoutLoss();
  }

  // --- no refusal without a loss: an instance that reaches the primary takes the current token within a bound ---
  /** The last time each instance could not renew promptly. */
  const blockedAt = new Map<Instance, number>();
  let heldId: string | undefined;
  let changedAt = 0;
  let sampledAt = -Infinity;
  function noRefusalWithoutLoss(): void {
    const now = scheduler.now;
    const primary = redis.nodes[redis.primary] as RedisNode;
    const held = recordOf(primary);
    if (held?.id !== heldId) {
      heldId = held?.id;
      changedAt = now;
    }
    // Sampled: reading every instance's decision after every event would cost more than the rest of the check.
    if (now < sampledAt + 10) return;
    sampledAt = now;
    if (held === undefined) return;
    if (held.id.startsWith(MARKER)) fail('the rollback marker stands though Redis lost no write');
    for (const instance of instances) {
      const { authority, process } = instance;
      if (
        !process.running ||
        process.partition.until > now ||
        process.slowUntil > now ||
        process.route !== redis.primary ||
        primary.stalledUntil > now
      ) {
        blockedAt.set(instance, now);
        continue;
      }
      if (authority === undefined || instance.oneShot || instance.rotations.length > 0) continue;
      if (authority.keyId === held.id && accepts(authority)) continue;
      const since = Math.max(
        blockedAt.get(instance) ?? -Infinity,
        process.partition.until,
        process.pausedUntil,
        process.routedAt,
        process.slowUntil,
        primary.stalledUntil,
        changedAt,
        instance.openedAt,
      );
      // An instance that did not trust the record another server holds when it first heard from it (it was
      // opening, rotating, or cut off past its lease) cannot tell a slot move or a failover from a restart that
      // lost writes: it sits out the quarantine, a lease and the drift margin from that answer.
      const server = instance.server;
      if (server !== undefined && !server.trusting && now <= server.seenAt + QUARANTINE_LONGEST + REFUSAL_BOUND) {
        quarantinedFor = Math.max(quarantinedFor, now - server.seenAt);
        continue;
      }
      refusedFor = Math.max(refusedFor, now - since);
      if (now - since <= REFUSAL_BOUND) continue;
      fail(
        `${process.name} refuses the current token (${held.id}) ${Math.round(now - since)} ms after it could renew, though Redis lost no write`,
      );
    }
  }

  // --- the faults ---
  const slotOf = (index: number): Instance | undefined => instances[index];
  const apply = (fault: Fault): void => {
    switch (fault.kind) {
      case 'rotate': {
        const instance = slotOf(fault.instance);
        if (instance?.authority !== undefined && instance.process.alive) {
          const { authority, process } = instance;
          process.whenRunning(() => rotate(instance, authority));
        }
        return;
      }
      case 'cli-rotate':
        cliRotate();
        return;
      case 'partition': {
        const process = slotOf(fault.instance)?.process;
        if (process === undefined) return;
        process.partition = { until: scheduler.now + fault.length, drop: fault.drop, way: fault.way };
        cutUntil.set(process, Math.max(cutUntil.get(process) ?? 0, process.partition.until));
        return;
      }
      case 'pause': {
        const process = slotOf(fault.instance)?.process;
        process?.pause(scheduler.now + fault.length);
        return;
      }
      case 'crash': {
        const instance = slotOf(fault.instance);
        if (!instance?.process.alive) return;
        instance.process.crash();
        scheduler.push(scheduler.now + fault.length, () => restart(instance));
        return;
      }
      case 'join':
        spawn(false);
        return;
      case 'jump': {
        const process = slotOf(fault.instance)?.process;
        // A forward step of the monotonic clock (a suspended VM resumed): trust ends early, never late.
        if (process !== undefined) {
          process.origin += fault.by;
          jumped.set(process, (jumped.get(process) ?? 0) + fault.by);
        }
        return;
      }
      case 'stall': {
        const node = redis.nodes[redis.primary] as RedisNode;
        node.stalledUntil = Math.max(node.stalledUntil, scheduler.now + fault.length);
        return;
      }
      case 'restart-empty':
        lossAt = scheduler.now;
        redis.restart(undefined, rng.int(1, 30));
        return heldNow();
      case 'restart-dump':
        lossAt = scheduler.now;
        redis.restart(redis.dumps[Math.max(0, redis.dumps.length - fault.age)], rng.int(1, 30));
        return heldNow();
      case 'reconnect': {
        const process = slotOf(fault.instance)?.process;
        if (process !== undefined) process.waitUnknownUntil = scheduler.now + fault.length;
        return;
      }
      case 'failover': {
        const candidates = redis.replicasOf(redis.nodes[redis.primary] as RedisNode);
        if (candidates.length === 0) return;
        const old = redis.primary;
        const until = fault.split === 0 ? 0 : scheduler.now + fault.split;
        const chosen = rng.pick(candidates);
        // A loss unless the promoted replica has every write (a split loses what the deposed primary takes).
        if (until > 0 || !redis.sameData(chosen, redis.nodes[old] as RedisNode)) lossAt = scheduler.now;
        const promoted = redis.failover(chosen.index, until);
        for (const instance of instances) {
          const process = instance.process;
          const stays = fault.side.includes(instance.slot) && until > 0;
          // The sentinels tell each client (node-redis's Sentinel client follows), after a moment.
          scheduler.push(stays ? until : scheduler.now + rng.int(1, 40), () => {
            // To whichever node is the primary by then (another failover may have followed).
            if (instance.process === process) process.reroute(redis.primary);
          });
        }
        log(() => `failover from node ${old} to node ${promoted.index}${until > 0 ? ` (split until ${until})` : ''}`);
        return;
      }
      case 'replica-lag':
        for (const replica of redis.replicasOf(redis.nodes[redis.primary] as RedisNode))
          if (rng.chance(0.5)) replica.linkDownUntil = Math.max(replica.linkDownUntil, scheduler.now + fault.length);
        return;
      case 'legacy-rotate':
        return legacyRotate();
      case 'slot-move': {
        // A Cluster slot migration: the same data, now on a node with another run_id.
        const node = redis.nodes[redis.primary] as RedisNode;
        node.keyspace.restore(node.keyspace.snapshot(), rng.name());
        return heldNow();
      }
    }
  };

  /**
   * An instance of 0.2.0 rotates: the same SAVE script (unchanged since 0.2.0), over the record the primary holds, of
   * a record without a line. Only its save is modelled: it then leaves (what it waits for afterwards changes nothing
   * in Redis). Over a marker or no record it does nothing (it refuses, as every instance does then).
   */
  function legacyRotate(): void {
    const node = redis.nodes[redis.primary] as RedisNode;
    // A stalled or restarting server runs it after the commands that wait there.
    if (scheduler.now < node.stalledUntil) return void scheduler.push(node.stalledUntil + 0.01, legacyRotate);
    const current = recordOf(node);
    if (current === undefined || current.id.startsWith(MARKER)) return;
    const record = generateRecord((bytes) => {
      const buffer = Buffer.alloc(bytes);
      for (let index = 0; index < bytes; index += 4) buffer.writeUInt32LE(rng.next(), Math.min(index, bytes - 4));
      return buffer;
    });
    const names = keyNames(KEY);
    const value = encodeRecord(record, current.generation + 1, current.id);
    const padding = Array.from({ length: SAVE_PADDING }, () => '');
    const args = [String(current.generation), current.id, names.channel, 'legacy', ...padding, value];
    redis.exec(node, SAVE, [names.record, names.instances], args);
    log(() => `an instance of 0.2.0 saves ${record.id} over ${current.id}`);
  }

  /**
   * Once the quarantines after the faults are over: where Redis holds the rollback marker (or refusing instances are
   * all there is), an operator regenerates the token, as the docs say, from a fresh process; and again over a marker
   * that a process started later writes (see restartedOver). A rotation that did not resolve (ERR_SAVE_UNCERTAIN,
   * say) is run again while the marker stands, as the docs say for such an outcome: `tries` at most.
   */
  function operator(tries: number): void {
    const held = recordOf(redis.nodes[redis.primary] as RedisNode);
    if (tries === 0 || (held !== undefined && !held.id.startsWith(MARKER))) return void (operating = 'no');
    log(() => 'the operator runs launcher-auth rotate');
    cliRotate((resolved, slow, own) => {
      if (resolved) return void (operating = 'no');
      // The docs: `launcher-auth rotate` over the marker replaces it and resolves. One that did not resolve is run
      // again while the marker stands; one that replaced it without resolving (and not for want of replicas, which
      // the docs allow, nor because the network's rare slow message, which goes on after the faults, timed its save
      // out: ERR_SAVE_UNCERTAIN, as the check of every rejected rotation allows) broke that promise. Unless another
      // rotation (one a user started during the faults, queued behind another) saved over it: docs/errors.md,
      // "overtaken by another, it rejects with `ERR_ROTATION_SUPERSEDED`".
      const now = recordOf(redis.nodes[redis.primary] as RedisNode);
      if (
        plan.unwatched === true &&
        own &&
        !slow &&
        now !== undefined &&
        !now.id.startsWith(MARKER) &&
        !unconfirmed.has(now.id) &&
        lossAt < FAULTS_END
      )
        flag(`the operator's rotation replaced the marker with ${now.id} but did not resolve`);
      scheduler.push(scheduler.now + 20, () => operator(tries - 1));
    });
  }

  try {
    // The first instance creates the secret; the others open once it is there.
    for (let index = 0; index < plan.instances; index += 1) {
      if (index === 0) spawn(false);
      else scheduler.push(rng.float() * 20 + 5, () => void spawn(false));
    }
    for (const fault of plan.faults) {
      scheduler.push(fault.at, () => {
        log(() => `fault ${JSON.stringify(fault)}`);
        apply(fault);
      });
    }
    // Only a restart from a dump reads the later ones. The first is the first event, at which the first instance's
    // open() (begun above, outside any event) takes its first steps.
    const dumps = plan.faults.some((fault) => fault.kind === 'restart-dump');
    for (let t = 10; t < FAULTS_END && (dumps || t === 10); t += 20) scheduler.push(t, () => redis.dump());
    // The faults end: every partition heals, every pause ends, every client finds the primary.
    scheduler.push(FAULTS_END, () => {
      log(() => 'faults end');
      for (const instance of instances) {
        const process = instance.process;
        process.partition = { until: 0, drop: false, way: 'both' };
        process.resume();
        process.reroute(redis.primary);
      }
    });
    scheduler.push(OPERATOR_AT, () => {
      operating = 'first';
      operator(3);
    });
    await scheduler.run(FAULTS_END, check);
    await scheduler.run(END, check);
    liveness();
    // With every replica confirming each save, a failover loses no resolved rotation: no exception at all, unless
    // the primary itself came back from an older dump or empty (its replicas then resync from it), or a split brain
    // let instances renew on a deposed primary.
    const restarts = plan.faults.some(
      (fault) =>
        fault.kind === 'restart-empty' ||
        fault.kind === 'restart-dump' ||
        (fault.kind === 'failover' && fault.split > 0),
    );
    const everyReplica = plan.waitFor === plan.replicas || (plan.waitFor === 'majority' && plan.replicas <= 2);
    if (excused > 0 && plan.replicas > 0 && everyReplica && !restarts)
      fail(`${excused} acceptances of a revoked token with every replica confirming each save`);
    for (const [id, outcome] of promised) {
      if (outcome === 'ERR_SAVE_CONFLICT' && order.has(id))
        fail(`rotate() rejected ERR_SAVE_CONFLICT but ${id} was stored`);
      if ((outcome === 'resolved' || outcome === 'ERR_ROTATION_SUPERSEDED') && !order.has(id))
        fail(`rotate() ${outcome} but ${id} was never stored`);
    }
  } catch (error) {
    if (!(error instanceof Violation)) throw error;
    log(() => `VIOLATION: ${error.message}`);
    return {
      violation: error.message,
      trace,
      events: scheduler.events,
      outcomes,
      excused,
      ownRefused,
      refusedFor,
      quarantinedFor,
    };
  } finally {
    for (const instance of instances) instance.process.crash();
  }
  return { trace, events: scheduler.events, outcomes, excused, ownRefused, refusedFor, quarantinedFor };

  /**
   * After the healthy stretch: every running instance trusts the record Redis holds, or, when a queued rotation
   * saved it less than a lease ago, still the one it replaced: an instance hears of a write at once by pub/sub, at
   * the latest by its next renewal (docs/several-instances.md). The network's rare slow message goes on through
   * the healthy stretch: an instance may refuse that record "only while it cannot renew (cut off, frozen, Redis
   * stalled or slow to answer) and for at most a lease after: the back-off, a renewal that times out
   * (`commandTimeout`) and the next one" (the same page), the bound the check without a loss applies.
   */
  function liveness(): void {
    const held = recordOf(redis.nodes[redis.primary] as RedisNode);
    if (held === undefined) return;
    // The operator's rotation over a marker written late in the healthy stretch may outlast it: nothing to judge yet.
    if (operating === 'late') return;
    if (held.id.startsWith(MARKER)) return fail('the rollback marker still stands after the operator rotated');
    const lease = (TIMING.leaseMs + TIMING.driftMargin) / (1 - spread);
    const previous = scheduler.now - (heldSince.get(held.id) ?? -Infinity) < lease ? prevOf.get(held.id) : undefined;
    for (const instance of instances) {
      const { authority, process } = instance;
      if (!process.alive || instance.oneShot) continue;
      if (authority === undefined) return fail(`${process.name} has not opened after the healthy stretch`);
      // A queued rotation that saved the current record during the healthy stretch is still resolving.
      if (instance.rotations.some((rotation) => rotation.id === held.id)) continue;
      const accepting = accepts(authority);
      const sinceSlow = scheduler.now - process.slowUntil;
      if ((authority.keyId !== held.id && authority.keyId !== previous) || (!accepting && sinceSlow > REFUSAL_BOUND))
        fail(`${process.name} does not accept the current token (${held.id}) after the healthy stretch`);
      if (!accepting)
        log(() => `${process.name} refuses the current token ${sinceSlow.toFixed(1)} ms after its last slow message`);
    }
  }
}

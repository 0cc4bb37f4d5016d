// A schedule's plan, drawn from its seed: how many instances and replicas, which options, and which faults when.
// Swarm testing: each plan first draws which kinds of fault it uses at all, and how many, so that rare
// combinations (a failover during a split while an instance restarts) are common across seeds.
import { Prng } from './prng.js';
import { scenarioAlone, scenarioFaults, scenarioSettings } from './scenarios.js';

/** The simulated timings (ms): a short lease keeps schedules short; the ratios are the defaults' . */
export const TIMING = {
  leaseMs: 300,
  renewInterval: 60,
  driftMargin: 30,
  commandTimeout: 100,
  ackPollInterval: 20,
} as const;
/**
 * How many schedules `npm test` explores (simulation*.test.ts, a part each: part.ts): seeds 1 to 2,400, where every
 * mutant of mutant-list.ts that the simulator catches is caught (MUTANTS.md: the latest first failing seed is 2,084).
 */
export const QUICK_SCHEDULES = 2_400;
/**
 * Where the deep tier (`npm run test:deep`, which CI runs after `npm test`) stops: it explores the seeds after
 * `npm test`'s, up to 30,000, so that CI covers seeds 1 to 30,000 once.
 */
export const DEEP_SCHEDULES = 30_000;
/**
 * The share of the plans whose one-shot processes open without the store's watch, an authority over the store's
 * `load` and `save` alone (see {@link Plan.unwatched}); the rest run `launcher-auth rotate` as the real command
 * opens, with the watch.
 */
export const UNWATCHED = 0.3;
/** Faults happen before this time; after it the world heals and must recover (the liveness stretch). */
export const FAULTS_END = 900;
/** The end of a schedule: the healthy stretch lasts this long after the faults. */
export const END = FAULTS_END + 3 * TIMING.leaseMs;
/**
 * How far the processes' clock rates may differ from true time: the documented bound is that two rates differ by
 * less than `driftMargin` over one `leaseMs` (here 30 ms over 300 ms). Each stays within ±3 % (two differ by at most
 * 18 ms over a lease), which leaves room for a forward step of a process's clock of up to 10 ms ('jump').
 */
export const RATE_SPREAD = 0.03;
/**
 * The spread of the plans whose clocks run up to the documented bound itself: two rates then differ by up to 29.94 ms
 * over a lease (of 30), which leaves no room for a step of a clock: those plans have none.
 */
export const WIDE_SPREAD = 0.0499;

/** The processes' clocks. */
export interface Clocks {
  /** How far each process's clock rate may differ from true time. */
  readonly spread: number;
  /** The rate of every process's clock on some machines (by slot); the others draw theirs within `spread`. */
  readonly rates?: Readonly<Record<number, number>>;
}

export type Fault =
  | { readonly at: number; readonly kind: 'rotate'; readonly instance: number }
  | { readonly at: number; readonly kind: 'cli-rotate' }
  | {
      readonly at: number;
      readonly kind: 'partition';
      readonly instance: number;
      readonly length: number;
      readonly drop: boolean;
      readonly way: 'both' | 'out' | 'in';
    }
  | { readonly at: number; readonly kind: 'pause'; readonly instance: number; readonly length: number }
  | { readonly at: number; readonly kind: 'crash'; readonly instance: number; readonly length: number }
  | { readonly at: number; readonly kind: 'join' }
  | { readonly at: number; readonly kind: 'jump'; readonly instance: number; readonly by: number }
  | { readonly at: number; readonly kind: 'stall'; readonly length: number }
  | { readonly at: number; readonly kind: 'restart-empty' }
  | { readonly at: number; readonly kind: 'restart-dump'; readonly age: number }
  | { readonly at: number; readonly kind: 'reconnect'; readonly instance: number; readonly length: number }
  | { readonly at: number; readonly kind: 'failover'; readonly split: number; readonly side: readonly number[] }
  | { readonly at: number; readonly kind: 'replica-lag'; readonly length: number }
  | { readonly at: number; readonly kind: 'slot-move' }
  /**
   * An instance of the previous version (0.2.0, still running during a rolling upgrade) rotates: its compare-and-set
   * over the record the primary holds writes a record without a line, as 0.2.0 wrote every record. Only scenarios
   * draw it.
   */
  | { readonly at: number; readonly kind: 'legacy-rotate' };

export type FaultKind = Fault['kind'];

/** The faults after which Redis may hold an older record than one an instance saw. */
export const LOSSES: ReadonlySet<FaultKind> = new Set(['restart-empty', 'restart-dump', 'failover']);

export interface Plan {
  /** Instances started at the beginning (more may join). */
  readonly instances: number;
  /** Redis replicas behind the primary. */
  readonly replicas: number;
  /**
   * How many replicas WAIT must confirm: 0 for none (`replicas: false`), a number, or 'majority' (the default of a
   * Sentinel client, which the instances use whenever Redis has replicas).
   */
  readonly waitFor: number | 'majority';
  readonly faults: readonly Fault[];
  /**
   * The authorities' `saveTimeout`: mostly longer than a schedule (no save is given up on), sometimes a few leases,
   * so that a save held on its way to Redis is given up on and lands later.
   * @default 20 leases
   */
  readonly saveTimeout?: number;
  /**
   * The one-shot processes (a `cli-rotate` fault, the operator who rotates over the rollback marker) open without the
   * store's watch: an authority over `{ load, save }` alone, which takes no lease, so that no rotation waits for it
   * and its own rotation is not told of one elsewhere that replaced its record while its last read was on its way
   * (docs/errors.md). Otherwise they open with it, as `launcher-auth rotate` does: it joins the instance table for
   * its rotation and leaves it when it closes.
   * @default false
   */
  readonly unwatched?: boolean;
  /** @default rates within {@link RATE_SPREAD} of true time, and forward steps of a clock ('jump') */
  readonly clocks?: Clocks;
  /**
   * Redis on the instances' own machine (loopback): a message takes at most a tenth of a millisecond each way and is
   * taken in as soon, apart from the network's rare slow one.
   * @default false
   */
  readonly local?: boolean;
}

const KINDS: readonly FaultKind[] = [
  'partition',
  'pause',
  'crash',
  'join',
  'jump',
  'stall',
  'restart-empty',
  'restart-dump',
  'failover',
  'replica-lag',
  'slot-move',
  'cli-rotate',
];

export function planFor(seed: number): Plan {
  const rng = new Prng(seed);
  const instances = rng.int(2, 4);
  const replicas = rng.int(0, 2);
  const draw = rng.int(0, 2);
  const waitFor = replicas === 0 || draw === 0 ? 0 : draw === 1 ? rng.int(1, replicas) : 'majority';
  // The swarm: this schedule's fault kinds, and how many faults in all.
  const kinds = KINDS.filter(() => rng.chance(0.45));
  const count = kinds.length === 0 ? 0 : rng.int(1, 12);
  const faults: Fault[] = [];
  const at = (): number => rng.int(30, FAULTS_END - 50);
  const someone = (): number => rng.int(0, instances - 1);
  for (let index = 0; index < count; index += 1) {
    const kind = rng.pick(kinds);
    switch (kind) {
      case 'partition':
        faults.push({
          at: at(),
          kind,
          instance: someone(),
          length: rng.int(10, 800),
          drop: rng.chance(0.5),
          way: rng.pick(['both', 'both', 'out', 'in'] as const),
        });
        break;
      case 'pause':
        faults.push({ at: at(), kind, instance: someone(), length: rng.int(10, 800) });
        break;
      case 'crash':
        faults.push({ at: at(), kind, instance: someone(), length: rng.int(10, 600) });
        break;
      case 'jump':
        // A forward step of the monotonic clock counts against the documented bound on clock rates (driftMargin
        // over one lease) together with the rates' own spread: within it, never more (a larger step on a rotating
        // instance ends its wait early, which the bound forbids).
        faults.push({ at: at(), kind, instance: someone(), by: rng.int(1, 10) });
        break;
      case 'stall':
        faults.push({ at: at(), kind, length: rng.int(10, 500) });
        break;
      case 'restart-dump':
        faults.push({ at: at(), kind, age: rng.int(1, 40) });
        break;
      case 'failover': {
        const split = rng.chance(0.4) ? rng.int(50, 900) : 0;
        const side = split === 0 ? [] : Array.from({ length: instances }, (_, i) => i).filter(() => rng.chance(0.4));
        faults.push({ at: at(), kind, split, side });
        break;
      }
      case 'replica-lag':
        faults.push({ at: at(), kind, length: rng.int(10, 800) });
        break;
      default:
        faults.push({ at: at(), kind } as Fault);
    }
  }
  // At least one rotation, often two at once on two instances.
  const rotations = rng.int(1, 4);
  for (let index = 0; index < rotations; index += 1) faults.push({ at: at(), kind: 'rotate', instance: someone() });
  if (rng.chance(0.3)) {
    const when = at();
    faults.push(
      { at: when, kind: 'rotate', instance: 0 },
      { at: when + rng.int(0, 5), kind: 'rotate', instance: instances - 1 },
    );
  }
  // The later faults draw from a stream of their own: the faults above stay as they were for every seed.
  const more = new Prng(seed ^ 0x6a95);
  if (more.chance(0.3)) {
    for (let index = more.int(1, 3); index > 0; index -= 1) {
      const when = more.int(30, FAULTS_END - 50);
      faults.push({ at: when, kind: 'reconnect', instance: more.int(0, instances - 1), length: more.int(10, 400) });
      // A save while the count is unknown.
      if (more.chance(0.5))
        faults.push({ at: when + more.int(0, 10), kind: 'rotate', instance: more.int(0, instances - 1) });
    }
  }
  // Rotations just after instances are cut off, and again about a lease later: the silent instances' entries are
  // dropped from the table while their last trust may still last a few milliseconds.
  if (more.chance(0.3) && instances > 1) {
    for (let index = more.int(1, 2); index > 0; index -= 1) {
      const when = more.int(30, FAULTS_END - 400);
      const rotating = more.int(0, instances - 1);
      for (let cut = more.int(1, instances - 1); cut > 0; cut -= 1) {
        const instance = (rotating + cut) % instances;
        const length = more.int(250, 700);
        faults.push({ at: when - more.int(0, 30), kind: 'partition', instance, length, drop: true, way: 'both' });
      }
      faults.push({ at: when + more.int(0, 15), kind: 'rotate', instance: rotating });
      if (more.chance(0.6))
        faults.push({
          at: when + more.int(250, 400),
          kind: 'rotate',
          instance: more.chance(0.5) ? rotating : more.int(0, instances - 1),
        });
    }
  }
  const saveTimeout = more.chance(0.7) ? 20 * TIMING.leaseMs : more.int(TIMING.leaseMs + 50, 3 * TIMING.leaseMs);
  if (scenarioAlone(seed)) faults.length = 0;
  faults.push(...scenarioFaults(seed, { instances, replicas }));
  // A share of the plans run their clocks up to the documented bound (from a stream of their own), as do the
  // scenarios that ask for it; a step of a clock would then exceed the bound.
  const settings = {
    ...(new Prng(seed ^ 0x3c1d).chance(0.1) ? { clocks: { spread: WIDE_SPREAD } } : {}),
    ...scenarioSettings(seed, { instances, replicas }),
  };
  const wide = (settings.clocks?.spread ?? RATE_SPREAD) > RATE_SPREAD;
  // From a stream of its own, so that the other draws stay as they were.
  const unwatched = new Prng(seed ^ 0x51e7).chance(UNWATCHED);
  return {
    instances,
    replicas,
    waitFor,
    faults: faults
      .filter((fault) => !wide || fault.kind !== 'jump')
      .map(endByFaultsEnd)
      .sort((a, b) => a.at - b.at),
    saveTimeout,
    unwatched,
    ...settings,
  };
}

/**
 * A fault that lasts ends by {@link FAULTS_END}: what it held back (messages, commands) is out by then, and a crashed
 * process has started again, so that what it finds on starting (a rollback it then marks) is there for the operator.
 */
function endByFaultsEnd(fault: Fault): Fault {
  const left = FAULTS_END - fault.at;
  switch (fault.kind) {
    case 'partition':
    case 'crash':
    case 'pause':
    case 'stall':
    case 'reconnect':
    case 'replica-lag':
      return { ...fault, length: Math.min(fault.length, left) };
    case 'failover':
      return fault.split === 0 ? fault : { ...fault, split: Math.min(fault.split, left) };
    default:
      return fault;
  }
}

// The outcome rules of rotate() (authority/rotation.ts) under random interleavings of rotations, changes made elsewhere,
// slow, failing, late-settling and hanging saves, and store outages, on an in-memory store whose every delay runs on
// a virtual clock: a run of many seconds of store time takes a few event-loop turns, and replays from its seed.
//
// Runs: LAUNCHER_AUTH_ROTATION_RUNS; by default 10,000 in the deep tier and 3,000 in `npm test`, the same count
// and seed within which every broken variant below is caught. Seed: LAUNCHER_AUTH_ROTATION_SEED (default fixed); fast-check
// prints the seed and the shrunk schedule on failure. The tokens here are labels, never secrets.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LauncherAuthError, isLauncherAuthError, type SecretRecord, type SecretStore } from 'launcher-auth';
import { generateRecord } from '../../src/authority/record.js';
import { Rotations, type KeyHolder } from '../../src/authority/rotation.js';
import { nodeRuntime } from '../../src/authority/runtime.js';
import { envCount } from '../hardening/fixtures/support.js';
import { Clock, drain } from '../support/virtual-clock.js';
import { deepOr } from '../support/tier.js';

/** The schedules within which the property must catch each broken variant. */
const VARIANT_RUNS = 3_000;

const RUNS = envCount('LAUNCHER_AUTH_ROTATION_RUNS', deepOr(10_000, VARIANT_RUNS));
const SEED = envCount('LAUNCHER_AUTH_ROTATION_SEED', 20_261_124);
const SAVE_TIMEOUT = 100;

// ---------------------------------------------------------------------------------------------------------
// What a store's save does, each time relative to the call. A store that ignores the signal unless told so.

type Behaviour =
  | { kind: 'ok'; at: number }
  /** Writes at `writeAt`, resolves at `settleAt` (a slow fsync after the rename). */
  | { kind: 'late'; writeAt: number; settleAt: number }
  /** Writes and resolves at `at`, unless the signal was aborted first: then rejects with its reason at once. */
  | { kind: 'honour'; at: number }
  | { kind: 'fail'; at: number }
  | { kind: 'failAfterWrite'; writeAt: number; at: number }
  /** Never settles; writes at `writeAt` if set. */
  | { kind: 'hang'; writeAt: number | undefined }
  | { kind: 'throw' }
  /** Another writer's record lands first; rejects with ERR_SAVE_CONFLICT, nothing of its own written. */
  | { kind: 'conflict'; at: number }
  /** Writes, another writer replaces it at once; rejects with ERR_ROTATION_SUPERSEDED. */
  | { kind: 'superseded'; at: number }
  /** Rejects with ERR_SAVE_UNCERTAIN at `at`; writes at `writeAt` if set (and reports it, as every write does). */
  | { kind: 'uncertain'; at: number; writeAt: number | undefined };

type Action = { kind: 'rotate'; save: Behaviour } | { kind: 'external' } | { kind: 'outage'; ms: number };
interface Step {
  gap: number;
  action: Action;
}

const time = fc.integer({ min: 0, max: 400 });
const behaviour: fc.Arbitrary<Behaviour> = fc.oneof(
  { arbitrary: time.map((at) => ({ kind: 'ok', at }) as const), weight: 4 },
  {
    arbitrary: fc
      .tuple(time, time)
      .map(([a, b]) => ({ kind: 'late', writeAt: Math.min(a, b), settleAt: Math.max(a, b) }) as const),
    weight: 3,
  },
  { arbitrary: time.map((at) => ({ kind: 'honour', at }) as const), weight: 2 },
  { arbitrary: time.map((at) => ({ kind: 'fail', at }) as const), weight: 2 },
  {
    arbitrary: fc
      .tuple(time, time)
      .map(([a, b]) => ({ kind: 'failAfterWrite', writeAt: Math.min(a, b), at: Math.max(a, b) }) as const),
    weight: 2,
  },
  { arbitrary: fc.option(time, { nil: undefined }).map((writeAt) => ({ kind: 'hang', writeAt }) as const), weight: 2 },
  { arbitrary: fc.constant({ kind: 'throw' } as const), weight: 1 },
  { arbitrary: time.map((at) => ({ kind: 'conflict', at }) as const), weight: 1 },
  { arbitrary: time.map((at) => ({ kind: 'superseded', at }) as const), weight: 1 },
  {
    arbitrary: fc
      .tuple(time, fc.option(time, { nil: undefined }))
      .map(([at, writeAt]) => ({ kind: 'uncertain', at, writeAt }) as const),
    weight: 2,
  },
);
const action: fc.Arbitrary<Action> = fc.oneof(
  { arbitrary: behaviour.map((save) => ({ kind: 'rotate', save }) as const), weight: 6 },
  { arbitrary: fc.constant({ kind: 'external' } as const), weight: 2 },
  { arbitrary: fc.integer({ min: 1, max: 300 }).map((ms) => ({ kind: 'outage', ms }) as const), weight: 1 },
);
const schedule = fc.record({
  steps: fc.array(fc.record({ gap: fc.integer({ min: 0, max: 250 }), action }), { minLength: 1, maxLength: 10 }),
  /** What the saves that write the current record back over a stale one do, in turn. */
  writeBacks: fc.array(behaviour, { maxLength: 3 }),
});

// ---------------------------------------------------------------------------------------------------------

/**
 * A broken rule: kept for the end of the run (a rule seen inside the authority's own code, such as in an install,
 * would otherwise be caught there as a store error) and thrown at once.
 */
let violations: string[] = [];
function rule(holds: boolean, what: string): void {
  if (holds) return;
  violations.push(what);
  throw new Error(what);
}

interface Call {
  readonly index: number;
  /** The record this rotation saved, and the key current when its save began. */
  recordId?: string;
  keyAtSave?: string;
  /** Saves of other records (write-backs) begun when this one's save began. */
  otherSavesAtSave?: number;
  outcome?: string;
}

/** The in-memory store of the model: records copies, reports every write, answers as each save's behaviour says. */
class ModelStore implements SecretStore {
  record: SecretRecord;
  readonly clock: Clock;
  /** Every id the store ever held, and the ids written by "someone else". */
  readonly held = new Set<string>();
  readonly external = new Set<string>();
  readonly #watchers = new Set<() => Promise<void>>();
  readonly #rotationSaves: Behaviour[];
  readonly #writeBacks: Behaviour[];
  readonly #calls: Call[];
  #nextCall = 0;
  /** The ids of this run's rotations, to tell them from the write-backs of a current record. */
  readonly #known = new Set<string>();
  outageUntil = -1;
  /** The key current at the authority, read when a rotation's save begins. */
  currentKey: () => string = () => '';
  otherSaves = 0;
  /** A write-back that did not simply succeed: from then on a stale record may win, as documented. */
  writeBackTrouble = 0;
  hungWriteBack = false;
  failedIds = new Set<string>();

  constructor(clock: Clock, initial: SecretRecord, rotationSaves: Behaviour[], writeBacks: Behaviour[], calls: Call[]) {
    this.clock = clock;
    this.record = initial;
    this.#rotationSaves = rotationSaves;
    this.#writeBacks = writeBacks;
    this.#calls = calls;
    this.#known.add(initial.id);
    this.held.add(initial.id);
  }

  async load(): Promise<SecretRecord> {
    if (this.clock.now < this.outageUntil) throw new Error('EIO: i/o error, read');
    return { ...this.record, key: new Uint8Array(this.record.key) };
  }

  watch(onChange: () => Promise<void>): () => void {
    this.#watchers.add(onChange);
    return () => void this.#watchers.delete(onChange);
  }

  report(): void {
    for (const watcher of this.#watchers) void watcher();
  }

  write(record: SecretRecord): void {
    rule(!this.failedIds.has(record.id), 'a rotation that said ERR_SAVE_FAILED was written to the store afterwards');
    this.record = { ...record, key: new Uint8Array(record.key) };
    this.held.add(record.id);
    // Reported a moment later, as a file watcher does.
    this.clock.timer(1, () => this.report());
  }

  writeExternal(): void {
    const record = generateRecord();
    this.external.add(record.id);
    this.#known.add(record.id);
    this.write(record);
  }

  save(record: SecretRecord, options?: { signal?: AbortSignal }): Promise<void> {
    let plan: Behaviour;
    if (!this.#known.has(record.id)) {
      this.#known.add(record.id);
      const call = this.#calls[this.#nextCall++];
      rule(call !== undefined, 'a save of a record no rotation made');
      (call as Call).recordId = record.id;
      (call as Call).otherSavesAtSave = this.otherSaves;
      (call as Call).keyAtSave = this.currentKey();
      plan = this.#rotationSaves.shift() ?? { kind: 'ok', at: 0 };
    } else {
      this.otherSaves++;
      plan = this.#writeBacks.shift() ?? { kind: 'ok', at: 0 };
      // Anything but a save that lands within the window gives the stale record its chance.
      if (plan.kind !== 'ok' || plan.at >= 2 * SAVE_TIMEOUT) this.writeBackTrouble++;
      if (plan.kind === 'hang') this.hungWriteBack = true;
    }
    const signal = options?.signal;
    const after = (ms: number, work: () => void): void => void this.clock.timer(ms, work);
    const write = (): void => this.write(record);
    switch (plan.kind) {
      case 'throw':
        throw new Error('the store broke before it could return a promise');
      case 'hang':
        if (plan.writeAt !== undefined) after(plan.writeAt, write);
        return new Promise<void>(() => undefined);
      default:
        break;
    }
    return new Promise<void>((resolve, reject) => {
      switch (plan.kind) {
        case 'ok':
          after(plan.at, () => (write(), resolve()));
          break;
        case 'late':
          after(plan.writeAt, write);
          after(plan.settleAt, resolve);
          break;
        case 'honour': {
          let done = false;
          signal?.addEventListener('abort', () => {
            if (!done) reject(signal.reason as Error);
            done = true;
          });
          after(plan.at, () => {
            if (done) return;
            done = true;
            write();
            resolve();
          });
          break;
        }
        case 'fail':
          after(plan.at, () => reject(new Error('EIO: i/o error, write')));
          break;
        case 'failAfterWrite':
          after(plan.writeAt, write);
          after(plan.at, () => reject(new Error('EIO: i/o error, fsync')));
          break;
        case 'conflict':
          after(plan.at, () => {
            this.writeExternal();
            reject(new LauncherAuthError('ERR_SAVE_CONFLICT', 'another writer came first'));
          });
          break;
        case 'superseded':
          after(plan.at, () => {
            write();
            this.writeExternal();
            reject(new LauncherAuthError('ERR_ROTATION_SUPERSEDED', 'replaced before confirmed'));
          });
          break;
        case 'uncertain':
          if (plan.writeAt !== undefined) after(plan.writeAt, write);
          after(plan.at, () => reject(new LauncherAuthError('ERR_SAVE_UNCERTAIN', 'no answer')));
          break;
      }
    });
  }
}

interface KeyState {
  readonly record: SecretRecord;
  readonly token: string;
}

/** How rotate() is called: the real rules, or a deliberately broken variant of them. */
type Rotate = (rotations: Rotations<KeyState>, holder: () => KeyState) => Promise<string>;
const asIs: Rotate = (rotations) => rotations.rotate();

/** One schedule, every rule checked as it goes and once everything has settled. */
async function run(steps: readonly Step[], writeBacks: readonly Behaviour[], rotate: Rotate): Promise<void> {
  violations = [];
  const clock = new Clock();
  const calls: Call[] = [];
  const rotationSaves = steps.flatMap((step) => (step.action.kind === 'rotate' ? [step.action.save] : []));
  const initial = generateRecord();
  const store = new ModelStore(clock, initial, rotationSaves, [...writeBacks], calls);
  const tokenOf = (record: SecretRecord): string => `token of ${record.id}`;
  let current: KeyState = { record: initial, token: tokenOf(initial) };
  /** The last rotate() that resolved: from then on its key may give way only to a change with a reason. */
  let resolved: { call: Call; trouble: number } | undefined;
  let hadOutage = false;

  const holder: KeyHolder<KeyState> = {
    current: () => current.record,
    closed: () => false,
    prepare: async (record) => ({ record, token: tokenOf(record) }),
    install: (next) => {
      rule(next.record.id !== current.record.id, 'a key installed over itself');
      rule(store.held.has(next.record.id), 'a key made current that the store never held');
      rule(!store.failedIds.has(next.record.id), 'the key of a rotation that said ERR_SAVE_FAILED was made current');
      if (resolved !== undefined) {
        const id = next.record.id;
        const { call: last } = resolved;
        const later = calls.some((call) => call.index > last.index && call.recordId === id);
        rule(
          id === last.recordId || store.external.has(id) || later || store.writeBackTrouble > resolved.trouble,
          'the token a rotate() resolved with gave way to a stale save of this authority',
        );
      }
      current = next;
    },
    token: (state) => state.token,
    storeError: () => undefined,
  };
  store.currentKey = () => current.record.id;
  const rotations = new Rotations(store, SAVE_TIMEOUT, holder, { ...nodeRuntime, timer: clock.timer });
  store.watch(() => rotations.reload());

  const settled: Array<Promise<void>> = [];
  for (const step of steps) {
    await clock.advance(step.gap);
    const { action } = step;
    if (action.kind === 'external') store.writeExternal();
    else if (action.kind === 'outage') {
      store.outageUntil = clock.now + action.ms;
      hadOutage = true;
    } else {
      const call: Call = { index: calls.length };
      calls.push(call);
      settled.push(
        rotate(rotations, () => current)
          .then(
            (token) => {
              call.outcome = 'resolved';
              rule(
                call.recordId !== undefined && current.record.id === call.recordId,
                'rotate() resolved with a key that is not its own or not current',
              );
              rule(token === current.token, 'rotate() resolved with a token that is not the current one');
              rule(store.held.has(current.record.id), 'rotate() resolved with a key the store never held');
              resolved = { call, trouble: store.writeBackTrouble };
            },
            (error: unknown) => {
              rule(isLauncherAuthError(error), 'rotate() rejected with something other than a LauncherAuthError');
              const { code } = error as LauncherAuthError;
              call.outcome = code;
              rule(call.recordId !== undefined, 'rotate() answered before it saved');
              if (code === 'ERR_SAVE_FAILED') {
                rule(current.record.id === call.keyAtSave, 'ERR_SAVE_FAILED, yet the key changed during the rotation');
                // Held for a moment by a store that others overwrote is possible; held now or later (see write()) is not.
                rule(store.record.id !== call.recordId, 'ERR_SAVE_FAILED, yet the store holds the new record');
                store.failedIds.add(call.recordId as string);
              } else if (code === 'ERR_SAVE_CONFLICT' || code === 'ERR_ROTATION_SUPERSEDED') {
                rule(current.record.id !== call.recordId, `${code}, yet its own key is current`);
                // With the store readable and no write-back in between, the store's record is current already.
                if (clock.now >= store.outageUntil && store.otherSaves === call.otherSavesAtSave) {
                  rule(
                    current.record.id === store.record.id,
                    `${code}, yet the store's current record was not adopted`,
                  );
                }
              } else {
                rule(code === 'ERR_SAVE_UNCERTAIN', `rotate() rejected with ${code}`);
              }
            },
          )
          // A broken rule is in `violations`, which the end of the run checks.
          .catch(() => undefined),
      );
    }
    await drain();
  }
  // Everything settles: no save runs longer than 400 ms of store time, a reload follows every report.
  await clock.advance(5_000);
  if (hadOutage || store.hungWriteBack) {
    // A reload that failed in an outage, or a write-back that never settled, waits for the store's next change
    // report.
    store.report();
    await clock.advance(5_000);
  }
  rule(violations.length === 0, `rules broken inside the authority: ${violations.join('; ')}`);
  rule(
    calls.every((call) => call.outcome !== undefined),
    'a rotate() never settled',
  );
  rule(current.record.id === store.record.id, 'the authority did not converge to what the store holds');
  for (const id of store.failedIds)
    rule(store.record.id !== id && current.record.id !== id, 'an ERR_SAVE_FAILED rotation took effect');
  await Promise.all(settled);
}

describe('rotate() outcomes under random interleavings (virtual time)', () => {
  it(`${RUNS} schedules: resolved means current and saved, FAILED means nothing ever changes, CONFLICT/SUPERSEDED adopt, all converge`, async () => {
    let schedules = 0;
    await fc.assert(
      fc.asyncProperty(schedule, async ({ steps, writeBacks }) => {
        await run(steps, writeBacks, asIs);
        schedules += 1;
      }),
      { numRuns: RUNS, seed: SEED },
    );
    expect(schedules).toBe(RUNS);
  }, 240_000);
});

describe('the same property fails for deliberately broken variants', () => {
  /** How many schedules it takes the property to catch `variant`, or `undefined` if it never does. */
  async function caught(variant: Rotate): Promise<number | undefined> {
    const details = await fc.check(
      fc.asyncProperty(schedule, async ({ steps, writeBacks }) => {
        await run(steps, writeBacks, variant);
      }),
      { numRuns: VARIANT_RUNS, seed: SEED, endOnFailure: true },
    );
    return details.failed ? details.numRuns : undefined;
  }

  it('a save still running at saveTimeout reported as ERR_SAVE_FAILED (the answer before ERR_SAVE_UNCERTAIN)', async () => {
    const variant: Rotate = (rotations) =>
      rotations.rotate().catch((error: unknown) => {
        if (isLauncherAuthError(error, 'ERR_SAVE_UNCERTAIN'))
          throw new LauncherAuthError('ERR_SAVE_FAILED', 'timed out');
        throw error;
      });
    expect(await caught(variant)).toBeDefined();
  }, 60_000);

  it('a conflicting or superseded rotation resolved with the token current then', async () => {
    const variant: Rotate = (rotations, holder) =>
      rotations.rotate().catch((error: unknown) => {
        if (isLauncherAuthError(error, 'ERR_SAVE_CONFLICT') || isLauncherAuthError(error, 'ERR_ROTATION_SUPERSEDED')) {
          return holder().token;
        }
        throw error;
      });
    expect(await caught(variant)).toBeDefined();
  }, 60_000);
});

// The real FileSecretStore with its real watcher, under saves that outlive `saveTimeout`: 50 trials, each checked
// once the dust has settled (the held-back save settled, and the authority holds what the file holds). The rule:
// either the token from before the call is accepted and issue() returns it, or the code was ERR_SAVE_UNCERTAIN and
// onRotate told the new key, which is then the one accepted. Then a save reported uncertain that lands only after a
// later rotate() resolved, seen by the watcher alone: the token that rotate() returned stays. Trials run 25 at a
// time, each on its own folder.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  FileSecretStore,
  LauncherAuthError,
  TokenAuthority,
  isLauncherAuthError,
  type RotateEvent,
  type SecretRecord,
} from 'launcher-auth';
import { budget } from '../support/machine.js';
import { until } from '../support/poll.js';
import { fixtureRecord } from '../stores/fixtures/records.js';

const TRIALS = 50;
const AT_ONCE = 25;
/** Long enough that a loaded machine still renames well before it: the late settle is what is under test. */
const SAVE_TIMEOUT = budget(500);

/** A promise and the function that resolves it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open = (): void => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/**
 * The file store, its save held back one of two ways: `late settle` renames at once (the signal not yet aborted)
 * and settles only once rotate() has answered, like a slow fsync of the folder; `late start` reaches the store
 * only once the signal is aborted, so the store honours it and writes nothing. Both wait for the event, not for a
 * time: a slow machine cannot reorder them.
 */
class SlowFileStore extends FileSecretStore {
  readonly way: 'late settle' | 'late start';
  attempted: string | undefined;
  /** Opened by the trial once rotate() has answered. */
  readonly answered = gate();
  /** Settled once the held-back save has settled, either way. */
  done: Promise<unknown> = Promise.resolve();
  constructor(path: string, way: SlowFileStore['way']) {
    super(path);
    this.way = way;
  }
  override save(record: SecretRecord, options?: { signal?: AbortSignal }): Promise<void> {
    this.attempted = record.id;
    const saving = this.#held(record, options);
    this.done = saving.catch(() => undefined);
    return saving;
  }
  async #held(record: SecretRecord, options?: { signal?: AbortSignal }): Promise<void> {
    if (this.way === 'late start') {
      const signal = options?.signal;
      if (signal !== undefined && !signal.aborted)
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      return super.save(record, options);
    }
    await super.save(record, options);
    await this.answered.opened;
    // A little later still, in no fixed order with the watcher's notice of the rename.
    // eslint-disable-next-line launcher-auth-tests/no-wall-clock-wait -- a jitter: the answer's order against the watcher varies
    await new Promise((resolve) => setTimeout(resolve, Math.random() * 300));
  }
}

interface Trial {
  readonly way: SlowFileStore['way'];
  readonly code: string;
  /** Each a comparison, so that no token reaches a failing test's output. */
  readonly issueIsBefore: boolean;
  readonly beforeAccepted: boolean;
  readonly currentAccepted: boolean;
  readonly keyIsFile: boolean;
  readonly fileIsAttempted: boolean;
  readonly toldNewKey: boolean;
  readonly events: number;
}

async function trial(index: number, dir: string): Promise<Trial> {
  const path = join(dir, `trial-${index}`, 'secret.json');
  const way = index % 5 === 4 ? 'late start' : 'late settle';
  await new FileSecretStore(path).save(fixtureRecord(`before-${index}`));
  const store = new SlowFileStore(path, way);
  const authority = await TokenAuthority.open({ store, saveTimeout: SAVE_TIMEOUT });
  try {
    const events: RotateEvent[] = [];
    authority.onRotate((event) => void events.push(event));
    const before = authority.issue();
    const outcome: unknown = await authority.rotate().then(
      () => 'resolved',
      (error: unknown) => error,
    );
    const code = isLauncherAuthError(outcome) ? outcome.code : String(outcome);
    store.answered.open();
    await store.done;
    // The dust settles: the authority holds what the file holds (at once when nothing landed, after the watcher's
    // reload when the late save did).
    expect(await until(async () => (await new FileSecretStore(path).load())?.id === authority.keyId)).toBe(true);
    const onFile = await new FileSecretStore(path).load();
    const current = authority.issue();
    return {
      way,
      code,
      issueIsBefore: current === before,
      beforeAccepted: (await authority.verify(before)).ok,
      currentAccepted: (await authority.verify(current)).ok,
      keyIsFile: onFile?.id === authority.keyId,
      fileIsAttempted: onFile?.id === store.attempted,
      toldNewKey:
        events.length === 1 && events[0]?.keyId === store.attempted && events[0]?.previousKeyId === `before-${index}`,
      events: events.length,
    };
  } finally {
    await authority.close();
  }
}

describe('FileSecretStore with its watcher: a save that outlives saveTimeout', () => {
  it(
    `${TRIALS} trials: the token from before still works, or ERR_SAVE_UNCERTAIN and onRotate told the key that works`,
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'launcher-auth-late-save-'));
      onTestFinished(() => rm(dir, { recursive: true, force: true }));
      const trials: Trial[] = [];
      for (let first = 0; first < TRIALS; first += AT_ONCE) {
        const batch = Array.from({ length: AT_ONCE }, (_, offset) => trial(first + offset, dir));
        trials.push(...(await Promise.all(batch)));
      }

      const unchanged = {
        issueIsBefore: true,
        beforeAccepted: true,
        currentAccepted: true,
        keyIsFile: true,
        events: 0,
      };
      const followed = {
        issueIsBefore: false,
        beforeAccepted: false,
        currentAccepted: true,
        keyIsFile: true,
        fileIsAttempted: true,
        toldNewKey: true,
      };
      for (const [index, result] of trials.entries()) {
        // The index and the way are in the compared objects, so a failure names its trial.
        if (result.issueIsBefore) {
          // Nothing landed: failed, or uncertain at the time and then found unchanged.
          expect(['ERR_SAVE_FAILED', 'ERR_SAVE_UNCERTAIN']).toContain(result.code);
          expect({ index, way: result.way, ...pick(result, unchanged) }).toEqual({
            index,
            way: result.way,
            ...unchanged,
          });
        } else {
          expect({ index, way: result.way, code: result.code, ...pick(result, followed) }).toEqual({
            index,
            way: result.way,
            code: 'ERR_SAVE_UNCERTAIN',
            ...followed,
          });
        }
      }
      // Both cases happened: a replaced file reported as uncertain and then followed (the fault under test), and a
      // save that honoured the signal (every late start, which reaches the store only after the abort).
      expect(trials.filter((result) => !result.issueIsBefore).length).toBeGreaterThan(0);
      expect(trials.filter((result) => result.way === 'late start').map((result) => result.code)).toEqual(
        Array(TRIALS / 5).fill('ERR_SAVE_FAILED'),
      );
    },
    budget(120_000),
  );
});

describe('FileSecretStore with its watcher: an uncertain save that lands after a later rotate() resolved', () => {
  /**
   * The first save answers ERR_SAVE_UNCERTAIN at once, as a store that cannot tell does, and renames only once the
   * trial opens `land` (after a later rotate() resolved): only the watcher sees it. No deadline decides anything
   * here, so a loaded machine cannot change the outcome.
   */
  class StaleLandingStore extends FileSecretStore {
    first = true;
    staleId: string | undefined;
    readonly land = gate();
    landed = false;
    override async save(record: SecretRecord, options?: { signal?: AbortSignal }): Promise<void> {
      if (!this.first) return super.save(record, options);
      this.first = false;
      this.staleId = record.id;
      void this.land.opened
        .then(() => super.save(record))
        .then(() => {
          this.landed = true;
        });
      throw new LauncherAuthError('ERR_SAVE_UNCERTAIN', 'the store cannot tell whether the save landed');
    }
  }

  it(
    `${AT_ONCE} trials: the watcher's reload writes the current secret back; the token rotate() returned stays valid`,
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'launcher-auth-stale-landing-'));
      onTestFinished(() => rm(dir, { recursive: true, force: true }));
      const results = await Promise.all(
        Array.from({ length: AT_ONCE }, async (_, index) => {
          const path = join(dir, `trial-${index}`, 'secret.json');
          await new FileSecretStore(path).save(fixtureRecord(`start-${index}`));
          const store = new StaleLandingStore(path);
          const authority = await TokenAuthority.open({ store });
          try {
            const events: RotateEvent[] = [];
            authority.onRotate((event) => void events.push(event));
            const outcome: unknown = await authority.rotate().then(
              () => 'resolved',
              (error: unknown) => error,
            );
            const code = isLauncherAuthError(outcome) ? outcome.code : String(outcome);
            const resolvedWith = await authority.rotate();
            const resolvedId = authority.keyId;
            // The stale rename lands now; then the watcher's reload writes the current secret back.
            store.land.open();
            expect(
              // 25 trials at once, each with its watcher and its save lock: a deadline for a stuck run only.
              await until(
                async () => store.landed && (await new FileSecretStore(path).load())?.id === resolvedId,
                30_000,
              ),
            ).toBe(true);
            const onFile = await new FileSecretStore(path).load();
            return {
              index,
              code,
              keyKept: authority.keyId === resolvedId,
              issueKept: authority.issue() === resolvedWith,
              accepted: (await authority.verify(resolvedWith)).ok,
              fileKept: onFile?.id === resolvedId,
              staleWasTried: store.staleId !== undefined && store.staleId !== resolvedId,
              events: events.map((event) =>
                event.keyId === resolvedId ? 'resolved' : event.keyId === store.staleId ? 'stale' : 'other',
              ),
            };
          } finally {
            await authority.close();
          }
        }),
      );
      for (const result of results) {
        expect(result).toEqual({
          index: result.index,
          code: 'ERR_SAVE_UNCERTAIN',
          keyKept: true,
          issueKept: true,
          accepted: true,
          fileKept: true,
          staleWasTried: true,
          events: ['resolved'],
        });
      }
    },
    budget(60_000),
  );
});

function pick<T extends object>(from: Trial, like: T): T {
  return Object.fromEntries(Object.keys(like).map((key) => [key, from[key as keyof Trial]])) as T;
}

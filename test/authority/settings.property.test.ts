// regenerateToken() over stores that fail in every order: each call's save succeeds, loses to another writer
// (conflict), is saved then replaced (superseded), fails, or never settles (a timeout, its record landing later or
// never); each load the call makes to check succeeds, fails, or lags (answers only after the save's window has
// closed). After each call, against the authority itself: a token given is accepted at that moment, still accepted
// once everything the call left queued has run, and the store's; no token only when the outcome says the window
// cannot know yet. The delays run on a virtual clock.
//
// Runs: LAUNCHER_AUTH_SETTINGS_RUNS (default 500). Seed: LAUNCHER_AUTH_SETTINGS_SEED (default fixed).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  LauncherAuthError,
  TokenAuthority,
  regenerateToken,
  type RegenerateResult,
  type SaveOptions,
  type SecretRecord,
  type SecretStore,
  type TokenAuthorityOptions,
  type VerifyResult,
} from 'launcher-auth';
import { runtimeOption, type WithRuntime } from '../../src/authority/internal.js';
import { generateRecord } from '../../src/authority/record.js';
import { nodeRuntime } from '../../src/authority/runtime.js';
import { envCount } from '../hardening/fixtures/support.js';
import { Clock } from '../support/virtual-clock.js';

const RUNS = envCount('LAUNCHER_AUTH_SETTINGS_RUNS', 500);
const SEED = envCount('LAUNCHER_AUTH_SETTINGS_SEED', 20_261_207);
const SAVE_TIMEOUT = 100;
/** Past every timer a call can set: the save's window and grace, and a hung save's late write. */
const SETTLE_MS = 2_000;
/** A load that lags answers after the save's window (`saveTimeout` and its grace) has closed. */
const LAG_MS = 3 * SAVE_TIMEOUT;
const NOT_KNOWN = 'which token works is not known yet; check again in a moment.';

type Save =
  | { kind: 'ok' | 'conflict' | 'superseded' | 'fail' }
  /** Never settles; writes its record `writeAt` ms after its start if set. */
  | { kind: 'timeout'; writeAt: number | undefined };
type Load = 'ok' | 'fail' | 'lag';
interface Call {
  save: Save;
  loads: Load[];
}

const save: fc.Arbitrary<Save> = fc.oneof(
  fc.constantFrom<Save>({ kind: 'ok' }, { kind: 'conflict' }, { kind: 'superseded' }, { kind: 'fail' }),
  // A hung save lands before the authority gives up on it, or never: one landing later, in a store without watch(),
  // stays unseen until the next rotation (as TokenAuthorityOptions.saveTimeout says), and the rotation property
  // test covers it.
  fc
    .option(fc.integer({ min: 0, max: SAVE_TIMEOUT }), { nil: undefined })
    .map((writeAt): Save => ({ kind: 'timeout', writeAt })),
);
const call: fc.Arbitrary<Call> = fc.record({
  save,
  loads: fc.array(fc.constantFrom<Load>('ok', 'fail', 'lag'), { minLength: 1, maxLength: 2 }),
});

const copy = (record: SecretRecord): SecretRecord => ({ ...record, key: new Uint8Array(record.key) });

/** One secret store, answering each call's save and loads as scripted; outside a call every load succeeds. */
class ScriptedStore {
  record: SecretRecord = generateRecord();
  readonly #clock: Clock;
  readonly #watchers = new Set<() => Promise<void>>();
  #call: { loads: Load[]; save: Save } | undefined;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  begin(next: Call): void {
    this.#call = { loads: [...next.loads], save: next.save };
  }

  end(): void {
    this.#call = undefined;
  }

  async load(): Promise<SecretRecord> {
    const how = this.#call?.loads.shift() ?? 'ok';
    await this.#after(how === 'lag' ? LAG_MS : 1);
    if (how === 'fail') throw new Error('EIO: i/o error, read');
    return copy(this.record);
  }

  async save(record: SecretRecord, _options?: SaveOptions): Promise<void> {
    const how = this.#call?.save ?? { kind: 'ok' };
    await this.#after(10);
    switch (how.kind) {
      case 'ok':
        return this.#write(record);
      case 'conflict':
        this.#write(generateRecord());
        throw new LauncherAuthError('ERR_SAVE_CONFLICT', 'Another writer came first.');
      case 'superseded':
        this.#write(record);
        this.#write(generateRecord());
        throw new LauncherAuthError('ERR_ROTATION_SUPERSEDED', 'Saved, then replaced.');
      case 'fail':
        throw new Error('EACCES: permission denied, open');
      case 'timeout':
        if (how.writeAt !== undefined) this.#clock.timer(how.writeAt, () => this.#write(record));
        return new Promise(() => undefined);
    }
  }

  watch(onChange: () => Promise<void>): () => void {
    this.#watchers.add(onChange);
    return () => void this.#watchers.delete(onChange);
  }

  #write(record: SecretRecord): void {
    this.record = copy(record);
    for (const watcher of this.#watchers) void watcher();
  }

  #after(ms: number): Promise<void> {
    return new Promise((resolve) => this.#clock.timer(ms, resolve));
  }
}

const accepted = (result: VerifyResult): boolean => result.ok;

async function openOn(clock: Clock, store: SecretStore): Promise<TokenAuthority> {
  const options: TokenAuthorityOptions & WithRuntime = {
    store,
    saveTimeout: SAVE_TIMEOUT,
    onStoreError: () => undefined,
    [runtimeOption]: { now: () => clock.now, timer: clock.timer, random: nodeRuntime.random },
  };
  const opening = TokenAuthority.open(options);
  await clock.advance(SETTLE_MS);
  return opening;
}

describe('regenerateToken() after a conflict whose check cannot read the store', () => {
  it('regenerated-elsewhere without a token, saying the window cannot know yet; the authority then takes the record that stands', async () => {
    const clock = new Clock();
    const model = new ScriptedStore(clock);
    const authority = await openOn(clock, model);
    const before = authority.issue();
    model.begin({ save: { kind: 'conflict' }, loads: ['fail'] });
    let result: RegenerateResult | undefined;
    void regenerateToken(authority).then((answer) => {
      model.end();
      result = answer;
    });
    await clock.advance(SETTLE_MS);
    expect(result && { ...result, cause: result.cause?.code }).toEqual({
      outcome: 'regenerated-elsewhere',
      state: 'ok',
      token: undefined,
      message: `The token was regenerated elsewhere (another window or launcher) at the same time: ${NOT_KNOWN}`,
      code: 'ERR_SAVE_CONFLICT',
      cause: 'ERR_SAVE_CONFLICT',
    });
    expect(authority.keyId).toBe(model.record.id);
    expect(await authority.verify(before)).toEqual({ ok: false, reason: 'rotated' });
    await authority.close();
  });
});

describe('regenerateToken(): the token shown works, whatever the store does', () => {
  it(`${RUNS} runs of up to 4 calls, with and without watch(): every token given works at once and afterwards`, async () => {
    const outcomes = new Map<string, number>();
    let checked = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(call, { minLength: 1, maxLength: 4 }), fc.boolean(), async (calls, watching) => {
        const clock = new Clock();
        const model = new ScriptedStore(clock);
        const store: SecretStore = watching
          ? model
          : { load: () => model.load(), save: (record, options) => model.save(record, options) };
        const authority = await openOn(clock, store);
        try {
          for (const next of calls) {
            model.begin(next);
            let answer: { result: RegenerateResult; atOnce: Promise<VerifyResult> | undefined } | undefined;
            void regenerateToken(authority).then((result) => {
              model.end();
              // Asked in the same turn as the answer: nothing queued has run yet.
              answer = { result, atOnce: result.token === undefined ? undefined : authority.verify(result.token) };
            });
            await clock.advance(SETTLE_MS);
            if (answer === undefined) throw new Error('regenerateToken() did not resolve');
            const { result, atOnce } = answer;
            outcomes.set(result.outcome, (outcomes.get(result.outcome) ?? 0) + 1);
            expect(result.state).toBe('ok');
            if (result.token === undefined) {
              // The window cannot know yet, and says so.
              expect(['unconfirmed', 'regenerated-elsewhere']).toContain(result.outcome);
              expect(result.message.endsWith(NOT_KNOWN)).toBe(true);
              continue;
            }
            expect(accepted(await (atOnce as Promise<VerifyResult>))).toBe(true);
            expect(accepted(await authority.verify(result.token))).toBe(true);
            expect(authority.issue()).toBeSameToken(result.token);
            expect(model.record.id).toBe(authority.keyId);
            checked++;
          }
        } finally {
          await authority.close();
        }
      }),
      { numRuns: RUNS, seed: SEED },
    );
    // Every outcome a store can give here was reached, and many calls gave a token that was checked.
    expect([...outcomes.keys()].sort()).toEqual(['regenerated', 'regenerated-elsewhere', 'unchanged', 'unconfirmed']);
    expect(checked).toBeGreaterThan(RUNS / 2);
  });
});

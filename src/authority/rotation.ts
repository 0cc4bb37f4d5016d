// "Regenerate token" and the store's change reports, and what rotate() then says: the queue they run in, the save
// with its deadline, the check after a failed save, the reload, and the write-back of a save that lands stale.
// Every outcome of rotate() is decided here (see `Rotations.rotate`).
import { LauncherAuthError, isLauncherAuthError } from './errors.js';
import { copyRecord, generateRecord, sameRecord } from './record.js';
import { nodeRuntime, type Runtime } from './runtime.js';
import type { SecretRecord, SecretStore } from './types.js';

/** The longest wait, after a save's signal was aborted, for a store that honours the signal to settle. */
export const MAX_ABORT_GRACE = 1_000;
/** How many given-up saves are remembered, to tell a stale one from a newer secret should it land late. */
const ABANDONED_KEPT = 32;

/** The authority's side: its key, and how a record becomes its key. `S` is what a record is prepared into. */
export interface KeyHolder<S> {
  /** The record of the current key. */
  current(): SecretRecord;
  closed(): boolean;
  /** Everything a record's key needs, built before the swap. */
  prepare(record: SecretRecord): Promise<S>;
  /** Makes a prepared key current in one step and tells the `onRotate` listeners. */
  install(state: S): void;
  token(state: S): string;
  /** A failure no caller waits for (a reload, a write-back), for `onStoreError`. */
  storeError(error: Error): void;
}

/** The codes a store's save may reject with and that keep their meaning (see {@link SecretStore.save}). */
const STORE_CODES = ['ERR_SAVE_CONFLICT', 'ERR_SAVE_UNCERTAIN', 'ERR_ROTATION_SUPERSEDED'] as const;
type StoreCode = (typeof STORE_CODES)[number];

const EXPIRED: unique symbol = Symbol('launcher-auth.save-window-expired');

type SaveEnd =
  | { readonly kind: 'saved' }
  | { readonly kind: 'rejected'; readonly error: unknown }
  /** Not settled when the window closed; `settled` is the save's own end, whenever it comes. */
  | { readonly kind: 'unsettled'; readonly settled: Promise<unknown> };

type Loaded = { readonly record: SecretRecord | undefined } | { readonly error: unknown };

/** One save under way, and the time left for it and for the load that checks it. */
interface Attempt {
  readonly end: Promise<SaveEnd>;
  /** `work`, or {@link EXPIRED} if the window closes first. */
  within<T>(work: Promise<T>): Promise<T | typeof EXPIRED>;
  /** Stops the window's timers. */
  done(): void;
}

interface Abandoned {
  readonly id: string;
  /** Another key became current after this save was given up on: should the record land now, it is stale. */
  overtaken: boolean;
}

function storeCode(error: unknown): StoreCode | undefined {
  return STORE_CODES.find((code) => isLauncherAuthError(error, code));
}

const MESSAGES: Readonly<Record<StoreCode, string>> = {
  ERR_SAVE_CONFLICT:
    'The new secret was not saved: another rotation, made elsewhere, came first. Its secret is now in use ' +
    '(onRotate reports it); the token from before this call no longer works.',
  ERR_SAVE_UNCERTAIN:
    'The secret store cannot tell whether the new secret was saved. The authority follows what the store ' +
    'finally holds, and onRotate reports it if the key changes.',
  ERR_ROTATION_SUPERSEDED:
    'The new secret was saved, but another rotation, made elsewhere, replaced it before it was confirmed. That ' +
    'secret is now in use (onRotate reports it); neither the token from before this call nor this one works.',
};

/**
 * Runs rotations and reloads one after another, and decides every outcome of `rotate()`. A reload adopts what the
 * store holds, except a record of a save this authority gave up on that lands after another key became current:
 * that one is stale, and the current record is written back over it.
 */
export class Rotations<S> {
  readonly #store: SecretStore;
  readonly #saveTimeout: number;
  readonly #holder: KeyHolder<S>;
  readonly #runtime: Runtime;
  /** Rotations and reloads run one after another in this chain. */
  #queue: Promise<unknown> = Promise.resolve();
  /** The reload queued and not yet started, which further change reports join. */
  #pendingReload: Promise<void> | undefined;
  /** Saves given up on (timed out, or the store could not tell), oldest first. */
  #abandoned: Abandoned[] = [];

  constructor(store: SecretStore, saveTimeout: number, holder: KeyHolder<S>, runtime: Runtime = nodeRuntime) {
    this.#store = store;
    this.#saveTimeout = saveTimeout;
    this.#holder = holder;
    this.#runtime = runtime;
  }

  /**
   * A new secret, saved, then current. The outcomes, one meaning each:
   * - resolves with the new token: the store took the record (its save resolved, or it rejected but the store
   *   holds the record all the same) and it is current here; every earlier token is refused;
   * - `ERR_SAVE_FAILED`: the save rejected and the store still holds what it held: nothing changed, nothing will;
   * - `ERR_SAVE_CONFLICT`: the store kept another writer's record (it said so, or it holds one after a failed
   *   save): that record is current here before this rejects;
   * - `ERR_ROTATION_SUPERSEDED`: the store says the record was saved then replaced: the replacement is current here;
   * - `ERR_SAVE_UNCERTAIN`: the save did not settle within `saveTimeout` and the grace after the abort, the store
   *   said it could not tell, or a failed save could not be checked; the store is read again at once, when that
   *   save settles, and at every change it reports, and what it holds is adopted;
   * - `ERR_CLOSED`: the authority was closed.
   */
  rotate(): Promise<string> {
    const run = this.#queue.then(() => this.#rotateNow());
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /** Reads the store in the queue and adopts what it holds, joining a reload queued and not yet started. */
  reload(): Promise<void> {
    if (this.#holder.closed()) return Promise.resolve();
    if (this.#pendingReload !== undefined) return this.#pendingReload;
    const run = this.#queue.then(async () => {
      this.#pendingReload = undefined;
      if (this.#holder.closed()) return;
      try {
        const loaded = await this.#store.load();
        if (loaded === undefined) {
          throw new LauncherAuthError(
            'ERR_STORE_IO',
            'The secret disappeared from the store; the current key stays in use until a rotation saves a new one.',
          );
        }
        await this.#adopt(copyRecord(loaded));
      } catch (error) {
        this.#report(error);
      }
    });
    this.#queue = run;
    this.#pendingReload = run;
    return run;
  }

  async #rotateNow(): Promise<string> {
    if (this.#holder.closed()) throw new LauncherAuthError('ERR_CLOSED', 'The token authority was closed.');
    const record = generateRecord(this.#runtime.random);
    const next = await this.#holder.prepare(record);
    const attempt = this.#attempt(record);
    try {
      const end = await attempt.end;
      if (this.#holder.closed()) {
        // A closed authority trusts nothing and tells no listener of a new key.
        throw new LauncherAuthError(
          'ERR_CLOSED',
          'The token authority was closed while the new secret was being saved; the store may hold the new secret.',
        );
      }
      if (end.kind === 'saved') return this.#install(next, record);
      if (end.kind === 'unsettled') {
        this.#abandon(record.id, end.settled);
        const limit = this.#saveTimeout;
        throw new LauncherAuthError(
          'ERR_SAVE_UNCERTAIN',
          `The secret store's save() did not settle within ${limit} ms (timed out), nor ${graceOf(limit)} ms after ` +
            'it was told to stop: whether the new secret was saved is not known. The authority follows what the ' +
            'store finally holds, and onRotate reports it if the key changes.',
        );
      }
      return await this.#afterRejection(record, next, end.error, attempt);
    } finally {
      attempt.done();
    }
  }

  /**
   * A save that rejected: a code a store may give keeps its meaning; any other rejection is checked against what
   * the store holds, since a store may fail after writing.
   */
  async #afterRejection(record: SecretRecord, next: S, cause: unknown, attempt: Attempt): Promise<string> {
    const code = storeCode(cause);
    if (code === 'ERR_SAVE_UNCERTAIN') {
      // The store reports the final state through watch(); a store without watch() is read again at once.
      this.#abandon(record.id, undefined);
      throw new LauncherAuthError(code, MESSAGES[code], { cause });
    }
    const before = this.#holder.current();
    const loaded = await attempt.within(this.#load());
    const closed = (): LauncherAuthError => new LauncherAuthError('ERR_CLOSED', 'The token authority was closed.');
    if (this.#holder.closed()) throw closed();
    if (loaded === EXPIRED || 'error' in loaded) {
      if (code === undefined) {
        this.#abandon(record.id, undefined);
        throw new LauncherAuthError(
          'ERR_SAVE_UNCERTAIN',
          "The secret store's save() failed, and the store could not be read to check that nothing was saved: " +
            'whether the new secret was saved is not known. The authority follows what the store finally holds, ' +
            'and onRotate reports it if the key changes.',
          { cause },
        );
      }
      void this.reload();
      throw new LauncherAuthError(code, MESSAGES[code], { cause });
    }
    const stored = loaded.record;
    if (code !== undefined) {
      // The store's word stands: a load that still shows this rotation's record is behind, and the store reports
      // the newer one through watch().
      if (stored !== undefined && stored.id !== record.id) await this.#adopt(stored);
      if (this.#holder.closed()) throw closed();
      throw new LauncherAuthError(code, MESSAGES[code], { cause });
    }
    if (stored !== undefined && sameRecord(stored, record)) return this.#install(next, record);
    if (stored !== undefined) await this.#adopt(stored);
    if (this.#holder.closed()) throw closed();
    if (sameRecord(this.#holder.current(), before)) {
      throw new LauncherAuthError(
        'ERR_SAVE_FAILED',
        'Could not save the new secret; nothing changed and the current token stays valid.',
        { cause },
      );
    }
    throw new LauncherAuthError(
      'ERR_SAVE_CONFLICT',
      'Could not save the new secret, and the store holds a secret saved elsewhere, which is now in use (onRotate ' +
        'reports it); the token from before this call no longer works.',
      { cause },
    );
  }

  /**
   * `store.save(record, { signal })` within its window: at `saveTimeout` ms the signal is aborted, and the window
   * closes a grace later ({@link graceOf}); `saveTimeout` 0 never closes it.
   */
  #attempt(record: SecretRecord): Attempt {
    const limit = this.#saveTimeout;
    const controller = new AbortController();
    let settled = false;
    let outcome: Promise<SaveEnd>;
    try {
      outcome = Promise.resolve(this.#store.save(record, { signal: controller.signal })).then(
        (): SaveEnd => ({ kind: 'saved' }),
        (error: unknown): SaveEnd => ({ kind: 'rejected', error }),
      );
    } catch (error) {
      outcome = Promise.resolve({ kind: 'rejected', error });
    }
    void outcome.then(() => {
      settled = true;
    });
    let expire: () => void = () => undefined;
    const expired = new Promise<typeof EXPIRED>((resolve) => {
      expire = () => resolve(EXPIRED);
    });
    let cancel = (): void => undefined;
    if (limit > 0) {
      cancel = this.#runtime.timer(limit, () => {
        if (!settled) {
          controller.abort(
            new DOMException(`The save was given up on after ${limit} ms (saveTimeout).`, 'TimeoutError'),
          );
        }
        cancel = this.#runtime.timer(graceOf(limit), expire);
      });
    }
    const within = <T>(work: Promise<T>): Promise<T | typeof EXPIRED> => Promise.race([work, expired]);
    return {
      end: within(outcome).then((end): SaveEnd => (end === EXPIRED ? { kind: 'unsettled', settled: outcome } : end)),
      within,
      done: () => cancel(),
    };
  }

  /** What the store holds, as a checked copy; never rejects. */
  async #load(): Promise<Loaded> {
    try {
      const loaded = await this.#store.load();
      return { record: loaded === undefined ? undefined : copyRecord(loaded) };
    } catch (error) {
      return { error };
    }
  }

  /**
   * Makes `record` current, unless it is already, or it is a stale record of a save given up on: then the current
   * record is written back, and `record` is adopted only if the store refuses the write-back.
   */
  async #adopt(record: SecretRecord): Promise<void> {
    const current = this.#holder.current();
    if (sameRecord(record, current)) return;
    const stale = this.#abandoned.find((entry) => entry.id === record.id && entry.overtaken);
    if (stale !== undefined) {
      // Once only for this record: should the store refuse the write-back, it has the last word.
      this.#abandoned = this.#abandoned.filter((entry) => entry !== stale);
      if (await this.#writeBack(current)) return;
    }
    const next = await this.#holder.prepare(record);
    if (!this.#holder.closed()) this.#install(next, record);
  }

  /**
   * Saves `current` again over a stale record. False when the store refused it and does not hold `current`; true
   * when it took it, or when that is not known yet: the current key then stays, the write-back is remembered like
   * any save given up on, and the store is read again once it settles or reports a change.
   */
  async #writeBack(current: SecretRecord): Promise<boolean> {
    const attempt = this.#attempt(current);
    try {
      const end = await attempt.end;
      if (end.kind === 'saved') return true;
      const cause = end.kind === 'rejected' ? end.error : undefined;
      if (end.kind === 'unsettled' || storeCode(cause) === 'ERR_SAVE_UNCERTAIN') {
        this.#abandon(current.id, end.kind === 'unsettled' ? end.settled : undefined);
        this.#report(
          new LauncherAuthError(
            'ERR_SAVE_UNCERTAIN',
            'A save given up on earlier landed late, and whether the current secret was written back over it is ' +
              'not known yet; the authority reads the store again once it is.',
            { cause },
          ),
        );
        return true;
      }
      this.#report(cause);
      // A store may fail after writing: then it holds the current record after all.
      const loaded = await attempt.within(this.#load());
      return (
        loaded !== EXPIRED && 'record' in loaded && loaded.record !== undefined && sameRecord(loaded.record, current)
      );
    } finally {
      attempt.done();
    }
  }

  /** Remembers a save whose outcome is not known, and reads the store now and once that save settles. */
  #abandon(id: string, settled: Promise<unknown> | undefined): void {
    this.#abandoned.push({ id, overtaken: false });
    if (this.#abandoned.length > ABANDONED_KEPT) this.#abandoned.shift();
    void this.reload();
    void settled?.then(() => this.reload());
  }

  #install(next: S, record: SecretRecord): string {
    this.#holder.install(next);
    for (const entry of this.#abandoned) entry.overtaken ||= entry.id !== record.id;
    this.#abandoned = this.#abandoned.filter((entry) => entry.id !== record.id);
    return this.#holder.token(next);
  }

  #report(error: unknown): void {
    try {
      this.#holder.storeError(error instanceof Error ? error : new Error(String(error)));
    } catch {
      // The host's handler failed; the chain must stay usable for the next rotation.
    }
  }
}

/** How long after the abort a save may still settle: as long as `saveTimeout`, at most {@link MAX_ABORT_GRACE}. */
export function graceOf(saveTimeout: number): number {
  return Math.min(saveTimeout, MAX_ABORT_GRACE);
}

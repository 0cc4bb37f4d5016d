// How a rollback reaches the host, once per condition: the state of what was told, apart from the errors that tell it.
import type { LauncherAuthError } from 'launcher-auth';
import type { Condition } from './lease.js';
import { rollbackError } from './errors.js';

/**
 * How a rollback reaches the host, once per condition: a load() that rejects with it (the authority's reload hands
 * it to `onStoreError`) when the host has `onStoreError`, and a process warning when it has none.
 */
export class RollbackReports {
  readonly #key: string;
  readonly #told = new Set<Condition>();
  #untold = false;
  #openedOver: Condition | undefined;

  constructor(key: string) {
    this.#key = key;
  }

  /** What the last load() found before the store was watched: `open()` goes on refusing, and reports it. */
  get openedOver(): Condition | undefined {
    return this.#openedOver;
  }

  /** The condition a renewal found (on a change only); `reportsErrors`: the host passed `onStoreError`. */
  entered(condition: Condition, reportsErrors: boolean): void {
    if (condition !== 'rollback' && condition !== 'missing') {
      this.#told.clear();
      return;
    }
    if (this.#told.has(condition)) return;
    this.#told.add(condition);
    this.#untold = true;
    if (!reportsErrors) this.warn();
  }

  /** open() found `condition` and reported it through `onStoreError` (when there is one): told already. */
  opened(condition: Condition, reportsErrors: boolean): void {
    this.#told.add(condition);
    if (!reportsErrors) this.warn();
  }

  /** The error of a load() that found `condition`; `watched`: the store is watched (not open()'s first read). */
  found(condition: Condition, watched: boolean): LauncherAuthError {
    if (!watched) this.#openedOver = condition;
    return rollbackError(this.#key);
  }

  /** A load() begins: whether a rollback waits to be told by it (true once per report). */
  takeUntold(): boolean {
    this.#openedOver = undefined;
    const untold = this.#untold;
    this.#untold = false;
    return untold;
  }

  warn(): void {
    process.emitWarning(rollbackError(this.#key).message, {
      code: 'LAUNCHER_AUTH_STORE_ROLLBACK',
      type: 'LauncherAuthWarning',
    });
  }
}

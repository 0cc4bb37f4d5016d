// A store that keeps the secret in this process only: for tests, and for hosts that persist it elsewhere.
import { copyRecord } from '../authority/record.js';
import type { SaveOptions, SecretRecord, SecretStore } from '../authority/types.js';

/** Keeps the secret in memory. Every `load()` returns a copy, so callers cannot change what is stored. */
export class MemorySecretStore implements SecretStore {
  #record: SecretRecord | undefined;

  /** @param initial a record to start with; copied and checked (a key under 32 bytes throws `ERR_INVALID_RECORD`). */
  constructor(initial?: SecretRecord) {
    this.#record = initial === undefined ? undefined : copyRecord(initial);
  }

  async load(): Promise<SecretRecord | undefined> {
    return this.#record === undefined ? undefined : copyRecord(this.#record);
  }

  async save(record: SecretRecord, options?: SaveOptions): Promise<void> {
    options?.signal?.throwIfAborted();
    this.#record = copyRecord(record);
  }
}

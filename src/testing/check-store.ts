// checkSecretStore: the contract every SecretStore must meet, run against an integrator's own store.
import { randomBytes } from 'node:crypto';
import type { SecretRecord, SecretStore } from '../authority/types.js';

/** Options of {@link checkSecretStore}. */
export interface CheckSecretStoreOptions {
  /**
   * Whether every store `makeStore()` returns reads the same backing (one file, keychain entry or row), so that
   * what one saved another must load (durability). Without it, each call may return an independent store.
   * @default false
   */
  sameBacking?: boolean;
  /** How many saves run at once in the concurrency clause. @default 8 */
  concurrentSaves?: number;
}

/** One clause of the contract and whether the store met it. Never holds key bytes. */
export interface StoreCheckCase {
  /** The clause, in words. */
  name: string;
  /** Whether the store met it. */
  ok: boolean;
  /** Why it failed, when it did. */
  detail?: string;
}

/** What {@link checkSecretStore} found: `ok` only when every clause held. */
export interface StoreCheckReport {
  ok: boolean;
  cases: StoreCheckCase[];
}

// Distinct createdAt values with milliseconds, so a store that drops them or rounds to seconds is caught.
let clock = Date.UTC(2026, 0, 2, 3, 4, 5, 678);

function record(key: Uint8Array): SecretRecord {
  clock += 1_001;
  return { id: randomBytes(9).toString('base64url'), key, createdAt: new Date(clock) };
}

/** What differs between a loaded record and the one expected, in words that never include key bytes. */
function difference(loaded: SecretRecord | undefined, expected: SecretRecord): string | undefined {
  if (loaded === undefined || loaded === null) return 'load() returned nothing after save()';
  if (typeof loaded !== 'object') return 'load() returned something other than a record';
  if (loaded.id !== expected.id) return 'the id differs';
  if (!(loaded.key instanceof Uint8Array)) return 'the key is not a Uint8Array';
  if (loaded.key.byteLength !== expected.key.byteLength) {
    return `the key is ${loaded.key.byteLength} bytes; ${expected.key.byteLength} were saved`;
  }
  if (!Buffer.from(loaded.key.buffer, loaded.key.byteOffset, loaded.key.byteLength).equals(Buffer.from(expected.key))) {
    return 'the key bytes differ';
  }
  if (!(loaded.createdAt instanceof Date)) return 'createdAt is not a Date';
  if (loaded.createdAt.getTime() !== expected.createdAt.getTime())
    return 'createdAt differs (compared to the millisecond)';
  return undefined;
}

function isStore(value: unknown): value is SecretStore {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as SecretStore).load === 'function' &&
    typeof (value as SecretStore).save === 'function'
  );
}

/**
 * Checks the SecretStore contract, one clause per case:
 *
 * - `load()` resolves `undefined` while nothing is stored;
 * - `save()` then `load()` returns the id, every key byte (0x00 and 0xff included; 32- and 64-byte keys, so
 *   no store may shorten a key) and `createdAt` to the millisecond;
 * - what `load()` returns is not aliased: changing the saved record after `save()`, or a loaded record, does
 *   not change what the next `load()` returns;
 * - with `sameBacking`, a second store from `makeStore()` loads what the first saved (durability);
 * - after saves that run at once, `load()` returns one of them whole, never a mix.
 *
 * `makeStore()` must return an EMPTY store (with `sameBacking`, stores over one backing that starts empty).
 * A store that throws or rejects fails the clause with the error's message, which this library's stores never
 * fill with key bytes; the report itself never holds a key.
 */
export async function checkSecretStore(
  makeStore: () => SecretStore | Promise<SecretStore>,
  options: CheckSecretStoreOptions = {},
): Promise<StoreCheckReport> {
  if (typeof makeStore !== 'function') throw new TypeError('checkSecretStore: `makeStore` must be a function.');
  if (typeof options !== 'object' || options === null)
    throw new TypeError('checkSecretStore: `options` must be an object.');
  const { sameBacking = false, concurrentSaves = 8 } = options;
  if (typeof sameBacking !== 'boolean') throw new TypeError('checkSecretStore: `sameBacking` must be a boolean.');
  if (!Number.isInteger(concurrentSaves) || concurrentSaves < 2 || concurrentSaves > 256) {
    throw new TypeError('checkSecretStore: `concurrentSaves` must be a whole number from 2 to 256.');
  }

  const cases: StoreCheckCase[] = [];
  const clause = async (name: string, run: () => Promise<string | undefined>): Promise<void> => {
    try {
      const problem = await run();
      cases.push(problem === undefined ? { name, ok: true } : { name, ok: false, detail: problem });
    } catch (error) {
      cases.push({ name, ok: false, detail: `threw: ${error instanceof Error ? error.message : typeof error}` });
    }
  };
  const make = async (): Promise<SecretStore> => {
    const made: unknown = await makeStore();
    if (!isStore(made)) throw new Error('makeStore() did not return an object with load() and save()');
    return made;
  };

  let store: SecretStore | undefined;
  await clause('makeStore() returns a store', async () => {
    store = await make();
    return undefined;
  });
  if (store === undefined) return { ok: false, cases };
  const subject: SecretStore = store;

  await clause('load() is undefined while nothing is stored', async () =>
    (await subject.load()) === undefined ? undefined : 'load() returned something before any save()',
  );

  const edges = new Uint8Array(32).fill(0x5a);
  edges.set([0x00, 0xff, 0x00, 0xff], 0);
  edges.set([0xff, 0x00], 30);
  const keys: Array<[string, Uint8Array]> = [
    ['a 32-byte key with 0x00 and 0xff bytes', edges],
    ['a random 32-byte key', new Uint8Array(randomBytes(32))],
    ['a random 64-byte key', new Uint8Array(randomBytes(64))],
  ];
  for (const [name, key] of keys) {
    await clause(`save() then load() returns ${name} exactly`, async () => {
      const saved = record(key);
      await subject.save(saved);
      return difference(await subject.load(), saved);
    });
  }

  await clause('load() is not aliased to the saved record', async () => {
    const key = new Uint8Array(randomBytes(32));
    const saved = record(new Uint8Array(key));
    const expected = { id: saved.id, key, createdAt: new Date(saved.createdAt.getTime()) };
    await subject.save(saved);
    saved.key.fill(0);
    saved.id = 'changed-after-save';
    saved.createdAt.setTime(0);
    const problem = difference(await subject.load(), expected);
    return problem === undefined
      ? undefined
      : `changing the record after save() changed what load() returns (${problem})`;
  });

  await clause('load() returns a record a caller cannot change the store through', async () => {
    const key = new Uint8Array(randomBytes(32));
    const saved = record(new Uint8Array(key));
    // A copy to compare with: a store that hands out the saved object itself would change `saved` too.
    const expected = { id: saved.id, key, createdAt: new Date(saved.createdAt.getTime()) };
    await subject.save(saved);
    const first = await subject.load();
    if (first === undefined) return 'load() returned nothing after save()';
    first.key.fill(0);
    first.id = 'changed-after-load';
    if (first.createdAt instanceof Date) first.createdAt.setTime(0);
    const problem = difference(await subject.load(), expected);
    return problem === undefined
      ? undefined
      : `changing a loaded record changed what the next load() returns (${problem})`;
  });

  if (sameBacking) {
    await clause('a second store on the same backing loads what the first saved (durable)', async () => {
      const saved = record(new Uint8Array(randomBytes(32)));
      await subject.save(saved);
      const other = await make();
      return difference(await other.load(), saved);
    });
  }

  await clause(`${concurrentSaves} concurrent saves leave exactly one of them, whole`, async () => {
    const records = Array.from({ length: concurrentSaves }, () => record(new Uint8Array(randomBytes(32))));
    await Promise.all(records.map((each) => subject.save(each)));
    const loaded = await subject.load();
    if (loaded === undefined) return 'load() returned nothing after the saves';
    const match = records.find((each) => each.id === loaded.id);
    if (match === undefined) return 'load() returned an id none of the saves wrote';
    const problem = difference(loaded, match);
    return problem === undefined ? undefined : `the record mixes concurrent saves (${problem})`;
  });

  return { ok: cases.every((row) => row.ok), cases };
}

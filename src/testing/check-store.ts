// checkSecretStore: the contract every SecretStore must meet, run against an integrator's own store.
import { randomBytes } from 'node:crypto';
import type { SecretRecord, SecretStore } from '../core/types.js';

/** Options of {@link checkSecretStore}. */
export interface CheckSecretStoreOptions {
  /**
   * Whether every store `makeStore()` returns reads the same backing (file, keychain entry, row), so that what
   * one saved another must load (durability).
   * @default false
   */
  sameBacking?: boolean;
}

/** One contract clause and whether the store met it. Never holds key bytes. */
export interface StoreCheckCase {
  name: string;
  ok: boolean;
  detail?: string;
}

/** What {@link checkSecretStore} found: `ok` only when every clause held. */
export interface StoreCheckReport {
  ok: boolean;
  cases: StoreCheckCase[];
}

function record(keyBytes: Uint8Array, id = randomBytes(9).toString('base64url')): SecretRecord {
  return { id, key: keyBytes, createdAt: new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 678) + Math.floor(Math.random() * 1e9)) };
}

function same(a: SecretRecord | undefined, b: SecretRecord): string | undefined {
  if (a === undefined) return 'load() returned undefined after save()';
  if (a.id !== b.id) return 'the id differs';
  if (!(a.key instanceof Uint8Array)) return 'the key is not a Uint8Array';
  if (a.key.byteLength !== b.key.byteLength) return `the key is ${a.key.byteLength} bytes, ${b.key.byteLength} were saved`;
  if (!Buffer.from(a.key).equals(Buffer.from(b.key))) return 'the key bytes differ';
  if (!(a.createdAt instanceof Date) || a.createdAt.getTime() !== b.createdAt.getTime()) return 'createdAt differs (to the millisecond)';
  return undefined;
}

/**
 * Checks the SecretStore contract: `undefined` when empty; exact round trip of id, key bytes (0x00 and 0xff
 * included, 32 and 64 bytes) and `createdAt`; loads not aliased to what was saved; durability across stores on
 * the same backing (with `sameBacking`); concurrent saves leave one whole record. `makeStore()` must return an
 * EMPTY store each call (or, with `sameBacking`, stores over one backing that starts empty).
 */
export async function checkSecretStore(
  makeStore: () => SecretStore | Promise<SecretStore>,
  options: CheckSecretStoreOptions = {},
): Promise<StoreCheckReport> {
  if (typeof makeStore !== 'function') throw new TypeError('checkSecretStore: `makeStore` must be a function.');
  const { sameBacking = false } = options;
  const cases: StoreCheckCase[] = [];
  const clause = async (name: string, run: () => Promise<string | undefined>): Promise<void> => {
    try {
      const problem = await run();
      cases.push(problem === undefined ? { name, ok: true } : { name, ok: false, detail: problem });
    } catch (error) {
      cases.push({ name, ok: false, detail: `threw: ${error instanceof Error ? error.message : String(error)}` });
    }
  };

  const store = await makeStore();
  await clause('load() is undefined while nothing is stored', async () =>
    (await store.load()) === undefined ? undefined : 'load() returned a record before any save()',
  );
  const edges = new Uint8Array(32);
  edges.set([0x00, 0xff, 0x00, 0xff], 0);
  edges.set([0xff, 0x00], 30);
  for (const [name, key] of [
    ['a 32-byte key with 0x00 and 0xff bytes', edges],
    ['a random 32-byte key', new Uint8Array(randomBytes(32))],
    ['a random 64-byte key', new Uint8Array(randomBytes(64))],
  ] as const) {
    await clause(`save() then load() returns ${name} exactly`, async () => {
      const saved = record(key);
      await store.save(saved);
      return same(await store.load(), saved);
    });
  }
  await clause('load() is not aliased to the saved record', async () => {
    const key = new Uint8Array(randomBytes(32));
    const saved = record(new Uint8Array(key));
    await store.save(saved);
    saved.key.fill(0);
    saved.id = 'changed-after-save';
    const loaded = await store.load();
    const problem = same(loaded, { ...saved, id: loaded?.id ?? '', key });
    if (problem !== undefined) return `changing the record after save() changed what load() returns (${problem})`;
    if (loaded?.id === 'changed-after-save') return 'changing the record after save() changed the id load() returns';
    const again = await store.load();
    if (again === loaded || (again !== undefined && loaded !== undefined && again.key === loaded.key)) {
      return 'two load() calls return the same object: a caller could change what is stored';
    }
    return undefined;
  });
  if (sameBacking) {
    await clause('a second store on the same backing loads what the first saved (durable)', async () => {
      const saved = record(new Uint8Array(randomBytes(32)));
      await store.save(saved);
      const other = await makeStore();
      return same(await other.load(), saved);
    });
  }
  await clause('concurrent saves leave exactly one of them, whole', async () => {
    const records = Array.from({ length: 8 }, () => record(new Uint8Array(randomBytes(32))));
    await Promise.all(records.map((r) => store.save(r)));
    const loaded = await store.load();
    if (loaded === undefined) return 'load() returned undefined after concurrent saves';
    const match = records.find((r) => r.id === loaded.id);
    if (match === undefined) return 'load() returned a record that was never saved';
    const problem = same(loaded, match);
    return problem === undefined ? undefined : `the record is a mix of concurrent saves (${problem})`;
  });
  return { ok: cases.every((row) => row.ok), cases };
}

// Making and checking SecretRecords: the one place that knows what a usable secret is.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { LauncherAuthError, isLauncherAuthError } from './errors.js';
import type { SecretRecord, SecretStore } from './types.js';

/** Shortest HMAC-SHA256 key accepted: the hash output size (RFC 7518 §3.2). */
export const MIN_KEY_BYTES = 32;

const ID_PATTERN = /^[\x21-\x7e]{1,128}$/;

/** A fresh secret: 32 random bytes and a random 16-character id. */
export function generateRecord(random: (bytes: number) => Buffer = randomBytes): SecretRecord {
  return {
    id: random(12).toString('base64url'),
    key: new Uint8Array(random(MIN_KEY_BYTES)),
    createdAt: new Date(),
  };
}

/**
 * What is wrong with a would-be record, in words that never include the key, or `undefined` when it is usable.
 */
export function recordProblem(record: unknown): string | undefined {
  if (typeof record !== 'object' || record === null) return 'the record is not an object';
  const { id, key, createdAt } = record as Partial<Record<keyof SecretRecord, unknown>>;
  if (typeof id !== 'string' || !ID_PATTERN.test(id)) return 'the id is not 1 to 128 visible ASCII characters';
  if (!(key instanceof Uint8Array)) return 'the key is not a Uint8Array';
  if (key.byteLength < MIN_KEY_BYTES) {
    return `the key is ${key.byteLength} bytes; at least ${MIN_KEY_BYTES} are required (RFC 7518 §3.2)`;
  }
  if (key.every((byte) => byte === key[0])) {
    return 'every byte of the key has the same value (a zeroed or placeholder key, which anyone can guess)';
  }
  if (!(createdAt instanceof Date) || Number.isNaN(createdAt.getTime())) return 'createdAt is not a valid Date';
  return undefined;
}

/** A private copy of a record a store returned, or a `LauncherAuthError` saying what is wrong with it. */
export function copyRecord(record: unknown): SecretRecord {
  const problem = recordProblem(record);
  if (problem !== undefined) {
    throw new LauncherAuthError('ERR_INVALID_RECORD', `The secret store returned an unusable record: ${problem}.`);
  }
  const { id, key, createdAt } = record as SecretRecord;
  return { id, key: new Uint8Array(key), createdAt: new Date(createdAt.getTime()) };
}

/** Whether two records are the same secret: same id, same date, same key bytes (compared in constant time). */
export function sameRecord(a: SecretRecord, b: SecretRecord): boolean {
  return (
    a.id === b.id &&
    a.createdAt.getTime() === b.createdAt.getTime() &&
    a.key.byteLength === b.key.byteLength &&
    timingSafeEqual(a.key, b.key)
  );
}

/**
 * The record `open()` starts from: the store's, or a new one saved when the store is empty. A watching store whose
 * secret went back rejects with `ERR_STORE_ROLLBACK` (see SecretStore.load): then a placeholder that is never
 * saved, and that error, so that the authority refuses every token until the store vouches for a key, reports the
 * error once, and a rotation from this very process can end the refusal.
 */
export async function initialRecord(
  store: SecretStore,
  random: (bytes: number) => Buffer = randomBytes,
): Promise<{ readonly record: SecretRecord; readonly lost?: LauncherAuthError }> {
  let loaded: SecretRecord | undefined;
  try {
    loaded = await store.load();
  } catch (error) {
    if (store.watch === undefined || !isLauncherAuthError(error, 'ERR_STORE_ROLLBACK')) throw error;
    return { record: generateRecord(random), lost: error };
  }
  if (loaded !== undefined) return { record: copyRecord(loaded) };
  const record = generateRecord(random);
  try {
    await store.save(record);
  } catch (error) {
    // Another process created the first secret at the same moment: its record stands, and is this one's too.
    if (!isLauncherAuthError(error, 'ERR_SAVE_CONFLICT')) throw error;
    const created = await store.load();
    if (created === undefined) throw error;
    return { record: copyRecord(created) };
  }
  // A store may take such a race for done, leaving the winner to its watch: without one, what it holds is read.
  if (store.watch === undefined) {
    const stored = await store.load();
    if (stored !== undefined && stored.id !== record.id) return { record: copyRecord(stored) };
  }
  return { record };
}

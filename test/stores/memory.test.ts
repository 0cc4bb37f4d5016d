// MemorySecretStore: what it stores is its own copy, in and out, and it refuses a record TokenAuthority would.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { LauncherAuthError, MemorySecretStore, isLauncherAuthError, type SecretRecord } from 'launcher-auth';
import { rejectionOf } from '../support/async.js';
import { sameRecord as same } from './fixtures/records.js';

const KEY = new Uint8Array(createHash('sha256').update('launcher-auth memory store key').digest());
const record = (): SecretRecord => ({
  id: 'memory',
  key: new Uint8Array(KEY),
  createdAt: new Date('2024-05-01T12:00:00.123Z'),
});

describe('MemorySecretStore', () => {
  it('is empty at first: load() resolves with undefined', async () => {
    expect(await new MemorySecretStore().load()).toBeUndefined();
    expect(await new MemorySecretStore(undefined).load()).toBeUndefined();
  });

  it('round-trips a record: same id, key bytes and date, in fresh objects', async () => {
    const store = new MemorySecretStore();
    const saved = record();
    await store.save(saved);
    const first = await store.load();
    const second = await store.load();
    expect(same(first, record())).toBe(true);
    expect(same(second, record())).toBe(true);
    expect(first === second).toBe(false);
    expect(first?.key === second?.key).toBe(false);
    expect(first?.key === saved.key).toBe(false);
    expect(first?.createdAt === saved.createdAt).toBe(false);
    expect(Object.keys(first as SecretRecord).sort()).toEqual(['createdAt', 'id', 'key']);
  });

  it('changing a loaded record changes nothing stored', async () => {
    const store = new MemorySecretStore(record());
    const loaded = (await store.load()) as SecretRecord;
    loaded.key[0] = (loaded.key[0] as number) ^ 0xff;
    loaded.key.fill(0, 1);
    loaded.createdAt.setTime(0);
    loaded.id = 'changed';
    expect(same(await store.load(), record())).toBe(true);
  });

  it('changing the saved record, or the one given to the constructor, afterwards changes nothing stored', async () => {
    const given = record();
    const fromConstructor = new MemorySecretStore(given);
    given.key.fill(7);
    given.createdAt.setTime(0);
    expect(same(await fromConstructor.load(), record())).toBe(true);

    const store = new MemorySecretStore();
    const saved = record();
    await store.save(saved);
    saved.key.fill(7);
    saved.createdAt.setTime(0);
    saved.id = 'changed';
    expect(same(await store.load(), record())).toBe(true);
  });

  it('copies only the key view it was given, not the rest of a larger buffer', async () => {
    const backing = new Uint8Array(64).fill(9);
    backing.set(KEY, 16);
    const store = new MemorySecretStore({ ...record(), key: backing.subarray(16, 48) });
    const loaded = (await store.load()) as SecretRecord;
    expect(loaded.key.byteLength).toBe(32);
    expect(loaded.key.buffer.byteLength).toBe(32);
    expect(same(loaded, record())).toBe(true);
  });

  it('a later save() replaces the record', async () => {
    const store = new MemorySecretStore(record());
    const next: SecretRecord = { id: 'next', key: new Uint8Array(32).map((_, i) => i + 1), createdAt: new Date(0) };
    await store.save(next);
    expect(same(await store.load(), next)).toBe(true);
  });

  it('the constructor throws ERR_INVALID_RECORD for a 31-byte key, without naming the key', () => {
    const short = { ...record(), key: KEY.slice(0, 31) };
    let thrown: unknown = 'nothing thrown';
    try {
      new MemorySecretStore(short);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(LauncherAuthError);
    expect(isLauncherAuthError(thrown, 'ERR_INVALID_RECORD')).toBe(true);
    const message = (thrown as Error).message;
    expect(message).toMatch(/31 bytes/);
    expect(message.includes(Buffer.from(short.key).toString('base64url').slice(0, 12))).toBe(false);
    expect(message.includes(Buffer.from(short.key).toString('hex').slice(0, 12))).toBe(false);
  });

  it('the constructor throws for other unusable records too', () => {
    for (const bad of [
      { ...record(), id: '' },
      { ...record(), id: 'has space' },
      { ...record(), key: Array.from(KEY) },
      { ...record(), createdAt: new Date(Number.NaN) },
      { ...record(), createdAt: '2024-05-01T12:00:00Z' },
    ]) {
      expect(() => new MemorySecretStore(bad as never)).toThrow(LauncherAuthError);
    }
  });

  it('save() of an unusable record rejects with ERR_INVALID_RECORD and keeps what was stored', async () => {
    const store = new MemorySecretStore(record());
    const error = await rejectionOf(store.save({ ...record(), id: 'short', key: new Uint8Array(31) }));
    expect(isLauncherAuthError(error, 'ERR_INVALID_RECORD')).toBe(true);
    expect(same(await store.load(), record())).toBe(true);
  });
});

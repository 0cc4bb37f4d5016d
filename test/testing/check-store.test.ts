// checkSecretStore: the library's stores meet the contract; broken stores fail the clause they break.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FileSecretStore, MemorySecretStore, type SecretRecord, type SecretStore } from 'launcher-auth';
import { checkSecretStore, type StoreCheckReport } from 'launcher-auth/testing';

const folders: string[] = [];
afterEach(async () => {
  for (const folder of folders.splice(0)) await rm(folder, { recursive: true, force: true });
});

const failed = (report: StoreCheckReport): string[] => report.cases.filter((row) => !row.ok).map((row) => row.name);

describe('checkSecretStore', () => {
  it('passes MemorySecretStore', async () => {
    const report = await checkSecretStore(() => new MemorySecretStore());
    expect(failed(report)).toEqual([]);
    expect(report.cases.length).toBe(6);
  });

  it('passes FileSecretStore on one backing file', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'launcher-auth-check-store-'));
    folders.push(folder);
    const report = await checkSecretStore(() => new FileSecretStore(join(folder, 'secret.json')), { sameBacking: true });
    expect(failed(report)).toEqual([]);
    expect(report.cases.map((row) => row.name)).toContain('a second store on the same backing loads what the first saved (durable)');
  });

  it('fails a store that truncates keys', async () => {
    let kept: SecretRecord | undefined;
    const truncating: SecretStore = {
      load: async () => (kept === undefined ? undefined : { ...kept, key: kept.key.slice(0, 16) }),
      save: async (record) => void (kept = { ...record, key: new Uint8Array(record.key) }),
    };
    const report = await checkSecretStore(() => truncating);
    expect(failed(report)).toContain('save() then load() returns a random 64-byte key exactly');
    expect(JSON.stringify(report)).toMatch(/the key is 16 bytes/);
  });

  it('fails a store that hands out the saved object itself', async () => {
    let kept: SecretRecord | undefined;
    const aliasing: SecretStore = { load: async () => kept, save: async (record) => void (kept = record) };
    expect(failed(await checkSecretStore(() => aliasing))).toEqual(['load() is not aliased to the saved record']);
  });

  it('fails a store that forgets what it saved, and one that is not empty at first', async () => {
    const forgetful: SecretStore = { load: async () => undefined, save: async () => undefined };
    expect(failed(await checkSecretStore(() => forgetful))).toContain('save() then load() returns a random 32-byte key exactly');
    const stale = new MemorySecretStore({ id: 'old', key: new Uint8Array(32), createdAt: new Date() });
    expect(failed(await checkSecretStore(() => stale))[0]).toBe('load() is undefined while nothing is stored');
  });

  it('fails a store that is not durable across instances', async () => {
    const report = await checkSecretStore(() => new MemorySecretStore(), { sameBacking: true });
    expect(failed(report)).toEqual(['a second store on the same backing loads what the first saved (durable)']);
  });
});

// checkSecretStore: the library's stores meet the contract; each deliberately broken store fails the clause it
// breaks, and only that one where the fault is that narrow.
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

async function folder(): Promise<string> {
  const made = await mkdtemp(join(tmpdir(), 'launcher-auth-check-store-'));
  folders.push(made);
  return made;
}

const failed = (report: StoreCheckReport): string[] => report.cases.filter((row) => !row.ok).map((row) => row.name);
const detailOf = (report: StoreCheckReport, name: string): string | undefined =>
  report.cases.find((row) => row.name === name)?.detail;

const CLAUSES = [
  'makeStore() returns a store',
  'load() is undefined while nothing is stored',
  'save() then load() returns a 32-byte key with 0x00 and 0xff bytes exactly',
  'save() then load() returns a random 32-byte key exactly',
  'save() then load() returns a random 64-byte key exactly',
  'load() is not aliased to the saved record',
  'load() returns a record a caller cannot change the store through',
  '8 concurrent saves leave exactly one of them, whole',
];
const DURABLE = 'a second store on the same backing loads what the first saved (durable)';
const NOT_ALIASED = 'load() is not aliased to the saved record';
const NOT_CHANGEABLE = 'load() returns a record a caller cannot change the store through';
const CONCURRENT = '8 concurrent saves leave exactly one of them, whole';

/** A store that keeps private copies, like MemorySecretStore: the base the broken stores below change one thing of. */
function copyingStore(): SecretStore & { saves: SecretRecord[] } {
  let kept: SecretRecord | undefined;
  const saves: SecretRecord[] = [];
  const copy = (record: SecretRecord): SecretRecord => ({
    id: record.id,
    key: new Uint8Array(record.key),
    createdAt: new Date(record.createdAt.getTime()),
  });
  return {
    saves,
    load: async () => (kept === undefined ? undefined : copy(kept)),
    save: async (record) => {
      saves.push(copy(record));
      kept = copy(record);
    },
  };
}

describe('the library stores pass', () => {
  it('MemorySecretStore passes every clause', async () => {
    const report = await checkSecretStore(() => new MemorySecretStore());
    expect(report.cases.map((row) => row.name)).toEqual(CLAUSES);
    expect(failed(report)).toEqual([]);
    expect(report.ok).toBe(true);
  });

  it('FileSecretStore passes every clause on one backing file, durability included', async () => {
    const path = join(await folder(), 'secret.json');
    const report = await checkSecretStore(() => new FileSecretStore(path), { sameBacking: true });
    expect(report.cases.map((row) => row.name)).toEqual([...CLAUSES.slice(0, 7), DURABLE, CONCURRENT]);
    expect(failed(report)).toEqual([]);
    expect(report.ok).toBe(true);
  });

  it('FileSecretStore passes with a fresh file per store, and from an async makeStore', async () => {
    const dir = await folder();
    let made = 0;
    const report = await checkSecretStore(async () => new FileSecretStore(join(dir, `secret-${made++}.json`)));
    expect(failed(report)).toEqual([]);
    expect(made).toBe(1);
  });

  it('a copying store passes, and the checker really saved 32- and 64-byte keys with 0x00 and 0xff', async () => {
    const store = copyingStore();
    expect(failed(await checkSecretStore(() => store))).toEqual([]);
    const lengths = new Set(store.saves.map((saved) => saved.key.byteLength));
    expect(lengths).toEqual(new Set([32, 64]));
    const edges = store.saves[0]?.key;
    expect(edges !== undefined && edges.includes(0x00) && edges.includes(0xff)).toBe(true);
    expect(store.saves.length).toBe(3 + 2 + 8);
  });
});

describe('broken stores fail the clause they break', () => {
  it('a store that truncates keys to 16 bytes fails the round trips, naming the lengths', async () => {
    const base = copyingStore();
    const truncating: SecretStore = {
      save: base.save,
      load: async () => {
        const loaded = await base.load();
        return loaded === undefined ? undefined : { ...loaded, key: loaded.key.slice(0, 16) };
      },
    };
    const report = await checkSecretStore(() => truncating);
    expect(report.ok).toBe(false);
    expect(failed(report)).toEqual(CLAUSES.slice(2));
    expect(detailOf(report, 'save() then load() returns a random 64-byte key exactly')).toBe(
      'the key is 16 bytes; 64 were saved',
    );
    expect(detailOf(report, 'save() then load() returns a random 32-byte key exactly')).toBe(
      'the key is 16 bytes; 32 were saved',
    );
  });

  it('a store that keeps and hands out the saved object itself fails both aliasing clauses, and only those', async () => {
    let kept: SecretRecord | undefined;
    const aliasing: SecretStore = { load: async () => kept, save: async (record) => void (kept = record) };
    const report = await checkSecretStore(() => aliasing);
    expect(failed(report)).toEqual([NOT_ALIASED, NOT_CHANGEABLE]);
    expect(detailOf(report, NOT_ALIASED)).toBe(
      'changing the record after save() changed what load() returns (the id differs)',
    );
  });

  it('a store that copies on save but hands out views of its own bytes fails only the load clause', async () => {
    const base = copyingStore();
    let kept: SecretRecord | undefined;
    const sharing: SecretStore = {
      save: async (record) => {
        await base.save(record);
        kept = await base.load();
      },
      // A new object and a new Uint8Array each time, but over the same memory: identity checks would miss it.
      load: async () =>
        kept === undefined
          ? undefined
          : {
              id: kept.id,
              key: new Uint8Array(kept.key.buffer, kept.key.byteOffset, kept.key.byteLength),
              createdAt: new Date(kept.createdAt),
            },
    };
    const report = await checkSecretStore(() => sharing);
    expect(failed(report)).toEqual([NOT_CHANGEABLE]);
    expect(detailOf(report, NOT_CHANGEABLE)).toBe(
      'changing a loaded record changed what the next load() returns (the key bytes differ)',
    );
  });

  it('a store whose concurrent saves interleave fails only the concurrency clause', async () => {
    let id: string | undefined;
    let key: Uint8Array | undefined;
    let createdAt: Date | undefined;
    let sequence = 0;
    const interleaving: SecretStore = {
      load: async () =>
        id === undefined || key === undefined || createdAt === undefined
          ? undefined
          : { id, key: new Uint8Array(key), createdAt: new Date(createdAt) },
      save: async (record) => {
        // Writes the id at once and the key later, the earlier a save started the later it writes: under
        // Promise.all the id of the last save ends up beside the key of the first.
        const turn = ++sequence;
        id = record.id;
        for (let wait = 0; wait < 1_000 - turn; wait++) await Promise.resolve();
        key = new Uint8Array(record.key);
        createdAt = new Date(record.createdAt);
      },
    };
    const report = await checkSecretStore(() => interleaving);
    expect(failed(report)).toEqual([CONCURRENT]);
    expect(detailOf(report, CONCURRENT)).toBe('the record mixes concurrent saves (the key bytes differ)');
  });

  it('a store that rounds createdAt to the second fails the round trips', async () => {
    const base = copyingStore();
    const rounding: SecretStore = {
      load: base.load,
      save: async (record) =>
        base.save({ ...record, createdAt: new Date(Math.floor(record.createdAt.getTime() / 1000) * 1000) }),
    };
    const report = await checkSecretStore(() => rounding);
    expect(failed(report)).toContain('save() then load() returns a random 32-byte key exactly');
    expect(detailOf(report, 'save() then load() returns a random 32-byte key exactly')).toBe(
      'createdAt differs (compared to the millisecond)',
    );
  });

  it('a store that forgets what it saved, and one that is not empty at first', async () => {
    const forgetful: SecretStore = { load: async () => undefined, save: async () => undefined };
    const forgot = await checkSecretStore(() => forgetful);
    expect(failed(forgot)).toEqual(CLAUSES.slice(2));
    expect(detailOf(forgot, 'save() then load() returns a random 32-byte key exactly')).toBe(
      'load() returned nothing after save()',
    );

    const stale = new MemorySecretStore({
      id: 'old',
      key: new Uint8Array(32).map((_, i) => 7 + i),
      createdAt: new Date(),
    });
    expect(failed(await checkSecretStore(() => stale))).toEqual(['load() is undefined while nothing is stored']);
  });

  it('a store that is not durable across instances fails the durability clause when sameBacking is set', async () => {
    const report = await checkSecretStore(() => new MemorySecretStore(), { sameBacking: true });
    expect(failed(report)).toEqual([DURABLE]);
    expect(detailOf(report, DURABLE)).toBe('load() returned nothing after save()');
  });

  it('a store whose save rejects fails with the error message', async () => {
    const failing: SecretStore = {
      load: async () => undefined,
      save: async () => {
        throw new Error('disk full');
      },
    };
    const report = await checkSecretStore(() => failing);
    expect(failed(report)).toEqual(CLAUSES.slice(2));
    expect(detailOf(report, CLAUSES[2] as string)).toBe('threw: disk full');
  });

  it('a makeStore that throws or returns no store is one failed clause, not a throw', async () => {
    const throwing = await checkSecretStore(() => {
      throw new Error('no keychain');
    });
    expect(throwing).toEqual({
      ok: false,
      cases: [{ name: 'makeStore() returns a store', ok: false, detail: 'threw: no keychain' }],
    });
    const notAStore = await checkSecretStore(() => ({ load: async () => undefined }) as unknown as SecretStore);
    expect(notAStore.ok).toBe(false);
    expect(notAStore.cases).toEqual([
      {
        name: 'makeStore() returns a store',
        ok: false,
        detail: 'threw: makeStore() did not return an object with load() and save()',
      },
    ]);
  });
});

describe('checkSecretStore options and report', () => {
  it('bad options throw a TypeError naming the option', async () => {
    await expect(checkSecretStore('store' as unknown as () => SecretStore)).rejects.toThrow(/`makeStore`/);
    await expect(
      checkSecretStore(() => new MemorySecretStore(), { sameBacking: 'yes' as unknown as boolean }),
    ).rejects.toThrow(/`sameBacking`/);
    await expect(checkSecretStore(() => new MemorySecretStore(), { concurrentSaves: 1 })).rejects.toThrow(
      /`concurrentSaves`/,
    );
  });

  it('the report holds no key bytes, in any spelling, even when every clause fails', async () => {
    const store = copyingStore();
    const truncating: SecretStore = {
      save: store.save,
      load: async () => {
        const loaded = await store.load();
        return loaded === undefined ? undefined : { ...loaded, key: loaded.key.slice(0, 16) };
      },
    };
    const text = JSON.stringify(await checkSecretStore(() => truncating));
    const leaked = store.saves.some((saved) => {
      const bytes = Buffer.from(saved.key);
      // Spellings of a random key: long enough that a chance match in the report's words is impossible.
      return [
        bytes.toString('hex'),
        bytes.toString('base64'),
        bytes.toString('base64url'),
        bytes.subarray(0, 16).toString('hex'),
      ].some((spelling) => text.includes(spelling));
    });
    expect(leaked).toBe(false);
    expect(store.saves.length).toBeGreaterThan(0);
  });
});

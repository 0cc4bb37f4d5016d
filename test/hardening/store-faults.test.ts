// Stores that fail: a save that rejects, a disk that fills up (simulated midway, and for real on a tiny tmpfs),
// a secret file deleted under a running authority, a save that hangs (`saveTimeout`), and custom stores that break
// the rules in the ways a real one does. Each test asserts the final state, not only what rotate() said.
//
// Covered elsewhere, not repeated here (test/stores/file.test.ts): a read-only directory ("save() into a
// read-only directory"), a path blocked by a file or a directory, and a file damaged under a running authority.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, open, readFile, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import {
  FileSecretStore,
  LauncherAuthError,
  MemorySecretStore,
  TokenAuthority,
  isLauncherAuthError,
  type RotateEvent,
  type SecretRecord,
  type SecretStore,
} from 'launcher-auth';
import { fixtureKey, fixtureRecord } from '../stores/fixtures/records.js';
import { REPO, fixtureCommand } from './fixtures/support.js';
import { authErrorOf as rejectionOf, nextTurn, until } from '../support/async.js';
import { budget } from '../support/machine.js';

const POSIX = process.platform !== 'win32';
const TEMP_NAME = /^\.secret\.json\.[0-9a-f]{12}\.tmp$/;
const keyText = (id: string): string => Buffer.from(fixtureKey(id)).toString('base64url');

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'launcher-auth-faults-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Records the rotations an authority reports. */
function observe(authority: TokenAuthority): { rotations: RotateEvent[] } {
  const rotations: RotateEvent[] = [];
  const stop = authority.onRotate((event) => void rotations.push(event));
  onTestFinished(stop);
  return { rotations };
}

async function opened(options: Parameters<typeof TokenAuthority.open>[0]): Promise<TokenAuthority> {
  const authority = await TokenAuthority.open(options);
  onTestFinished(() => authority.close());
  return authority;
}

/** Asserts that `authority` still holds `keyId` and that `token` is still its valid token. */
async function expectUnchanged(authority: TokenAuthority, keyId: string, token: string): Promise<void> {
  expect(authority.keyId).toBe(keyId);
  expect(authority.issue()).toBeSameToken(token);
  expect(await authority.verify(token)).toMatchObject({ ok: true, keyId });
  expect(await authority.authenticate(`Bearer ${token}`)).toMatchObject({ ok: true, keyId });
}

// ---------------------------------------------------------------------------------------------------------
// A store whose saves the test settles by hand: each save lands in the store only when it resolves, as a
// rename would. `watch()` lets the test play another process.

interface PendingSave {
  readonly id: string;
  resolve(): void;
  reject(error: Error): void;
}

class ControlledStore implements SecretStore {
  #record: SecretRecord;
  readonly #watchers = new Set<() => void>();
  /** `hang`: saves wait for the test; `pass`: they land at once; `fail`: they reject at once. */
  mode: 'hang' | 'pass' | 'fail' | 'throw' = 'pass';
  /** A hanging save that rejects with the signal's reason, writing nothing, as soon as its signal is aborted. */
  honoursSignal = false;
  readonly pending: PendingSave[] = [];
  loads = 0;
  saves = 0;

  constructor(record: SecretRecord) {
    this.#record = record;
  }
  get storedId(): string {
    return this.#record.id;
  }
  async load(): Promise<SecretRecord> {
    this.loads++;
    return { ...this.#record, key: new Uint8Array(this.#record.key) };
  }
  /** The signal of each save, in order: the authority aborts the ones it gives up on. */
  readonly signals: Array<AbortSignal | undefined> = [];
  save(record: SecretRecord, options?: { signal?: AbortSignal }): Promise<void> {
    this.saves++;
    this.signals.push(options?.signal);
    const copy = { ...record, key: new Uint8Array(record.key) };
    if (this.mode === 'throw') throw new Error('the store broke before it could return a promise');
    if (this.mode === 'fail') return Promise.reject(Object.assign(new Error('EIO: i/o error, write'), { code: 'EIO' }));
    if (this.mode === 'pass') {
      this.#record = copy;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      if (this.honoursSignal) options?.signal?.addEventListener('abort', () => reject(options.signal?.reason as Error));
      this.pending.push({
        id: copy.id,
        resolve: () => {
          this.#record = copy;
          resolve();
        },
        reject,
      });
    });
  }
  watch(onChange: () => void): () => void {
    this.#watchers.add(onChange);
    return () => void this.#watchers.delete(onChange);
  }
  /** Another process replaced the secret. */
  replace(record: SecretRecord): void {
    this.#record = record;
    for (const watcher of this.#watchers) watcher();
  }
}

// ---------------------------------------------------------------------------------------------------------

describe('a save that rejects', () => {
  it.each(['fail', 'throw'] as const)(
    'save() that %ss: rotate() rejects with ERR_SAVE_FAILED carrying the cause; nothing changed, the queue goes on',
    async (mode) => {
      const store = new ControlledStore(fixtureRecord('kept'));
      const authority = await opened({ store });
      const { rotations } = observe(authority);
      const token = authority.issue();
      const before = await authority.verify(token);
      const signal = before.ok ? before.signal : undefined;
      expect(signal).toBeInstanceOf(AbortSignal);

      store.mode = mode;
      const error = await rejectionOf(authority.rotate());
      expect(error.code).toBe('ERR_SAVE_FAILED');
      expect(error.message).toMatch(/current token stays valid/);
      expect(error.message.includes(keyText('kept'))).toBe(false);
      expect((error.cause as Error).message).toMatch(mode === 'fail' ? /^EIO/ : /before it could return a promise/);
      await expectUnchanged(authority, 'kept', token);
      expect(store.storedId).toBe('kept');
      expect(rotations).toEqual([]);
      expect(signal?.aborted).toBe(false);

      // The failure did not jam the rotation queue.
      store.mode = 'pass';
      const next = await authority.rotate();
      expect(authority.keyId).toBe(store.storedId);
      expect(await authority.verify(next)).toMatchObject({ ok: true, keyId: store.storedId });
      expect(await authority.verify(token)).toEqual({ ok: false, reason: 'rotated' });
      expect(rotations).toEqual([{ keyId: store.storedId, previousKeyId: 'kept' }]);
      expect(signal?.aborted).toBe(true);
    },
  );
});

describe.runIf(POSIX)('a full disk', () => {
  /**
   * A FileSecretStore on a disk that fills up midway through writing the temporary file: part of the new
   * record reaches a temporary file, then ENOSPC. The wrapper leaves that partial file behind, as a crash at
   * that instant would (the real store removes it; see the tmpfs test below).
   */
  class DiskFullMidway implements SecretStore {
    readonly inner: FileSecretStore;
    full = true;
    constructor(path: string) {
      this.inner = new FileSecretStore(path);
    }
    load(): Promise<SecretRecord | undefined> {
      return this.inner.load();
    }
    async save(record: SecretRecord): Promise<void> {
      if (!this.full) return this.inner.save(record);
      const text = JSON.stringify({ version: 1, id: record.id, key: Buffer.from(record.key).toString('base64url') });
      const temporary = join(this.inner.path, '..', `.secret.json.${randomBytes(6).toString('hex')}.tmp`);
      const handle = await open(temporary, 'wx', 0o600);
      try {
        await handle.writeFile(text.slice(0, 40));
      } finally {
        await handle.close();
      }
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), {
        code: 'ENOSPC',
        errno: -28,
        syscall: 'write',
      });
    }
  }

  it('ENOSPC midway through the temporary file: ERR_SAVE_FAILED, the real file whole, the partial file ignored', async () => {
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    await new FileSecretStore(path).save(fixtureRecord('before-full'));
    const before = await readFile(path);
    const store = new DiskFullMidway(path);
    const authority = await opened({ store });
    const { rotations } = observe(authority);
    const token = authority.issue();

    const error = await rejectionOf(authority.rotate());
    expect(error.code).toBe('ERR_SAVE_FAILED');
    expect((error.cause as { code?: unknown }).code).toBe('ENOSPC');
    await expectUnchanged(authority, 'before-full', token);
    expect(rotations).toEqual([]);
    expect((await readFile(path)).equals(before)).toBe(true);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    const entries = await readdir(dir);
    expect(entries).toHaveLength(2);
    expect(entries.filter((name) => TEMP_NAME.test(name))).toHaveLength(1);

    // Another launcher starting now reads the whole old record, not the partial one beside it.
    const second = await opened({ store: new FileSecretStore(path) });
    expect(second.issue()).toBeSameToken(token);

    // Space again: the next rotation replaces the file whole, and the partial file changes nothing.
    store.full = false;
    const next = await authority.rotate();
    const saved = await new FileSecretStore(path).load();
    expect(saved?.id).toBe(authority.keyId);
    expect(await authority.verify(next)).toMatchObject({ ok: true, keyId: saved?.id });
    expect(await authority.verify(token)).toEqual({ ok: false, reason: 'rotated' });
  });

  // A real full disk needs a file system of its own: a 64 KB tmpfs in a private mount namespace (unshare, as
  // root or through a user namespace). Skipped where neither is allowed.
  const unshareFlags = ((): string[] | undefined => {
    if (process.platform !== 'linux') return undefined;
    const flags = process.getuid?.() === 0 ? ['-m'] : ['-r', '-m'];
    const probe = spawnSync('unshare', [...flags, 'sh', '-c', 'mount -t tmpfs -o size=64k tmpfs /mnt'], {
      timeout: budget(5_000),
    });
    return probe.status === 0 ? flags : undefined;
  })();

  it.runIf(unshareFlags !== undefined)(
    'a real ENOSPC on a full tmpfs: ERR_SAVE_FAILED over ERR_STORE_IO, file whole, no temp file',
    async () => {
      const dir = await tempDir();
      const command = await fixtureCommand('full-disk.ts');
      onTestFinished(() => command.dispose());
      const script = 'mount -t tmpfs -o size=64k,mode=0700 tmpfs "$1" && shift && exec "$@"';
      const child = spawn(
        'unshare',
        [...(unshareFlags as string[]), 'sh', '-c', script, 'sh', dir, process.execPath, ...command.args, dir],
        { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      let err = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => void (out += chunk));
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => void (err += chunk));
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      expect({ code, err: err.slice(-1_000) }).toEqual({ code: 0, err: '' });
      const { whileFull, afterFree } = JSON.parse(out) as {
        whileFull: Record<string, unknown> & { message: string; causeMessage: string; firstId: string };
        afterFree: Record<string, unknown>;
      };

      expect(whileFull).toMatchObject({
        fillError: 'ENOSPC',
        rejected: true,
        code: 'ERR_SAVE_FAILED',
        causeCode: 'ERR_STORE_IO',
        sameBytes: true,
        entries: ['filler', 'secret.json'],
        keyId: whileFull.firstId,
        sameToken: true,
        firstTokenOk: true,
        loadedId: whileFull.firstId,
      });
      expect(whileFull.causeMessage).toMatch(
        /^Cannot write the secret file .*secret\.json: ENOSPC, no space left on the device\.$/,
      );
      expect(afterFree).toEqual({
        keyId: afterFree['loadedId'],
        changed: true,
        firstTokenOk: false,
        secondTokenOk: true,
        loadedId: afterFree['keyId'],
        entries: ['secret.json'],
      });
    },
  );
});

/** The file store, counting the loads that found a record: while the file is gone, none does. */
class FindingFileStore extends FileSecretStore {
  found = 0;
  override async load(): Promise<SecretRecord | undefined> {
    const record = await super.load();
    if (record !== undefined) this.found += 1;
    return record;
  }
}

describe.runIf(POSIX)('the secret file deleted under a running authority', () => {
  // test/stores/file.test.ts shows the token kept and a file saved by someone else taken up; here the
  // authority's own next rotation brings the file back.
  it('token kept, onStoreError told; a later rotate() recreates the file, 0600, and a fresh open agrees', async () => {
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    const errors: Error[] = [];
    const store = new FindingFileStore(path);
    const authority = await opened({
      store,
      onStoreError: (error) => void errors.push(error),
    });
    const { rotations } = observe(authority);
    const keyId = authority.keyId;
    const token = authority.issue();

    await rm(path);
    expect(await until(() => errors.length > 0)).toBe(true);
    expect(isLauncherAuthError(errors[0], 'ERR_STORE_IO')).toBe(true);
    await expectUnchanged(authority, keyId, token);
    expect(await readdir(dir)).toEqual([]);
    const errorsBefore = errors.length;
    const foundBefore = store.found;

    const next = await authority.rotate();
    expect(await readdir(dir)).toEqual(['secret.json']);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    const saved = await new FileSecretStore(path).load();
    expect(saved?.id).toBe(authority.keyId);
    expect(rotations).toEqual([{ keyId: authority.keyId, previousKeyId: keyId }]);
    expect(await authority.verify(token)).toEqual({ ok: false, reason: 'rotated' });
    expect(await authority.verify(next)).toMatchObject({ ok: true, keyId: authority.keyId });
    const fresh = await opened({ store: new FileSecretStore(path) });
    expect(fresh.issue()).toBeSameToken(next);
    // The reload that the authority's own save sets off (its watcher sees the file come back) finds the file whole:
    // no new error, by the turn after that load.
    expect(await until(() => store.found > foundBefore)).toBe(true);
    await nextTurn();
    expect(errors).toHaveLength(errorsBefore);
    for (const error of errors) expect(isLauncherAuthError(error, 'ERR_STORE_IO')).toBe(true);
  });
});

describe('a save that hangs: saveTimeout', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('rotate() rejects with ERR_SAVE_UNCERTAIN saying it timed out; the save never landed: the token stays valid', async () => {
    const store = new ControlledStore(fixtureRecord('steady'));
    const errors: Error[] = [];
    const authority = await opened({ store, saveTimeout: 100, onStoreError: (error) => void errors.push(error) });
    const { rotations } = observe(authority);
    const token = authority.issue();

    store.mode = 'hang';
    const loadsBefore = store.loads;
    // When the signal is aborted and when rotate() rejects is checked on a fake clock below (the default timeout).
    const error = await rejectionOf(authority.rotate());
    expect(error.code).toBe('ERR_SAVE_UNCERTAIN');
    expect(isLauncherAuthError(error, 'ERR_SAVE_UNCERTAIN')).toBe(true);
    expect(error.message).toMatch(/did not settle within 100 ms \(timed out\), nor 100 ms after it was told to stop/);
    expect(store.pending).toHaveLength(1);
    expect(store.signals[0]?.aborted).toBe(true);
    expect((store.signals[0]?.reason as DOMException).name).toBe('TimeoutError');
    // The authority reads the store at once, and finds the save did not land.
    expect(await until(() => store.loads > loadsBefore)).toBe(true);
    await expectUnchanged(authority, 'steady', token);
    expect(store.storedId).toBe('steady');
    expect(rotations).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('a store that honours the aborted signal within the grace: ERR_SAVE_FAILED, nothing changed, nothing will', async () => {
    const store = new ControlledStore(fixtureRecord('honest'));
    const authority = await opened({ store, saveTimeout: 50 });
    const { rotations } = observe(authority);
    const token = authority.issue();
    store.mode = 'hang';
    store.honoursSignal = true;
    const error = await rejectionOf(authority.rotate());
    expect(error.code).toBe('ERR_SAVE_FAILED');
    expect(error.message).toMatch(/nothing changed and the current token stays valid/);
    expect((error.cause as DOMException).name).toBe('TimeoutError');
    // The save settled (rejected), so nothing can land later: resolving it now stores nothing.
    (store.pending[0] as PendingSave).resolve();
    // The store is in memory: whatever the late resolution sets off has run by the loop's next turn.
    await nextTurn();
    await expectUnchanged(authority, 'honest', token);
    expect(rotations).toEqual([]);
  });

  it('the queue moves on during the hang: a later rotate() and a reload go through; a late save is then undone', async () => {
    const store = new ControlledStore(fixtureRecord('a'));
    const authority = await opened({ store, saveTimeout: 50 });
    const { rotations } = observe(authority);
    const tokenA = authority.issue();

    store.mode = 'hang';
    const first = authority.rotate();
    // Queued behind the hung one: runs once that one has been given up on, and its own save hangs too.
    const second = authority.rotate();
    expect((await rejectionOf(first)).message).toMatch(/timed out/);
    expect((await rejectionOf(second)).message).toMatch(/timed out/);
    expect(store.pending).toHaveLength(2);
    const [hungB, hungC] = store.pending as [PendingSave, PendingSave];
    // Both saves were told they were given up on; this store cannot abort, so they go on regardless.
    expect(store.signals.map((signal) => signal?.aborted)).toEqual([true, true]);

    // A rotation whose save works, while both hung saves are still out.
    store.mode = 'pass';
    const tokenD = await authority.rotate();
    const idD = authority.keyId;
    expect(store.storedId).toBe(idD);
    expect(await authority.verify(tokenD)).toMatchObject({ ok: true, keyId: idD });
    expect(await authority.verify(tokenA)).toEqual({ ok: false, reason: 'rotated' });

    // Another process replaces the secret: the reload is not held up by the hung saves either.
    store.replace(fixtureRecord('external'));
    expect(await until(() => authority.keyId === 'external')).toBe(true);
    expect(await authority.verify(tokenD)).toEqual({ ok: false, reason: 'rotated' });
    const tokenExternal = authority.issue();

    // The first hung save lands at last, over the current secret: a rotation that gave up must not win. The
    // authority finds its own abandoned record in the store and writes the current one back.
    const savesBefore = store.saves;
    hungB.resolve();
    expect(store.storedId).toBe(hungB.id);
    expect(await until(() => store.storedId === 'external')).toBe(true);
    expect(store.saves).toBe(savesBefore + 1);
    expect(authority.keyId).toBe('external');
    expect(authority.issue()).toBeSameToken(tokenExternal);
    expect(await authority.verify(tokenExternal)).toMatchObject({ ok: true, keyId: 'external' });

    // The second one fails late: the store and the authority keep the current secret. The reload it sets off reads
    // an in-memory store: by the next turn of the event loop, whatever that reload does has been done.
    const loadsBeforeC = store.loads;
    hungC.reject(new Error('EIO: i/o error, write'));
    expect(await until(() => store.loads > loadsBeforeC)).toBe(true);
    await nextTurn();
    expect(authority.keyId).toBe('external');
    expect(store.storedId).toBe('external');
    expect(store.saves).toBe(savesBefore + 1);

    expect(rotations).toEqual([
      { keyId: idD, previousKeyId: 'a' },
      { keyId: 'external', previousKeyId: idD },
    ]);
  });

  it('a late save after a successful rotate(): the token rotate() returned stays valid, the abandoned one never is', async () => {
    const store = new ControlledStore(fixtureRecord('t0'));
    const errors: Error[] = [];
    const authority = await opened({ store, saveTimeout: 30, onStoreError: (error) => void errors.push(error) });
    const { rotations } = observe(authority);

    store.mode = 'hang';
    expect((await rejectionOf(authority.rotate())).message).toMatch(/timed out/);
    const hung = store.pending[0] as PendingSave;
    store.mode = 'pass';
    const t1 = await authority.rotate();
    const idT1 = authority.keyId;

    hung.resolve(); // the abandoned save lands after t1 was shown to the user
    expect(await until(() => store.storedId === idT1)).toBe(true);
    expect(authority.keyId).toBe(idT1);
    expect(await authority.verify(t1)).toMatchObject({ ok: true, keyId: idT1 });
    expect(rotations).toEqual([{ keyId: idT1, previousKeyId: 't0' }]);
    // A fresh instance on the same store agrees on t1.
    const fresh = await opened({ store });
    expect(fresh.issue()).toBeSameToken(t1);
    expect(errors).toEqual([]);
  });

  it('a late save with no other key since: ERR_SAVE_UNCERTAIN, then the landed key is adopted and onRotate tells it', async () => {
    const store = new ControlledStore(fixtureRecord('kept'));
    const authority = await opened({ store, saveTimeout: 30 });
    const { rotations } = observe(authority);
    const token = authority.issue();
    store.mode = 'hang';
    expect((await rejectionOf(authority.rotate())).code).toBe('ERR_SAVE_UNCERTAIN');
    const landed = store.pending[0] as PendingSave;
    landed.resolve();
    expect(await until(() => authority.keyId === landed.id)).toBe(true);
    expect(store.storedId).toBe(landed.id);
    expect(rotations).toEqual([{ keyId: landed.id, previousKeyId: 'kept' }]);
    expect(await authority.verify(token)).toEqual({ ok: false, reason: 'rotated' });
    expect(await authority.verify(authority.issue())).toMatchObject({ ok: true, keyId: landed.id });
  });

  it('a late save that fails changes nothing: the reload finds the old record', async () => {
    const store = new ControlledStore(fixtureRecord('old'));
    const authority = await opened({ store, saveTimeout: 30 });
    const { rotations } = observe(authority);
    const token = authority.issue();

    store.mode = 'hang';
    await rejectionOf(authority.rotate());
    const loadsBefore = store.loads;
    (store.pending[0] as PendingSave).reject(new Error('ENOSPC: no space left on device, write'));
    expect(await until(() => store.loads > loadsBefore)).toBe(true);
    // The reload's answer is in memory: what the authority does with it has run by the loop's next turn.
    await nextTurn();
    await expectUnchanged(authority, 'old', token);
    expect(rotations).toEqual([]);
  });

  it('a late save after close() is left alone', async () => {
    const store = new ControlledStore(fixtureRecord('closing'));
    const authority = await TokenAuthority.open({ store, saveTimeout: 30 });
    store.mode = 'hang';
    await rejectionOf(authority.rotate());
    await authority.close();
    const loadsBefore = store.loads;
    (store.pending[0] as PendingSave).resolve();
    await nextTurn();
    expect(store.loads).toBe(loadsBefore);
    expect(authority.keyId).toBe('closing');
  });

  it('saveTimeout: 0 waits as long as the save takes', async () => {
    const store = new ControlledStore(fixtureRecord('patient'));
    const authority = await opened({ store, saveTimeout: 0 });
    const { rotations } = observe(authority);
    store.mode = 'hang';
    let settled = false;
    // On a fake clock moved past the default timeout and its grace: no timer of any length ends the wait.
    vi.useFakeTimers();
    const rotation = authority.rotate().finally(() => {
      settled = true;
    });
    await vi.advanceTimersByTimeAsync(2 * 61_000);
    expect(store.pending).toHaveLength(1);
    expect(settled).toBe(false);
    vi.useRealTimers();
    (store.pending[0] as PendingSave).resolve();
    const token = await rotation;
    expect(authority.keyId).toBe(store.storedId);
    expect(await authority.verify(token)).toMatchObject({ ok: true, keyId: store.storedId });
    expect(rotations).toEqual([{ keyId: store.storedId, previousKeyId: 'patient' }]);
  });

  it('the default is 60000 ms: signal aborted at 60000 ms, rejected at 61000 ms (the grace of at most 1 s)', async () => {
    const store = new ControlledStore(fixtureRecord('default'));
    const authority = await opened({ store });
    store.mode = 'hang';
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let outcome: unknown = 'pending';
    const rotation = authority.rotate().then(
      () => 'resolved',
      (error: unknown) => error,
    );
    void rotation.then((value) => {
      outcome = value;
    });
    // The timer starts in the same step as the save; the save starts after the new key is built.
    while (store.pending.length === 0) await new Promise((resolve) => setImmediate(resolve));
    const settle = async (): Promise<void> => {
      for (let i = 0; i < 10; i++) await Promise.resolve();
    };
    vi.advanceTimersByTime(59_999);
    await settle();
    expect(outcome).toBe('pending');
    expect(store.signals[0]?.aborted).toBe(false);
    vi.advanceTimersByTime(1);
    await settle();
    expect(store.signals[0]?.aborted).toBe(true);
    vi.advanceTimersByTime(999);
    await settle();
    expect(outcome).toBe('pending');
    vi.advanceTimersByTime(1);
    const error = (await rotation) as LauncherAuthError;
    expect(isLauncherAuthError(error, 'ERR_SAVE_UNCERTAIN')).toBe(true);
    expect(error.message).toMatch(/did not settle within 60000 ms \(timed out\), nor 1000 ms after/);
    expect(authority.keyId).toBe('default');
  });

  it.each([
    ['-1', -1],
    ['1.5', 1.5],
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['2 ** 31', 2 ** 31],
    ['"100"', '100'],
    ['null', null],
  ])('saveTimeout %s is refused with a TypeError naming the option', async (_, saveTimeout) => {
    const store = new MemorySecretStore(fixtureRecord('options'));
    const error: unknown = await TokenAuthority.open({ store, saveTimeout: saveTimeout as number }).then(
      () => 'resolved',
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(TypeError);
    expect((error as TypeError).message).toMatch(/`saveTimeout`/);
  });

  it.each([0, 1, 2 ** 31 - 1])('saveTimeout %d is accepted', async (saveTimeout) => {
    const authority = await opened({ store: new MemorySecretStore(fixtureRecord('options')), saveTimeout });
    expect(authority.keyId).toBe('options');
  });
});

describe('close() while a rotation is saving', () => {
  it('rejects the rotation with ERR_CLOSED and tells no onRotate listener', async () => {
    let release: () => void = () => undefined;
    let saving: () => void = () => undefined;
    const saveStarted = new Promise<void>((resolve) => (saving = resolve));
    const inner = new MemorySecretStore();
    const store: SecretStore = {
      load: () => inner.load(),
      save: async (record) => {
        const released = new Promise<void>((resolve) => (release = resolve));
        saving();
        await released;
        await inner.save(record);
      },
    };
    await (await TokenAuthority.open({ store: inner })).close(); // seeds the store, so open() below saves nothing
    const held = await TokenAuthority.open({ store });
    let told = 0;
    held.onRotate(() => told++);
    const rotation = held.rotate();
    await saveStarted;
    await held.close();
    release();
    await expect(rotation).rejects.toMatchObject({ code: 'ERR_CLOSED' });
    expect(told).toBe(0);
  });
});

// ---------------------------------------------------------------------------------------------------------
// Custom stores that break in the ways real ones do. `save` is replaced per test; the record is kept as a copy,
// and `watch()` lets the store report a change as a store coordinating instances would.

type SaveBehaviour = (
  record: SecretRecord,
  write: () => void,
  options?: { signal?: AbortSignal },
) => Promise<void> | void;

class CustomStore implements SecretStore {
  #record: SecretRecord;
  readonly #watchers = new Set<() => Promise<void>>();
  behaviour: SaveBehaviour | undefined;
  loadFails = false;
  constructor(record: SecretRecord) {
    this.#record = record;
  }
  get storedId(): string {
    return this.#record.id;
  }
  async load(): Promise<SecretRecord> {
    if (this.loadFails) throw Object.assign(new Error('EIO: i/o error, read'), { code: 'EIO' });
    return { ...this.#record, key: new Uint8Array(this.#record.key) };
  }
  save(record: SecretRecord, options?: { signal?: AbortSignal }): Promise<void> {
    const write = (): void => {
      this.#record = { ...record, key: new Uint8Array(record.key) };
    };
    if (this.behaviour === undefined) {
      write();
      return Promise.resolve();
    }
    // A synchronous throw from the behaviour is the store's own: it leaves save() as a throw, not a rejection.
    return Promise.resolve(this.behaviour(record, write, options));
  }
  watch(onChange: () => Promise<void>): () => void {
    this.#watchers.add(onChange);
    return () => void this.#watchers.delete(onChange);
  }
  /** Someone else wrote `record` (no report: the store tells of it through its own save's answer). */
  putElsewhere(record: SecretRecord): void {
    this.#record = record;
  }
  /** What the store's change report does: resolves once the authority has reloaded. */
  async report(): Promise<void> {
    await Promise.all([...this.#watchers].map((watcher) => watcher()));
  }
}

function storeError(code: 'ERR_SAVE_CONFLICT' | 'ERR_SAVE_UNCERTAIN' | 'ERR_ROTATION_SUPERSEDED'): LauncherAuthError {
  return new LauncherAuthError(code, `the store says ${code}`);
}

/**
 * The store holds `keyId`, the authority holds it too, `token` works and `issue()` returns it: when the outcome
 * arrives, and again after a change report has gone through the authority's queue (a reload of what the store
 * holds), by which every reaction the outcome left queued has run.
 */
async function expectSettledOn(
  authority: TokenAuthority,
  store: CustomStore,
  keyId: string,
  token: string,
): Promise<void> {
  expect(store.storedId).toBe(keyId);
  await expectUnchanged(authority, keyId, token);
  await store.report();
  expect(store.storedId).toBe(keyId);
  await expectUnchanged(authority, keyId, token);
}

describe('custom stores: each outcome of rotate() matches its code, and the final state matches the outcome', () => {
  it('save() that hangs forever: ERR_SAVE_UNCERTAIN; nothing landed, so the token from before stays, and the queue goes on', async () => {
    const store = new CustomStore(fixtureRecord('before-hang'));
    const authority = await opened({ store, saveTimeout: 40 });
    const { rotations } = observe(authority);
    const token = authority.issue();
    let signal: AbortSignal | undefined;
    store.behaviour = (_record, _write, options) => {
      signal = options?.signal;
      return new Promise<void>(() => undefined);
    };
    const error = await rejectionOf(authority.rotate());
    expect(error.code).toBe('ERR_SAVE_UNCERTAIN');
    expect(signal?.aborted).toBe(true);
    await expectSettledOn(authority, store, 'before-hang', token);
    expect(rotations).toEqual([]);

    store.behaviour = undefined;
    const next = await authority.rotate();
    await expectSettledOn(authority, store, authority.keyId, next);
    expect(await authority.verify(token)).toEqual({ ok: false, reason: 'rotated' });
    expect(rotations).toEqual([{ keyId: store.storedId, previousKeyId: 'before-hang' }]);
  });

  it('save() that rejects after writing: the store holds the new secret, so rotate() resolves with its token', async () => {
    const store = new CustomStore(fixtureRecord('before-write'));
    const authority = await opened({ store });
    const { rotations } = observe(authority);
    const token = authority.issue();
    store.behaviour = async (_record, write) => {
      write();
      throw Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' });
    };
    const next = await authority.rotate();
    expect(store.storedId).not.toBe('before-write');
    await expectSettledOn(authority, store, store.storedId, next);
    expect(await authority.verify(token)).toEqual({ ok: false, reason: 'rotated' });
    expect(rotations).toEqual([{ keyId: store.storedId, previousKeyId: 'before-write' }]);
  });

  it.each([
    ['before writing', false],
    ['after writing', true],
  ])(
    'save() that throws synchronously %s: ERR_SAVE_FAILED with nothing changed, or resolved with the stored secret',
    async (_, writes) => {
      const store = new CustomStore(fixtureRecord('sync'));
      const authority = await opened({ store });
      const { rotations } = observe(authority);
      const token = authority.issue();
      const cause = new Error('the store broke before it could return a promise');
      store.behaviour = (_record, write) => {
        if (writes) write();
        throw cause;
      };
      if (!writes) {
        const error = await rejectionOf(authority.rotate());
        expect(error.code).toBe('ERR_SAVE_FAILED');
        expect(error.cause).toBe(cause);
        await expectSettledOn(authority, store, 'sync', token);
        expect(rotations).toEqual([]);
      } else {
        const next = await authority.rotate();
        await expectSettledOn(authority, store, store.storedId, next);
        expect(store.storedId).not.toBe('sync');
        expect(await authority.verify(token)).toEqual({ ok: false, reason: 'rotated' });
        expect(rotations).toHaveLength(1);
      }
    },
  );

  it('save() that rejects and a load() that fails: ERR_SAVE_UNCERTAIN; once the store can be read, its secret is followed', async () => {
    const store = new CustomStore(fixtureRecord('unreadable'));
    const authority = await opened({ store });
    const { rotations } = observe(authority);
    const token = authority.issue();
    let newId = '';
    store.behaviour = async (record, write) => {
      newId = record.id;
      write();
      store.loadFails = true;
      throw new Error('EIO: i/o error, write');
    };
    const error = await rejectionOf(authority.rotate());
    expect(error.code).toBe('ERR_SAVE_UNCERTAIN');
    expect(authority.keyId).toBe('unreadable');
    // The store comes back, holding the new secret, and reports the change: the authority adopts it.
    store.loadFails = false;
    await store.report();
    expect(authority.keyId).toBe(newId);
    expect(rotations).toEqual([{ keyId: newId, previousKeyId: 'unreadable' }]);
    expect(await authority.verify(token)).toEqual({ ok: false, reason: 'rotated' });
    await expectSettledOn(authority, store, newId, authority.issue());
  });

  it("save() that rejects while another writer saved: ERR_SAVE_CONFLICT, and that writer's secret is current", async () => {
    const store = new CustomStore(fixtureRecord('mine'));
    const authority = await opened({ store });
    const { rotations } = observe(authority);
    const token = authority.issue();
    store.behaviour = async () => {
      store.putElsewhere(fixtureRecord('theirs'));
      throw new Error('EBUSY: resource busy');
    };
    const error = await rejectionOf(authority.rotate());
    expect(error.code).toBe('ERR_SAVE_CONFLICT');
    expect(authority.keyId).toBe('theirs');
    expect(rotations).toEqual([{ keyId: 'theirs', previousKeyId: 'mine' }]);
    expect(await authority.verify(token)).toEqual({ ok: false, reason: 'rotated' });
    await expectSettledOn(authority, store, 'theirs', authority.issue());
  });

  it.each([
    ['ERR_SAVE_CONFLICT', false],
    ['ERR_ROTATION_SUPERSEDED', true],
  ] as const)(
    'a store that rejects with %s: passed through, the newer secret current before it rejects',
    async (code, writesFirst) => {
      const store = new CustomStore(fixtureRecord('older'));
      const authority = await opened({ store });
      const { rotations } = observe(authority);
      const token = authority.issue();
      let mine = '';
      store.behaviour = async (record, write) => {
        mine = record.id;
        if (writesFirst) write();
        store.putElsewhere(fixtureRecord('newer'));
        throw storeError(code);
      };
      const error = await rejectionOf(authority.rotate());
      expect(error.code).toBe(code);
      expect(isLauncherAuthError(error.cause, code)).toBe(true);
      // Current when the rejection arrives: issue() gives the token that works now.
      expect(authority.keyId).toBe('newer');
      expect(rotations).toEqual([{ keyId: 'newer', previousKeyId: 'older' }]);
      expect(await authority.verify(token)).toEqual({ ok: false, reason: 'rotated' });
      expect(mine).not.toBe('');
      await expectSettledOn(authority, store, 'newer', authority.issue());
    },
  );

  it('a store that rejects with ERR_SAVE_UNCERTAIN and later reports that the secret landed: followed, onRotate told', async () => {
    const store = new CustomStore(fixtureRecord('unsure'));
    const authority = await opened({ store });
    const { rotations } = observe(authority);
    const token = authority.issue();
    let land: () => void = () => undefined;
    let newId = '';
    store.behaviour = async (record, write) => {
      newId = record.id;
      land = write;
      throw storeError('ERR_SAVE_UNCERTAIN');
    };
    const error = await rejectionOf(authority.rotate());
    expect(error.code).toBe('ERR_SAVE_UNCERTAIN');
    await expectSettledOn(authority, store, 'unsure', token);
    land();
    await store.report();
    expect(authority.keyId).toBe(newId);
    expect(rotations).toEqual([{ keyId: newId, previousKeyId: 'unsure' }]);
    expect(await authority.verify(token)).toEqual({ ok: false, reason: 'rotated' });
  });
});

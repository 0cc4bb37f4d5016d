// FileSecretStore on a real file system: format, modes, damaged files, crashes mid-save, changes made by
// another process, and failing saves. Every test works in its own temporary directory.
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { constants, readdirSync, statSync } from 'node:fs';
import {
  chmod,
  chown,
  lchown,
  lstat,
  mkdir,
  mkdtemp,
  open,
  readFile,
  readdir,
  readlink,
  rename,
  rm,
  stat,
  symlink,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  FileSecretStore,
  LauncherAuthError,
  MemorySecretStore,
  TokenAuthority,
  isLauncherAuthError,
  type LauncherAuthErrorCode,
  type SecretRecord,
  type SecretStore,
} from 'launcher-auth';
import { fixtureKey, fixtureRecord, sameRecord } from './fixtures/records.js';
import { authErrorOf as rejectionOf, rejectionOf as anyRejectionOf, nextTurn, until } from '../support/async.js';
import { deadline, within } from '../support/poll.js';
import { budget } from '../support/machine.js';
import { fixtureCommand } from '../hardening/fixtures/support.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const FIXTURES = fileURLToPath(new URL('./fixtures/', import.meta.url));
const POSIX = process.platform !== 'win32';
const IS_ROOT = process.getuid?.() === 0;
/** An unprivileged uid for the one test that needs permission bits to bite while the suite runs as root. */
const NOBODY = 65534;
/** The store's temporary files: the writer's pid, then 12 random hex digits. */
const TEMP_NAME = /^\.secret\.json\.\d+-[0-9a-f]{12}\.tmp$/;
/** The lock a save holds from its compare to its rename; a killed saver leaves it, and the next save breaks it. */
const LOCK_NAME = '.secret.json.lock';

const keyText = (id: string): string => Buffer.from(fixtureKey(id)).toString('base64url');
const fileText = (fields: Record<string, unknown>): string => `${JSON.stringify(fields)}\n`;
const recordFields = (record: SecretRecord): Record<string, unknown> => ({
  version: 1,
  id: record.id,
  key: Buffer.from(record.key).toString('base64url'),
  createdAt: record.createdAt.toISOString(),
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'launcher-auth-file-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function expectStoreError(
  error: LauncherAuthError,
  code: LauncherAuthErrorCode,
  path: string,
  secrets: string[],
): void {
  expect(error.code).toBe(code);
  expect(isLauncherAuthError(error, code)).toBe(true);
  expect(error.message).toContain(path);
  for (const secret of secrets) {
    // Booleans, so that a leak is not itself printed by the failing assertion.
    expect(error.message.includes(secret)).toBe(false);
    expect(error.message.includes(secret.slice(0, 12))).toBe(false);
  }
}

interface Snapshot {
  kind: string;
  mode: number;
  ino: number;
  mtimeMs: number;
  size: number;
  bytes: Buffer | undefined;
  entries: string[] | undefined;
  siblings: string[];
}

/** Everything a load could have changed about `path`: type, mode, inode, bytes, and what lies beside it. */
async function snapshot(path: string): Promise<Snapshot> {
  const stats = await lstat(path);
  const kind = stats.isFile() ? 'file' : stats.isDirectory() ? 'directory' : stats.isFIFO() ? 'fifo' : 'other';
  return {
    kind,
    mode: stats.mode & 0o7777,
    ino: stats.ino,
    mtimeMs: stats.mtimeMs,
    size: stats.size,
    bytes: stats.isFile() ? await readFile(path) : undefined,
    entries: stats.isDirectory() ? (await readdir(path)).sort() : undefined,
    siblings: (await readdir(dirname(path))).sort(),
  };
}

function expectUntouched(after: Snapshot, before: Snapshot): void {
  const { bytes: afterBytes, ...afterRest } = after;
  const { bytes: beforeBytes, ...beforeRest } = before;
  expect(afterRest).toEqual(beforeRest);
  expect(afterBytes === undefined ? beforeBytes === undefined : beforeBytes?.equals(afterBytes)).toBe(true);
}

interface Child {
  readonly process: ChildProcessWithoutNullStreams;
  readonly lines: readonly string[];
  /** The next unread line that satisfies `match`, waiting up to `timeout` ms for it. */
  next(match: (line: string) => boolean, timeout?: number): Promise<string>;
  /** Settles once the process has exited and its output has been read to the end. */
  readonly closed: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Runs test/stores/fixtures/<name> in its own Node process, through tsx (or `launch`, a bundle of it), from the
 * repository root.
 */
function runFixture(
  name: string,
  args: string[],
  ids: { uid?: number; gid?: number; cwd?: string } = {},
  launch: readonly string[] = ['--import', 'tsx', join(FIXTURES, name)],
): Child {
  const child = spawn(process.execPath, [...launch, ...args], {
    cwd: REPO,
    stdio: 'pipe',
    ...ids,
  });
  const lines: string[] = [];
  let partial = '';
  let stderr = '';
  let cursor = 0;
  let ended = false;
  let wake: (() => void) | undefined;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts);
    wake?.();
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('close', (code, signal) => {
      ended = true;
      wake?.();
      resolve({ code, signal });
    });
  });
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  /** The next line that `match`es, woken by each new line; fails when the child exits, or at a deadline. */
  const next = async (match: (line: string) => boolean, timeout = 10_000): Promise<string> => {
    let expired = false;
    const cancel = deadline(timeout, () => {
      expired = true;
      wake?.();
    });
    try {
      for (;;) {
        while (cursor < lines.length) {
          const line = lines[cursor++] as string;
          if (match(line)) return line;
        }
        if (ended || expired) {
          const why = ended ? 'exited' : `nothing within ${budget(timeout)} ms`;
          throw new Error(`fixture ${name}: ${why} before the expected line; stderr: ${stderr.slice(-2_000)}`);
        }
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
    } finally {
      cancel();
    }
  };
  return { process: child, lines, next, closed };
}

/** Runs `body` with the process umask at 0, so that only the modes the store passes explicitly can show. */
async function withUmask0<T>(body: () => Promise<T>): Promise<T> {
  const previous = process.umask(0);
  try {
    return await body();
  } finally {
    process.umask(previous);
  }
}

describe('FileSecretStore: format and round trip', () => {
  it('load() is undefined for a missing file and for a file in a missing directory', async () => {
    const dir = await tempDir();
    expect(await new FileSecretStore(join(dir, 'secret.json')).load()).toBeUndefined();
    expect(await new FileSecretStore(join(dir, 'no', 'such', 'secret.json')).load()).toBeUndefined();
    expect(await readdir(dir)).toEqual([]);
  });

  it('save() then load() gives back the same id, key bytes and createdAt, also through a second instance', async () => {
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    const record = fixtureRecord('round-trip');
    await new FileSecretStore(path).save(record);
    const loaded = await new FileSecretStore(path).load();
    expect(loaded?.id).toBe('round-trip');
    expect(loaded?.createdAt).toBeInstanceOf(Date);
    expect(loaded?.createdAt.getTime()).toBe(record.createdAt.getTime());
    expect(loaded?.key).toBeInstanceOf(Uint8Array);
    expect(loaded?.key.byteLength).toBe(32);
    expect(sameRecord(loaded, record)).toBe(true);
  });

  it('writes exactly {"version":1,"id":…,"key":<base64url>,"createdAt":<ISO 8601>} and a newline', async () => {
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    const record = fixtureRecord('format');
    await new FileSecretStore(path).save(record);
    const text = await readFile(path, 'utf8');
    const iso = record.createdAt.toISOString();
    const expected = `{"version":1,"id":"format","key":"${keyText('format')}","createdAt":"${iso}"}\n`;
    expect(text === expected).toBe(true);
    // The same, field by field, so that a failure says which part differs without printing the key.
    const parsed = JSON.parse(text) as Record<string, unknown>;
    expect(Object.keys(parsed)).toEqual(['version', 'id', 'key', 'createdAt']);
    expect(parsed.version).toBe(1);
    expect(parsed.id).toBe('format');
    expect(parsed.createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(String(parsed.key)).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(text.endsWith('}\n')).toBe(true);
    expect(await readdir(dir)).toEqual(['secret.json']);
  });

  it('saves only the bytes of the key view, not the rest of its buffer', async () => {
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    const record = fixtureRecord('view');
    const backing = new Uint8Array(64).fill(0xee);
    backing.set(record.key, 16);
    await new FileSecretStore(path).save({ ...record, key: new Uint8Array(backing.buffer, 16, 32) });
    expect(sameRecord(await new FileSecretStore(path).load(), record)).toBe(true);
  });

  it('a later save replaces the record whole', async () => {
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    const store = new FileSecretStore(path);
    await store.save(fixtureRecord('first'));
    await store.save(fixtureRecord('second'));
    expect(sameRecord(await store.load(), fixtureRecord('second'))).toBe(true);
    expect(await readFile(path, 'utf8')).toBe(fileText(recordFields(fixtureRecord('second'))));
    expect(await readdir(dir)).toEqual(['secret.json']);
  });

  it('createdAt round-trips at the edges of the calendar, and load() reads any zone offset', async () => {
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    const store = new FileSecretStore(path);
    const dates = [
      '2024-02-29T23:59:59.999Z',
      '0050-03-01T00:00:00.000Z',
      '+010000-01-01T00:00:00.000Z',
      '-000001-12-31T12:00:00.000Z',
    ];
    for (const iso of dates) {
      const record = { ...fixtureRecord('calendar'), createdAt: new Date(iso) };
      await store.save(record);
      expect((await store.load())?.createdAt.toISOString()).toBe(iso);
    }
    // Written by hand or another tool: an offset instead of Z, seconds without a fraction.
    await writeFile(
      path,
      fileText({ ...recordFields(fixtureRecord('offset')), createdAt: '2020-01-01T05:30:00+05:30' }),
    );
    expect((await store.load())?.createdAt.toISOString()).toBe('2020-01-01T00:00:00.000Z');
  });

  it('save() refuses an unusable record with ERR_INVALID_RECORD and writes nothing', async () => {
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    const record = fixtureRecord('short');
    const error = await rejectionOf(new FileSecretStore(path).save({ ...record, key: record.key.subarray(0, 31) }));
    expectStoreError(error, 'ERR_INVALID_RECORD', path, [keyText('short')]);
    expect(error.message).toMatch(/31 bytes/);
    expect(await readdir(dir)).toEqual([]);
  });
});

describe.runIf(POSIX)('FileSecretStore: modes', () => {
  it('creates the secret file and every temporary file 0600 from their first byte, even with umask 0', async () => {
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    // A worker thread lists the directory in a tight loop while saves run here, and records the mode of every
    // file it ever sees: a file created wider and narrowed afterwards would be caught in between.
    const flags = new Int32Array(new SharedArrayBuffer(12)); // [stop, ready, temp files seen]
    const observer = new Worker(
      `
      const { workerData, parentPort } = require('node:worker_threads');
      const fs = require('node:fs');
      const { dir, flags } = workerData;
      const seen = new Map();
      let scans = 0;
      Atomics.store(flags, 1, 1);
      while (Atomics.load(flags, 0) === 0) {
        scans++;
        let names;
        try { names = fs.readdirSync(dir); } catch { continue; }
        for (const name of names) {
          let mode;
          try { mode = fs.lstatSync(dir + '/' + name).mode & 0o170777; } catch { continue; }
          if (!seen.has(name)) {
            seen.set(name, new Set());
            if (name !== 'secret.json') Atomics.add(flags, 2, 1);
          }
          seen.get(name).add(mode);
        }
      }
      parentPort.postMessage({ scans, seen: [...seen].map(([name, modes]) => [name, [...modes]]) });
      `,
      { eval: true, workerData: { dir, flags } },
    );
    const report = new Promise<{ scans: number; seen: Array<[string, number[]]> }>((resolve, reject) => {
      observer.once('message', resolve);
      observer.once('error', reject);
    });
    let saves = 0;
    try {
      expect(await until(() => Atomics.load(flags, 1) === 1, 10_000, 1)).toBe(true);
      await withUmask0(async () => {
        const store = new FileSecretStore(path);
        // Bounded in count, not in time (a loaded machine only makes each save slower); stops early once a few
        // temporary files have been caught.
        while (saves < 400 && !(saves >= 30 && Atomics.load(flags, 2) >= 3)) {
          await store.save(fixtureRecord(`mode-${saves}`));
          saves++;
        }
      });
    } finally {
      Atomics.store(flags, 0, 1);
    }
    const { scans, seen } = await report;
    await observer.terminate();

    expect(saves).toBeGreaterThanOrEqual(30);
    expect(scans).toBeGreaterThan(0);
    const names = seen.map(([name]) => name);
    expect(names).toContain('secret.json');
    for (const name of names) expect(name === 'secret.json' || name === LOCK_NAME || TEMP_NAME.test(name)).toBe(true);
    // The point of the test: had a temporary file never been seen, it would prove nothing about them.
    expect(names.filter((name) => TEMP_NAME.test(name)).length).toBeGreaterThanOrEqual(1);
    for (const [name, modes] of seen) {
      expect({ name, modes: modes.map((mode) => mode.toString(8)) }).toEqual({ name, modes: ['100600'] });
    }
    expect((await stat(path)).mode & 0o7777).toBe(0o600);
    expect(await readdir(dir)).toEqual(['secret.json']);
  });

  it('creates missing parent directories 0700, nested, through save() and through TokenAuthority.open()', async () => {
    const dir = await tempDir();
    await withUmask0(async () => {
      await new FileSecretStore(join(dir, 'a', 'b', 'secret.json')).save(fixtureRecord('nested'));
      const authority = await TokenAuthority.open({
        store: new FileSecretStore(join(dir, 'c', 'd', 'e', 'secret.json')),
      });
      await authority.close();
    });
    for (const folder of ['a', 'a/b', 'c', 'c/d', 'c/d/e']) {
      expect({ folder, mode: ((await stat(join(dir, folder))).mode & 0o7777).toString(8) }).toEqual({
        folder,
        mode: '700',
      });
    }
    for (const file of ['a/b/secret.json', 'c/d/e/secret.json']) {
      expect({ file, mode: ((await stat(join(dir, file))).mode & 0o7777).toString(8) }).toEqual({ file, mode: '600' });
    }
    const nested = await new FileSecretStore(join(dir, 'a', 'b', 'secret.json')).load();
    expect(sameRecord(nested, fixtureRecord('nested'))).toBe(true);
  });

  it.each(
    [0o644, 0o640, 0o604, 0o660, 0o620, 0o602, 0o606, 0o666, 0o700 | 0o044].map((mode) => [mode.toString(8), mode]),
  )(
    'refuses a file of mode %s with ERR_STORE_PERMISSIONS, in load() and open(), and leaves it untouched',
    async (shown, mode) => {
      const dir = await tempDir();
      const path = join(dir, 'secret.json');
      await new FileSecretStore(path).save(fixtureRecord('exposed'));
      await chmod(path, mode);
      const before = await snapshot(path);

      const error = await rejectionOf(new FileSecretStore(path).load());
      expectStoreError(error, 'ERR_STORE_PERMISSIONS', path, [keyText('exposed')]);
      expect(error.message).toContain(`0${shown}`);
      expect(error.message).toMatch(/chmod 600/);
      expectUntouched(await snapshot(path), before);

      const opened = await rejectionOf(TokenAuthority.open({ store: new FileSecretStore(path) }));
      expectStoreError(opened, 'ERR_STORE_PERMISSIONS', path, [keyText('exposed')]);
      expectUntouched(await snapshot(path), before);
    },
  );

  it('accepts an owner-only file that is not writable (0400)', async () => {
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    await new FileSecretStore(path).save(fixtureRecord('read-only-file'));
    await chmod(path, 0o400);
    expect(sameRecord(await new FileSecretStore(path).load(), fixtureRecord('read-only-file'))).toBe(true);
  });
});

/** A token that a key of `record` signs, as someone holding the key could make one. */
async function tokenOf(record: SecretRecord): Promise<string> {
  const signer = await TokenAuthority.open({ store: new MemorySecretStore(record) });
  const token = signer.issue();
  await signer.close();
  return token;
}

/** load() and TokenAuthority.open() both refuse `path` with ERR_STORE_PERMISSIONS; returns load()'s error. */
async function expectRefused(path: string, secrets: string[], problem: RegExp): Promise<LauncherAuthError> {
  const error = await rejectionOf(new FileSecretStore(path).load());
  expectStoreError(error, 'ERR_STORE_PERMISSIONS', path, secrets);
  expect(error.message).toMatch(problem);
  const opened = await rejectionOf(TokenAuthority.open({ store: new FileSecretStore(path) }));
  expectStoreError(opened, 'ERR_STORE_PERMISSIONS', path, secrets);
  expect(opened.message).toMatch(problem);
  return error;
}

describe.runIf(POSIX)('FileSecretStore: StrictModes (owner, links, folders)', () => {
  const OTHER_OWNER = /owned by uid 65534, neither the user this process runs as/;

  it.runIf(IS_ROOT)('refuses a secret file owned by another user, even 0600, and leaves it untouched', async () => {
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    await new FileSecretStore(path).save(fixtureRecord('planted'));
    await chown(path, NOBODY, NOBODY);
    const before = await snapshot(path);
    const error = await expectRefused(
      path,
      [keyText('planted')],
      /is owned by uid 65534, not by the user this process runs as \(uid 0\)/,
    );
    expect(error.message).toContain(`chown 0 '${path}'`);
    expectUntouched(await snapshot(path), before);
  });

  it('refuses a symbolic link at the secret path, even to a good secret file of its own', async () => {
    const dir = await tempDir();
    const real = join(dir, 'real.json');
    await new FileSecretStore(real).save(fixtureRecord('behind-link'));
    const path = join(dir, 'secret.json');
    await symlink(real, path);
    const before = await snapshot(real);
    await expectRefused(path, [keyText('behind-link')], /is a symbolic link/);
    expect(await readlink(path)).toBe(real);
    expectUntouched(await snapshot(real), before);
    // A dangling link: the same answer, not "nothing stored yet".
    await rm(real);
    await expectRefused(path, [], /is a symbolic link/);
  });

  it('save() over a symbolic link replaces the link and never writes through it', async () => {
    const dir = await tempDir();
    const elsewhere = join(dir, 'elsewhere.txt');
    await writeFile(elsewhere, 'not yours to change\n', { mode: 0o600 });
    const path = join(dir, 'secret.json');
    await symlink(elsewhere, path);
    await new FileSecretStore(path).save(fixtureRecord('over-link'));
    expect((await lstat(path)).isFile()).toBe(true);
    expect(await readFile(elsewhere, 'utf8')).toBe('not yours to change\n');
    expect(sameRecord(await new FileSecretStore(path).load(), fixtureRecord('over-link'))).toBe(true);
  });

  it.each([0o770, 0o720, 0o707, 0o702, 0o777, 0o1777, 0o1770].map((mode) => [mode.toString(8).padStart(4, '0'), mode]))(
    'refuses a secret whose own folder has mode %s (sticky or not) in load(), open() and save()',
    async (shown, mode) => {
      const dir = await tempDir();
      const folder = join(dir, 'launcher');
      const path = join(folder, 'secret.json');
      await new FileSecretStore(path).save(fixtureRecord('open-folder'));
      await chmod(folder, mode);
      const before = await snapshot(path);
      const error = await expectRefused(path, [keyText('open-folder')], /is writable by group or others/);
      expect(error.message).toContain(`The folder ${folder} that holds the secret file ${path}`);
      expect(error.message).toContain(`(mode ${shown})`);
      if ((mode & 0o1000) === 0) expect(error.message).toContain(`chmod 700 '${folder}'`);
      else {
        // Sticky and open: a shared folder, whose mode others rely on. The secret moves; the folder stays.
        expect(error.message).toContain('it is a shared folder, where another user could create the secret file first');
        expect(error.message).toContain('Keep the secret in a private folder of your own instead');
        expect(error.message).not.toContain('chmod');
      }
      const saved = await rejectionOf(new FileSecretStore(path).save(fixtureRecord('into-open-folder')));
      expectStoreError(saved, 'ERR_STORE_PERMISSIONS', path, [keyText('into-open-folder'), keyText('open-folder')]);
      expectUntouched(await snapshot(path), before);
      // The fix the message gives works.
      await chmod(folder, 0o700);
      expect(sameRecord(await new FileSecretStore(path).load(), fixtureRecord('open-folder'))).toBe(true);
    },
  );

  it('refuses to create a secret file directly in a folder such as /tmp (a sticky folder open to all)', async () => {
    const dir = await tempDir();
    await chmod(dir, 0o1777);
    const path = join(dir, 'secret.json');
    const opened = await rejectionOf(TokenAuthority.open({ store: new FileSecretStore(path) }));
    expect(opened.code).toBe('ERR_STORE_PERMISSIONS');
    expect(opened.message).toContain(path);
    expect(await readdir(dir)).toEqual([]);
    const saved = await rejectionOf(new FileSecretStore(path).save(fixtureRecord('in-tmp')));
    expectStoreError(saved, 'ERR_STORE_PERMISSIONS', path, [keyText('in-tmp')]);
    expect(await readdir(dir)).toEqual([]);
  });

  // Those the machine has as shared sticky folders, where a secret file is refused.
  const sharedFolders = ['/tmp', '/var/tmp', '/dev/shm'].filter((folder) => {
    try {
      return (statSync(folder).mode & 0o1022) === 0o1022;
    } catch {
      return false;
    }
  });
  it.runIf(POSIX).each(sharedFolders)(
    'a secret directly in %s: the hint is a private folder, never a chmod of the shared one',
    async (shared) => {
      const stats = await stat(shared);
      const path = join(shared, `launcher-auth-hint-${process.pid}-${Math.random().toString(16).slice(2)}.json`);
      const saved = await rejectionOf(new FileSecretStore(path).save(fixtureRecord('in-shared')));
      expectStoreError(saved, 'ERR_STORE_PERMISSIONS', path, [keyText('in-shared')]);
      expect(saved.message).toBe(
        `The folder ${shared} that holds the secret file ${path} is writable by group or others (mode ${(stats.mode & 0o7777).toString(8).padStart(4, '0')}): ` +
          'it is a shared folder, where another user could create the secret file first. Keep the secret in a private ' +
          `folder of your own instead, such as one made with: mkdir -m 700 ~/.config/<app>; do not change the mode of ${shared}, which others use.`,
      );
      expect((await readdir(shared)).some((name) => name.startsWith(`launcher-auth-hint-${process.pid}-`))).toBe(false);
    },
  );

  it.runIf(IS_ROOT)("refuses a secret whose own folder is another user's, even 0700", async () => {
    const dir = await tempDir();
    const folder = join(dir, 'launcher');
    const path = join(folder, 'secret.json');
    await new FileSecretStore(path).save(fixtureRecord('their-folder'));
    await chown(folder, NOBODY, NOBODY);
    const error = await expectRefused(path, [keyText('their-folder')], OTHER_OWNER);
    expect(error.message).toContain(`The folder ${folder} that holds the secret file ${path}`);
    const saved = await rejectionOf(new FileSecretStore(path).save(fixtureRecord('into-their-folder')));
    expectStoreError(saved, 'ERR_STORE_PERMISSIONS', path, [keyText('into-their-folder')]);
    expect(await readdir(folder)).toEqual(['secret.json']);
  });

  it('checks every folder above: refuses one writable by group or others without the sticky bit', async () => {
    const dir = await tempDir();
    const above = join(dir, 'shared');
    const path = join(above, 'launcher', 'secret.json');
    await new FileSecretStore(path).save(fixtureRecord('above'));
    for (const mode of [0o775, 0o757, 0o777]) {
      await chmod(above, mode);
      const error = await expectRefused(path, [keyText('above')], /is writable by group or others/);
      expect(error.message).toContain(`The folder ${above}, above the secret file ${path},`);
      expect(error.message).toContain(`chmod go-w '${above}'`);
    }
    // Sticky, as /tmp is: nobody else may rename or remove the folder below, so the secret is safe.
    await chmod(above, 0o1777);
    expect(sameRecord(await new FileSecretStore(path).load(), fixtureRecord('above'))).toBe(true);
  });

  it.runIf(IS_ROOT)('checks every folder above: refuses one owned by another user, even 0755', async () => {
    const dir = await tempDir();
    const above = join(dir, 'theirs');
    const path = join(above, 'launcher', 'secret.json');
    await new FileSecretStore(path).save(fixtureRecord('under-theirs'));
    await chmod(above, 0o755);
    await chown(above, NOBODY, NOBODY);
    const error = await expectRefused(path, [keyText('under-theirs')], OTHER_OWNER);
    expect(error.message).toContain(`The folder ${above}, above the secret file ${path},`);
  });

  it('follows a symbolic link to a folder and checks the folder it leads to', async () => {
    const dir = await tempDir();
    const real = join(dir, 'real');
    await mkdir(real, { mode: 0o700 });
    await symlink(real, join(dir, 'link'));
    const path = join(dir, 'link', 'secret.json');
    await new FileSecretStore(path).save(fixtureRecord('via-link'));
    expect(await readdir(real)).toEqual(['secret.json']);
    expect(sameRecord(await new FileSecretStore(path).load(), fixtureRecord('via-link'))).toBe(true);
    await chmod(real, 0o777);
    const error = await expectRefused(path, [keyText('via-link')], /is writable by group or others/);
    expect(error.message).toContain(`The folder ${real} that holds the secret file ${path}`);
  });

  it('refuses a path through a symbolic link in a folder writable by others (not sticky): the link could be re-pointed', async () => {
    const dir = await tempDir();
    const real = join(dir, 'real');
    const older = join(dir, 'older');
    const shared = join(dir, 'shared');
    await mkdir(shared, { mode: 0o755 });
    await mkdir(real, { mode: 0o700 });
    const link = join(shared, 'launcher');
    await symlink(real, link);
    const path = join(link, 'secret.json');
    await new FileSecretStore(join(older, 'secret.json')).save(fixtureRecord('older'));
    await new FileSecretStore(path).save(fixtureRecord('current'));
    expect(sameRecord(await new FileSecretStore(path).load(), fixtureRecord('current'))).toBe(true);
    const before = await snapshot(join(real, 'secret.json'));
    for (const mode of [0o777, 0o775, 0o757, 0o773]) {
      await chmod(shared, mode);
      const error = await expectRefused(path, [keyText('current')], /is writable by group or others/);
      expect(error.message).toContain(
        `The folder ${shared}, which holds the symbolic link ${link} on the way to the secret file ${path},`,
      );
      expect(error.message).toContain(`(mode ${mode.toString(8).padStart(4, '0')})`);
      expect(error.message).toContain(`chmod go-w '${shared}'`);
      const saved = await rejectionOf(new FileSecretStore(path).save(fixtureRecord('through-open-link')));
      expectStoreError(saved, 'ERR_STORE_PERMISSIONS', path, [keyText('through-open-link'), keyText('current')]);
    }
    // What another user would do there: re-point the link to an older secret of the victim's. Refused, not adopted.
    await rm(link);
    await symlink(older, link);
    const repointed = await expectRefused(path, [keyText('older')], /which holds the symbolic link/);
    expect(repointed.message).not.toContain(older);
    expectUntouched(await snapshot(join(real, 'secret.json')), before);
    // Sticky, as /tmp is: only the link's owner may replace it.
    await chmod(shared, 0o1777);
    expect(sameRecord(await new FileSecretStore(path).load(), fixtureRecord('older'))).toBe(true);
  });

  it('checks the folders above a link on the way, and every link of a chain (relative targets included)', async () => {
    const dir = await tempDir();
    const real = join(dir, 'real');
    const open = join(dir, 'open');
    const inner = join(open, 'inner');
    await mkdir(inner, { recursive: true, mode: 0o755 });
    await mkdir(real, { mode: 0o700 });
    // dir/first -> open/inner/second -> ../../real: the second link is two folders below an open one.
    await symlink(join('..', '..', 'real'), join(inner, 'second'));
    await symlink(join(inner, 'second'), join(dir, 'first'));
    const path = join(dir, 'first', 'secret.json');
    await new FileSecretStore(path).save(fixtureRecord('chain'));
    expect(await readdir(real)).toEqual(['secret.json']);
    expect(sameRecord(await new FileSecretStore(path).load(), fixtureRecord('chain'))).toBe(true);
    await chmod(open, 0o777);
    const above = await expectRefused(path, [keyText('chain')], /is writable by group or others/);
    expect(above.message).toContain(
      `The folder ${open}, above the symbolic link ${join(inner, 'second')} on the way to the secret file ${path},`,
    );
    await chmod(open, 0o755);
    await chmod(inner, 0o777);
    const holder = await expectRefused(path, [keyText('chain')], /is writable by group or others/);
    expect(holder.message).toContain(`The folder ${inner}, which holds the symbolic link ${join(inner, 'second')}`);
    await chmod(inner, 0o755);
    expect(sameRecord(await new FileSecretStore(path).load(), fixtureRecord('chain'))).toBe(true);
  });

  it.runIf(IS_ROOT)(
    'refuses a link on the way that another user owns, in a sticky folder (its owner may replace it)',
    async () => {
      const dir = await tempDir();
      const real = join(dir, 'real');
      const sticky = join(dir, 'sticky');
      await mkdir(sticky, { mode: 0o1777 });
      await chmod(sticky, 0o1777);
      await mkdir(real, { mode: 0o700 });
      const link = join(sticky, 'launcher');
      await symlink(real, link);
      const path = join(link, 'secret.json');
      await new FileSecretStore(path).save(fixtureRecord('sticky-link'));
      expect(sameRecord(await new FileSecretStore(path).load(), fixtureRecord('sticky-link'))).toBe(true);
      await lchown(link, NOBODY, NOBODY);
      const error = await expectRefused(path, [keyText('sticky-link')], OTHER_OWNER);
      expect(error.message).toContain(
        `The symbolic link ${link}, on the way to the secret file ${path}, is owned by uid 65534`,
      );
    },
  );

  /** A running authority on `path` whose store errors are collected. */
  async function running(path: string, id: string) {
    await new FileSecretStore(path).save(fixtureRecord(id));
    const errors: Error[] = [];
    const authority = await TokenAuthority.open({
      store: new FileSecretStore(path, { pollInterval: 10 }),
      onStoreError: (error) => void errors.push(error),
    });
    onTestFinished(() => authority.close());
    return { authority, errors, token: authority.issue() };
  }

  /** Another user's way to put a record in place: a file written beside the secret and renamed over it. */
  async function plant(path: string, id: string, owner?: number): Promise<void> {
    const staged = join(dirname(path), `planted-${id}`);
    await writeFile(staged, fileText(recordFields(fixtureRecord(id))), { mode: 0o600 });
    if (owner !== undefined) await chown(staged, owner, owner);
    await rename(staged, path);
  }

  async function expectKeptAfterRefusal(
    run: Awaited<ReturnType<typeof running>>,
    id: string,
    planted: string,
    path: string,
    problem: RegExp,
  ): Promise<void> {
    expect(await until(() => run.errors.length > 0)).toBe(true);
    for (const error of run.errors) {
      expect(error).toBeInstanceOf(LauncherAuthError);
      expectStoreError(error as LauncherAuthError, 'ERR_STORE_PERMISSIONS', path, [keyText(id), keyText(planted)]);
      expect(error.message).toMatch(problem);
    }
    expect(run.authority.keyId).toBe(id);
    expect(run.authority.issue()).toBeSameToken(run.token);
    expect(await run.authority.verify(run.token)).toMatchObject({ ok: true, keyId: id });
    expect(await run.authority.verify(await tokenOf(fixtureRecord(planted)))).toEqual({ ok: false, reason: 'invalid' });
  }

  it.runIf(IS_ROOT)(
    "a reload that finds another user's file: never current, the key stays, onStoreError told",
    async () => {
      const dir = await tempDir();
      const path = join(dir, 'secret.json');
      const run = await running(path, 'mine');
      await plant(path, 'attackers', NOBODY);
      await expectKeptAfterRefusal(run, 'mine', 'attackers', path, /is owned by uid 65534/);
      expect((await lstat(path)).uid).toBe(NOBODY);
    },
  );

  it('a reload that finds a symbolic link at the path: never current, the key stays, onStoreError told', async () => {
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    const run = await running(path, 'mine-2');
    const target = join(dir, 'target.json');
    await new FileSecretStore(target).save(fixtureRecord('linked'));
    const link = join(dir, 'link');
    await symlink(target, link);
    await rename(link, path);
    await expectKeptAfterRefusal(run, 'mine-2', 'linked', path, /is a symbolic link/);
    expect(await readlink(path)).toBe(target);
  });

  it('a reload after the folder became writable by others: never current, the key stays, onStoreError told', async () => {
    const dir = await tempDir();
    const folder = join(dir, 'launcher');
    const path = join(folder, 'secret.json');
    const run = await running(path, 'mine-3');
    await chmod(folder, 0o777);
    await plant(path, 'dropped-in');
    await expectKeptAfterRefusal(run, 'mine-3', 'dropped-in', path, /is writable by group or others/);
    // A rotation cannot save there either, and the store cannot be read to check that nothing was saved: the
    // outcome is uncertain, and the current token stays valid.
    const rotated = await rejectionOf(run.authority.rotate());
    expect(rotated.code).toBe('ERR_SAVE_UNCERTAIN');
    expect(isLauncherAuthError(rotated.cause, 'ERR_STORE_PERMISSIONS')).toBe(true);
    expect(await run.authority.verify(run.token)).toMatchObject({ ok: true, keyId: 'mine-3' });
  });
});

describe.runIf(POSIX && process.platform !== 'darwin')("the README's secret-path.ts", () => {
  /** Runs examples/readme/secret-path.ts with `env` over a clean HOME; its stdout and exit status. */
  function runSecretPath(env: Record<string, string>): { status: number | null; out: string } {
    const child = spawnSync(process.execPath, ['--import', 'tsx', join(REPO, 'examples/readme/secret-path.ts')], {
      cwd: REPO,
      env: { PATH: process.env['PATH'] ?? '', TSX_TSCONFIG_PATH: join(REPO, 'tsconfig.json'), ...env },
      encoding: 'utf8',
      timeout: 30_000,
    });
    return { status: child.status, out: child.stdout.trim() };
  }

  it.each([
    ['XDG_CONFIG_HOME', (home: string) => ({ HOME: home, XDG_CONFIG_HOME: join(home, 'xdg') }), 'xdg/my-launcher'],
    ['~/.config', (home: string) => ({ HOME: home }), '.config/my-launcher'],
    [
      '~/.config (relative XDG_CONFIG_HOME)',
      (home: string) => ({ HOME: home, XDG_CONFIG_HOME: 'xdg' }),
      '.config/my-launcher',
    ],
  ])('%s: a secret the store accepts, 0600 in a 0700 folder', async (_, env, where) => {
    const home = await tempDir();
    const { status, out } = runSecretPath(env(home));
    expect(status).toBe(0);
    const folder = join(home, where);
    expect(((await stat(folder)).mode & 0o7777).toString(8)).toBe('700');
    expect(((await stat(join(folder, 'secret.json'))).mode & 0o7777).toString(8)).toBe('600');
    expect((await new FileSecretStore(join(folder, 'secret.json')).load())?.id).toBe(out);
  });
});

describe('FileSecretStore: damaged files', () => {
  const base = fixtureRecord('damaged');
  const KEY = keyText('damaged');
  const valid = recordFields(base);
  const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const last = KEY.at(-1) as string;
  // 43 characters carry 258 bits for 256: flipping the lowest bit of the last one decodes to the same bytes.
  const nonCanonicalKey = `${KEY.slice(0, -1)}${ALPHABET.charAt(ALPHABET.indexOf(last) ^ 1)}`;
  const key31 = Buffer.from(base.key.subarray(0, 31)).toString('base64url');

  const NOT_B64 = /"key" is not base64url/;
  const NOT_ISO = /"createdAt" is not an ISO 8601 date/;
  type Content = string | Buffer | { directory: true } | { fifo: true };
  const cases: Array<[name: string, content: Content, problem: RegExp]> = [
    ['an empty file', '', /it is empty/],
    ['a file of blanks', ' \n\t\n', /it is empty/],
    ['truncated JSON', fileText(valid).slice(0, -12), /not valid JSON/],
    ['a JSON array', '[1,2,3]\n', /not a JSON object/],
    ['JSON null', 'null\n', /not a JSON object/],
    ['a JSON string', `"${KEY}"\n`, /not a JSON object/],
    ['bytes that are not UTF-8', Buffer.from([0xff, 0xfe, 0x7b, 0x00, 0xc3]), /not valid JSON/],
    ['version 2', fileText({ ...valid, version: 2 }), /version is 2/],
    ['no version', fileText({ ...valid, version: undefined }), /version/],
    ['version "1" as a string', fileText({ ...valid, version: '1' }), /version is string/],
    ['no key', fileText({ ...valid, key: undefined }), NOT_B64],
    ['a key that is not a string', fileText({ ...valid, key: [...base.key] }), NOT_B64],
    [
      'a key in the standard base64 alphabet',
      fileText({ ...valid, key: `${KEY.slice(0, 20)}+/${KEY.slice(22)}` }),
      NOT_B64,
    ],
    ['a key with a blank in it', fileText({ ...valid, key: `${KEY.slice(0, 20)} ${KEY.slice(20)}` }), NOT_B64],
    ['a padded key', fileText({ ...valid, key: `${KEY}=` }), NOT_B64],
    ['a key with non-canonical trailing bits', fileText({ ...valid, key: nonCanonicalKey }), NOT_B64],
    ['no createdAt', fileText({ ...valid, createdAt: undefined }), NOT_ISO],
    ['createdAt as a number', fileText({ ...valid, createdAt: base.createdAt.getTime() }), NOT_ISO],
    ['createdAt "yesterday"', fileText({ ...valid, createdAt: 'yesterday' }), NOT_ISO],
    ['createdAt "1"', fileText({ ...valid, createdAt: '1' }), NOT_ISO],
    ['createdAt in words', fileText({ ...valid, createdAt: 'January 2, 2020' }), NOT_ISO],
    ['createdAt on February 30', fileText({ ...valid, createdAt: '2020-02-30T00:00:00.000Z' }), NOT_ISO],
    ['createdAt without a time zone', fileText({ ...valid, createdAt: '2020-01-02T10:00:00' }), NOT_ISO],
    ['a directory at the path', { directory: true }, /not a regular file/],
    ['a 100 KB file', fileText({ ...valid, padding: 'x'.repeat(100 * 1024) }), /it is 1\d{5} bytes/],
  ];
  if (POSIX) cases.push(['a FIFO at the path', { fifo: true }, /not a regular file/]);
  const allSame = (byte: number): string => Buffer.alloc(32, byte).toString('base64url');
  // Well-formed files whose record no authority may use: the code core gives such a record from any store.
  const invalid: Array<[name: string, content: Content, problem: RegExp]> = [
    ['a key of 31 bytes', fileText({ ...valid, key: key31 }), /the key is 31 bytes/],
    ['an empty key', fileText({ ...valid, key: '' }), /the key is 0 bytes/],
    ['an all-zero key', fileText({ ...valid, key: allSame(0) }), /every byte of the key has the same value/],
    ['a key of 32 bytes 0xff', fileText({ ...valid, key: allSame(0xff) }), /every byte of the key has the same value/],
    ['a key of 64 bytes 0x41', fileText({ ...valid, key: Buffer.alloc(64, 0x41).toString('base64url') }), /same value/],
    ['no id', fileText({ ...valid, id: undefined }), /the id is not/],
    ['an empty id', fileText({ ...valid, id: '' }), /the id is not/],
    ['an id with a blank', fileText({ ...valid, id: 'two words' }), /the id is not/],
    ['an id that is a number', fileText({ ...valid, id: 42 }), /the id is not/],
    ['an id of 129 characters', fileText({ ...valid, id: 'x'.repeat(129) }), /the id is not/],
  ];
  const codeOf = new Map<string, LauncherAuthErrorCode>([
    ...cases.map(([name]) => [name, 'ERR_STORE_CORRUPT'] as const),
    ...invalid.map(([name]) => [name, 'ERR_INVALID_RECORD'] as const),
  ]);

  const title = '%s: load() and open() reject with its code, naming the path, and leave it untouched';
  it.each([...cases, ...invalid])(title, async (name, content, problem) => {
    const code = codeOf.get(name) as LauncherAuthErrorCode;
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    if (typeof content === 'string' || Buffer.isBuffer(content)) {
      await writeFile(path, content, { mode: 0o600 });
    } else if ('directory' in content) {
      await mkdir(path, { mode: 0o700 });
    } else {
      expect(spawnSync('mkfifo', ['-m', '600', path]).status).toBe(0);
    }
    const before = await snapshot(path);
    const secrets = [KEY, nonCanonicalKey, key31, allSame(0), allSame(0xff)];

    try {
      // Bounded, so that a load stuck on a FIFO fails here instead of hanging the run.
      const error = await rejectionOf(within(new FileSecretStore(path).load(), 'the load', 3_000));
      expectStoreError(error, code, path, secrets);
      expect(error.message).toMatch(problem);
      expectUntouched(await snapshot(path), before);

      const opened = await rejectionOf(TokenAuthority.open({ store: new FileSecretStore(path) }));
      expectStoreError(opened, code, path, secrets);
      expect(opened.message).toMatch(problem);
      expectUntouched(await snapshot(path), before);
    } finally {
      if (before.kind === 'fifo') {
        // Releases a reader that a faulty load() may have left blocked in the thread pool.
        await open(path, constants.O_WRONLY | constants.O_NONBLOCK).then(
          (handle) => handle.close(),
          () => undefined,
        );
      }
    }
  });
});

describe.runIf(POSIX)('FileSecretStore: atomicity', () => {
  it(
    'a process killed (SIGKILL) at random moments of its saves leaves the old or the new record, whole',
    async () => {
      const dir = await tempDir();
      // The logs live beside the store's directory, which must hold nothing but the secret and temp files.
      const storeDir = join(dir, 'store');
      const path = join(storeDir, 'secret.json');
      const store = new FileSecretStore(path);
      await store.save(fixtureRecord('initial'));
      let current = 'initial';
      let killedMidSave = 0;
      // Bundled once: twenty starts through tsx's loader cost several times the CPU.
      const command = await fixtureCommand(join(FIXTURES, 'save-loop.ts'));
      onTestFinished(() => command.dispose());
      // A count of rounds, not a time: each starts a process, however slow the machine.
      for (let rounds = 0; rounds < 20; rounds++) {
        const logPath = join(dir, `round-${rounds}.log`);
        const child = runFixture('save-loop.ts', [path, `r${rounds}`, logPath], {}, command.args);
        await child.next((line) => line === 'started');
        // Anywhere from the first save to a few dozen saves later.
        // eslint-disable-next-line launcher-auth-tests/no-wall-clock-wait -- a jitter: where the kill lands is what varies
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 25));
        child.process.kill('SIGKILL');
        expect(await child.closed).toEqual({ code: null, signal: 'SIGKILL' });

        const events = (await readFile(logPath, 'utf8'))
          .split('\n')
          .filter((line) => line !== '')
          .map((line) => line.split(' ') as [string, string]);
        const lastSaved = events.findLast(([what]) => what === 'saved')?.[1];
        const lastAnnounced = events.findLast(([what]) => what === 'will')?.[1];
        const inFlight = events.at(-1)?.[0] === 'will' ? lastAnnounced : undefined;
        // Either what was last known to be saved (durable once save() resolved) or the save in flight.
        const allowed = [lastSaved ?? current, ...(inFlight === undefined ? [] : [inFlight])];
        // Whatever the kill left (the file, stray temporary files), nothing is readable by group or others.
        for (const name of await readdir(storeDir)) {
          expect(name === 'secret.json' || name === LOCK_NAME || TEMP_NAME.test(name)).toBe(true);
          expect({ name, mode: ((await lstat(join(storeDir, name))).mode & 0o7777).toString(8) }).toEqual({
            name,
            mode: '600',
          });
        }
        // A fresh store, as a restarted launcher has: its first load also removes the dead writer's leftovers.
        const loaded = await new FileSecretStore(path).load();
        expect(loaded).toBeDefined();
        const id = (loaded as SecretRecord).id;
        expect(allowed).toContain(id);
        expect(sameRecord(loaded, fixtureRecord(id))).toBe(true);
        expect(await readdir(storeDir)).toEqual(['secret.json']);
        if (inFlight !== undefined) killedMidSave++;
        current = id;
      }
      expect(killedMidSave).toBeGreaterThanOrEqual(1);
      // The authority, too, opens on whatever was left.
      const authority = await TokenAuthority.open({ store });
      expect(authority.keyId).toBe(current);
      await authority.close();
    },
    budget(90_000),
  );

  it('temporary files left by a crash between write and rename do not affect load(), open() or a later save', async () => {
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    const store = new FileSecretStore(path);
    await store.save(fixtureRecord('before-crash'));
    // What a crash leaves when it comes after the write (or during it) but before the rename, by a writer still
    // alive (this process), so that they stay.
    const whole = `.secret.json.${process.pid}-0123456789ab.tmp`;
    const half = `.secret.json.${process.pid}-ba9876543210.tmp`;
    const empty = `.secret.json.${process.pid}-00000000beef.tmp`;
    await writeFile(join(dir, whole), fileText(recordFields(fixtureRecord('never-renamed'))), { mode: 0o600 });
    await writeFile(join(dir, half), fileText(recordFields(fixtureRecord('half-written'))).slice(0, 30), {
      mode: 0o600,
    });
    await writeFile(join(dir, empty), '', { mode: 0o600 });

    const reader = new FileSecretStore(path);
    expect(sameRecord(await reader.load(), fixtureRecord('before-crash'))).toBe(true);
    const authority = await TokenAuthority.open({ store: reader });
    expect(authority.keyId).toBe('before-crash');
    await authority.close();

    await store.save(fixtureRecord('after-crash'));
    expect(sameRecord(await store.load(), fixtureRecord('after-crash'))).toBe(true);
    expect((await readdir(dir)).sort()).toEqual([half, empty, whole, 'secret.json'].sort());
  });
});

describe.runIf(POSIX)('FileSecretStore: leftovers of crashed saves', () => {
  /** The pid of a process that has exited (and been reaped): no process has it now. */
  function deadPid(): number {
    const child = spawnSync(process.execPath, ['-e', '']);
    expect(child.status).toBe(0);
    return child.pid;
  }
  const HOUR_AGO = new Date(Date.now() - 3_600_000);

  it('the first load removes its own stale temporary files only: dead writer or older than the bound', async () => {
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    await new FileSecretStore(path).save(fixtureRecord('kept-secret'));
    const dead = deadPid();
    const content = fileText(recordFields(fixtureRecord('never-current')));
    const removed = [
      `.secret.json.${dead}-0123456789ab.tmp`, // its writer is gone
      `.secret.json.${dead}-ba9876543210.tmp`,
      `.secret.json.${process.pid}-aaaaaaaaaaaa.tmp`, // a live writer, but far older than any save takes
      '.secret.json.00000000beef.tmp', // the name of version 0.1, without a pid: by age only
    ];
    const kept = [
      `.secret.json.${process.pid}-bbbbbbbbbbbb.tmp`, // a save that may be under way in a live process
      '.secret.json.0123456789ab.tmp', // no pid, and recent
      `.secret.json.${dead}-0123456789ab.tmp.bak`, // not the pattern
      `.other.json.${dead}-0123456789ab.tmp`, // another store's
      `.secret.json.${dead}-0123456789AB.tmp`,
      'secret.json.tmp',
      'notes.txt',
    ];
    for (const name of [...removed, ...kept]) await writeFile(join(dir, name), content, { mode: 0o600 });
    for (const name of [removed[2], removed[3]]) await utimes(join(dir, name as string), HOUR_AGO, HOUR_AGO);
    // Never a link, even one of the pattern, and never what it points to.
    const link = `.secret.json.${dead}-cccccccccccc.tmp`;
    await symlink(join(dir, 'notes.txt'), join(dir, link));
    kept.push(link);
    if (POSIX && IS_ROOT) {
      const theirs = `.secret.json.${dead}-dddddddddddd.tmp`;
      await writeFile(join(dir, theirs), content, { mode: 0o600 });
      await chown(join(dir, theirs), NOBODY, NOBODY);
      kept.push(theirs);
    }

    const authority = await TokenAuthority.open({ store: new FileSecretStore(path) });
    expect(authority.keyId).toBe('kept-secret');
    await authority.close();
    expect((await readdir(dir)).sort()).toEqual(['secret.json', ...kept].sort());
    expect(await readFile(join(dir, 'notes.txt'), 'utf8')).toBe(content);
  });

  it('a save removes stale temporary files after it, also for a store opened long before', async () => {
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    const store = new FileSecretStore(path);
    await store.save(fixtureRecord('first'));
    expect(await store.load()).toBeDefined();
    const stale = `.secret.json.${deadPid()}-0123456789ab.tmp`;
    const live = `.secret.json.${process.pid}-0123456789ab.tmp`;
    await writeFile(join(dir, stale), '', { mode: 0o600 });
    await writeFile(join(dir, live), '', { mode: 0o600 });
    // Only the first load looks: later loads do not.
    expect(await store.load()).toBeDefined();
    expect((await readdir(dir)).sort()).toEqual([stale, live, 'secret.json'].sort());
    await store.save(fixtureRecord('second'));
    expect((await readdir(dir)).sort()).toEqual([live, 'secret.json'].sort());
  });
});

describe('FileSecretStore: save() with a signal', () => {
  it('an aborted signal: rejects with its reason before writing anything, the file unchanged', async () => {
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    await new FileSecretStore(path).save(fixtureRecord('unchanged'));
    const before = await snapshot(path);
    const controller = new AbortController();
    const reason = new Error('given up');
    controller.abort(reason);
    const outcome = await anyRejectionOf(
      new FileSecretStore(path).save(fixtureRecord('aborted'), { signal: controller.signal }),
    );
    expect(outcome).toBe(reason);
    expectUntouched(await snapshot(path), before);
    expect(await readdir(dir)).toEqual(['secret.json']);
  });

  it('a signal aborted while the temporary file is written: no rename, the temporary file removed', async () => {
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    await new FileSecretStore(path).save(fixtureRecord('unchanged-2'));
    const before = await snapshot(path);
    // A real signal that reads as aborted from the moment a temporary file exists: the abort lands between the
    // write and the rename, at the last moment a save can still be given up on.
    const reason = new Error('given up mid-save');
    const signal = new AbortController().signal;
    let sawTemporary = false;
    Object.defineProperties(signal, {
      aborted: {
        get: () => {
          sawTemporary ||= readdirSync(dir).some((name) => TEMP_NAME.test(name));
          return sawTemporary;
        },
      },
      reason: { get: () => (sawTemporary ? reason : undefined) },
    });
    const outcome = await anyRejectionOf(new FileSecretStore(path).save(fixtureRecord('mid-save'), { signal }));
    expect(outcome).toBe(reason);
    expect(sawTemporary).toBe(true);
    expectUntouched(await snapshot(path), before);
    expect(await readdir(dir)).toEqual(['secret.json']);
  });

  it('a save that outlives saveTimeout and its grace: ERR_SAVE_UNCERTAIN; it honours the signal late, and a later rotate() token stays valid', async () => {
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    await new FileSecretStore(path).save(fixtureRecord('before-slow'));
    const inner = new FileSecretStore(path);
    const late: Array<Promise<unknown>> = [];
    let slowNext = true;
    let release = (): void => undefined;
    const answered = new Promise<void>((resolve) => (release = resolve));
    /** The file store, with its first save held back well past the authority's saveTimeout. */
    /** The authority's change listener: calling it is a change report, which reloads through the authority's queue. */
    let changed = (): Promise<void> => Promise.resolve();
    const store: SecretStore = {
      load: () => inner.load(),
      watch: (onChange) => {
        changed = onChange;
        return inner.watch(() => void onChange());
      },
      save: (record, options) => {
        if (!slowNext) return inner.save(record, options);
        slowNext = false;
        // Held back until rotate() has answered (an event, not a time: a slow machine cannot reorder them).
        const saving = answered.then(() => inner.save(record, options));
        late.push(
          saving.then(
            () => 'saved',
            (error: unknown) => error,
          ),
        );
        return saving;
      },
    };
    const errors: Error[] = [];
    // Long enough for an ordinary durable write on a busy machine; the held-back save outlives it and its grace.
    const authority = await TokenAuthority.open({
      store,
      saveTimeout: budget(1_000),
      onStoreError: (error) => void errors.push(error),
    });
    onTestFinished(() => authority.close());
    const t0 = authority.issue();

    // Still held back when saveTimeout and the grace after the abort are over: not known whether it will land.
    const timedOut = await rejectionOf(authority.rotate());
    release();
    expect(timedOut.code).toBe('ERR_SAVE_UNCERTAIN');
    expect(timedOut.message).toMatch(/timed out/);
    const t1 = await authority.rotate();
    const keyId = authority.keyId;
    expect(keyId).not.toBe('before-slow');

    // The late save was handed an aborted signal: it rejected with the authority's reason and wrote nothing.
    expect(late).toHaveLength(1);
    const outcome = await late[0];
    expect((outcome as DOMException).name).toBe('TimeoutError');
    // Whatever the authority does about it once it settled (a reload in its queue) has run when a change report,
    // queued after it, has been dealt with.
    await nextTurn();
    await changed();
    expect((await new FileSecretStore(path).load())?.id).toBe(keyId);
    expect(authority.keyId).toBe(keyId);
    expect(authority.issue()).toBeSameToken(t1);
    expect(await authority.verify(t1)).toMatchObject({ ok: true, keyId });
    expect(await authority.verify(t0)).toEqual({ ok: false, reason: 'rotated' });
    expect(errors).toEqual([]);
    expect(await readdir(dir)).toEqual(['secret.json']);
  });
});

describe.runIf(POSIX)('FileSecretStore: watch() and changes from elsewhere', () => {
  it('a second process that rotates: the authority here follows, refusing the old token and accepting the new', async () => {
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    const authority = await TokenAuthority.open({ store: new FileSecretStore(path) });
    onTestFinished(() => authority.close());
    const noticed: Array<{ keyId: string; previousKeyId: string; at: number }> = [];
    authority.onRotate((event) => noticed.push({ ...event, at: performance.timeOrigin + performance.now() }));

    const child = runFixture('rotate.ts', [path]);
    expect(await child.next((line) => line.startsWith('ready '))).toBe(`ready ${authority.keyId}`);
    const delays: number[] = [];
    for (let round = 0; round < 3; round++) {
      const oldToken = authority.issue();
      const oldKeyId = authority.keyId;
      child.process.stdin.write('rotate\n');
      const [, keyId, at] = (await child.next((line) => line.startsWith('rotated '))).split(' ');
      expect(keyId).not.toBe(oldKeyId);
      expect(await until(() => authority.keyId === keyId, 2_000, 5)).toBe(true);
      expect(noticed.at(-1)).toMatchObject({ keyId, previousKeyId: oldKeyId });
      delays.push((noticed.at(-1)?.at ?? Number.NaN) - Number(at));

      expect(authority.issue()).not.toBeSameToken(oldToken);
      // A token of a key rotated away moments ago: refused, and told apart from a forgery for the host's log.
      expect(await authority.verify(oldToken)).toEqual({ ok: false, reason: 'rotated' });
      expect(await authority.authenticate(`Bearer ${oldToken}`)).toEqual({ ok: false, reason: 'rotated' });
      expect(await authority.verify(authority.issue())).toMatchObject({ ok: true, keyId });
    }
    child.process.stdin.end('exit\n');
    expect(await child.closed).toEqual({ code: 0, signal: null });
    expect(noticed).toHaveLength(3);
    // How soon is a benchmark's matter, not a test's: each rotation was followed (above), in order.
    console.log(
      `followed the other process's rotations ${delays.map((delay) => delay.toFixed(1)).join(', ')} ms after they resolved`,
    );

    // After the other process is gone: the key here is the one on disk, and yields the token any fresh
    // authority on that file yields.
    const onDisk = await new FileSecretStore(path).load();
    expect(authority.keyId).toBe(onDisk?.id);
    const fresh = await TokenAuthority.open({ store: new FileSecretStore(path) });
    expect(fresh.issue()).toBeSameToken(authority.issue());
    await fresh.close();
  });

  it('the unsubscribe that watch() returns stops its callbacks', async () => {
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    const writer = new FileSecretStore(path);
    await writer.save(fixtureRecord('watch-0'));
    let first = 0;
    let second = 0;
    const stopFirst = new FileSecretStore(path).watch(() => first++);
    const stopSecond = new FileSecretStore(path).watch(() => second++);
    onTestFinished(stopSecond);

    await writer.save(fixtureRecord('watch-1'));
    expect(await until(() => first > 0 && second > 0)).toBe(true);
    stopFirst();
    const [firstBefore, secondBefore] = [first, second];
    await writer.save(fixtureRecord('watch-2'));
    // The still-subscribed watcher hears of the save in the same dispatch the stopped one would have.
    expect(await until(() => second > secondBefore)).toBe(true);
    await nextTurn();
    expect(first).toBe(firstBefore);
  });

  it('polls a file whose directory does not exist yet, and its unsubscribe stops the polling', async () => {
    const dir = await tempDir();
    const path = join(dir, 'later', 'secret.json');
    let first = 0;
    let second = 0;
    const stopFirst = new FileSecretStore(path, { pollInterval: 10 }).watch(() => first++);
    const stopSecond = new FileSecretStore(path, { pollInterval: 10 }).watch(() => second++);
    onTestFinished(stopSecond);

    await new FileSecretStore(path).save(fixtureRecord('late-0'));
    expect(await until(() => first > 0 && second > 0)).toBe(true);
    stopFirst();
    const [firstBefore, secondBefore] = [first, second];
    await new FileSecretStore(path).save(fixtureRecord('late-1'));
    expect(await until(() => second > secondBefore)).toBe(true);
    // One more change heard by the live poller: the stopped one, on the same interval, had its turns meanwhile.
    const secondAfter = second;
    await new FileSecretStore(path).save(fixtureRecord('late-2'));
    expect(await until(() => second > secondAfter)).toBe(true);
    expect(first).toBe(firstBefore);
  });

  it('a file deleted under a running authority: token kept, onStoreError told, a new file followed', async () => {
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    await new FileSecretStore(path).save(fixtureRecord('deleted'));
    const errors: Error[] = [];
    const onStoreError = (error: Error): void => void errors.push(error);
    const authority = await TokenAuthority.open({ store: new FileSecretStore(path), onStoreError });
    onTestFinished(() => authority.close());
    const token = authority.issue();

    await rm(path);
    expect(await until(() => errors.length > 0)).toBe(true);
    expect(isLauncherAuthError(errors[0], 'ERR_STORE_IO')).toBe(true);
    expect(errors[0]?.message.includes(keyText('deleted'))).toBe(false);
    expect(authority.keyId).toBe('deleted');
    expect(authority.issue()).toBeSameToken(token);
    expect(await authority.verify(token)).toMatchObject({ ok: true, keyId: 'deleted' });
    // The authority never recreates the file on its own.
    expect(await readdir(dir)).toEqual([]);

    // The directory watch survives the deletion: a secret saved later by someone else is taken up.
    await new FileSecretStore(path).save(fixtureRecord('recreated'));
    expect(await until(() => authority.keyId === 'recreated')).toBe(true);
    expect(await authority.verify(token)).toEqual({ ok: false, reason: 'rotated' });
    expect(await authority.verify(authority.issue())).toMatchObject({ ok: true, keyId: 'recreated' });
  });

  it.each(['removed', 'moved away'])(
    'its directory %s and made anew: the authority follows the new file',
    async (how) => {
      const dir = await tempDir();
      const folder = join(dir, 'launcher');
      const path = join(folder, 'secret.json');
      await new FileSecretStore(path).save(fixtureRecord('first-directory'));
      const errors: Error[] = [];
      const onStoreError = (error: Error): void => void errors.push(error);
      const authority = await TokenAuthority.open({ store: new FileSecretStore(path), onStoreError });
      onTestFinished(() => authority.close());
      const token = authority.issue();

      if (how === 'removed') await rm(folder, { recursive: true });
      else await rename(folder, join(dir, 'launcher.old'));
      // The secret is gone from the path: reported, and the token kept.
      expect(await until(() => errors.length > 0)).toBe(true);
      expect(isLauncherAuthError(errors[0], 'ERR_STORE_IO')).toBe(true);
      expect(await authority.verify(token)).toMatchObject({ ok: true, keyId: 'first-directory' });

      await new FileSecretStore(path).save(fixtureRecord('second-directory'));
      expect(await until(() => authority.keyId === 'second-directory')).toBe(true);
      expect(await authority.verify(token)).toEqual({ ok: false, reason: 'rotated' });
      expect(await authority.verify(authority.issue())).toMatchObject({ ok: true, keyId: 'second-directory' });
    },
  );

  it('a file damaged under a running authority: token kept, onStoreError gets ERR_STORE_CORRUPT, file left', async () => {
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    await new FileSecretStore(path).save(fixtureRecord('damaged-later'));
    const errors: Error[] = [];
    const onStoreError = (error: Error): void => void errors.push(error);
    const authority = await TokenAuthority.open({ store: new FileSecretStore(path), onStoreError });
    onTestFinished(() => authority.close());
    const token = authority.issue();

    await writeFile(path, '{"version":1,', { mode: 0o600 });
    expect(await until(() => errors.length > 0)).toBe(true);
    for (const error of errors) {
      expect(isLauncherAuthError(error, 'ERR_STORE_CORRUPT')).toBe(true);
      expect(error.message).toContain(path);
    }
    expect(await authority.verify(token)).toMatchObject({ ok: true, keyId: 'damaged-later' });
    expect(await readFile(path, 'utf8')).toBe('{"version":1,');
  });
});

describe.runIf(POSIX)('FileSecretStore: a guessable key found by a reload', () => {
  it('an all-zero key under a running authority: never current, the key stays, onStoreError told, file left', async () => {
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    await new FileSecretStore(path).save(fixtureRecord('good-key'));
    const errors: Error[] = [];
    const authority = await TokenAuthority.open({
      store: new FileSecretStore(path),
      onStoreError: (error) => void errors.push(error),
    });
    onTestFinished(() => authority.close());
    const token = authority.issue();

    const zero = fileText({ ...recordFields(fixtureRecord('zeroed')), key: Buffer.alloc(32).toString('base64url') });
    const staged = join(dir, 'staged');
    await writeFile(staged, zero, { mode: 0o600 });
    await rename(staged, path);
    expect(await until(() => errors.length > 0)).toBe(true);
    for (const error of errors) {
      expect(error).toBeInstanceOf(LauncherAuthError);
      expectStoreError(error as LauncherAuthError, 'ERR_INVALID_RECORD', path, [keyText('good-key')]);
      expect(error.message).toMatch(/every byte of the key has the same value/);
    }
    expect(authority.keyId).toBe('good-key');
    expect(authority.issue()).toBeSameToken(token);
    expect(await authority.verify(token)).toMatchObject({ ok: true, keyId: 'good-key' });
    // Never overwritten: not by the reload, nor by the authority afterwards, up to a later change the watcher heard
    // (the same bytes put in place again, refused again).
    const errorsBefore = errors.length;
    await writeFile(staged, zero, { mode: 0o600 });
    await rename(staged, path);
    expect(await until(() => errors.length > errorsBefore)).toBe(true);
    expect(await readFile(path, 'utf8')).toBe(zero);
    expect(await readdir(dir)).toEqual(['secret.json']);
  });
});

describe.runIf(POSIX)('FileSecretStore: failing saves', () => {
  it('save() into a read-only directory: ERR_STORE_IO naming the path, file unchanged, no temp file left', async () => {
    const dir = await tempDir();
    const folder = join(dir, 'read-only');
    await mkdir(folder, { mode: 0o700 });
    const path = join(folder, 'secret.json');
    await new FileSecretStore(path).save(fixtureRecord('ro-old'));
    if (IS_ROOT) {
      // Root writes whatever the mode bits say, so the save runs in a child process as an unprivileged user
      // who owns the directory and the file, as a launcher would.
      for (const target of [dir, folder, path]) await chown(target, NOBODY, NOBODY);
    }
    await chmod(folder, 0o500);
    try {
      const before = await snapshot(path);
      let outcome: { code: string; message: string };
      if (IS_ROOT) {
        // Bundled into a folder of its own that the user can read, and started outside the clone: the clone may
        // live in a folder only its owner can enter (a private temporary folder).
        const command = await fixtureCommand(join(FIXTURES, 'save-once.ts'));
        onTestFinished(() => command.dispose());
        expect(command.how).toBe('bundle');
        await chmod(dirname(command.args[0] as string), 0o755);
        const child = runFixture(
          'save-once.ts',
          [path, 'ro-new'],
          { uid: NOBODY, gid: NOBODY, cwd: '/' },
          command.args,
        );
        const line = await child.next(() => true);
        expect(await child.closed).toEqual({ code: 0, signal: null });
        const reported = JSON.parse(line) as { ok: boolean; uid: number; code: string; message: string };
        expect({ ok: reported.ok, uid: reported.uid }).toEqual({ ok: false, uid: NOBODY });
        outcome = reported;
      } else {
        outcome = await rejectionOf(new FileSecretStore(path).save(fixtureRecord('ro-new')));
      }
      expect(outcome.code).toBe('ERR_STORE_IO');
      expect(outcome.message).toContain(path);
      expect(outcome.message).toMatch(/EACCES, permission denied/);
      expect(outcome.message.includes(keyText('ro-new'))).toBe(false);
      expectUntouched(await snapshot(path), before);
      expect(await readdir(folder)).toEqual(['secret.json']);
    } finally {
      await chmod(folder, 0o700);
      // Back to this process's user, whose store refuses a file or folder of another user.
      if (IS_ROOT) for (const target of [dir, folder, path]) await chown(target, 0, 0);
    }
    expect(sameRecord(await new FileSecretStore(path).load(), fixtureRecord('ro-old'))).toBe(true);
  });

  it('a path whose parent is a regular file: save(), load(), open() reject with ERR_STORE_IO, nothing made', async () => {
    const dir = await tempDir();
    const blocker = join(dir, 'a-file');
    await writeFile(blocker, 'not a directory\n', { mode: 0o600 });
    const path = join(blocker, 'secret.json');

    const saved = await rejectionOf(new FileSecretStore(path).save(fixtureRecord('blocked')));
    expectStoreError(saved, 'ERR_STORE_IO', path, [keyText('blocked')]);
    expect(saved.message).toMatch(/not a directory/);
    const loaded = await rejectionOf(new FileSecretStore(path).load());
    expectStoreError(loaded, 'ERR_STORE_IO', path, []);
    expect(loaded.message).toMatch(/not a directory/);
    const opened = await rejectionOf(TokenAuthority.open({ store: new FileSecretStore(path) }));
    expectStoreError(opened, 'ERR_STORE_IO', path, []);

    expect(await readdir(dir)).toEqual(['a-file']);
    expect(await readFile(blocker, 'utf8')).toBe('not a directory\n');
  });

  it('a directory at the path: save() fails at the rename with ERR_STORE_IO and removes its temporary file', async () => {
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    await mkdir(path);
    await writeFile(join(path, 'inside'), 'kept\n');

    const error = await rejectionOf(new FileSecretStore(path).save(fixtureRecord('onto-directory')));
    expectStoreError(error, 'ERR_STORE_IO', path, [keyText('onto-directory')]);
    expect(error.message).toMatch(/is a directory/);
    expect(await readdir(dir)).toEqual(['secret.json']);
    expect(await readdir(path)).toEqual(['inside']);
    expect(await readFile(join(path, 'inside'), 'utf8')).toBe('kept\n');
  });

  it('rotate() over a save that fails where nothing can be read: ERR_SAVE_UNCERTAIN, and the current token stays valid', async () => {
    const dir = await tempDir();
    const path = join(dir, 'secret.json');
    await new FileSecretStore(path).save(fixtureRecord('kept'));
    const authority = await TokenAuthority.open({ store: new FileSecretStore(path), onStoreError: () => undefined });
    onTestFinished(() => authority.close());
    const token = authority.issue();
    // Something else takes the file's place: every later save fails at its rename.
    await rm(path);
    await mkdir(path);

    // The directory cannot be read as a secret either, so nothing confirms that the save left the store as it was.
    const error = await rejectionOf(authority.rotate());
    expect(error.code).toBe('ERR_SAVE_UNCERTAIN');
    expect(isLauncherAuthError(error.cause, 'ERR_STORE_IO')).toBe(true);
    expect(authority.keyId).toBe('kept');
    expect(authority.issue()).toBeSameToken(token);
    expect(await authority.verify(token)).toMatchObject({ ok: true, keyId: 'kept' });
    expect(await readdir(dir)).toEqual(['secret.json']);
    expect(await readdir(path)).toEqual([]);
  });
});

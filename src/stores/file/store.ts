// The launcher's secret on disk: one JSON file, private from its first byte, replaced atomically and durably.
import type { Stats } from 'node:fs';
import { lstat, mkdir, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { LauncherAuthError, isLauncherAuthError } from '../../authority/errors.js';
import { recordProblem } from '../../authority/record.js';
import type { SaveOptions, SecretRecord, SecretStore } from '../../authority/types.js';
import { parseRecord, serializeRecord } from '../record-json.js';
import {
  SECRET_FILE,
  changedWhileChecked,
  checkedFolder,
  errnoCode,
  sameIdentity,
  type CheckedFolder,
} from './permissions.js';
import { checkOwnerAndMode, openPrivate } from './private-file.js';
import { STALE_LOCK_MS, removeStaleLock, takeLock, type HeldLock } from './lock.js';
import { watchSecretFile } from './watch.js';
import { removeStaleTemporaries, syncDirectory, temporaryName, writeTemporary } from './write.js';

/** A secret file is about 150 bytes; anything far larger is not one. */
const MAX_FILE_BYTES = 64 * 1024;

/** Options of {@link FileSecretStore}. */
export interface FileSecretStoreOptions {
  /**
   * How often to check the file when the platform cannot report changes (`fs.watch` unavailable), in ms.
   * @default 50
   */
  pollInterval?: number;
}

function describe(error: unknown): string {
  const code = errnoCode(error);
  const text = {
    ENOSPC: 'no space left on the device',
    EDQUOT: 'disk quota exceeded',
    EROFS: 'the file system is read-only',
    EACCES: 'permission denied',
    EPERM: 'operation not permitted',
    EIO: 'input/output error',
    ENOTDIR: 'a part of the path is not a directory',
    EISDIR: 'the path is a directory',
  }[code ?? ''];
  // Without a code, the error's own first line names the cause (Deno without --allow-sys: "Requires sys access").
  const named =
    error instanceof Error && error.message !== ''
      ? `an unexpected error: ${error.message.split('\n', 1)[0]}`
      : 'an unexpected error';
  return code === undefined ? named : text === undefined ? code : `${code}, ${text}`;
}

/** A file replaced between its opening and the check that follows (a save of another process, most likely). */
const REPLACED = Symbol('replaced');
/** How many times `load()` reads a file that keeps being replaced under it before refusing. */
const MAX_READS = 3;

/** Thrown inside save() when its signal is aborted; replaced by the signal's reason before it leaves. */
const ABORTED = Symbol('aborted');

/** Read anew at each step of a save: the signal may be aborted while an await is under way. */
function aborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

/**
 * Keeps the secret in a JSON file: `{"version":1,"id":…,"key":<base64url>,"createdAt":<ISO 8601>}`.
 *
 * - The file is created with mode 0600 (a missing directory with 0700). On POSIX, every load and save refuses
 *   with `ERR_STORE_PERMISSIONS`, as OpenSSH's StrictModes: a file open to group or others or owned by another
 *   user, a symbolic link at the path, folders that another user owns or may write, and a symbolic link on the
 *   way that another user owns or that sits in such a folder. The path is walked one component at a time with
 *   lstat, and what is opened (the file, and for a save the folder written into) must be what the walk found:
 *   a path that changes meanwhile is refused, never followed elsewhere.
 * - `save()` writes a temporary file in the same directory, fsyncs it, renames it over the old one and fsyncs
 *   the directory: a crash at any instant leaves the old secret or the new one, whole. Its `signal`, aborted
 *   before the rename, leaves the old one. Temporary files that crashes left are removed at the first load and
 *   after each save.
 * - `save()` is a compare-and-set: it replaces the file only while it holds the record this store last loaded or
 *   saved, or none usable (missing, damaged); else it rejects with `ERR_SAVE_CONFLICT`. A store that has done
 *   neither yet replaces whatever is there. The compare and the rename run under a lock file beside the secret
 *   (`.<name>.lock`, created with O_EXCL); a lock whose process is gone or older than 10 s is a crashed save's and
 *   is broken, by the next save or the first load.
 * - A damaged file makes `load()` reject with `ERR_STORE_CORRUPT` (`ERR_INVALID_RECORD` for a well-formed record
 *   that is not a usable secret: a short or guessable key, a bad id) naming the path and the problem; the file
 *   is never rewritten by a load. A missing file is "nothing stored yet".
 * - `watch()` reports a replacement by another process (a second launcher, the CLI).
 */
export class FileSecretStore implements SecretStore {
  /** The absolute path of the secret file. */
  readonly path: string;
  readonly #pollInterval: number;
  /** The removal of stale temporary files at the first load. */
  #opened: Promise<void> | undefined;
  /**
   * The id of the record this store last loaded or saved (`null`: the file was missing), which a save expects to
   * find; `undefined` before the first load or save, when a save replaces whatever is there.
   */
  #expected: string | null | undefined;
  /** Counts saves, so that a load that began before a save does not set {@link #expected} back after it. */
  #saves = 0;

  /** @param path where the secret file is, or will be created. */
  constructor(path: string, options: FileSecretStoreOptions = {}) {
    if (typeof path !== 'string' || path.length === 0 || path.includes('\0')) {
      throw new TypeError('FileSecretStore: `path` must be a non-empty file path.');
    }
    const { pollInterval = 50 } = options;
    if (!Number.isInteger(pollInterval) || pollInterval < 1) {
      throw new TypeError('FileSecretStore: `pollInterval` must be a positive whole number of milliseconds.');
    }
    this.path = resolve(path);
    this.#pollInterval = pollInterval;
  }

  async load(): Promise<SecretRecord | undefined> {
    const saves = this.#saves;
    const loaded = await this.#read();
    if (saves === this.#saves) this.#expected = loaded?.id ?? null;
    return loaded;
  }

  async #read(): Promise<SecretRecord | undefined> {
    // Another launcher's save may rename a new file over the one just opened: read again, a few times. Only a
    // path that keeps changing under every read is refused.
    for (let attempt = 1; ; attempt++) {
      const loaded = await this.#loadOnce(attempt === MAX_READS);
      if (loaded !== REPLACED) return loaded;
    }
  }

  /** One read; {@link REPLACED} when the file was replaced once opened and `last` is false. */
  async #loadOnce(last: boolean): Promise<SecretRecord | undefined | typeof REPLACED> {
    let checked: CheckedFolder;
    try {
      checked = await checkedFolder(this.path);
    } catch (error) {
      if (error instanceof LauncherAuthError) throw error;
      if (errnoCode(error) === 'ENOENT') return undefined;
      throw this.#readError(error);
    }
    const { folder } = checked;
    this.#opened ??= Promise.all([
      removeStaleTemporaries(folder, basename(this.path)),
      removeStaleLock(folder, basename(this.path)),
    ]).then(() => undefined);
    await this.#opened;
    const file = join(folder, basename(this.path));
    let handle;
    try {
      handle = await openPrivate(file, this.path, SECRET_FILE);
    } catch (error) {
      if (error instanceof LauncherAuthError) throw error;
      throw this.#readError(error);
    }
    if (handle === undefined) return undefined;
    try {
      const stats = await handle.stat();
      if ((await this.#expectSame(checked, file, stats)) === REPLACED) {
        if (!last) return REPLACED;
        throw changedWhileChecked(this.path, `${file} was replaced once opened, ${MAX_READS} times`);
      }
      if (!stats.isFile()) throw this.#corrupt('it is not a regular file');
      checkOwnerAndMode(stats, this.path, SECRET_FILE);
      if (stats.size > MAX_FILE_BYTES)
        throw this.#corrupt(`it is ${stats.size} bytes, far more than a secret file holds`);
      const text = await handle.readFile('utf8');
      return this.#parse(text);
    } catch (error) {
      if (error instanceof LauncherAuthError) throw error;
      throw this.#readError(error);
    } finally {
      await handle.close().catch(() => undefined);
    }
  }

  /**
   * Writes `record`. When `options.signal` is aborted before the new file takes the place of the old one, the old
   * one stays, the temporary file is removed, and the save rejects with the signal's reason.
   */
  async save(record: SecretRecord, options: SaveOptions = {}): Promise<void> {
    const { signal } = options;
    if (aborted(signal)) throw signal?.reason;
    const problem = recordProblem(record);
    if (problem !== undefined) {
      throw new LauncherAuthError(
        'ERR_INVALID_RECORD',
        `Refusing to save an unusable record to ${this.path}: ${problem}.`,
      );
    }
    const text = serializeRecord(record);
    const name = basename(this.path);
    let folder = dirname(this.path);
    let temporary: string | undefined;
    let lock: HeldLock | undefined;
    let stage = 'create the directory of';
    try {
      await mkdir(folder, { recursive: true, mode: 0o700 });
      stage = 'check the directory of';
      const checked = await checkedFolder(this.path);
      folder = checked.folder;
      if (aborted(signal)) throw ABORTED;
      stage = 'write';
      temporary = join(folder, temporaryName(name));
      const written = await writeTemporary(temporary, text);
      // The file just written, in the folder the walk found: else the save went somewhere else, and stops here.
      if ((await this.#expectSame(checked, temporary, written)) === REPLACED) {
        throw changedWhileChecked(this.path, `${temporary} was replaced once written`);
      }
      stage = 'lock';
      lock = await takeLock(folder, name, () => aborted(signal));
      if (lock === undefined) throw ABORTED;
      stage = 'read';
      await this.#expectUnchanged();
      // The last moment at which giving up leaves the old secret in place.
      if (aborted(signal)) throw ABORTED;
      stage = 'replace';
      if (!(await lock.stillHeld())) {
        throw new LauncherAuthError(
          'ERR_STORE_IO',
          `Cannot replace the secret file ${this.path}: this save took longer than ${STALE_LOCK_MS / 1000} s, and ` +
            'another save took its lock; nothing was written.',
        );
      }
      await rename(temporary, join(folder, name));
      this.#saves++;
      this.#expected = record.id;
    } catch (error) {
      if (temporary !== undefined) await unlink(temporary).catch(() => undefined);
      if (error === ABORTED) throw signal?.reason;
      if (error instanceof LauncherAuthError) throw error;
      // A recursive mkdir reports a file where a directory should be as EEXIST, which reads like no problem.
      const reason =
        stage === 'create the directory of' && errnoCode(error) === 'EEXIST'
          ? 'EEXIST, a part of the path is not a directory'
          : describe(error);
      throw new LauncherAuthError('ERR_STORE_IO', `Cannot ${stage} the secret file ${this.path}: ${reason}.`, {
        cause: error,
      });
    } finally {
      await lock?.release();
    }
    await syncDirectory(folder);
    await removeStaleTemporaries(folder, name);
  }

  /**
   * The compare of the compare-and-set, under the lock: the file must hold the record this store last loaded or
   * saved, or no usable record at all (missing or damaged: no one's rotation is lost by replacing it).
   */
  async #expectUnchanged(): Promise<void> {
    const expected = this.#expected;
    if (expected === undefined) return;
    let found: SecretRecord | undefined;
    try {
      found = await this.#read();
    } catch (error) {
      if (isLauncherAuthError(error, 'ERR_STORE_CORRUPT') || isLauncherAuthError(error, 'ERR_INVALID_RECORD')) return;
      throw error;
    }
    if (found === undefined || found.id === expected) return;
    throw new LauncherAuthError(
      'ERR_SAVE_CONFLICT',
      `The secret file ${this.path} was replaced by another process since this store last read it; the new ` +
        'secret was not saved.',
    );
  }

  watch(onChange: () => void): () => void {
    return watchSecretFile(this.path, this.#pollInterval, onChange);
  }

  /**
   * Refuses unless the folder at the walked path is still the one the walk found, and tells whether `opened` (the
   * fstat of a descriptor on `file`) is still the entry at `file`: what was opened is what was checked. On the
   * last of the reads `load()` makes, a file replaced again is refused too.
   */
  async #expectSame(checked: CheckedFolder, file: string, opened: Stats): Promise<'same' | typeof REPLACED> {
    if (checked.identity === undefined) return 'same';
    let folder: Stats;
    try {
      folder = await lstat(checked.folder);
    } catch {
      throw changedWhileChecked(this.path, `the folder ${checked.folder} went away`);
    }
    if (!folder.isDirectory() || !sameIdentity(folder, checked.identity)) {
      throw changedWhileChecked(this.path, `the folder ${checked.folder} was replaced`);
    }
    const entry = await lstat(file).catch(() => undefined);
    return entry !== undefined && sameIdentity(entry, opened) ? 'same' : REPLACED;
  }

  #readError(error: unknown): LauncherAuthError {
    return new LauncherAuthError('ERR_STORE_IO', `Cannot read the secret file ${this.path}: ${describe(error)}.`, {
      cause: error,
    });
  }

  #corrupt(problem: string, code: 'ERR_STORE_CORRUPT' | 'ERR_INVALID_RECORD' = 'ERR_STORE_CORRUPT'): LauncherAuthError {
    return new LauncherAuthError(
      code,
      `The secret file ${this.path} is unusable: ${problem}. It was left untouched; restore it from a backup, ` +
        'or move it away to generate a new secret (every token issued so far will stop working).',
    );
  }

  #parse(text: string): SecretRecord {
    return parseRecord(
      text,
      (problem) => this.#corrupt(problem),
      // The code core's copyRecord gives such a record from any store: well-formed, but not a usable secret.
      (problem) => this.#corrupt(problem, 'ERR_INVALID_RECORD'),
    );
  }
}

// The launcher's secret on disk: one JSON file, private from its first byte, replaced atomically and durably.
import { randomBytes } from 'node:crypto';
import { constants, watch as watchPath, watchFile, unwatchFile, type FSWatcher } from 'node:fs';
import { mkdir, open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { LauncherAuthError } from '../core/errors.js';
import { recordProblem } from '../core/record.js';
import type { SecretRecord, SecretStore } from '../core/types.js';
import { parseRecord, serializeRecord } from './record-json.js';

/** A secret file is about 150 bytes; anything far larger is not one. */
const MAX_FILE_BYTES = 64 * 1024;
const POSIX = process.platform !== 'win32';
/**
 * Non-blocking, so that a FIFO put at the path is opened (and then refused as not a regular file) instead of
 * blocking a thread-pool thread until some writer comes. No effect on regular files.
 */
const READ_FLAGS = POSIX ? constants.O_RDONLY | constants.O_NONBLOCK : 'r';

/** Options of {@link FileSecretStore}. */
export interface FileSecretStoreOptions {
  /**
   * How often to check the file when the platform cannot report changes (`fs.watch` unavailable), in ms.
   * @default 50
   */
  pollInterval?: number;
}

function errnoCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
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
  return code === undefined ? 'an unexpected error' : text === undefined ? code : `${code}, ${text}`;
}

/**
 * Keeps the secret in a JSON file: `{"version":1,"id":…,"key":<base64url>,"createdAt":<ISO 8601>}`.
 *
 * - The file is created with mode 0600 (a missing directory with 0700) and refused on POSIX when group or
 *   others may read or write it.
 * - `save()` writes a temporary file in the same directory, fsyncs it, renames it over the old one and fsyncs
 *   the directory: a crash at any instant leaves the old secret or the new one, whole.
 * - A damaged file makes `load()` reject with a `LauncherAuthError` naming the path and the problem; the file
 *   is never rewritten by a load. A missing file is "nothing stored yet".
 * - `watch()` reports a replacement by another process (a second launcher, the CLI).
 */
export class FileSecretStore implements SecretStore {
  /** The absolute path of the secret file. */
  readonly path: string;
  readonly #pollInterval: number;

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
    let handle;
    try {
      handle = await open(this.path, READ_FLAGS);
    } catch (error) {
      if (errnoCode(error) === 'ENOENT') return undefined;
      throw new LauncherAuthError('ERR_STORE_IO', `Cannot read the secret file ${this.path}: ${describe(error)}.`, {
        cause: error,
      });
    }
    try {
      const stats = await handle.stat();
      if (!stats.isFile()) throw this.#corrupt('it is not a regular file');
      if (POSIX && (stats.mode & 0o077) !== 0) {
        throw new LauncherAuthError(
          'ERR_STORE_PERMISSIONS',
          `The secret file ${this.path} is open to group or others (mode ${(stats.mode & 0o777).toString(8).padStart(4, '0')}); ` +
            `it must be 0600. Check who could have read it, then run: chmod 600 '${this.path}'`,
        );
      }
      if (stats.size > MAX_FILE_BYTES) throw this.#corrupt(`it is ${stats.size} bytes, far more than a secret file holds`);
      const text = await handle.readFile('utf8');
      return this.#parse(text);
    } catch (error) {
      if (error instanceof LauncherAuthError) throw error;
      throw new LauncherAuthError('ERR_STORE_IO', `Cannot read the secret file ${this.path}: ${describe(error)}.`, {
        cause: error,
      });
    } finally {
      await handle.close().catch(() => undefined);
    }
  }

  async save(record: SecretRecord): Promise<void> {
    const problem = recordProblem(record);
    if (problem !== undefined) {
      throw new LauncherAuthError('ERR_INVALID_RECORD', `Refusing to save an unusable record to ${this.path}: ${problem}.`);
    }
    const text = serializeRecord(record);
    const directory = dirname(this.path);
    const temporary = `${directory}/.${basename(this.path)}.${randomBytes(6).toString('hex')}.tmp`;
    let stage = 'create the directory of';
    try {
      await mkdir(directory, { recursive: true, mode: 0o700 });
      stage = 'write';
      // 'wx' with 0600: private from the first byte (umask can only take bits away), never an existing file.
      const handle = await open(temporary, 'wx', 0o600);
      try {
        await handle.writeFile(text, 'utf8');
        await handle.sync();
      } finally {
        await handle.close();
      }
      stage = 'replace';
      await rename(temporary, this.path);
    } catch (error) {
      await unlink(temporary).catch(() => undefined);
      // A recursive mkdir reports a file where a directory should be as EEXIST, which reads like no problem.
      const reason =
        stage === 'create the directory of' && errnoCode(error) === 'EEXIST'
          ? 'EEXIST, a part of the path is not a directory'
          : describe(error);
      throw new LauncherAuthError('ERR_STORE_IO', `Cannot ${stage} the secret file ${this.path}: ${reason}.`, {
        cause: error,
      });
    }
    await syncDirectory(directory);
  }

  watch(onChange: () => void): () => void {
    const path = this.path;
    const name = basename(path);
    const interval = this.#pollInterval;
    let watcher: FSWatcher | undefined;
    let polling = false;
    const poll = (): void => onChange();
    const startPolling = (): void => {
      watcher?.close();
      watcher = undefined;
      if (polling) return;
      polling = true;
      watchFile(path, { persistent: false, interval }, poll);
    };
    const directory = dirname(path);
    const directoryName = basename(directory);
    try {
      // The directory, not the file: a save replaces the file, and a watch on the old inode would go quiet.
      watcher = watchPath(directory, { persistent: false }, (_event, filename) => {
        if (filename === null || filename === name) {
          onChange();
        } else if (filename === directoryName) {
          // Linux reports the removal or move of the watched directory itself under the directory's own name,
          // and then nothing more, not even when the directory comes back (no 'error' either): poll the file
          // from now on. A file in the directory that bears the directory's name costs the same, harmlessly.
          startPolling();
          onChange();
        }
      });
      // The directory went away or cannot be watched any more: fall back to polling the file.
      watcher.on('error', startPolling);
    } catch {
      startPolling();
    }
    return () => {
      watcher?.close();
      watcher = undefined;
      if (polling) unwatchFile(path, poll);
      polling = false;
    };
  }

  #corrupt(problem: string): LauncherAuthError {
    return new LauncherAuthError(
      'ERR_STORE_CORRUPT',
      `The secret file ${this.path} is unusable: ${problem}. It was left untouched; restore it from a backup, ` +
        'or move it away to generate a new secret (every token issued so far will stop working).',
    );
  }

  #parse(text: string): SecretRecord {
    return parseRecord(text, (problem) => this.#corrupt(problem));
  }
}

/**
 * fsync of the directory makes the rename itself durable. Best effort: the rename has already happened, so
 * failing here would report a save that in fact took place (some file systems, and Windows, refuse it).
 */
async function syncDirectory(directory: string): Promise<void> {
  if (!POSIX) return;
  try {
    const handle = await open(directory, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // See above.
  }
}

// The launcher's secret on disk: one JSON file, private from its first byte, replaced atomically and durably.
import { randomBytes } from 'node:crypto';
import { constants, watch as watchPath, watchFile, unwatchFile, type FSWatcher, type Stats } from 'node:fs';
import { lstat, mkdir, open, readdir, readlink, realpath, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, parse, resolve, sep } from 'node:path';
import { LauncherAuthError } from '../authority/errors.js';
import { recordProblem } from '../authority/record.js';
import type { SaveOptions, SecretRecord, SecretStore } from '../authority/types.js';
import { parseRecord, serializeRecord } from './record-json.js';

/** A secret file is about 150 bytes; anything far larger is not one. */
const MAX_FILE_BYTES = 64 * 1024;
const POSIX = process.platform !== 'win32';
/**
 * Non-blocking, so that a FIFO put at the path is opened (and then refused as not a regular file) instead of
 * blocking a thread-pool thread until some writer comes. No effect on regular files.
 */
const READ_FLAGS = POSIX ? constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW : 'r';
/**
 * A temporary file is always a new file (O_EXCL fails on anything already there, a dangling symlink included),
 * and never reached through a link.
 */
const TEMP_FLAGS = POSIX ? constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW : 'wx';
/**
 * A temporary file older than this is stale whatever its name says of its writer: a save takes milliseconds, and
 * a writer whose pid was reused by another process would otherwise keep its leftover forever.
 */
const STALE_TEMP_MS = 10 * 60_000;

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
  // Without a code, the error's own first line names the cause (Deno without --allow-sys: "Requires sys access").
  const named = error instanceof Error && error.message !== '' ? `an unexpected error: ${error.message.split('\n', 1)[0]}` : 'an unexpected error';
  return code === undefined ? named : text === undefined ? code : `${code}, ${text}`;
}

function octal(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, '0');
}

/** Thrown inside save() when its signal is aborted; replaced by the signal's reason before it leaves. */
const ABORTED = Symbol('aborted');
/** The sticky bit (S_ISVTX): in such a folder only an entry's owner (or the folder's, or root) may rename it. */
const STICKY = 0o1000;

/** Read anew at each step of a save: the signal may be aborted while an await is under way. */
function aborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

/** `.<name>.<pid>-<12 hex>.tmp`: the pid tells a later sweep whether its writer may still be saving. */
function temporaryName(name: string): string {
  return `.${name}.${process.pid}-${randomBytes(6).toString('hex')}.tmp`;
}

/** What {@link temporaryName} makes for `name`, and the pid-less names of version 0.1 (stale by age only). */
function temporaryPattern(name: string): RegExp {
  const quoted = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^\\.${quoted}\\.(?:(\\d{1,10})-)?[0-9a-f]{12}\\.tmp$`);
}

/** True only when no process has this pid (a process of another user, EPERM, is alive). */
function processGone(pid: number): boolean {
  if (pid === process.pid || !Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return errnoCode(error) === 'ESRCH';
  }
}

/** Links are followed at most this many times while resolving a path, as Linux does (ELOOP beyond). */
const MAX_LINKS = 40;

/**
 * Every symbolic link that resolving `path` meets, in order, with the real folder that holds it and its owner; the
 * walk stops quietly at a part that does not exist (realpath has then already failed, or a save creates it).
 */
async function linksOnTheWay(path: string): Promise<Array<{ path: string; folder: string; uid: number }>> {
  const links: Array<{ path: string; folder: string; uid: number }> = [];
  const rest = resolve(path).split(sep).filter((part) => part.length > 0).reverse();
  let real = parse(resolve(path)).root;
  while (rest.length > 0) {
    const part = rest.pop() as string;
    if (part === '.') continue;
    if (part === '..') {
      real = dirname(real);
      continue;
    }
    const next = join(real, part);
    let stats: Stats;
    try {
      stats = await lstat(next);
    } catch {
      return links;
    }
    if (!stats.isSymbolicLink()) {
      real = next;
      continue;
    }
    if (links.length === MAX_LINKS) return links;
    links.push({ path: next, folder: real, uid: stats.uid });
    const target = await readlink(next);
    if (isAbsolute(target)) real = parse(target).root;
    rest.push(...target.split(sep).filter((item) => item.length > 0).reverse());
  }
  return links;
}

/**
 * Keeps the secret in a JSON file: `{"version":1,"id":…,"key":<base64url>,"createdAt":<ISO 8601>}`.
 *
 * - The file is created with mode 0600 (a missing directory with 0700). On POSIX, every load and save refuses
 *   with `ERR_STORE_PERMISSIONS`, as OpenSSH's StrictModes: a file open to group or others or owned by another
 *   user, a symbolic link at the path, folders that another user owns or may write, and a symbolic link on the
 *   way that another user owns or that sits in such a folder (see `#checkedFolder`).
 * - `save()` writes a temporary file in the same directory, fsyncs it, renames it over the old one and fsyncs
 *   the directory: a crash at any instant leaves the old secret or the new one, whole. Its `signal`, aborted
 *   before the rename, leaves the old one. Temporary files that crashes left are removed at the first load and
 *   after each save.
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
    let folder: string;
    try {
      folder = await this.#checkedFolder();
    } catch (error) {
      if (error instanceof LauncherAuthError) throw error;
      if (errnoCode(error) === 'ENOENT') return undefined;
      throw this.#readError(error);
    }
    this.#opened ??= this.#removeStaleTemporaries(folder);
    await this.#opened;
    let handle;
    try {
      handle = await open(join(folder, basename(this.path)), READ_FLAGS);
    } catch (error) {
      const code = errnoCode(error);
      if (code === 'ENOENT') return undefined;
      // O_NOFOLLOW on a symlink: ELOOP (Linux, macOS), EMLINK (FreeBSD).
      if (POSIX && (code === 'ELOOP' || code === 'EMLINK')) {
        throw new LauncherAuthError(
          'ERR_STORE_PERMISSIONS',
          `The secret file ${this.path} is a symbolic link; a link may lead to a file that another user controls, ` +
            'so it is not followed. Put the secret file itself at that path.',
        );
      }
      throw this.#readError(error);
    }
    try {
      const stats = await handle.stat();
      if (!stats.isFile()) throw this.#corrupt('it is not a regular file');
      const euid = process.geteuid?.();
      if (POSIX && euid !== undefined && stats.uid !== euid) {
        throw new LauncherAuthError(
          'ERR_STORE_PERMISSIONS',
          `The secret file ${this.path} is owned by uid ${stats.uid}, not by the user this process runs as ` +
            `(uid ${euid}): whoever owns it chooses the secret. If you made it, run: chown ${euid} '${this.path}'; ` +
            'otherwise move it away to generate a new secret.',
        );
      }
      if (POSIX && (stats.mode & 0o077) !== 0) {
        throw new LauncherAuthError(
          'ERR_STORE_PERMISSIONS',
          `The secret file ${this.path} is open to group or others (mode ${octal(stats.mode)}); ` +
            `it must be 0600. Check who could have read it, then run: chmod 600 '${this.path}'`,
        );
      }
      if (stats.size > MAX_FILE_BYTES) throw this.#corrupt(`it is ${stats.size} bytes, far more than a secret file holds`);
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
      throw new LauncherAuthError('ERR_INVALID_RECORD', `Refusing to save an unusable record to ${this.path}: ${problem}.`);
    }
    const text = serializeRecord(record);
    const name = basename(this.path);
    let folder = dirname(this.path);
    let temporary: string | undefined;
    let stage = 'create the directory of';
    try {
      await mkdir(folder, { recursive: true, mode: 0o700 });
      stage = 'check the directory of';
      folder = await this.#checkedFolder();
      if (aborted(signal)) throw ABORTED;
      stage = 'write';
      temporary = join(folder, temporaryName(name));
      // 0600 given to open(): private from the first byte (umask can only take bits away).
      const handle = await open(temporary, TEMP_FLAGS, 0o600);
      try {
        await handle.writeFile(text, 'utf8');
        await handle.sync();
      } finally {
        await handle.close();
      }
      // The last moment at which giving up leaves the old secret in place.
      if (aborted(signal)) throw ABORTED;
      stage = 'replace';
      await rename(temporary, join(folder, name));
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
    }
    await syncDirectory(folder);
    await this.#removeStaleTemporaries(folder);
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

  #readError(error: unknown): LauncherAuthError {
    return new LauncherAuthError('ERR_STORE_IO', `Cannot read the secret file ${this.path}: ${describe(error)}.`, {
      cause: error,
    });
  }

  /**
   * The real path of the secret's folder, once it and every folder above it are found safe (POSIX), in the way of
   * OpenSSH's StrictModes: whoever may rename or replace an entry on the way to the secret file chooses the secret.
   * - The folder itself: owned by this process's user or root, and writable by nobody else. No exception for a
   *   sticky folder (such as /tmp): there, another user may create the secret file before this process does.
   * - Every folder above it, up to `/`: owned by this process's user or root, and writable by nobody else unless
   *   sticky (as /tmp is): in a sticky folder only an entry's owner may rename or remove it, and the entry leading
   *   here is checked in its turn.
   * - Every symbolic link met while resolving the path (in the path as given or in a link's target): owned by this
   *   process's user or root, and the folder that holds it and every folder above that one checked as the folders
   *   above the secret are: whoever may replace a link re-points the path to another folder.
   * The file is then opened through the real path, so what was checked is what is read.
   */
  async #checkedFolder(): Promise<string> {
    const folder = await realpath(dirname(this.path));
    const euid = process.geteuid?.();
    if (!POSIX || euid === undefined) return folder;
    await this.#checkFolders(folder, euid, undefined);
    for (const link of await linksOnTheWay(dirname(this.path))) {
      if (link.uid !== euid && link.uid !== 0) {
        throw new LauncherAuthError(
          'ERR_STORE_PERMISSIONS',
          `The symbolic link ${link.path}, on the way to the secret file ${this.path}, is owned by uid ${link.uid}, ` +
            `neither the user this process runs as (uid ${euid}) nor root: its owner could re-point it. Give the ` +
            'real path of the secret file, or replace the link with one of your own.',
        );
      }
      await this.#checkFolders(link.folder, euid, link.path);
    }
    return folder;
  }

  /**
   * The StrictModes checks of `start` and every folder above it: `start` is the secret's own folder when `link` is
   * `undefined`, else the folder that holds `link` (which, like the folders above, may be sticky).
   */
  async #checkFolders(start: string, euid: number, link: string | undefined): Promise<void> {
    for (let current = start; ; current = dirname(current)) {
      const stats = await stat(current);
      const own = link === undefined && current === start;
      const where = own
        ? `The folder ${current} that holds the secret file ${this.path}`
        : link === undefined
          ? `The folder ${current}, above the secret file ${this.path},`
          : current === start
            ? `The folder ${current}, which holds the symbolic link ${link} on the way to the secret file ${this.path},`
            : `The folder ${current}, above the symbolic link ${link} on the way to the secret file ${this.path},`;
      const what = link === undefined ? 'replace the secret file' : 're-point the link to another folder';
      if (stats.uid !== euid && stats.uid !== 0) {
        throw new LauncherAuthError(
          'ERR_STORE_PERMISSIONS',
          `${where} is owned by uid ${stats.uid}, neither the user this process runs as (uid ${euid}) nor root: ` +
            `its owner could ${what}. If the folder is yours, run: chown ${euid} '${current}'; ` +
            `otherwise keep the secret in a folder of your own${link === undefined ? '' : ' and give its real path'}.`,
        );
      }
      if ((stats.mode & 0o022) !== 0 && (own || (stats.mode & STICKY) === 0)) {
        throw new LauncherAuthError(
          'ERR_STORE_PERMISSIONS',
          `${where} is writable by group or others (mode ${octal(stats.mode)}): another user could ${what}. ` +
            `Run: chmod ${own ? '700' : 'go-w'} '${current}'` +
            (own
              ? ''
              : link === undefined
                ? ', or keep the secret in a folder whose parents only you and root can write'
                : ', or give the real path of the secret file'),
        );
      }
      if (dirname(current) === current) return;
    }
  }

  /**
   * Removes what crashed saves left in `folder`: files of this store's temporary-name pattern only, regular files
   * of this process's user only (never a link, never another user's file), and only when no save can be under way
   * in them: the pid in the name is of a process that is gone, or the file is older than {@link STALE_TEMP_MS}.
   * A save of a live process is left alone, so two launchers on one file never break each other's save. Removing
   * one by mistake (another pid namespace, such as a container sharing the folder, where the writer's pid means
   * nothing here) makes that save fail at its rename, the old secret intact. Best effort: never fails a load or a
   * save.
   */
  async #removeStaleTemporaries(folder: string): Promise<void> {
    const pattern = temporaryPattern(basename(this.path));
    const euid = process.geteuid?.();
    let names: string[];
    try {
      names = await readdir(folder);
    } catch {
      return;
    }
    for (const name of names) {
      const match = pattern.exec(name);
      if (match === null) continue;
      const path = join(folder, name);
      let stats: Stats;
      try {
        stats = await lstat(path);
      } catch {
        continue;
      }
      if (!stats.isFile() || (POSIX && euid !== undefined && stats.uid !== euid)) continue;
      const pid = match[1] === undefined ? undefined : Number(match[1]);
      const stale = Date.now() - stats.mtimeMs > STALE_TEMP_MS || (pid !== undefined && processGone(pid));
      if (stale) await unlink(path).catch(() => undefined);
    }
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

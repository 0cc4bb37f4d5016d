// Opening a private file as the file store opens its secret: never through a symbolic link, never blocking on a
// FIFO, and only when this process's user owns it and nobody else may read or write it. The Redis store's
// generation file is opened through the same code.
import { constants, type Stats } from 'node:fs';
import { lstat, open, type FileHandle } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { LauncherAuthError } from '../../authority/errors.js';
import {
  POSIX,
  changedWhileChecked,
  checkedFolder,
  errnoCode,
  octal,
  sameIdentity,
  type Subject,
} from './permissions.js';

/**
 * Non-blocking, so that a FIFO put at the path is opened (and then refused as not a regular file) instead of
 * blocking a thread-pool thread until some writer comes. No effect on regular files.
 */
const READ_FLAGS = POSIX ? constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW : 'r';

/**
 * Opens `file` for reading, without following a link or blocking; `undefined` when there is none. A symbolic link
 * at `file` is refused with `ERR_STORE_PERMISSIONS` naming `path` (the path as the user gave it); any other error
 * is thrown as it came.
 */
export async function openPrivate(file: string, path: string, subject: Subject): Promise<FileHandle | undefined> {
  try {
    return await open(file, READ_FLAGS);
  } catch (error) {
    const code = errnoCode(error);
    if (code === 'ENOENT') return undefined;
    // O_NOFOLLOW on a symlink: ELOOP (Linux, macOS), EMLINK (FreeBSD).
    if (POSIX && (code === 'ELOOP' || code === 'EMLINK')) {
      throw new LauncherAuthError(
        'ERR_STORE_PERMISSIONS',
        `The ${subject.name} ${path} is a symbolic link; a link may lead to a file that another user controls, ` +
          `so it is not followed. Put the ${subject.name} itself at that path.`,
      );
    }
    throw error;
  }
}

/**
 * Refuses with `ERR_STORE_PERMISSIONS` (POSIX) an opened file (`stats` from its descriptor) that another user
 * owns, or that group or others may read or write.
 */
export function checkOwnerAndMode(stats: Stats, path: string, subject: Subject): void {
  const euid = process.geteuid?.();
  if (!POSIX || euid === undefined) return;
  if (stats.uid !== euid) {
    throw new LauncherAuthError(
      'ERR_STORE_PERMISSIONS',
      `The ${subject.name} ${path} is owned by uid ${stats.uid}, not by the user this process runs as ` +
        `(uid ${euid}): whoever owns it chooses the ${subject.kept}. If you made it, run: chown ${euid} '${path}'; ` +
        `otherwise move it away${subject.name === 'secret file' ? ' to generate a new secret' : ''}.`,
    );
  }
  if ((stats.mode & 0o077) !== 0) {
    throw new LauncherAuthError(
      'ERR_STORE_PERMISSIONS',
      `The ${subject.name} ${path} is open to group or others (mode ${octal(stats.mode)}); ` +
        `it must be 0600. Check who could have read it, then run: chmod 600 '${path}'`,
    );
  }
}

/**
 * The text of the private file at `path`, or `undefined` when there is none, with every check of the secret file:
 * the permission walk of its folders (`checkedFolder`), opened without following a link or blocking, the entry
 * opened still the one at the path (read again when another process renamed a new file over it), a regular file, this user's and closed to others, at most `maxBytes`. A file
 * that fails a check is refused with `ERR_STORE_PERMISSIONS` naming `path`; an I/O error is thrown as it came.
 */
export async function readPrivateFile(path: string, subject: Subject, maxBytes: number): Promise<string | undefined> {
  // Another process may rename a new file over the one just opened (an atomic write): read again, a few times. Only
  // a path that keeps changing under every read is refused.
  for (let attempt = 1; ; attempt++) {
    const text = await readOnce(path, subject, maxBytes, attempt === PRIVATE_READS);
    if (text !== REPLACED) return text;
  }
}

/** How many reads {@link readPrivateFile} makes of a file that is replaced each time it was opened. */
const PRIVATE_READS = 3;
const REPLACED: unique symbol = Symbol('replaced');

async function readOnce(
  path: string,
  subject: Subject,
  maxBytes: number,
  last: boolean,
): Promise<string | undefined | typeof REPLACED> {
  let folder: string;
  try {
    ({ folder } = await checkedFolder(path, subject));
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return undefined;
    throw error;
  }
  const file = join(folder, basename(path));
  const handle = await openPrivate(file, path, subject);
  if (handle === undefined) return undefined;
  try {
    const stats = await handle.stat();
    const entry = await lstat(file).catch(() => undefined);
    if (entry === undefined || !sameIdentity(entry, stats)) {
      if (!last) return REPLACED;
      throw changedWhileChecked(path, `${file} was replaced once opened, ${PRIVATE_READS} times`, subject);
    }
    const refuse = (problem: string): LauncherAuthError =>
      new LauncherAuthError(
        'ERR_STORE_PERMISSIONS',
        `The ${subject.name} ${path} ${problem}; it was not read, and is left as it is. Move it away.`,
      );
    if (!stats.isFile()) throw refuse('is not a regular file (a FIFO, a device or a folder)');
    checkOwnerAndMode(stats, path, subject);
    if (stats.size > maxBytes) throw refuse(`is ${stats.size} bytes, far more than a ${subject.name} holds`);
    return await handle.readFile('utf8');
  } finally {
    await handle.close().catch(() => undefined);
  }
}

// Atomic, durable writes of the secret file, and the removal of the temporary files that crashed saves left.
import { randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { lstat, open, readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { POSIX, errnoCode } from './permissions.js';

/**
 * A temporary file is always a new file (O_EXCL fails on anything already there, a dangling symlink included),
 * and never reached through a link.
 */
export const TEMP_FLAGS = POSIX
  ? constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW
  : 'wx';
/**
 * A temporary file older than this is stale whatever its name says of its writer: a save takes milliseconds, and
 * a writer whose pid was reused by another process would otherwise keep its leftover forever.
 */
const STALE_TEMP_MS = 10 * 60_000;

/** `.<name>.<pid>-<12 hex>.tmp`: the pid tells a later sweep whether its writer may still be saving. */
export function temporaryName(name: string): string {
  return `.${name}.${process.pid}-${randomBytes(6).toString('hex')}.tmp`;
}

/** What {@link temporaryName} makes for `name`, and the pid-less names of version 0.1 (stale by age only). */
function temporaryPattern(name: string): RegExp {
  const quoted = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^\\.${quoted}\\.(?:(\\d{1,10})-)?[0-9a-f]{12}\\.tmp$`);
}

/** True only when no process has this pid (a process of another user, EPERM, is alive). */
export function processGone(pid: number): boolean {
  if (pid === process.pid || !Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    return errnoCode(error) === 'ESRCH';
  }
}

/**
 * Writes `text` to a new file at `temporary` (mode 0600 from its first byte: umask can only take bits away) and
 * fsyncs it. Returns the file's identity as the open descriptor saw it.
 */
export async function writeTemporary(temporary: string, text: string): Promise<Stats> {
  const handle = await open(temporary, TEMP_FLAGS, 0o600);
  try {
    await handle.writeFile(text, 'utf8');
    await handle.sync();
    return await handle.stat();
  } finally {
    await handle.close();
  }
}

/**
 * Removes what crashed saves left in `folder` for the secret file `name`: files of the temporary-name pattern
 * only, regular files of this process's user only (never a link, never another user's file), and only when no
 * save can be under way in them: the pid in the name is of a process that is gone, or the file is older than
 * {@link STALE_TEMP_MS}. A save of a live process is left alone, so two launchers on one file never break each
 * other's save. Removing one by mistake (another pid namespace, such as a container sharing the folder, where the
 * writer's pid means nothing here) makes that save fail at its rename, the old secret intact. Best effort: never
 * fails a load or a save.
 */
export async function removeStaleTemporaries(folder: string, name: string): Promise<void> {
  const pattern = temporaryPattern(name);
  const euid = process.geteuid?.();
  let names: string[];
  try {
    names = await readdir(folder);
  } catch {
    return;
  }
  for (const entry of names) {
    const match = pattern.exec(entry);
    if (match === null) continue;
    const path = join(folder, entry);
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

/**
 * fsync of the directory makes the rename itself durable. Best effort: the rename has already happened, so
 * failing here would report a save that in fact took place (some file systems, and Windows, refuse it).
 */
export async function syncDirectory(directory: string): Promise<void> {
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

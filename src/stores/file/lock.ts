// The lock that makes a save of the secret file a compare-and-set across processes: a file created with O_EXCL
// beside the secret, held from the read of what the file holds to the rename of the new one. Creating a file that
// must not exist is atomic on every local file system of Linux, macOS and Windows, so one rule serves all three.
import type { Stats } from 'node:fs';
import { link, lstat, open, readFile, rename, unlink, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { errnoCode, sameIdentity } from './permissions.js';
import { TEMP_FLAGS, processGone, temporaryName } from './write.js';

/**
 * A lock is stale, and the next save breaks it, when the process that took it is gone (its pid is in the file) or
 * when it is older than this: a save holds it for milliseconds, so only a crashed holder (whose pid means nothing
 * here, in another container sharing the folder) or a disk that stopped answering makes one this old. A crashed
 * holder delays rotation at most this long.
 */
export const STALE_LOCK_MS = 10_000;
/** How often a save waiting for the lock looks again. */
const RETRY_MS = 5;

/** `.<name>.lock`, beside the secret file: outside the temporary-file pattern, and unseen by the watch. */
export function lockName(name: string): string {
  return `.${name}.lock`;
}

/** A lock this process holds. */
export interface HeldLock {
  /** Whether the lock at its path is still this one (a save slower than {@link STALE_LOCK_MS} may have lost it). */
  stillHeld(): Promise<boolean>;
  /** Removes the lock if it is still this one. Never rejects. */
  release(): Promise<void>;
}

/**
 * Takes the lock `name` in `folder`, waiting while another save holds it and breaking it once it is stale.
 * `stop()` is asked before each wait: when it returns true, the wait ends with `undefined`. The lock is born whole,
 * with the pid of its holder in it: a file of that content, written under a temporary name, is linked to the lock's
 * name, which fails while a lock is there; a crash leaves the temporary file to the sweep of temporary files.
 */
export async function takeLock(folder: string, name: string, stop: () => boolean): Promise<HeldLock | undefined> {
  const path = join(folder, lockName(name));
  const candidate = join(folder, temporaryName(name));
  const handle = await open(candidate, TEMP_FLAGS, 0o600);
  try {
    await handle.writeFile(`${process.pid}\n`, 'utf8');
  } finally {
    await handle.close();
  }
  try {
    for (;;) {
      // Its age is the lock's from the moment it is taken, not from when this save began to wait.
      const now = new Date();
      await utimes(candidate, now, now);
      const taken = await link(candidate, path).then(
        () => true,
        (error: unknown) => {
          if (errnoCode(error) === 'EEXIST') return false;
          throw error;
        },
      );
      if (taken) return lockAt(path, await lstat(candidate));
      if (stop()) return undefined;
      const existing = await lstat(path).catch(() => undefined);
      if (existing !== undefined && (await stale(path, existing))) await breakStale(path, existing);
      else await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  } finally {
    await unlink(candidate).catch(() => undefined);
  }
}

/** Removes the lock a crashed save left in `folder`, if there is one and it is stale. Never rejects. */
export async function removeStaleLock(folder: string, name: string): Promise<void> {
  const path = join(folder, lockName(name));
  try {
    const seen = await lstat(path);
    if (await stale(path, seen)) await breakStale(path, seen);
  } catch {
    // Nothing there, or nothing to do about it now: the next save breaks it.
  }
}

async function stale(path: string, seen: Stats): Promise<boolean> {
  if (Date.now() - seen.mtimeMs > STALE_LOCK_MS) return true;
  const pid = Number.parseInt(await readFile(path, 'utf8').catch(() => ''), 10);
  return processGone(pid);
}

/**
 * Removes the stale lock `seen`, and only it: moved aside under a name of its own first, so that of two savers
 * breaking it at once one moves it, and a fresh lock taken meanwhile by a third is put back.
 */
async function breakStale(path: string, seen: Stats): Promise<void> {
  const aside = `${path}.${randomBytes(6).toString('hex')}.stale`;
  try {
    await rename(path, aside);
  } catch {
    return; // gone already, or moved by another saver
  }
  const moved = await lstat(aside).catch(() => undefined);
  if (moved !== undefined && !sameIdentity(moved, seen)) {
    // A fresh lock replaced the stale one between the look and the move: back it goes, unless yet another is there.
    await link(aside, path).catch(() => undefined);
  }
  await unlink(aside).catch(() => undefined);
}

function lockAt(path: string, identity: Stats): HeldLock {
  const stillHeld = async (): Promise<boolean> => {
    const entry = await lstat(path).catch(() => undefined);
    return entry !== undefined && sameIdentity(entry, identity);
  };
  return {
    stillHeld,
    release: async () => {
      if (await stillHeld()) await unlink(path).catch(() => undefined);
    },
  };
}

// The lock that makes a save of the secret file a compare-and-set across processes: a file created with O_EXCL
// beside the secret, held from the read of what the file holds to the rename of the new one. Creating a file that
// must not exist is atomic on every local file system of Linux, macOS and Windows, so one rule serves all three.
import type { Stats } from 'node:fs';
import { link, lstat, open, readFile, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { errnoCode, sameIdentity } from './permissions.js';
import { TEMP_FLAGS, processGone } from './write.js';

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
 * `stop()` is asked before each wait: when it returns true, the wait ends with `undefined`.
 */
export async function takeLock(folder: string, name: string, stop: () => boolean): Promise<HeldLock | undefined> {
  const path = join(folder, lockName(name));
  for (;;) {
    const held = await tryCreate(path);
    if (held !== undefined) return lockAt(path, held);
    if (stop()) return undefined;
    const existing = await lstat(path).catch(() => undefined);
    if (existing !== undefined && (await stale(path, existing))) await breakStale(path, existing);
    else await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
}

async function stale(path: string, seen: Stats): Promise<boolean> {
  if (Date.now() - seen.mtimeMs > STALE_LOCK_MS) return true;
  // Empty while its taker has not written its pid yet: then not gone.
  const pid = Number.parseInt(await readFile(path, 'utf8').catch(() => ''), 10);
  return processGone(pid);
}

/** Creates the lock file; its identity, or `undefined` when another one is there. */
async function tryCreate(path: string): Promise<Stats | undefined> {
  let handle;
  try {
    handle = await open(path, TEMP_FLAGS, 0o600);
  } catch (error) {
    if (errnoCode(error) === 'EEXIST') return undefined;
    throw error;
  }
  try {
    await handle.writeFile(`${process.pid}\n`, 'utf8');
    return await handle.stat();
  } finally {
    await handle.close();
  }
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

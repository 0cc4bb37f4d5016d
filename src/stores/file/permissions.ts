// The permission walk of the secret file's path, in the way of OpenSSH's StrictModes: whoever may rename or
// replace an entry on the way to the secret file chooses the secret. Every component is read with lstat, once;
// the checks judge what the walk saw, and the file is then opened through the path the walk resolved.
import type { Stats } from 'node:fs';
import { lstat, readlink } from 'node:fs/promises';
import { dirname, isAbsolute, join, parse, resolve, sep } from 'node:path';
import { LauncherAuthError } from '../../authority/errors.js';

export const POSIX = process.platform !== 'win32';
/** The sticky bit (S_ISVTX): in such a folder only an entry's owner (or the folder's, or root) may rename it. */
const STICKY = 0o1000;
/** Links are followed at most this many times while resolving a path, as Linux does (ELOOP beyond). */
const MAX_LINKS = 40;

export function errnoCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

export function octal(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(4, '0');
}

/** A file system object's identity: the same device and inode is the same object. */
export interface Identity {
  readonly dev: number;
  readonly ino: number;
}

export function sameIdentity(a: Identity, b: Identity): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/** What the checked file is called in messages: the secret file, or another private file checked the same way. */
export interface Subject {
  /** As in "the secret file /path". */
  readonly name: string;
  /** As in "keep the secret in a folder of your own". */
  readonly kept: string;
}

export const SECRET_FILE: Subject = { name: 'secret file', kept: 'secret' };

/** The secret's folder as the walk resolved it: a path without links, and its identity then (POSIX). */
export interface CheckedFolder {
  readonly folder: string;
  readonly identity: Identity | undefined;
}

interface Link {
  /** The link as the walk met it. */
  readonly path: string;
  /** The real folder that holds it. */
  readonly folder: string;
  readonly uid: number;
}

interface Walk {
  /** The real path of the secret's folder. */
  readonly folder: string;
  /** Every real folder the walk went through (each folder above the secret's and above every link), as lstat saw it. */
  readonly folders: ReadonlyMap<string, Stats>;
  readonly links: readonly Link[];
}

/** A refusal because the path changed while it was being checked (a link replaced, removed, re-pointed). */
export function changedWhileChecked(secret: string, what: string, subject: Subject = SECRET_FILE): LauncherAuthError {
  return new LauncherAuthError(
    'ERR_STORE_PERMISSIONS',
    `The path to the ${subject.name} ${secret} changed while it was being checked (${what}): something is ` +
      `replacing entries on the way to it. Keep the ${subject.kept} in a folder of your own, and give its real path.`,
  );
}

/**
 * Resolves `path` (a folder) component by component with lstat, as the kernel would, following symbolic links
 * with readlink. Nothing is resolved twice: no realpath, whose answer could lead through a link that has gone by
 * the time it is checked. A link that vanishes or is replaced between its lstat and its readlink fails closed; a
 * part that does not exist rejects with ENOENT, as realpath does.
 */
async function walk(path: string, secret: string, subject: Subject): Promise<Walk> {
  const folders = new Map<string, Stats>();
  const links: Link[] = [];
  const rest = resolve(path)
    .split(sep)
    .filter((part) => part.length > 0)
    .reverse();
  let real = parse(resolve(path)).root;
  folders.set(real, await lstat(real));
  while (rest.length > 0) {
    const part = rest.pop() as string;
    if (part === '.') continue;
    if (part === '..') {
      real = dirname(real);
      continue;
    }
    const next = join(real, part);
    const stats = await lstat(next);
    if (stats.isDirectory()) {
      real = next;
      folders.set(real, stats);
      continue;
    }
    if (!stats.isSymbolicLink()) throw Object.assign(new Error(`${next} is not a directory`), { code: 'ENOTDIR' });
    if (links.length === MAX_LINKS)
      throw Object.assign(new Error(`too many symbolic links at ${next}`), { code: 'ELOOP' });
    let target: string;
    let again: Stats;
    try {
      target = await readlink(next);
      again = await lstat(next);
    } catch {
      throw changedWhileChecked(secret, `the symbolic link ${next} went away`, subject);
    }
    // Replaced by another link (a new inode) between the two lstat calls: the target read may be either one's.
    if (!again.isSymbolicLink() || !sameIdentity(again, stats) || again.ctimeMs !== stats.ctimeMs) {
      throw changedWhileChecked(secret, `the symbolic link ${next} was replaced`, subject);
    }
    links.push({ path: next, folder: real, uid: stats.uid });
    if (isAbsolute(target)) real = parse(target).root;
    rest.push(
      ...target
        .split(sep)
        .filter((item) => item.length > 0)
        .reverse(),
    );
  }
  return { folder: real, folders, links };
}

/**
 * The folder of the secret file `secret`, resolved and found safe (POSIX):
 * - The folder itself: owned by this process's user or root, and writable by nobody else. No exception for a
 *   sticky folder (such as /tmp): there, another user may create the secret file before this process does.
 * - Every folder above it, up to `/`: owned by this process's user or root, and writable by nobody else unless
 *   sticky (as /tmp is): in a sticky folder only an entry's owner may rename or remove it, and the entry leading
 *   here is checked in its turn.
 * - Every symbolic link met while resolving the path (in the path as given or in a link's target): owned by this
 *   process's user or root, and the folder that holds it and every folder above that one checked as the folders
 *   above the secret are: whoever may replace a link re-points the path to another folder.
 * The caller opens the file through the returned folder, and compares what it opened with `identity`.
 */
export async function checkedFolder(secret: string, subject: Subject = SECRET_FILE): Promise<CheckedFolder> {
  const euid = process.geteuid?.();
  if (!POSIX || euid === undefined) return { folder: resolve(dirname(secret)), identity: undefined };
  const { folder, folders, links } = await walk(dirname(secret), secret, subject);
  const statsOf = async (path: string): Promise<Stats> => {
    const seen = folders.get(path);
    if (seen !== undefined) return seen;
    // Not reached by the walk (it meets every folder above the ones it resolves); checked all the same.
    const stats = await lstat(path);
    if (!stats.isDirectory()) throw changedWhileChecked(secret, `${path} is no longer a folder`, subject);
    return stats;
  };
  await checkFolders(secret, folder, euid, undefined, statsOf, subject);
  for (const link of links) {
    if (link.uid !== euid && link.uid !== 0) {
      throw new LauncherAuthError(
        'ERR_STORE_PERMISSIONS',
        `The symbolic link ${link.path}, on the way to the ${subject.name} ${secret}, is owned by uid ${link.uid}, ` +
          `neither the user this process runs as (uid ${euid}) nor root: its owner could re-point it. Give the ` +
          `real path of the ${subject.name}, or replace the link with one of your own.`,
      );
    }
    await checkFolders(secret, link.folder, euid, link.path, statsOf, subject);
  }
  const stats = folders.get(folder) as Stats;
  return { folder, identity: { dev: stats.dev, ino: stats.ino } };
}

/**
 * The StrictModes checks of `start` and every folder above it: `start` is the secret's own folder when `link` is
 * `undefined`, else the folder that holds `link` (which, like the folders above, may be sticky).
 */
async function checkFolders(
  secret: string,
  start: string,
  euid: number,
  link: string | undefined,
  statsOf: (path: string) => Promise<Stats>,
  subject: Subject,
): Promise<void> {
  for (let current = start; ; current = dirname(current)) {
    const stats = await statsOf(current);
    const own = link === undefined && current === start;
    const where = own
      ? `The folder ${current} that holds the ${subject.name} ${secret}`
      : link === undefined
        ? `The folder ${current}, above the ${subject.name} ${secret},`
        : current === start
          ? `The folder ${current}, which holds the symbolic link ${link} on the way to the ${subject.name} ${secret},`
          : `The folder ${current}, above the symbolic link ${link} on the way to the ${subject.name} ${secret},`;
    const what = link === undefined ? `replace the ${subject.name}` : 're-point the link to another folder';
    if (stats.uid !== euid && stats.uid !== 0) {
      throw new LauncherAuthError(
        'ERR_STORE_PERMISSIONS',
        `${where} is owned by uid ${stats.uid}, neither the user this process runs as (uid ${euid}) nor root: ` +
          `its owner could ${what}. If the folder is yours, run: chown ${euid} '${current}'; ` +
          `otherwise keep the ${subject.kept} in a folder of your own${link === undefined ? '' : ' and give its real path'}.`,
      );
    }
    if ((stats.mode & 0o022) !== 0 && (own || (stats.mode & STICKY) === 0)) {
      throw new LauncherAuthError(
        'ERR_STORE_PERMISSIONS',
        `${where} is writable by group or others (mode ${octal(stats.mode)}): ${fix(own, stats, current, what, link, subject)}`,
      );
    }
    if (dirname(current) === current) return;
  }
}

/** What to do about a folder open to others: a private folder's mode can be fixed; a shared one's must stay. */
function fix(
  own: boolean,
  stats: Stats,
  current: string,
  what: string,
  link: string | undefined,
  subject: Subject,
): string {
  // A sticky folder open to others (/tmp, /dev/shm, /var/tmp) is shared on purpose: closing it would break
  // every other user of it, and the secret does not belong there anyway.
  if (own && (stats.mode & STICKY) !== 0) {
    return (
      `it is a shared folder, where another user could create the ${subject.name} first. Keep the ${subject.kept} in a ` +
      `private folder of your own instead, such as one made with: mkdir -m 700 ~/.config/<app>; ` +
      `do not change the mode of ${current}, which others use.`
    );
  }
  return (
    `another user could ${what}. Run: chmod ${own ? '700' : 'go-w'} '${current}'` +
    (own
      ? ''
      : link === undefined
        ? `, or keep the ${subject.kept} in a folder whose parents only you and root can write`
        : `, or give the real path of the ${subject.name}`)
  );
}

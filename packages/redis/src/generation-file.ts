// Where an instance remembers, across restarts, the newest record it trusted or saved: its generation and id, never
// its key. A process started after Redis went back then sees the older record as the rollback it is.
import { createHash } from 'node:crypto';
import { mkdir, rename, unlink } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, dirname, join, posix, win32 } from 'node:path';
import { LauncherAuthError } from 'launcher-auth';
import { printable, readPrivateFile, syncDirectory, temporaryName, writeTemporary } from 'launcher-auth/store-kit';
import type { Seen } from './lease.js';

/** The reads and writes of a generation file: a real file by default, the simulator's own in test/sim/. */
export interface GenerationFileIo {
  /** The record remembered, or `undefined` when none is. Rejects (`ERR_STORE_CORRUPT`) when the file is damaged. */
  read(): Promise<Seen | undefined>;
  /** Remembers `seen`. Never rejects: a file that cannot be written is reported once and then left alone. */
  write(seen: Seen): Promise<void>;
}

/** No generation file (`generationFile: false`): nothing is remembered. */
export const NO_GENERATION_FILE: GenerationFileIo = {
  read: () => Promise.resolve(undefined),
  write: () => Promise.resolve(),
};

/**
 * The per-user state folder: `$XDG_STATE_HOME` when it is set to an absolute path (on any system), otherwise
 * `~/Library/Application Support` on macOS, `%LOCALAPPDATA%` on Windows and `~/.local/state` elsewhere.
 */
export function stateFolder(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
  home: string = homedir(),
): string {
  const path = platform === 'win32' ? win32 : posix;
  const xdg = env['XDG_STATE_HOME'];
  if (xdg !== undefined && path.isAbsolute(xdg)) return xdg;
  if (platform === 'darwin') return path.join(home, 'Library', 'Application Support');
  if (platform === 'win32') {
    const local = env['LOCALAPPDATA'];
    return local !== undefined && path.isAbsolute(local) ? local : path.join(home, 'AppData', 'Local');
  }
  return path.join(home, '.local', 'state');
}

/**
 * The default generation file of the record `key` in the Redis deployment `deployment` (see `deploymentOf` in
 * connections.ts): one file per key and deployment, so that two services on one machine never share one.
 */
export function defaultGenerationFile(key: string, deployment: string, folder: string = stateFolder()): string {
  const hash = createHash('sha256')
    .update(JSON.stringify([deployment, key]))
    .digest('hex')
    .slice(0, 32);
  return join(folder, 'launcher-auth', 'redis', `${hash}.json`);
}

const ID = /^[\x21-\x7e]{1,128}$/;
/** A generation file is under 200 bytes; a larger one is not one. */
const MAX_BYTES = 4096;
const GENERATION_FILE = { name: 'generation file', kept: 'generation file' } as const;

/** The record in a generation file's text; a string saying what is wrong with it otherwise. */
function parse(text: string): Seen | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return 'it is not JSON';
  }
  const { generation, id } = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  if (typeof generation !== 'number' || !Number.isSafeInteger(generation) || generation < 1) {
    return '"generation" is not a positive whole number';
  }
  if (typeof id !== 'string' || !ID.test(id)) return '"id" is not a record id';
  return { generation, id };
}

function errnoOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * The generation file at `path`: read once by the store, written atomically (a temporary file in the same
 * folder, then a rename; the file 0600, the folder 0700) one write after another, and never over a damaged file
 * nor over a higher generation another process sharing it wrote. A folder that cannot be created, read or written
 * is told once through `warn`; nothing is then remembered.
 */
export function generationFileAt(path: string, warn: (message: string) => void): GenerationFileIo {
  let usable = true;
  let writes: Promise<void> = Promise.resolve();
  const corrupt = (problem: string): LauncherAuthError =>
    new LauncherAuthError(
      'ERR_STORE_CORRUPT',
      `The generation file ${path} is unusable: ${problem}. It was left untouched; restore it, or delete it (the ` +
        'store then remembers no record until it trusts one, so a Redis that went back before that is not detected).',
    );
  const giveUp = (problem: string): void => {
    if (!usable) return;
    usable = false;
    warn(
      printable(
        `The generation file ${path} ${problem}; the Redis store runs without it, so a process started while ` +
          'Redis holds an older secret than the last one cannot tell.',
      ),
    );
  };
  const failed = (what: string, error: unknown): string => `cannot be ${what} (${errnoOf(error) ?? 'an error'})`;
  const current = async (): Promise<Seen | string | undefined> => {
    const text = await readPrivateFile(path, GENERATION_FILE, MAX_BYTES);
    return text === undefined ? undefined : parse(text);
  };
  const writeNow = async (seen: Seen): Promise<void> => {
    if (!usable) return;
    const folder = dirname(path);
    let temporary: string | undefined;
    try {
      await mkdir(folder, { recursive: true, mode: 0o700 });
      const there = await current();
      if (typeof there === 'string') {
        giveUp(`is unusable (${there}) and was left untouched`);
        return;
      }
      // Another process on this key (a worker, the CLI) remembered a newer one: keep it.
      if (there !== undefined && there.generation > seen.generation) return;
      temporary = join(folder, temporaryName(basename(path)));
      await writeTemporary(temporary, `${JSON.stringify({ generation: seen.generation, id: seen.id })}\n`);
      await rename(temporary, path);
      temporary = undefined;
      await syncDirectory(folder);
    } catch (error) {
      giveUp(
        error instanceof LauncherAuthError
          ? `is refused (${error.code}), and was left untouched`
          : failed('written', error),
      );
    } finally {
      if (temporary !== undefined) await unlink(temporary).catch(() => undefined);
    }
  };
  return {
    async read() {
      let there: Seen | string | undefined;
      try {
        there = await current();
      } catch (error) {
        // Not this user's own regular file, in folders only this user and root can write: never trusted.
        if (error instanceof LauncherAuthError) throw error;
        giveUp(failed('read', error));
        return undefined;
      }
      if (typeof there === 'string') throw corrupt(there);
      return there;
    },
    write(seen) {
      writes = writes.then(() => writeNow(seen));
      return writes;
    },
  };
}

/** The generation file a store uses: `generationFile`'s, or none for `false`. */
export function generationFileFor(file: string | false): GenerationFileIo {
  if (file === false) return NO_GENERATION_FILE;
  return generationFileAt(file, (message) =>
    process.emitWarning(message, { code: 'LAUNCHER_AUTH_GENERATION_FILE', type: 'LauncherAuthWarning' }),
  );
}

/** The generation file as the store uses it: read once, before the first load; written when its record changes. */
export class GenerationFile {
  readonly #io: GenerationFileIo;
  #known: Seen | undefined;
  #read = false;

  constructor(io: GenerationFileIo) {
    this.#io = io;
  }

  /** At the first call: the record remembered from an earlier run, taken into `history` as seen. */
  async recall(history: { see(generation: number, id: string, prev: string): unknown }): Promise<void> {
    if (this.#read) return;
    const seen = await this.#io.read();
    if (seen !== undefined) history.see(seen.generation, seen.id, '');
    this.#known = seen;
    this.#read = true;
  }

  /** Writes `seen` when it is not what the file holds (nothing before the first read); never rejects. */
  remember(seen: Seen): Promise<void> {
    const known = this.#known;
    if (!this.#read || (known?.id === seen.id && known.generation >= seen.generation)) return Promise.resolve();
    this.#known = seen;
    return this.#io.write(seen);
  }
}

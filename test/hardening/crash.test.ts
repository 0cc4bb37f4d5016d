// Crash consistency of FileSecretStore under a real TokenAuthority: a child process regenerates the token in
// a loop and is killed with SIGKILL at random moments; after each kill the file must open, whole and 0600, on
// the key that rotate() last returned or the one the interrupted rotation was writing, and the temporary file
// that a kill mid-save leaves is gone once the store has opened again.
//
// Kills: LAUNCHER_AUTH_CRASH_KILLS (default 200 in the deep tier, 30 in `npm test`; the soak asks for 1,000), in
// LAUNCHER_AUTH_CRASH_LANES independent directories at once (default 2, one per core: each kill needs a fresh
// process, ~0.1 s to start).
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileSecretStore, TokenAuthority, isLauncherAuthError } from 'launcher-auth';
import { deepOr } from '../support/tier.js';
import { REPO, envCount, fixtureCommand, reportFigures, type FixtureCommand } from './fixtures/support.js';

const KILLS = envCount('LAUNCHER_AUTH_CRASH_KILLS', deepOr(200, 30));
const LANES = Math.max(1, envCount('LAUNCHER_AUTH_CRASH_LANES', 2));
/** The longest wait between the child's first rotation and its kill: several rotations fit in it. */
const MAX_DELAY_MS = 30;
const POSIX = process.platform !== 'win32';
/** The store's temporary files: the writer's pid, then 12 random hex digits. */
const TEMP_NAME = /^\.secret\.json\.\d+-[0-9a-f]{12}\.tmp$/;
const FILE_TEXT =
  /^\{"version":1,"id":"[A-Za-z0-9_-]{16}","key":"[A-Za-z0-9_-]{43}","createdAt":"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z"\}\n$/;

const fingerprint = (key: Uint8Array): string => createHash('sha256').update(key).digest('hex').slice(0, 16);

let command: FixtureCommand;
let root: string;
beforeAll(async () => {
  command = await fixtureCommand('rotate-loop.ts');
  root = await mkdtemp(join(tmpdir(), 'launcher-auth-crash-'));
});
afterAll(async () => {
  await command?.dispose();
  if (root !== undefined) await rm(root, { recursive: true, force: true });
});

interface Tally {
  kills: number;
  /** Killed after a rotation's save began and before rotate() resolved. */
  midRotation: number;
  /** Of those, killed before the save resolved (the temp file or the rename in flight). */
  midSave: number;
  /** The file did not open, or was not exactly one whole record. */
  corrupt: number;
  /** The file opened on a key other than the allowed ones, or with a key other than the one saved under its id. */
  lost: number;
  /** A file (the secret or a stray temp file) open to group or others. */
  exposed: number;
  /** Kills after which the dead process's temporary file was there to remove (before the restart). */
  leftovers: number;
  /** Temporary files still there after the restart (the store removes a dead writer's at its first load). */
  remaining: number;
  problems: string[];
}

interface Child {
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  started: Promise<void>;
  kill(): void;
}

function startChild(path: string, logPath: string): Child {
  const child = spawn(process.execPath, [...command.args, path, logPath], {
    cwd: REPO,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });
  const started = new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if (out.includes('started\n')) resolve();
    });
    void exited.then(({ code, signal }) =>
      reject(new Error(`child exited (${code ?? signal}) before it started: ${stderr.slice(-1_000)}`)),
    );
  });
  return { exited, started, kill: () => child.kill('SIGKILL') };
}

/** One directory, `rounds` kills in a row, each on what the previous one left. */
async function lane(name: string, rounds: number, tally: Tally): Promise<void> {
  const storeDir = join(root, name, 'store');
  const logDir = join(root, name, 'logs');
  await mkdir(logDir, { recursive: true });
  const path = join(storeDir, 'secret.json');
  const store = new FileSecretStore(path);
  const first = await TokenAuthority.open({ store });
  let current = first.keyId;
  await first.close();
  const fingerprints = new Map<string, string>();
  const initial = await store.load();
  fingerprints.set(current, fingerprint(initial?.key ?? new Uint8Array()));

  for (let round = 0; round < rounds; round++) {
    const where = `${name} round ${round}`;
    const logPath = join(logDir, `${round}.log`);
    const child = startChild(path, logPath);
    await child.started;
    // eslint-disable-next-line launcher-auth-tests/no-wall-clock-wait -- a jitter: where the kill lands is what varies
    await new Promise((resolve) => setTimeout(resolve, Math.random() * MAX_DELAY_MS));
    child.kill();
    const { signal } = await child.exited;
    if (signal !== 'SIGKILL') tally.problems.push(`${where}: the child ended by itself (${signal})`);
    tally.kills++;

    // What the child knew when it died: the last rotation that resolved, and the one in flight, if any.
    const events = (await readFile(logPath, 'utf8')).split('\n').filter((line) => line !== '');
    const opened = events.find((line) => line.startsWith('opened '))?.split(' ')[1];
    if (opened !== current) tally.problems.push(`${where}: the child opened ${opened}, not ${current}`);
    let lastReturned = current;
    let inFlight: string | undefined;
    let inFlightSaved = false;
    for (const line of events) {
      const [what, id = '', print] = line.split(' ');
      if (what === 'will') {
        inFlight = id;
        inFlightSaved = false;
        if (print !== undefined) fingerprints.set(id, print);
      } else if (what === 'saved') {
        inFlightSaved = id === inFlight;
      } else if (what === 'rotated') {
        lastReturned = id;
        if (id === inFlight) inFlight = undefined;
      }
    }
    // A save that resolved is durable: then only its record may be on disk.
    const allowed = inFlight === undefined ? [lastReturned] : inFlightSaved ? [inFlight] : [lastReturned, inFlight];
    if (inFlight !== undefined) tally.midRotation++;
    if (inFlight !== undefined && !inFlightSaved) tally.midSave++;

    // What the kill left, before anything opens the file again: nothing may be open to group or others.
    const left = await readdir(storeDir);
    for (const entry of left) {
      const mode = (await stat(join(storeDir, entry))).mode & 0o777;
      if ((entry !== 'secret.json' && entry !== '.secret.json.lock' && !TEMP_NAME.test(entry)) || mode !== 0o600) {
        tally.exposed++;
        tally.problems.push(`${where}: ${entry} has mode ${mode.toString(8)}`);
      }
    }
    if (left.some((entry) => TEMP_NAME.test(entry))) tally.leftovers++;

    let authority: TokenAuthority | undefined;
    try {
      authority = await TokenAuthority.open({ store: new FileSecretStore(path) });
    } catch (error) {
      tally.corrupt++;
      tally.problems.push(
        `${where}: open() failed: ${isLauncherAuthError(error) ? error.code : 'not a LauncherAuthError'}`,
      );
      continue;
    }
    const keyId = authority.keyId;
    const kid = (
      JSON.parse(Buffer.from(authority.issue().split('.')[0] ?? '', 'base64url').toString('utf8')) as { kid?: unknown }
    ).kid;
    await authority.close();
    const record = await new FileSecretStore(path).load();
    const text = await readFile(path, 'utf8');
    if (!FILE_TEXT.test(text) || record?.id !== keyId) {
      tally.corrupt++;
      tally.problems.push(`${where}: the file is not one whole record`);
    }
    if (
      kid !== keyId ||
      !allowed.includes(keyId) ||
      fingerprints.get(keyId) !== fingerprint(record?.key ?? new Uint8Array())
    ) {
      tally.lost++;
      tally.problems.push(`${where}: opened on ${keyId} (kid ${String(kid)}), allowed ${allowed.join(' or ')}`);
    }
    // After the restart (an open() and a load()), the store has removed the dead writer's temporary file.
    const after = await readdir(storeDir);
    if (after.length !== 1 || after[0] !== 'secret.json') {
      tally.remaining += after.filter((entry) => entry !== 'secret.json').length;
      tally.problems.push(`${where}: after the restart the folder holds ${after.join(', ')}`);
    }
    current = keyId;
  }
}

describe.runIf(POSIX)('FileSecretStore under a rotating TokenAuthority killed with SIGKILL', () => {
  it(
    `${KILLS} kills at random moments: zero corrupt files, zero lost secrets`,
    async () => {
      const tally: Tally = {
        kills: 0,
        midRotation: 0,
        midSave: 0,
        corrupt: 0,
        lost: 0,
        exposed: 0,
        leftovers: 0,
        remaining: 0,
        problems: [],
      };
      const started = performance.now();
      const share = (index: number): number => Math.floor(KILLS / LANES) + (index < KILLS % LANES ? 1 : 0);
      await Promise.all(Array.from({ length: LANES }, (_, index) => lane(`lane-${index}`, share(index), tally)));
      const ms = Math.round(performance.now() - started);
      reportFigures('crash', {
        kills: tally.kills,
        midRotation: tally.midRotation,
        midSave: tally.midSave,
        corrupt: tally.corrupt,
        lost: tally.lost,
        exposed: tally.exposed,
        leftovers: tally.leftovers,
        remaining: tally.remaining,
        ms,
        start: command.how,
      });

      expect(tally.problems).toEqual([]);
      expect({
        kills: tally.kills,
        corrupt: tally.corrupt,
        lost: tally.lost,
        exposed: tally.exposed,
        remaining: tally.remaining,
      }).toEqual({ kills: KILLS, corrupt: 0, lost: 0, exposed: 0, remaining: 0 });
      // The point of the test: kills that landed while a save was under way. Measured on 2 cores: about 70% of
      // kills (50% with /tmp on tmpfs, where fsync costs nothing) land after a save began, nearly all of them
      // before it resolved; the rest land while the next key is being built, before its save.
      expect(tally.midRotation).toBeGreaterThanOrEqual(Math.ceil(KILLS / 5));
      expect(tally.midSave).toBeGreaterThanOrEqual(Math.ceil(KILLS / 10));
      // And kills that did leave a temporary file behind: otherwise "none remain" would prove nothing.
      expect(tally.leftovers).toBeGreaterThanOrEqual(1);
    },
    Math.max(120_000, KILLS * 1_000),
  );
});

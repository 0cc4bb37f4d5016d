// "Regenerate token" pressed at once in two processes on one secret file (two launcher windows, or a window and
// `launcher-auth rotate --store`): the file's compare-and-set lets one win; the other says so and shows the winner's
// token; no token shown is refused afterwards by either process.
//
// Each trial makes both saves meet at the lock: this test holds the lock itself (as a live save would) until both
// saves have written their temporary files, which a save does before it takes the lock, then lets go.
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { FileSecretStore, TokenAuthority } from 'launcher-auth';
import { spawnOwned } from '../support/children.js';
import { budget } from '../support/machine.js';
import { until } from '../support/poll.js';
import { fixtureCommand, type FixtureCommand } from '../hardening/fixtures/support.js';

const REPO = join(import.meta.dirname, '../..');
const TRIALS = 50;
const TEMP_NAME = /^\.secret\.json\.(\d+)-[0-9a-f]{12}\.tmp$/;

const digest = (token: string): string => createHash('sha256').update(token).digest('hex').slice(0, 16);

interface Lines {
  readonly lines: string[];
  /** What it wrote to stderr (the CLI's messages, which never hold a token). */
  readonly errors: () => string;
  send(line: string): void;
  /** The next line starting with `prefix`, split on spaces. */
  next(prefix: string): Promise<string[]>;
}

// The window and the CLI each start from one esbuild bundle (about 0.1 s a start, against 1.5 s through tsx).
let windowCommand: FixtureCommand;
let cliCommand: FixtureCommand;
beforeAll(async () => {
  windowCommand = await fixtureCommand(join(REPO, 'test/stores/fixtures/regenerate.ts'));
  // `rotate --store` never loads the Redis packages that the CLI imports for --redis.
  cliCommand = await fixtureCommand(join(REPO, 'src/cli/main.ts'), { external: ['redis', '@launcher-auth/redis'] });
});
afterAll(async () => {
  await windowCommand.dispose();
  await cliCommand.dispose();
});

function started(command: FixtureCommand, args: string[]): Lines & { closed: Promise<number | null> } {
  const child = spawnOwned(process.execPath, [...command.args, ...args], { cwd: REPO });
  onTestFinished(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const lines: string[] = [];
  let partial = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop() ?? '';
    lines.push(...parts);
  });
  let errors = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (errors += chunk));
  let cursor = 0;
  return {
    lines,
    errors: () => errors,
    send: (line) => child.stdin.write(`${line}\n`),
    next: async (prefix) => {
      const found = (): number => lines.findIndex((line, index) => index >= cursor && line.startsWith(prefix));
      expect(await until(() => found() >= 0 || child.exitCode !== null, 20_000)).toBe(true);
      const index = found();
      if (index < 0) throw new Error(`the child ended before printing "${prefix}"`);
      cursor = index + 1;
      return (lines[index] as string).split(' ');
    },
    closed: new Promise((resolve) => child.once('close', resolve)),
  };
}

async function secretFile(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'launcher-auth-regenerate-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'secret.json');
  await (await TokenAuthority.open({ store: new FileSecretStore(path) })).close();
  return path;
}

/** Holds the save lock as a live save would, until the saves of `saves` processes wait behind it. */
async function holdLockUntil(path: string, saves: number, meanwhile: () => void): Promise<void> {
  const dir = join(path, '..');
  const lock = join(dir, '.secret.json.lock');
  await writeFile(lock, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
  meanwhile();
  // A save's temporary files bear its process's pid.
  const waiting = async (): Promise<boolean> =>
    new Set((await readdir(dir)).map((name) => TEMP_NAME.exec(name)?.[1]).filter((pid) => pid !== undefined)).size >=
    saves;
  const met = await until(waiting, 20_000);
  await unlink(lock);
  expect(met).toBe(true);
}

function window(path: string): Lines {
  return started(windowCommand, [path]);
}

describe('FileSecretStore: two processes regenerate at once', () => {
  it(
    `two windows, ${TRIALS} trials: one regenerated, one regenerated-elsewhere showing the same token, 0 shown tokens refused`,
    async () => {
      const path = await secretFile();
      const windows = [window(path), window(path)];
      for (const each of windows) await each.next('ready');
      const tally = new Map<string, number>();
      let refused = 0;
      for (let trial = 0; trial < TRIALS; trial++) {
        await holdLockUntil(path, 2, () => {
          for (const each of windows) each.send('regenerate');
        });
        const results = await Promise.all(windows.map((each) => each.next('result')));
        const outcomes = results.map(([, outcome]) => outcome).sort();
        tally.set(outcomes.join('+'), (tally.get(outcomes.join('+')) ?? 0) + 1);
        // Both showed one token, and each process accepts it and holds it as its current one.
        expect(results[0]?.[2]).toBe(results[1]?.[2]);
        for (const each of windows) each.send('check');
        for (const [, accepted, current, state] of await Promise.all(windows.map((each) => each.next('check')))) {
          if (accepted !== 'accepted') refused++;
          expect([current, state]).toEqual([results[0]?.[2], 'ok']);
        }
      }
      expect(Object.fromEntries(tally)).toEqual({ 'regenerated+regenerated-elsewhere': TRIALS });
      expect(refused).toBe(0);
      // Afterwards, both still accept the last token shown: nothing queued behind an answer changed it.
      for (const each of windows) each.send('check');
      for (const [, accepted] of await Promise.all(windows.map((each) => each.next('check')))) {
        expect(accepted).toBe('accepted');
      }
    },
    budget(240_000),
  );

  it(
    `a window and \`launcher-auth rotate --store\`, ${TRIALS} trials: the same, the CLI printing the token that works`,
    async () => {
      const path = await secretFile();
      const settings = window(path);
      await settings.next('ready');
      const tally = new Map<string, number>();
      let refused = 0;
      for (let trial = 0; trial < TRIALS; trial++) {
        let cli: (Lines & { closed: Promise<number | null> }) | undefined;
        await holdLockUntil(path, 2, () => {
          settings.send('regenerate');
          cli = started(cliCommand, ['rotate', '--store', path]);
        });
        const [, outcome, shown] = await settings.next('result');
        const code = await (cli as Lines & { closed: Promise<number | null> }).closed;
        const printed = (cli as Lines).lines.filter((line) => line !== '');
        // The CLI printed one token, the one the window shows: its own (exit 0, regenerated) or the window's.
        expect([code, printed.length]).toEqual([0, 1]);
        expect(digest(printed[0] as string)).toBe(shown);
        // Exactly one of the two regenerated: the CLI says so when it was not the one.
        const cliLost = (cli as Lines).errors().includes('The token was regenerated elsewhere');
        expect([outcome, cliLost]).toEqual(
          outcome === 'regenerated' ? ['regenerated', true] : ['regenerated-elsewhere', false],
        );
        tally.set(outcome as string, (tally.get(outcome as string) ?? 0) + 1);
        settings.send('check');
        const [, accepted, current, state] = await settings.next('check');
        if (accepted !== 'accepted') refused++;
        expect([current, state]).toEqual([shown, 'ok']);
      }
      // The window won some trials and lost the others; each time exactly one of the two regenerated.
      expect(
        [...tally.keys()].every((outcome) => outcome === 'regenerated' || outcome === 'regenerated-elsewhere'),
      ).toBe(true);
      expect(refused).toBe(0);
    },
    budget(600_000),
  );
});

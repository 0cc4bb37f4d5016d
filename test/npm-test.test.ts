// `npm test` itself (scripts/test.mjs), run on stand-in steps (test/fixtures/npm-test-step.mjs) instead of the suite:
// it sums the counts the steps report into its closing line, and when a step fails, or on Ctrl-C or SIGTERM, it ends
// the simulation and every process of each, workers whose parent went first included. Linux: processes are found by
// their command line in /proc.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { until, within } from './support/poll.js';

const SCRIPT = fileURLToPath(new URL('../scripts/test.mjs', import.meta.url));
const STEP = fileURLToPath(new URL('./fixtures/npm-test-step.mjs', import.meta.url));

/** A run's marker, its scratch folder, and the stand-in command for each mode. */
function stage() {
  const marker = `launcher-auth-npm-test-${randomUUID()}`;
  const dir = mkdtempSync(join(tmpdir(), 'launcher-auth-npm-test-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const step = (...args: string[]): string =>
    [process.execPath, STEP, ...args, marker].map((part) => JSON.stringify(part)).join(' ');
  return { marker, dir, step };
}

/** The pids of live processes whose command line carries `marker` (a killed one's goes empty as it exits). */
function carrying(marker: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker);
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Starts scripts/test.mjs on `steps` and `simulation`; its output and its exit. */
function run(steps: string[] | string[][], simulation: string) {
  const child = spawn(process.execPath, [SCRIPT], {
    env: {
      ...process.env,
      LAUNCHER_AUTH_TEST_STEPS: JSON.stringify(steps),
      LAUNCHER_AUTH_TEST_SIMULATION: simulation,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let [output, stdout] = ['', ''];
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
    stdout += chunk.toString('utf8');
  });
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  onTestFinished(() => void child.kill('SIGKILL'));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return {
    child,
    output: () => output,
    // The closing line is standard output's last: two pipes' chunks arrive in no set order between them.
    closing: () => stdout.trimEnd().split('\n').at(-1),
    exited: within(exited, 'scripts/test.mjs to end', 60_000),
  };
}

const pids = (file: string): number[] => readFileSync(file, 'utf8').split('\n').map(Number);

describe.runIf(process.platform === 'linux')('npm test (scripts/test.mjs)', () => {
  it('times each step and ends with one line that sums what the steps and the simulation counted', async () => {
    const { step } = stage();
    const ran = run([step('report', '3', '0'), step('report', '2', '0')], step('report', '4', '0'));
    expect(await ran.exited).toBe(0);
    const lines = ran.output().trimEnd().split('\n');
    expect(ran.closing()).toBe('9 passed, 0 failed');
    expect(lines.filter((line) => /^npm test: `.*` passed in \d+\.\d s$/.test(line))).toHaveLength(3);
  });

  it('a failing step ends the run there, the simulation and every worker with it, orphaned ones included', async () => {
    const { marker, dir, step } = stage();
    const simulated = join(dir, 'simulation');
    const failing = join(dir, 'failing');
    const after = join(dir, 'after');
    const ran = run(
      // The first step lets the simulation start its workers; the second starts two and exits 1 without them.
      [step('await', simulated), step('start', '2', failing, 'exit'), step('start', '1', after, 'exit')],
      step('start', '2', simulated, 'stay'),
    );
    expect(await ran.exited).toBe(1);
    expect(ran.closing()).toBe('0 passed, 1 failed');
    // Both had workers to end, and nothing after the failing step ran.
    expect(pids(simulated)).toHaveLength(2);
    expect(pids(failing)).toHaveLength(2);
    expect(existsSync(after)).toBe(false);
    expect(await until(() => carrying(marker).length === 0)).toBe(true);
  });

  it('a step failing in one lane ends the step under way in the other, and nothing after it runs', async () => {
    const { marker, dir, step } = stage();
    const simulated = join(dir, 'simulation');
    const stepping = join(dir, 'step');
    const failing = join(dir, 'failing');
    const after = join(dir, 'after');
    const ran = run(
      [
        // The first lane fails once the other lane's step and the simulation have started their workers.
        [step('await', stepping), step('await', simulated), step('start', '1', failing, 'exit')],
        [step('start', '2', stepping, 'stay'), step('start', '1', after, 'exit')],
      ],
      step('start', '2', simulated, 'stay'),
    );
    expect(await ran.exited).toBe(1);
    // The step ended in the other lane is stopped, not one more failure.
    expect(ran.output()).toMatch(/^npm test: `.*` stopped in \d+\.\d s$/m);
    expect(ran.closing()).toBe('0 passed, 1 failed');
    expect(pids(stepping)).toHaveLength(2);
    expect(pids(failing)).toHaveLength(1);
    expect(existsSync(after)).toBe(false);
    expect(await until(() => carrying(marker).length === 0)).toBe(true);
  });

  it.each(['SIGINT', 'SIGTERM'] as const)(
    '%s ends the step under way and the simulation, every worker of each',
    async (name) => {
      const { marker, dir, step } = stage();
      const simulated = join(dir, 'simulation');
      const stepping = join(dir, 'step');
      const ran = run([step('start', '2', stepping, 'stay')], step('start', '2', simulated, 'stay'));
      expect(await until(() => existsSync(simulated) && existsSync(stepping), 20_000)).toBe(true);
      // The workers and their parents: 2 + 2 + the step and the simulation themselves.
      expect(await until(() => carrying(marker).length >= 6, 20_000)).toBe(true);
      ran.child.kill(name);
      expect(await ran.exited).toBe(name === 'SIGINT' ? 130 : 143);
      expect(await until(() => carrying(marker).length === 0)).toBe(true);
    },
  );
});

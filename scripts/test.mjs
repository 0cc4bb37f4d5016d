// @ts-check
// `npm test`: every check a change must pass, in two lanes side by side, each one step after another as `&&` would
// run them: the checks (lint with the type check, build, the built packages), which keep about one core busy, and the tests
// (the quick tier, then the real-process tier), which wait on processes and servers much of the time. Beside them,
// from the start, the simulator's schedules (`npm run test:sim`), whose workers lower their own CPU priority
// (packages/redis/test/sim/yield-cpu.ts). Then publint and attw on both packages: `npm pack` rewrites package.json
// for a moment (scripts/pack-manifest.mjs), so they run once nothing else reads it. A step's output is printed
// whole when it ends, with its wall time, so that the lanes never interleave; the run ends with one line,
// `N passed, N failed`, the tests vitest counted in every step (a step that fails without a count of its own, lint
// say, counts as one; a step ended because the other lane failed counts nothing, and says `stopped`).
//
// Every step and the simulation lead process groups of their own, so that a failing step, Ctrl-C or SIGTERM ends
// the whole of each (npm, the shell, vitest and every worker it started), not its first process only.
//
// LAUNCHER_AUTH_TEST_STEPS (a JSON array of commands, run as one lane, or of such arrays, lanes side by side) and LAUNCHER_AUTH_TEST_SIMULATION (one
// command) replace the steps and the simulation: test/npm-test.test.ts runs this script on stand-ins of its own.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const LANES = [
  ['npm run lint', 'npm run build', 'npm run test:dist'],
  ['npm run test:quick', 'npm run test:process'],
];
const AFTER = [
  'publint --strict',
  'node scripts/attw.mjs',
  'publint --strict packages/redis',
  'node scripts/attw.mjs packages/redis',
];
const SIMULATION = 'npm run test:sim';

const given = process.env.LAUNCHER_AUTH_TEST_STEPS;
/** @type {(string | string[])[]} */
const stand = given ? JSON.parse(given) : [];
/** @type {string[][]} */
const lanes = given
  ? stand.every(Array.isArray)
    ? /** @type {string[][]} */ (stand)
    : [/** @type {string[]} */ (stand)]
  : LANES;
/** @type {string[]} */
const after = given ? [] : AFTER;
const simulationCommand = process.env.LAUNCHER_AUTH_TEST_SIMULATION ?? SIMULATION;
/** How long a stopped process group has to end after SIGTERM before SIGKILL. */
const GRACE_MS = 5_000;
/** Where each vitest run writes its JSON report (the vitest configs read LAUNCHER_AUTH_TEST_REPORT). */
const reports = mkdtempSync(join(tmpdir(), 'launcher-auth-test-'));

/**
 * @typedef {{ command: string; child: import('node:child_process').ChildProcess; report: string;
 *   closed: Promise<number> }} Run
 */

/** Starts `command` through the shell, leading a process group of its own, with its JSON report file. */
function start(/** @type {string} */ command, /** @type {number} */ index, /** @type {boolean} */ quiet) {
  const report = join(reports, `${index}.json`);
  const child = spawn(command, {
    shell: true,
    detached: true,
    stdio: ['ignore', quiet ? 'pipe' : 'inherit', quiet ? 'pipe' : 'inherit'],
    env: { ...process.env, LAUNCHER_AUTH_TEST_REPORT: report },
  });
  /** @type {Promise<number>} */
  const closed = new Promise((resolve) => {
    child.on('error', () => resolve(1));
    child.on('close', (code) => resolve(code ?? 1));
  });
  return { command, child, report, closed };
}

/** Signals `run`'s whole process group; a group already gone is no error. */
function signal(/** @type {Run} */ run, /** @type {NodeJS.Signals} */ name) {
  if (run.child.pid === undefined) return;
  try {
    process.kill(-run.child.pid, name);
  } catch (error) {
    if (/** @type {NodeJS.ErrnoException} */ (error).code !== 'ESRCH') throw error;
  }
}

/**
 * Ends `run` and everything it started: SIGTERM to its process group, SIGKILL to whatever of the group is left once
 * its leader has closed or the grace is over (a worker whose parent went first is still in the group).
 */
async function stop(/** @type {Run} */ run) {
  signal(run, 'SIGTERM');
  let timer;
  await Promise.race([run.closed, new Promise((resolve) => (timer = setTimeout(resolve, GRACE_MS)))]);
  clearTimeout(timer);
  signal(run, 'SIGKILL');
  await run.closed;
}

/** The tests vitest counted in `run`, if it wrote a report. */
function counted(/** @type {Run} */ run) {
  try {
    const report = JSON.parse(readFileSync(run.report, 'utf8'));
    return { passed: Number(report.numPassedTests) || 0, failed: Number(report.numFailedTests) || 0 };
  } catch {
    return undefined;
  }
}

const totals = { passed: 0, failed: 0 };
/** Adds `run`'s counts; a failing run that counted no failure of its own counts as one. */
function tally(/** @type {Run} */ run, /** @type {number} */ code) {
  const counts = counted(run) ?? { passed: 0, failed: 0 };
  if (code !== 0 && counts.failed === 0) counts.failed = 1;
  totals.passed += counts.passed;
  totals.failed += counts.failed;
}

const seconds = (/** @type {number} */ since) => `${((performance.now() - since) / 1000).toFixed(1)} s`;

/** @type {string[]} */
const simulationOutput = [];
const simulationStarted = performance.now();
let index = 0;
const simulation = start(simulationCommand, index++, true);
simulation.child.stdout?.on('data', (chunk) => simulationOutput.push(String(chunk)));
simulation.child.stderr?.on('data', (chunk) => simulationOutput.push(String(chunk)));

/** The steps under way. */
const current = new Set(/** @type {Run[]} */ ([]));
let stopping = false;
/** Ctrl-C or SIGTERM: the steps under way and the simulation end with every process of theirs, then this one. */
async function interrupted(/** @type {NodeJS.Signals} */ name) {
  if (stopping) return;
  stopping = true;
  console.error(`\nnpm test: ${name}; stopping the steps under way and the simulation.`);
  await Promise.all([simulation, ...current].map(stop));
  rmSync(reports, { recursive: true, force: true });
  process.exit(name === 'SIGINT' ? 130 : 143);
}
process.on('SIGINT', (name) => void interrupted(name));
process.on('SIGTERM', (name) => void interrupted(name));

let failed = 0;
/** Runs `command`, prints its output whole and its time once it ends; its exit code. */
async function step(/** @type {string} */ command) {
  const started = performance.now();
  const run = start(command, index++, true);
  /** @type {string[]} */
  const output = [];
  run.child.stdout?.on('data', (chunk) => output.push(String(chunk)));
  run.child.stderr?.on('data', (chunk) => output.push(String(chunk)));
  current.add(run);
  const code = await run.closed;
  // A step's leader may close before its workers: none outlives its step.
  signal(run, 'SIGKILL');
  current.delete(run);
  if (stopping) await new Promise(() => undefined);
  // Ended because a step of the other lane failed: its exit says nothing of its own checks.
  const stopped = code !== 0 && failed !== 0;
  if (!stopped) tally(run, code);
  process.stdout.write(`\n> ${command}\n${output.join('')}`);
  const outcome = code === 0 ? 'passed' : stopped ? 'stopped' : `failed (exit ${code})`;
  console.log(`npm test: \`${command}\` ${outcome} in ${seconds(started)}`);
  return code;
}

/** Runs `commands` one after another; stops at the first that fails, or once another lane failed. */
async function lane(/** @type {string[]} */ commands) {
  for (const command of commands) {
    if (failed !== 0) return;
    const code = await step(command);
    if (code !== 0 && failed === 0) {
      failed = code;
      console.error(`\nnpm test: \`${command}\` failed; the other steps and the simulation are stopped.`);
      await Promise.all([simulation, ...current].map(stop));
    }
  }
}

await Promise.all(lanes.map(lane));
if (failed === 0) await lane(after);
if (failed === 0) {
  const code = await simulation.closed;
  signal(simulation, 'SIGKILL');
  process.stdout.write(`\n> ${simulationCommand} (started with the first step)\n${simulationOutput.join('')}`);
  tally(simulation, code);
  console.log(
    `npm test: \`${simulationCommand}\` ${code === 0 ? 'passed' : `failed (exit ${code})`} in ${seconds(simulationStarted)}`,
  );
  failed = code;
}
rmSync(reports, { recursive: true, force: true });
console.log(`\n${totals.passed} passed, ${totals.failed} failed`);
process.exitCode = failed;

// @ts-check
// `npm test`: lint, typecheck, the quick tier, the real-process tier, build, the built package, publint and attw,
// one after another, as `&&` would run them; and beside them, from the start, the simulator's schedules
// (`npm run test:sim`), whose workers lower their own CPU priority (test/sim/yield-cpu.ts). The steps above leave
// a core idle much of the time (lint and typecheck use one; the real-process tier waits on servers and timers):
// the simulation takes what they leave and yields to them the rest of the time. Its output is printed whole at the
// end, so the two never interleave. Each step prints its wall time; the run ends with one line, `N passed, N failed`,
// the tests vitest counted in every step (a step that fails without a count of its own, lint say, counts as one).
//
// Every step and the simulation lead process groups of their own, so that a failing step, Ctrl-C or SIGTERM ends
// the whole of each (npm, the shell, vitest and every worker it started), not its first process only.
//
// LAUNCHER_AUTH_TEST_STEPS (a JSON array of commands) and LAUNCHER_AUTH_TEST_SIMULATION (one command) replace the
// steps and the simulation: test/scripts/test-run.test.ts runs this script on stand-ins of its own.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const STEPS = [
  'npm run lint',
  'npm run typecheck',
  'npm run test:quick',
  'npm run test:process',
  'npm run build',
  'npm run test:dist',
  'publint --strict',
  'node scripts/attw.mjs',
  'publint --strict packages/redis',
  'node scripts/attw.mjs packages/redis',
];
const SIMULATION = 'npm run test:sim';

const steps = process.env.LAUNCHER_AUTH_TEST_STEPS ? JSON.parse(process.env.LAUNCHER_AUTH_TEST_STEPS) : STEPS;
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
const simulation = start(simulationCommand, steps.length, true);
simulation.child.stdout?.on('data', (chunk) => simulationOutput.push(String(chunk)));
simulation.child.stderr?.on('data', (chunk) => simulationOutput.push(String(chunk)));

/** @type {Run | undefined} */
let current;
let stopping = false;
/** Ctrl-C or SIGTERM: the step under way and the simulation end with every process of theirs, then this one. */
async function interrupted(/** @type {NodeJS.Signals} */ name) {
  if (stopping) return;
  stopping = true;
  console.error(`\nnpm test: ${name}; stopping the step under way and the simulation.`);
  await Promise.all([simulation, ...(current === undefined ? [] : [current])].map(stop));
  rmSync(reports, { recursive: true, force: true });
  process.exit(name === 'SIGINT' ? 130 : 143);
}
process.on('SIGINT', (name) => void interrupted(name));
process.on('SIGTERM', (name) => void interrupted(name));

let failed = 0;
for (const [index, command] of steps.entries()) {
  console.log(`\n> ${command}`);
  const started = performance.now();
  current = start(command, index, false);
  const code = await current.closed;
  // A step's leader may close before its workers: none outlives its step.
  signal(current, 'SIGKILL');
  if (stopping) await new Promise(() => undefined);
  tally(current, code);
  console.log(`npm test: \`${command}\` ${code === 0 ? 'passed' : `failed (exit ${code})`} in ${seconds(started)}`);
  current = undefined;
  if (code !== 0) {
    failed = code;
    console.error(`\nnpm test: \`${command}\` failed; the simulation is stopped.`);
    await stop(simulation);
    break;
  }
}
if (failed === 0) {
  console.log(`\n> ${simulationCommand} (started with the first step; its output follows)`);
  const code = await simulation.closed;
  signal(simulation, 'SIGKILL');
  process.stdout.write(simulationOutput.join(''));
  tally(simulation, code);
  console.log(
    `npm test: \`${simulationCommand}\` ${code === 0 ? 'passed' : `failed (exit ${code})`} in ${seconds(simulationStarted)}`,
  );
  failed = code;
}
rmSync(reports, { recursive: true, force: true });
console.log(`\n${totals.passed} passed, ${totals.failed} failed`);
process.exitCode = failed;

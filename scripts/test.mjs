// @ts-check
// `npm test`: lint, typecheck, the quick tier, the real-process tier, build, the built package, publint and attw,
// one after another, as `&&` would run them; and beside them, from the start, the simulator's schedules
// (`npm run test:sim`), whose workers lower their own CPU priority (test/sim/yield-cpu.ts). The steps above leave
// a core idle much of the time (lint and typecheck use one; the real-process tier waits on servers and timers):
// the simulation takes what they leave and yields to them the rest of the time. Its output is printed whole at the
// end, so the two never interleave. The first step that fails ends the run, the simulation with it, as `&&` would.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/** `npm run test:sim`'s arguments to vitest, read from package.json, which says them once. */
const SIMULATION = (() => {
  const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  const [program, ...args] = String(manifest.scripts['test:sim']).split(' ');
  if (program !== 'vitest') throw new Error("scripts/test.mjs: package.json's test:sim must start with `vitest`.");
  return args;
})();
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

/** A child's exit code, once it has closed (a signal counts as a failure). */
function exit(/** @type {import('node:child_process').ChildProcess} */ child) {
  return new Promise((resolve) => {
    child.on('error', () => resolve(1));
    child.on('close', (code) => resolve(code ?? 1));
  });
}

/** Runs one step through the shell, its output to this process's own; resolves to its exit code. */
function step(/** @type {string} */ command) {
  return exit(spawn(command, { shell: true, stdio: 'inherit' }));
}

// vitest itself, not through npm and a shell, so that stopping it stops its workers.
const vitest = join(dirname(createRequire(import.meta.url).resolve('vitest/package.json')), 'vitest.mjs');
/** @type {string[]} */
const simulationOutput = [];
const simulation = spawn(process.execPath, [vitest, ...SIMULATION], { stdio: ['ignore', 'pipe', 'pipe'] });
simulation.stdout.on('data', (chunk) => simulationOutput.push(String(chunk)));
simulation.stderr.on('data', (chunk) => simulationOutput.push(String(chunk)));
const simulated = exit(simulation);
let failed = 0;
for (const command of STEPS) {
  console.log(`\n> ${command}`);
  failed = Number(await step(command));
  if (failed !== 0) {
    console.error(`\nnpm test: \`${command}\` failed (exit ${failed}); the simulation is stopped.`);
    simulation.kill();
    break;
  }
}
if (failed === 0) {
  console.log('\n> npm run test:sim (started with the first step; its output follows)');
  const code = Number(await simulated);
  process.stdout.write(simulationOutput.join(''));
  if (code !== 0) console.error(`\nnpm test: \`npm run test:sim\` failed (exit ${code}).`);
  failed = code;
}
process.exitCode = failed;

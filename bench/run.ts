// `npm run bench`: builds dist/ with tsup, runs the micro, HTTP and rotate() benchmarks (each in child processes),
// prints one table on stdout and writes bench/RESULTS.md and bench/results.svg. Never part of `npm test`.
//
// Flags: --quick (short runs: a smoke check, not figures to quote), --only micro|http|rotate, --no-build (use
// dist/ as it is), --reps N and --duration S (HTTP repetitions and seconds per measured run; defaults 3 and 5).
import { execFileSync, spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, release, tmpdir, totalmem, type as osType } from 'node:os';
import { join } from 'node:path';
import { BENCH_DIR, REPO_DIR, flag, hookExit, progress } from './common.js';
import { runHttp } from './http.js';
import { runMicro } from './micro.js';
import { markdown, stdoutTable, svgChart, type Results } from './report.js';
import { runRotate } from './rotate.js';

const PARTS = ['micro', 'http', 'rotate'] as const;
type Part = (typeof PARTS)[number];

hookExit();
const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const only = flag(argv, '--only');
if (only !== undefined && !(PARTS as readonly string[]).includes(only)) {
  throw new TypeError(`--only must be one of ${PARTS.join(', ')}`);
}
const parts: readonly Part[] = only === undefined ? PARTS : [only as Part];
const reps = Number(flag(argv, '--reps') ?? (quick ? '1' : '3'));
const durationSec = Number(flag(argv, '--duration') ?? (quick ? '1' : '5'));
const warmupSec = quick ? 1 : 2;
if (!Number.isInteger(reps) || reps < 1 || reps > 20) throw new TypeError('--reps must be a whole number from 1 to 20');
if (!(durationSec >= 1 && durationSec <= 60)) throw new TypeError('--duration must be from 1 to 60 seconds');

function git(args: string[]): string {
  return execFileSync('git', args, { cwd: REPO_DIR, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
}
function commit(): string {
  try {
    return `${git(['rev-parse', '--short', 'HEAD'])}${git(['status', '--porcelain', '--', 'src']) === '' ? '' : ' (src/ modified)'}`;
  } catch {
    return 'unknown';
  }
}

const build = argv.includes('--no-build') ? 'dist/ as found (--no-build)' : '`npx tsup` at the start of this run';
if (!argv.includes('--no-build')) {
  progress('build', 'npx tsup');
  // The library as published; its output goes to stderr so that stdout carries only the table.
  const built = spawnSync('npx', ['tsup'], { cwd: REPO_DIR, stdio: ['ignore', 2, 2], timeout: 5 * 60_000 });
  if (built.status !== 0) throw new Error('npx tsup failed');
}

const results: Results = {
  machine: {
    date: new Date().toISOString(),
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
    cores: cpus().length,
    memoryGiB: totalmem() / 2 ** 30,
    node: process.version,
    os: `${osType()} ${release()}`,
    loadAverage: loadavg().map((l) => l.toFixed(2)).join(' / '),
    commit: commit(),
  },
  settings: { quick, parts, build },
};

const workDir = await mkdtemp(join(tmpdir(), 'launcher-auth-bench-'));
// The work directory holds a secret: removed however the run ends (^C ends it through process.exit).
process.once('exit', () => rmSync(workDir, { recursive: true, force: true }));
try {
  if (parts.includes('micro')) {
    progress('micro', 'speed, then allocation (two child processes)');
    results.micro = await runMicro({ quick, workDir });
  }
  if (parts.includes('http')) {
    progress('http', `${reps} repetition(s) of ${warmupSec} s warm-up + ${durationSec} s per path`);
    results.http = await runHttp({ workDir, reps, durationSec, warmupSec });
  }
  if (parts.includes('rotate')) {
    progress('rotate', '200 rotations');
    results.rotate = await runRotate({ workDir, count: 200 });
  }
} finally {
  await rm(workDir, { recursive: true, force: true });
}

process.stdout.write(`${stdoutTable(results)}\n`);
await writeFile(join(BENCH_DIR, 'RESULTS.md'), markdown(results));
if (results.http !== undefined) await writeFile(join(BENCH_DIR, 'results.svg'), svgChart(results.http, quick));
progress('done', `wrote bench/RESULTS.md${results.http === undefined ? '' : ' and bench/results.svg'}`);

// `npm run bench`: builds the library into bench/.build/ with tsup, runs the micro, HTTP and rotate() benchmarks (each
// in child processes), prints one table on stdout and writes bench/RESULTS.md and bench/results.svg. Never part of
// `npm test`.
//
// Flags: --quick (short runs: a smoke check, not figures to quote), --only micro|http|rotate, --no-build (use
// bench/.build/ as it is), --reps N and --duration S (HTTP repetitions and seconds per measured run; defaults 3 and 5),
// --profile <case> [--seconds S] (instead of the benchmark: where the time of one hot path goes; see bench/profile.ts).
// `npm run bench -- sim [--count N] [--from S] [--reps N] [--base PATH]`: the simulator against its baseline instead (bench/sim.ts),
// its section of bench/RESULTS.md rewritten, the rest kept; `--profile` for where its time goes.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, release, tmpdir, totalmem, type as osType } from 'node:os';
import { join } from 'node:path';
import { build, type Options } from 'tsup';
import tsupConfig from '../tsup.config.ts';
import redisConfig from '../packages/redis/tsup.config.ts';
import { BENCH_DIR, BUILD_DIR, CORE_BUILT, REPO_DIR, buildExists, flag, hookExit, progress } from './common.js';
import { estimateHttpSeconds, runHttp } from './http.js';
import { MICRO_ESTIMATE_SECONDS, runMicro } from './micro.js';
import { PROFILE_CASES, runProfile, type ProfileCase } from './profile.js';
import { markdown, stdoutTable, svgChart, type Results } from './report.js';
import { runRotate } from './rotate.js';
import { SIM_BASELINE, profileSim, runSim, simMarkdown, simSectionOf, withSimSection } from './sim.js';

const PARTS = ['micro', 'http', 'rotate'] as const;
type Part = (typeof PARTS)[number];

hookExit();
const argv = process.argv.slice(2);
const RESULTS = join(BENCH_DIR, 'RESULTS.md');
if (argv[0] === 'sim' && argv.includes('--profile')) {
  process.stdout.write(await profileSim(argv.slice(1)));
  process.exit(0);
}
if (argv[0] === 'sim') {
  const result = await runSim(argv.slice(1));
  const { baseline, current } = result;
  process.stdout.write(
    [
      `simulator, schedules ${result.from} to ${result.from + result.count - 1} (${result.reps} time(s) each), CPU time (user + system) per tree:`,
      `  ${SIM_BASELINE}:   ${baseline.perCpuSecond.toFixed(1)} schedules per CPU-second (${baseline.cpuSeconds.toFixed(1)} CPU s)`,
      `  this tree: ${current.perCpuSecond.toFixed(1)} schedules per CPU-second (${current.cpuSeconds.toFixed(1)} CPU s)`,
      `  ratio:     ${result.ratio.toFixed(2)}x`,
      `  summary of ${SIM_BASELINE}: ${baseline.summary}`,
      `  summary of this tree: ${current.summary}`,
      result.same
        ? '  the summaries are identical'
        : '  THE SUMMARIES DIFFER: the two trees explored different schedules',
      '',
    ].join('\n'),
  );
  const section = simMarkdown(result, {
    date: new Date().toISOString(),
    load: loadavg()
      .map((l) => l.toFixed(2))
      .join(' / '),
    commit: commit(['test/sim']),
  });
  await writeFile(RESULTS, withSimSection(existsSync(RESULTS) ? readFileSync(RESULTS, 'utf8') : '', section));
  progress('done', 'wrote the simulator section of bench/RESULTS.md');
  process.exit(result.same ? 0 : 1);
}
const quick = argv.includes('--quick');
const only = flag(argv, '--only');
if (only !== undefined && !(PARTS as readonly string[]).includes(only)) {
  throw new TypeError(`--only must be one of ${PARTS.join(', ')}`);
}
const parts: readonly Part[] = only === undefined ? PARTS : [only as Part];
const reps = Number(flag(argv, '--reps') ?? (quick ? '1' : '3'));
const durationSec = Number(flag(argv, '--duration') ?? (quick ? '1' : '5'));
// Every path of a server is warmed before any is measured, so the server has run all its paths for this long
// times their number before the first figure is taken.
const warmupSec = 1;
if (!Number.isInteger(reps) || reps < 1 || reps > 20) throw new TypeError('--reps must be a whole number from 1 to 20');
if (!(durationSec >= 1 && durationSec <= 60)) throw new TypeError('--duration must be from 1 to 60 seconds');
const profileCase = flag(argv, '--profile');
if (profileCase !== undefined && !(PROFILE_CASES as readonly string[]).includes(profileCase)) {
  throw new TypeError(`--profile must be one of ${PROFILE_CASES.join(', ')}`);
}

/**
 * Builds the modules the benchmark loads into bench/.build/: the ESM output of the package's own tsup options for
 * the library (tsup.config.ts: target, externals, splitting, tree shaking), without declarations; then
 * @launcher-auth/redis with its own options (packages/redis/tsup.config.ts), its imports of launcher-auth pointed
 * at that build, as an installed pair of the two packages would load them.
 */
async function buildLibrary(): Promise<void> {
  const configs = typeof tsupConfig === 'function' ? await tsupConfig({}) : tsupConfig;
  const library = (Array.isArray(configs) ? configs : [configs]).find((c: Options) => c.dts !== false);
  if (library === undefined) throw new Error('bench: no library build in tsup.config.ts');
  const entries = library.entry as Record<string, string>;
  await build({
    ...library,
    // The library's own entries (package.json's `exports`), only those the benchmark loads.
    entry: Object.fromEntries(CORE_BUILT.map((name) => [name, entries[name] ?? name])),
    format: ['esm'],
    dts: false,
    outDir: BUILD_DIR,
    clean: true,
    config: false,
    silent: true,
  });
  const redis = typeof redisConfig === 'function' ? await redisConfig({}) : redisConfig;
  await build({
    ...(Array.isArray(redis) ? redis[0] : redis),
    entry: { redis: join(REPO_DIR, 'packages/redis/src/index.ts') },
    tsconfig: join(REPO_DIR, 'packages/redis/tsconfig.build.json'),
    external: ['redis'],
    format: ['esm'],
    dts: false,
    outDir: BUILD_DIR,
    clean: false,
    config: false,
    silent: true,
    esbuildPlugins: [
      {
        name: 'launcher-auth-build',
        setup(esbuild) {
          esbuild.onResolve({ filter: /^launcher-auth(\/store-kit)?$/ }, ({ path }) => ({
            path: path === 'launcher-auth' ? './index.js' : './store-kit.js',
            external: true,
          }));
        },
      },
    ],
  });
  if (!buildExists()) throw new Error('bench: the build did not write every module');
}

function git(args: string[]): string {
  return execFileSync('git', args, { cwd: REPO_DIR, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
}
/** HEAD, and whether the code measured (`measured` beside src/ and bench/) differs from it (this run's own output aside). */
function commit(measured: readonly string[] = []): string {
  try {
    const changed = git([
      'status',
      '--porcelain',
      '--',
      'src',
      'bench',
      'package.json',
      'tsup.config.ts',
      ...measured,
      ':!bench/RESULTS.md',
      ':!bench/results.svg',
    ]);
    return `${git(['rev-parse', '--short', 'HEAD'])}${changed === '' ? '' : ' with uncommitted changes to the measured code'}`;
  } catch {
    return 'unknown';
  }
}

const started = Date.now();
const noBuild = argv.includes('--no-build');
if (noBuild) {
  if (!buildExists()) throw new Error('--no-build: bench/.build/ is missing; run once without --no-build');
} else {
  progress('build', 'tsup into bench/.build/');
  await buildLibrary();
}

if (profileCase !== undefined) {
  process.stdout.write(`${await runProfile(profileCase as ProfileCase, Number(flag(argv, '--seconds') ?? '3'))}\n`);
  process.exit(0);
}

const expected =
  (parts.includes('micro') ? MICRO_ESTIMATE_SECONDS[quick ? 'quick' : 'full'] : 0) +
  (parts.includes('http') ? estimateHttpSeconds({ reps, durationSec, warmupSec }) : 0) +
  (parts.includes('rotate') ? 10 : 0);
progress('plan', `${parts.join(', ')}; expected to take about ${Math.ceil(expected / 60)} min`);

const results: Results = {
  machine: {
    date: new Date().toISOString(),
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
    cores: cpus().length,
    memoryGiB: totalmem() / 2 ** 30,
    node: process.version,
    os: `${osType()} ${release()}`,
    loadAverage: loadavg()
      .map((l) => l.toFixed(2))
      .join(' / '),
    commit: commit(),
  },
  settings: {
    quick,
    parts,
    build: noBuild ? 'as found: --no-build' : 'built at the start of this run',
    elapsedSec: 0,
  },
};

const workDir = await mkdtemp(join(tmpdir(), 'launcher-auth-bench-'));
// The work directory holds secrets: removed however the run ends (^C ends it through process.exit).
process.once('exit', () => rmSync(workDir, { recursive: true, force: true }));
try {
  if (parts.includes('micro')) {
    progress('micro', 'speed, then allocation (two child processes)');
    results.micro = await runMicro({ quick, workDir });
  }
  if (parts.includes('http')) {
    progress('http', `${reps} repetition(s); per path ${warmupSec} s of warm-up and ${durationSec} s measured`);
    results.http = await runHttp({ workDir, reps, durationSec, warmupSec });
  }
  if (parts.includes('rotate')) {
    const count = 1000;
    progress('rotate', `${count} rotations of each kind`);
    results.rotate = await runRotate({ workDir, count });
  }
} finally {
  await rm(workDir, { recursive: true, force: true });
}
results.settings.elapsedSec = (Date.now() - started) / 1000;

process.stdout.write(`${stdoutTable(results)}\n`);
await writeFile(RESULTS, withSimSection(markdown(results), simSectionOf(RESULTS)));
const chart = join(BENCH_DIR, 'results.svg');
if (results.http !== undefined) await writeFile(chart, svgChart(results.http, quick));
progress(
  'done',
  `${(results.settings.elapsedSec / 60).toFixed(1)} min; wrote bench/RESULTS.md${results.http === undefined ? '' : ' and bench/results.svg'}` +
    (results.http === undefined && existsSync(chart) ? ' (results.svg is from an earlier run with the HTTP part)' : ''),
);

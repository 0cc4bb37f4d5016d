// `npm run bench -- sim`: the simulator's schedules per CPU-second against those of BASELINE (the commit before it
// was made faster), side by side in one run: the same seeds in each tree, one tree after the other, each in a fresh
// child process, CPU time (user + system, every thread) from the child itself. Fails when the summaries differ:
// the two explored exactly the same schedules, or the figures compare nothing.
//
// Flags: --count N (default 1000), --from S (default 1), --base PATH (a checkout of BASELINE to use instead of a
// temporary copy of its src/ and test/sim/), --reps N (each tree N times, in turns), --profile (instead: this tree alone under `node --cpu-prof`, and the
// share of its CPU time that each part takes).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_DIR, flag, killGroup, progress, startChild } from './common.js';

/** The simulator as it was before it was made faster. */
export const SIM_BASELINE = '6207566';
/** The baseline's entry point, from its root. */
const RUNNER = 'test/sim/run.ts';
/** This tree's: where the Redis package keeps the simulator, or where the baseline kept it. */
const CURRENT_RUNNER =
  ['packages/redis/test/sim/run.ts', RUNNER].find((path) => existsSync(join(REPO_DIR, path))) ?? RUNNER;
/** What the baseline's runner needs of its tree. */
const TREE = ['package.json', 'tsconfig.json', 'src', 'test/sim', 'test/support'];

export interface SimRun {
  readonly tree: string;
  readonly cpuSeconds: number;
  readonly perCpuSecond: number;
  /** The runner's summary line without its wall-clock part. */
  readonly summary: string;
}

export interface SimResult {
  readonly from: number;
  readonly count: number;
  readonly baseline: SimRun;
  readonly current: SimRun;
  readonly ratio: number;
  /** How many times each tree ran the seeds (in turns); the CPU times add up. */
  readonly reps: number;
  readonly same: boolean;
}

/** The runner writes this (its whole process's CPU time) when it exits: the same hook in both trees. */
const CPU_HOOK = `data:text/javascript,${encodeURIComponent(
  "import { writeFileSync } from 'node:fs';" +
    "process.on('exit', () => { const { user, system } = process.cpuUsage();" +
    ' writeFileSync(process.env.SIM_BENCH_CPU, String((user + system) / 1e6)); });',
)}`;

/** Runs `count` schedules from `from` with the runner of `root`, in a fresh child; its CPU time and its summary. */
async function runTree(
  tree: string,
  root: string,
  from: number,
  count: number,
  out: string,
  nodeFlags: readonly string[] = [],
): Promise<SimRun> {
  const runner = [
    join(root, root === REPO_DIR ? CURRENT_RUNNER : RUNNER),
    '--count',
    String(count),
    '--from',
    String(from),
  ];
  const child = startChild(
    { command: process.execPath, args: [...nodeFlags, '--import', 'tsx', '--import', CPU_HOOK, ...runner] },
    { env: { ...process.env, SIM_BENCH_CPU: out }, stdout: 'pipe', cwd: root },
  );
  let stdout = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  const code = await new Promise<number | null>((done) => {
    child.once('exit', (exitCode) => done(exitCode));
    child.once('error', () => done(null));
  });
  killGroup(child);
  const summary = stdout.split('\n').find((line) => /^\d+ schedules, \d+ events in /.test(line));
  if (summary === undefined || code === null) throw new Error(`bench sim: the ${tree} runner failed:\n${stdout}`);
  const cpuSeconds = Number(await readFile(out, 'utf8'));
  return {
    tree,
    cpuSeconds,
    perCpuSecond: count / cpuSeconds,
    summary: summary.replace(/ in [\d.]+ s \(\d+ schedules\/s\)/, ''),
  };
}

/** A copy of the baseline's src/ and test/sim/ (with what they import) in a temporary folder, on this node_modules. */
function baselineTree(into: string): string {
  let archive: Buffer;
  try {
    archive = execFileSync('git', ['archive', SIM_BASELINE, ...TREE], {
      cwd: REPO_DIR,
      maxBuffer: 1 << 30,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  } catch {
    throw new Error(`bench sim: ${SIM_BASELINE} is not in this clone (a shallow one?): fetch it, or pass --base PATH`);
  }
  execFileSync('tar', ['-x', '-C', into], { input: archive });
  symlinkSync(join(REPO_DIR, 'node_modules'), join(into, 'node_modules'), 'dir');
  return into;
}

interface CpuProfile {
  readonly nodes: ReadonlyArray<{
    readonly id: number;
    readonly callFrame: { readonly functionName: string; readonly url: string };
    readonly children?: readonly number[];
  }>;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/**
 * The part of the run a frame belongs to, or undefined for a built-in (counted with its nearest caller that has a
 * part): the library's code (src/), the simulator's own, the Lua interpreter in WebAssembly, module loading.
 */
function partOf(url: string, name: string): string | undefined {
  if (url.includes('/modules/esm/') || url.includes('/modules/cjs/')) return 'module loading';
  if (url.includes('/test/sim/world.ts') || url.includes('/test/sim/lines.ts')) return 'test/sim: the invariants';
  const sim = /\/test\/sim\/(keyspace|lua|cjson)\.ts/.test(url);
  if (sim) return 'test/sim: the keyspace and the calls into Lua (keyspace, lua, cjson)';
  if (url.includes('/test/sim/')) return 'test/sim: the world (scheduler, processes, Redis)';
  if (url.includes('/src/')) return 'src/: the authority and the store';
  if (url.startsWith('wasm://') || url.includes('/wasmoon/')) return 'Lua in WebAssembly';
  if (url.includes('/node_modules/')) return 'other packages';
  if (name === '(garbage collector)') return 'garbage collection';
  return undefined;
}

/** The share of the profile's time each part took, largest first. */
function shares(profile: CpuProfile): Array<readonly [string, number]> {
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const time = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((sample, index) => {
    const delta = profile.timeDeltas[index] ?? 0;
    total += delta;
    let part: string | undefined;
    for (let at: number | undefined = sample; at !== undefined; at = parent.get(at)) {
      const frame = byId.get(at)?.callFrame;
      const found = frame === undefined ? undefined : partOf(frame.url, frame.functionName);
      // Loading a module counts as loading, whichever module's code runs under it.
      if (found === 'module loading') part = found;
      part ??= found;
    }
    const name = part ?? 'other (microtasks, idle, built-ins outside the above)';
    time.set(name, (time.get(name) ?? 0) + delta);
  });
  return [...time].map(([name, t]) => [name, t / total] as const).sort((a, b) => b[1] - a[1]);
}

/** This tree's simulator under `node --cpu-prof`: the share of its CPU time each part takes. */
export async function profileSim(argv: readonly string[]): Promise<string> {
  const count = Number(flag(argv, '--count') ?? '500');
  const from = Number(flag(argv, '--from') ?? '1');
  const work = await mkdtemp(join(tmpdir(), 'launcher-auth-bench-sim-'));
  try {
    const dir = join(work, 'profile');
    progress('sim', `profiling schedules ${from} to ${from + count - 1} in this tree`);
    const run = await runTree('this tree', REPO_DIR, from, count, join(work, 'cpu'), [
      '--cpu-prof',
      `--cpu-prof-dir=${dir}`,
    ]);
    const files = await readdir(dir);
    const sizes = await Promise.all(files.map(async (file) => (await stat(join(dir, file))).size));
    // The runner's own profile is the largest (tsx's loader thread writes a small one of its own).
    const largest = files[sizes.indexOf(Math.max(...sizes))] ?? '';
    const profile = JSON.parse(await readFile(join(dir, largest), 'utf8')) as CpuProfile;
    return [
      `${count} schedules, ${run.cpuSeconds.toFixed(1)} CPU s (${run.perCpuSecond.toFixed(1)} per CPU-second, under the profiler)`,
      ...shares(profile).map(([name, share]) => `${(share * 100).toFixed(1).padStart(5)} %  ${name}`),
      '',
    ].join('\n');
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

export async function runSim(argv: readonly string[]): Promise<SimResult> {
  const count = Number(flag(argv, '--count') ?? '1000');
  const from = Number(flag(argv, '--from') ?? '1');
  const reps = Number(flag(argv, '--reps') ?? '1');
  if (!Number.isSafeInteger(reps) || reps < 1) throw new TypeError('--reps must be a whole number from 1');
  if (!Number.isSafeInteger(count) || count < 1) throw new TypeError('--count must be a whole number from 1');
  if (!Number.isSafeInteger(from)) throw new TypeError('--from must be a whole number');
  const work = await mkdtemp(join(tmpdir(), 'launcher-auth-bench-sim-'));
  process.once('exit', () => rmSync(work, { recursive: true, force: true }));
  try {
    const given = flag(argv, '--base');
    if (given !== undefined && !existsSync(join(given, RUNNER)))
      throw new TypeError(`--base: no ${RUNNER} in ${given}`);
    const base = given ?? baselineTree(work);
    progress(
      'sim',
      `schedules ${from} to ${from + count - 1}, ${reps} time(s) in each tree: ${SIM_BASELINE} (${base})`,
    );
    // Each repetition runs both trees, in turns (the baseline first, then this tree first, ...): a machine whose
    // load changes during the run weighs on both alike. The CPU times add up; every summary must be the same.
    const runs: SimRun[][] = [[], []];
    for (let rep = 0; rep < reps; rep += 1) {
      for (const which of rep % 2 === 0 ? [0, 1] : [1, 0]) {
        const [tree, root] = which === 0 ? [SIM_BASELINE, base] : ['this tree', REPO_DIR];
        const run = await runTree(tree, root, from, count, join(work, `${which}.${rep}.cpu`));
        progress('sim', `${tree}: ${run.perCpuSecond.toFixed(1)} schedules per CPU-second`);
        runs[which]?.push(run);
      }
    }
    const total = (all: readonly SimRun[]): SimRun => {
      const first = all[0] as SimRun;
      const cpuSeconds = all.reduce((sum, run) => sum + run.cpuSeconds, 0);
      const summary = all.every((run) => run.summary === first.summary) ? first.summary : 'differs between repetitions';
      return { tree: first.tree, cpuSeconds, perCpuSecond: (count * all.length) / cpuSeconds, summary };
    };
    const baseline = total(runs[0] ?? []);
    const current = total(runs[1] ?? []);
    return {
      from,
      count,
      baseline,
      current,
      ratio: current.perCpuSecond / baseline.perCpuSecond,
      reps,
      same: baseline.summary === current.summary && !baseline.summary.startsWith('differs'),
    };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

const HEADING = '## Simulator';

/** The simulator's section of bench/RESULTS.md. */
export function simMarkdown(result: SimResult, machine: { date: string; load: string; commit: string }): string {
  const { baseline, current } = result;
  const row = (run: SimRun): string =>
    `| ${run.tree.padEnd(9)} | ${run.cpuSeconds.toFixed(1).padStart(8)} | ${run.perCpuSecond.toFixed(1).padStart(22)} |`;
  return [
    HEADING,
    '',
    `Written by \`npm run bench -- sim\` on ${machine.date} (commit ${machine.commit}; load average at start`,
    `${machine.load}). Schedules ${result.from} to ${result.from + result.count - 1}, ${result.reps} time(s) in each tree,`,
    'in turns, each run in a fresh child process (`node --import tsx test/sim/run.ts`); CPU time is user + system',
    `from \`process.cpuUsage()\` at the child's exit, start-up included. ${SIM_BASELINE}: its \`src/\` and \`test/sim/\`.`,
    '',
    '| tree      | CPU s    | schedules per CPU-second |',
    '|-----------|---------:|-------------------------:|',
    row(baseline),
    row(current),
    '',
    `Ratio: **${result.ratio.toFixed(2)}×** the schedules per CPU-second of ${SIM_BASELINE}. Summaries ${result.same ? 'identical' : '**DIFFER**'}:`,
    '',
    '```',
    `${SIM_BASELINE}:  ${baseline.summary}`,
    `this tree: ${current.summary}`,
    '```',
    '',
  ].join('\n');
}

/** `text` (bench/RESULTS.md) with its simulator section replaced by `section` (added before the method if none). */
export function withSimSection(text: string, section: string | undefined): string {
  const start = text.indexOf(`\n${HEADING}\n`);
  let rest = text;
  if (start !== -1) {
    const end = text.indexOf('\n## ', start + HEADING.length + 2);
    rest = text.slice(0, start + 1) + (end === -1 ? '' : text.slice(end + 1));
  }
  if (section === undefined) return rest;
  const method = rest.indexOf('\n## Method\n');
  return method === -1
    ? `${rest.trimEnd()}\n\n${section}`
    : `${rest.slice(0, method + 1)}${section}\n${rest.slice(method + 1)}`;
}

/** The simulator section of an existing bench/RESULTS.md, for a full run that rewrites the rest. */
export function simSectionOf(path: string): string | undefined {
  if (!existsSync(path)) return undefined;
  const text = readFileSync(path, 'utf8');
  const start = text.indexOf(`\n${HEADING}\n`);
  if (start === -1) return undefined;
  const end = text.indexOf('\n## ', start + HEADING.length + 2);
  return text.slice(start + 1, end === -1 ? undefined : end + 1).trimEnd() + '\n';
}

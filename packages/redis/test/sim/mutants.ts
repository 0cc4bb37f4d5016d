// `npm run mutants`: applies each mutant of mutant-list.ts alone and runs the simulator on it until its first broken
// invariant. `--only <id>` runs one, `--count N` overrides the schedule count, `--typecheck` also runs tsc on each
// mutant, `--report <file>` writes the Markdown report (packages/redis/MUTANTS.md), `--argued N` runs at most N schedules of
// a mutant whose entry argues why it may survive (`ifSurvives`).
//
// Two mutants run at once at most (a 2-core machine), each in a scratch copy of the working tree (node_modules
// linked): a mutant never sees another, and the working tree itself is never written. A mutated file is restored
// byte for byte after its run, on an error and on Ctrl-C alike.
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { MUTANTS, type Mutant } from './mutant-list.js';
import { DEEP_SCHEDULES, QUICK_SCHEDULES } from './plan.js';

const MAX_JOBS = 2;
/** tsc checks again only what a mutant changed, after the first full check of a scratch copy. */
const INCREMENTAL = ['--incremental', '--tsBuildInfoFile', '.mutants.tsbuildinfo'];
/** The repository: a scratch copy holds the core too, and its tsconfig.json, through which tsx resolves `launcher-auth`. */
const ROOT = resolve(import.meta.dirname, '../../../..');

/** How many times `find` occurs in `text` (overlapping occurrences counted once each start). */
export function occurrences(text: string, find: string): number {
  let count = 0;
  for (let at = text.indexOf(find); at !== -1; at = text.indexOf(find, at + 1)) count += 1;
  return count;
}

/** The mutant applied to `text`, or a message naming it when its `find` does not occur exactly once. */
export function mutate(mutant: Mutant, text: string): string {
  const found = occurrences(text, mutant.find);
  if (found !== 1) {
    throw new Error(`mutant ${mutant.id}: its text occurs ${found} times in ${mutant.file}, not exactly once`);
  }
  return text.replace(mutant.find, () => mutant.replace);
}

type Verdict =
  | { readonly kind: 'caught'; readonly seed: number; readonly violation: string; readonly schedules: number }
  /** The simulator itself failed (a thrown error, not a broken invariant): a mutant that crashes it. */
  | { readonly kind: 'crashed'; readonly message: string }
  | { readonly kind: 'survived'; readonly schedules: number };

interface Run {
  readonly mutant: Mutant;
  readonly verdict: Verdict;
  readonly seconds: number;
  /** Seeds that the unmutated code fails too: passed over. */
  readonly skipped: readonly number[];
  /** tsc's verdict on the mutated tree, when asked (`--typecheck`). */
  readonly typechecks?: boolean;
  /** Whether the mutant's named test ({@link Mutant.test}) failed on the mutated tree. */
  readonly testFails?: boolean;
}

/** Whether the simulator caught the run's mutant by seed `reach`, or its named test did. */
function caughtBy(run: Run, reach = Infinity): boolean {
  return (run.verdict.kind === 'caught' && run.verdict.seed <= reach) || run.testFails === true;
}

/** The mutant's named test, as the console line and the report give it: `file ('name')`. */
function namedTest(mutant: Mutant): string {
  return mutant.test === undefined ? '' : `${mutant.test.file} ('${mutant.test.name}')`;
}

/** Where a test file's output says that at least one of its tests failed. */
export function someFailed(code: number | null, output: string): boolean {
  // eslint-disable-next-line no-control-regex -- vitest colours its summary even without a terminal
  return code === 1 && /\b[1-9]\d* failed\b/.test(output.replaceAll(/\u001b\[[\d;]*m/g, ''));
}

/** What a simulator run printed: the first broken invariant (`seed N: ...`) and the schedules it ran. */
export function verdictOf(code: number | null, output: string): Verdict {
  const failure = /^seed (\d+): (.*)$/m.exec(output);
  const schedules = Number(/^(\d+) schedules/m.exec(output)?.[1] ?? Number.NaN);
  if (code === 1 && failure !== null) {
    const seed = Number(failure[1]);
    return { kind: 'caught', seed, violation: failure[2] ?? '', schedules: Number.isNaN(schedules) ? seed : schedules };
  }
  if (code === 0 && !Number.isNaN(schedules)) return { kind: 'survived', schedules };
  const line = output.split('\n').find((text) => /error|throw/i.test(text)) ?? output.trim().split('\n').pop() ?? '';
  return { kind: 'crashed', message: `exit ${code ?? 'by signal'}: ${line.trim().slice(0, 200)}` };
}

/** A scratch copy of the working tree where one mutant at a time is applied. */
class Slot {
  readonly dir: string;
  constructor(parent: string, index: number) {
    this.dir = join(parent, `slot-${index}`);
    cpSync(ROOT, this.dir, {
      recursive: true,
      filter: (source) => !/[/\\](?:\.git|node_modules|dist|coverage)$/.test(source),
    });
    symlinkSync(join(ROOT, 'node_modules'), join(this.dir, 'node_modules'), 'dir');
  }

  async run(mutant: Mutant, count: number, typecheck: boolean): Promise<Run> {
    const path = join(this.dir, mutant.file);
    const original = readFileSync(path);
    try {
      const mutated = mutate(mutant, original.toString('utf8'));
      writeFileSync(path, mutated);
      let typechecks: boolean | undefined;
      if (typecheck) {
        const checked = await this.#exec(['tsc', '--noEmit', '-p', 'tsconfig.json', ...INCREMENTAL]);
        typechecks = checked.code === 0;
        if (!typechecks) console.log(`${mutant.id}: ${/error TS.*/.exec(checked.output)?.[0] ?? checked.output}`);
      }
      const started = performance.now();
      const skipped: number[] = [];
      let verdict: Verdict = { kind: 'survived', schedules: count };
      for (let from = 1; from <= count;) {
        const args = ['--count', String(count - from + 1), '--from', String(from)];
        const { code, output } = await this.#exec(['tsx', 'packages/redis/test/sim/run.ts', ...args]);
        verdict = verdictOf(code, output);
        if (verdict.kind === 'survived') verdict = { kind: 'survived', schedules: count };
        if (verdict.kind !== 'caught') break;
        verdict = { ...verdict, schedules: verdict.seed };
        // A seed that the unmutated code fails as well says nothing of the mutant: the exploration goes on past it.
        writeFileSync(path, original);
        const replay = await this.#exec(['tsx', 'packages/redis/test/sim/run.ts', '--seed', String(verdict.seed)]);
        writeFileSync(path, mutated);
        if (replay.code === 0) break;
        skipped.push(verdict.seed);
        from = verdict.seed + 1;
        verdict = { kind: 'survived', schedules: count };
      }
      let testFails: boolean | undefined;
      if (mutant.test !== undefined) {
        const name = mutant.test.name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
        const { code, output } = await this.#exec(['vitest', 'run', mutant.test.file, '-t', name]);
        testFails = someFailed(code, output);
      }
      const seconds = (performance.now() - started) / 1000;
      return {
        mutant,
        verdict,
        seconds,
        skipped,
        ...(typechecks === undefined ? {} : { typechecks }),
        ...(testFails === undefined ? {} : { testFails }),
      };
    } finally {
      writeFileSync(path, original);
    }
  }

  #exec([command, ...args]: readonly string[]): Promise<{ code: number | null; output: string }> {
    return new Promise((done, fail) => {
      const child = spawn(join(this.dir, 'node_modules', '.bin', command ?? ''), args, {
        cwd: this.dir,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.add(child.pid ?? -1);
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
      child.on('error', fail);
      child.on('close', (code) => {
        children.delete(child.pid ?? -1);
        done({ code, output });
      });
    });
  }
}

/** The children running now: stopped on Ctrl-C. */
const children = new Set<number>();

function line(run: Run): string {
  const { mutant, verdict, seconds } = run;
  const time = `${seconds.toFixed(1)} s`;
  let types =
    (run.typechecks === false ? ' [DOES NOT TYPECHECK]' : '') +
    (run.skipped.length > 0 ? ` [passed over seeds the unmutated code fails: ${run.skipped.join(', ')}]` : '');
  if (run.testFails !== undefined) {
    types += run.testFails ? ` [caught by ${namedTest(mutant)}]` : ` [NOT caught by ${namedTest(mutant)}]`;
  }
  if (verdict.kind === 'caught') {
    return `${mutant.id}: caught by seed ${verdict.seed} after ${verdict.schedules} schedules (${time}): ${verdict.violation}${types}`;
  }
  if (verdict.kind === 'crashed') return `${mutant.id}: CRASHED the simulator (${time}): ${verdict.message}${types}`;
  const fate = run.testFails === true ? 'the simulator ran' : 'SURVIVED';
  return `${mutant.id}: ${fate} ${verdict.schedules} schedules (${time})${types}`;
}

function cell(text: string): string {
  return text.replaceAll('|', '\\|').replaceAll('\n', ' ');
}

/** The Markdown report: when, on which commit, with how many schedules, and every mutant's fate. */
export function report(
  runs: readonly Run[],
  count: number,
  seconds: number,
  commit: string,
  typecheck: boolean,
  planned = runs.length,
  argued?: number,
): string {
  const caught = runs.filter((run) => caughtBy(run)).length;
  const rows = runs.map((run) => {
    const { mutant, verdict } = run;
    const test = mutant.test === undefined ? '' : (mutant.test.file.split('/').pop() ?? '');
    const named = namedTest(mutant);
    const result =
      verdict.kind === 'caught'
        ? `caught: \`npm run simulate -- --seed ${verdict.seed}\` (after ${verdict.schedules} schedules, ${run.seconds.toFixed(0)} s): ${verdict.violation}`
        : verdict.kind === 'crashed'
          ? `**crashed** the simulator: ${verdict.message}`
          : run.testFails === true
            ? `${mutant.test?.why ?? ''} Caught by ${named}, which fails on it; the simulator ran ${verdict.schedules} schedules without telling.`
            : `**SURVIVED** ${verdict.schedules} schedules${named === '' ? '' : ` and ${named}`}. ${mutant.ifSurvives ?? 'Not explained: a gap to look at.'}`;
    const types = run.typechecks === undefined ? '' : ` | ${run.typechecks ? 'yes' : '**no**'}`;
    // `npm test` explores from seed 1 and CI goes on to DEEP_SCHEDULES: a mutant is caught where its first failing
    // seed is reached.
    const tiers = [QUICK_SCHEDULES, DEEP_SCHEDULES]
      .map((reach) =>
        verdict.kind === 'caught' && verdict.seed <= reach ? 'yes' : caughtBy(run, reach) ? `yes: ${test}` : '**no**',
      )
      .join(' | ');
    const passed =
      run.skipped.length === 0 ? '' : ` (passed over seeds the unmutated code fails too: ${run.skipped.join(', ')})`;
    return `| \`${mutant.id}\` | ${mutant.file.replace(/^packages\/redis\/src\//, '')} | ${cell(mutant.what)} | ${tiers} | ${cell(result + passed)}${types} |`;
  });
  return [
    '# launcher-auth mutation report',
    '',
    'Written by `npm run mutants -- --report packages/redis/MUTANTS.md` (test/sim/mutants.ts); do not edit by hand. Each',
    'mutant is a small, plausible bug of the Redis protocol (test/sim/mutant-list.ts), applied alone; the simulator',
    '(`npm run simulate`) runs its schedules on it from seed 1 and stops at the first broken invariant; a seed that',
    'the unmutated code fails as well (replayed with `--seed`) is passed over. A survivor says why: an equivalent',
    'change, or the fault or invariant the simulated world lacks.',
    '',
    `- Date: ${new Date().toISOString()}`,
    `- Commit: ${commit}`,
    `- Schedules per mutant: up to ${count.toLocaleString('en-US')} (\`npm test\` explores seeds 1 to ${QUICK_SCHEDULES.toLocaleString('en-US')}; CI, \`npm test\` and then \`npm run test:deep\`, 1 to ${DEEP_SCHEDULES.toLocaleString('en-US')})`,
    ...(argued === undefined
      ? []
      : [
          `- A mutant whose entry argues why it may survive (an equivalent change, or a gap of the world) ran up to ${argued.toLocaleString('en-US')}`,
        ]),
    ...(planned > runs.length ? [`- **Interrupted**: ${runs.length} of the ${planned} mutants ran`] : []),
    `- Caught: ${caught} of ${runs.length}; total run time ${(seconds / 60).toFixed(1)} min, two mutants at a time`,
    ...(typecheck ? ['- Typecheck: `tsc --noEmit -p tsconfig.json` on each mutated tree'] : []),
    '',
    `| mutant | file | the bug | caught by npm test | caught in CI | result${typecheck ? ' | typechecks' : ''} |`,
    `|---|---|---|---|---|---${typecheck ? '|---' : ''}|`,
    ...rows,
    '',
  ].join('\n');
}

function option(name: string): string | undefined {
  const index = process.argv.indexOf(`--${name}`);
  return index === -1 ? undefined : process.argv[index + 1];
}

function git(...args: string[]): string {
  return spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' }).stdout.trim();
}

async function main(): Promise<void> {
  const only = option('only');
  const count = Number(option('count') ?? DEEP_SCHEDULES);
  if (!Number.isSafeInteger(count) || count < 1) throw new TypeError('--count needs a positive whole number');
  // A mutant whose survival its entry argues (equivalent, or a gap the world lacks) may run fewer schedules.
  const argued = option('argued') === undefined ? undefined : Number(option('argued'));
  if (argued !== undefined && (!Number.isSafeInteger(argued) || argued < 1))
    throw new TypeError('--argued needs a positive whole number');
  const countOf = (mutant: Mutant): number =>
    argued !== undefined && mutant.ifSurvives !== undefined ? Math.min(argued, count) : count;
  const reportPath = option('report');
  const typecheck = process.argv.includes('--typecheck');
  const chosen = only === undefined ? MUTANTS : MUTANTS.filter((mutant) => mutant.id === only);
  if (chosen.length === 0) throw new Error(`no mutant named ${only ?? ''}`);
  // Every text must be where it is expected before anything runs.
  for (const mutant of chosen) mutate(mutant, readFileSync(join(ROOT, mutant.file), 'utf8'));
  const files = [...new Set(chosen.map((mutant) => mutant.file))];
  const dirty = git('status', '--porcelain', '--', ...files);
  if (dirty !== '') throw new Error(`uncommitted changes in files the mutants change; commit or stash them:\n${dirty}`);
  const commit =
    git('rev-parse', '--short', 'HEAD') + (git('status', '--porcelain') === '' ? '' : ' (with uncommitted changes)');

  const scratch = mkdtempSync(join(tmpdir(), 'launcher-auth-mutants-'));
  const cleanUp = (): void => {
    for (const pid of children) {
      try {
        process.kill(pid);
      } catch {
        // Already gone.
      }
    }
    rmSync(scratch, { recursive: true, force: true });
  };
  process.once('SIGINT', () => {
    cleanUp();
    process.exit(130);
  });
  const started = performance.now();
  const runs: Run[] = [];
  try {
    const slots = Array.from({ length: Math.min(MAX_JOBS, chosen.length) }, (_, index) => new Slot(scratch, index));
    const queue = [...chosen];
    await Promise.all(
      slots.map(async (slot) => {
        for (let mutant = queue.shift(); mutant !== undefined; mutant = queue.shift()) {
          const run = await slot.run(mutant, countOf(mutant), typecheck);
          runs.push(run);
          console.log(line(run));
          // Written after each mutant too, so that an interrupted run leaves the report of those done.
          if (reportPath !== undefined) {
            const done = chosen.flatMap((one) => runs.filter((other) => other.mutant === one));
            const elapsed = (performance.now() - started) / 1000;
            writeFileSync(resolve(reportPath), report(done, count, elapsed, commit, typecheck, chosen.length, argued));
          }
        }
      }),
    );
  } finally {
    cleanUp();
  }
  const seconds = (performance.now() - started) / 1000;
  const ordered = chosen.map((mutant) => runs.find((run) => run.mutant === mutant) as Run);
  const caught = runs.filter((run) => caughtBy(run)).length;
  console.log(
    `${caught} of ${runs.length} caught in ${(seconds / 60).toFixed(1)} min (${count} schedules at most each)`,
  );
  if (reportPath !== undefined)
    writeFileSync(resolve(reportPath), report(ordered, count, seconds, commit, typecheck, ordered.length, argued));
  if (caught < runs.length) process.exitCode = 1;
}

if (process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].split('/').pop() ?? '\0')) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 2;
  });
}

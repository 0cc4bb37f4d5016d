// The processes a test starts die with it, however it ends. A parent (fixtures/dying-parent.ts) starts a
// redis-server and a frozen instance through the tests' own helpers, then dies as a test worker may: by SIGKILL (no
// hook runs), by SIGTERM (how vitest stops a worker), or by an uncaught error. Nothing it started may survive it.
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { until } from '../../../test/support/async.js';
import { SKIP_REASON } from '../../../test/support/redis-server.js';
import { budget } from '../../../test/support/machine.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const PARENT = fileURLToPath(new URL('./fixtures/dying-parent.ts', import.meta.url));

/**
 * A process as /proc shows it: its parent, its start time (which tells it apart from a later process given the same
 * pid) and its command line.
 */
interface Proc {
  readonly pid: number;
  readonly ppid: number;
  readonly started: string;
  readonly zombie: boolean;
  readonly command: string;
}

function proc(pid: number): Proc | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command's name, which is in parentheses and may hold spaces: state, ppid, ... starttime.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
    return { pid, ppid: Number(fields[1]), started: fields[19] ?? '', zombie: fields[0] === 'Z', command };
  } catch {
    return undefined;
  }
}

/** Every process below `root`, children of children included. */
function descendants(root: number): Proc[] {
  const all = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map((name) => proc(Number(name)))
    .filter((found): found is Proc => found !== undefined);
  const below: Proc[] = [];
  for (let parents = new Set([root]); parents.size > 0;) {
    const children = all.filter((candidate) => parents.has(candidate.ppid));
    below.push(...children);
    parents = new Set(children.map((child) => child.pid));
  }
  return below;
}

/** Whether that very process still runs (`kill(pid, 0)` succeeds on a zombie too, which is dead and not yet reaped). */
function running({ pid, started }: Proc): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const now = proc(pid);
  return now?.started === started && !now.zombie;
}

const ENDINGS = ['SIGKILL', 'SIGTERM', 'an uncaught error'] as const;

describe.skipIf(SKIP_REASON !== undefined || proc(process.pid) === undefined)(
  'the processes of a test that dies',
  () => {
    it.concurrent.for(ENDINGS)(
      'ended by %s: none of them keeps running',
      { timeout: budget(20_000) },
      async (ending, { onTestFinished }) => {
        // In this process's group, as vitest starts a worker; it exits when its stdin ends, should this test die first.
        const parent = spawn(process.execPath, ['--import', 'tsx', PARENT], { cwd: REPO, stdio: 'pipe' });
        const exited = new Promise<[number | null, NodeJS.Signals | null]>((resolve) => {
          parent.once('exit', (code, signal) => resolve([code, signal]));
        });
        let output = '';
        parent.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
        parent.stderr.resume();
        let started: Proc[] = [];
        onTestFinished(() => {
          // Whatever the outcome, nothing of this test is left behind.
          for (const survivor of started.filter(running)) process.kill(survivor.pid, 'SIGKILL');
          parent.kill('SIGKILL');
        });
        expect(await until(() => output === 'started\n' || parent.exitCode !== null, 15_000, 20)).toBe(true);
        expect(output).toBe('started\n');
        started = descendants(parent.pid as number);
        // The redis-server and the instance, whatever tsx started besides.
        expect(started.filter(({ command }) => command.startsWith('redis-server'))).toHaveLength(1);
        expect(started.filter(({ command }) => command.includes('fixtures/instance.ts'))).toHaveLength(1);
        expect(started.every(running)).toBe(true);

        if (ending === 'an uncaught error') parent.stdin.write('throw\n');
        else parent.kill(ending);
        expect(await exited).toEqual(ending === 'an uncaught error' ? [1, null] : [null, ending]);
        await until(() => !started.some(running), 3000, 20);
        expect(started.filter(running).map(({ command }) => command)).toEqual([]);
      },
    );
  },
);

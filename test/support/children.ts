// Child processes of the tests and the benchmark (redis-server, instances, servers under load) that never outlive the
// process that started them, however it ends: a failed test, a test worker stopped by vitest, an uncaught error,
// ^C, or SIGKILL, which runs no hook at all.
import {
  spawn,
  spawnSync,
  type ChildProcess,
  type ChildProcessWithoutNullStreams,
  type SpawnOptions,
  type SpawnOptionsWithoutStdio,
} from 'node:child_process';

const live = new Set<ChildProcess>();

/**
 * Whether util-linux's setpriv can give a child a parent-death signal: it sets it, then execs the command, which
 * keeps the pid (signals sent to the child reach the command itself) and the setting. Then the kernel kills the
 * child when the thread that started it ends, even by SIGKILL. Elsewhere the exit hooks below are all there is.
 */
let setpriv: boolean | undefined;
function withParentDeathSignal(command: string, args: readonly string[]): [string, string[]] {
  setpriv ??= spawnSync('setpriv', ['--pdeathsig', 'KILL', '--', 'true'], { stdio: 'ignore' }).status === 0;
  return setpriv ? ['setpriv', ['--pdeathsig', 'KILL', '--', command, ...args]] : [command, [...args]];
}

/** Kills the child's whole process group (it leads its own), stopped members included; nothing if it is gone. */
export function killGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // Already gone between the check and the kill.
  }
}

function killAll(): void {
  for (const child of live) killGroup(child);
}

let hooked = false;
/**
 * Kills every child still running when this process exits, or when a signal ends it: vitest stops a worker with
 * SIGTERM, which runs no exit hook. The signal is raised again once the children are killed, so that this process
 * ends as it would have (vitest forbids `process.exit` in a worker); unless another listener, such as the
 * benchmark's, takes care of ending it.
 */
export function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', killAll);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      killAll();
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    });
  }
}

/**
 * `spawn()` for a child that must not outlive this process: it leads a process group of its own (so that
 * {@link killGroup} reaches whatever it starts in turn), gets the parent-death signal where setpriv exists, and is
 * killed by the exit hooks while it runs.
 */
export function spawnOwned(
  command: string,
  args: readonly string[],
  options: SpawnOptionsWithoutStdio,
): ChildProcessWithoutNullStreams;
export function spawnOwned(command: string, args: readonly string[], options: SpawnOptions): ChildProcess;
export function spawnOwned(command: string, args: readonly string[], options: SpawnOptions): ChildProcess {
  hookExit();
  const [file, argv] = withParentDeathSignal(command, args);
  const child = spawn(file, argv, { ...options, detached: true });
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

/**
 * Called first by a child node process whose stdin is a pipe from its parent: when the parent goes, however it goes,
 * stdin ends and the child exits (where no parent-death signal could be set). Unreferenced: a child that finishes its
 * work still exits on its own.
 */
export function exitWithParent(): void {
  process.stdin.once('end', () => process.exit(2));
  process.stdin.once('error', () => process.exit(2));
  process.stdin.resume();
  (process.stdin as { unref?: () => void }).unref?.();
}

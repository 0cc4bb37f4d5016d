// What the parts of `npm run bench` share: paths, flags, statistics, the built library, and child processes
// that are always bounded in time and always killed (as a whole process group) when the run ends.
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { exitWithParent, hookExit as hookChildren, killGroup, spawnOwned } from '../test/support/children.js';

export { exitWithParent, killGroup };

export const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
export const REPO_DIR = resolve(BENCH_DIR, '..');
/** Where the benchmark builds the library (git-ignored): never dist/, which `npm test` and others build and test. */
export const BUILD_DIR = join(BENCH_DIR, '.build');
/** The one route of the HTTP benchmark's servers: 200 `ok` once authenticated. */
export const HTTP_ROUTE = '/api';

/** Reads `--name value` from argv. */
export function flag(argv: readonly string[], name: string): string | undefined {
  const at = argv.indexOf(name);
  return at < 0 ? undefined : argv[at + 1];
}

export function requireFlag(argv: readonly string[], name: string): string {
  const value = flag(argv, name);
  if (value === undefined) throw new Error(`missing ${name}`);
  return value;
}

/** Linear-interpolated quantile (the definition spreadsheets use). */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const at = (sorted.length - 1) * q;
  const low = Math.floor(at);
  const lowValue = sorted[low] as number;
  return lowValue + ((sorted[Math.ceil(at)] as number) - lowValue) * (at - low);
}

export const median = (values: readonly number[]): number => quantile(values, 0.5);

/**
 * The public modules of launcher-auth as built into bench/.build/ (by tsup, with the package's options), typed from
 * src/. The benchmark measures the published code, not tsx's on-the-fly transform of src/.
 */
export type LauncherAuth = typeof import('launcher-auth');
export type LauncherAuthNode = typeof import('launcher-auth/node');
export type LauncherAuthExpress = typeof import('launcher-auth/express');
export type LauncherAuthFastify = typeof import('launcher-auth/fastify');
export type LauncherAuthRedis = typeof import('@launcher-auth/redis');

/** The core's modules the benchmark loads (and `store-kit`, which the Redis store imports), by their output name. */
export const CORE_BUILT = ['index', 'node', 'express', 'fastify', 'store-kit'] as const;
/** Every module the benchmark loads: the core's and `redis`, @launcher-auth/redis built on them. */
export const BUILT = [...CORE_BUILT, 'redis'] as const;

export async function fromBuild<T>(file: (typeof BUILT)[number]): Promise<T> {
  return (await import(pathToFileURL(join(BUILD_DIR, `${file}.js`)).href)) as T;
}

/** True when bench/.build/ holds every module the benchmark loads (for `--no-build`). */
export function buildExists(): boolean {
  return BUILT.every((name) => existsSync(join(BUILD_DIR, `${name}.js`)));
}

/**
 * Children run TypeScript through tsx, which turns on source-mapped stack traces for the whole process. Every
 * peer that rejects a token builds an Error; formatting its stack through source maps would tax the peers and
 * not the library, so each child turns them off again first.
 */
export function plainStackTraces(): void {
  process.setSourceMapsEnabled(false);
}

/** `node [nodeFlags] --import tsx <script> [args]`, optionally pinned to one core with taskset. */
export function tsxCommand(
  script: string,
  args: readonly string[],
  options: { nodeFlags?: readonly string[]; core?: number | undefined } = {},
): { command: string; args: string[] } {
  const nodeArgs = [...(options.nodeFlags ?? []), '--import', 'tsx', join(BENCH_DIR, script), ...args];
  if (options.core === undefined) return { command: process.execPath, args: nodeArgs };
  return { command: 'taskset', args: ['-c', String(options.core), process.execPath, ...nodeArgs] };
}

let signalsHooked = false;
/**
 * Whatever ends this process (an error, ^C, a kill), no child of the benchmark outlives it (see
 * test/support/children.ts); a signal ends it through `process.exit`, so that its own exit hooks run too.
 */
export function hookExit(): void {
  hookChildren();
  if (signalsHooked) return;
  signalsHooked = true;
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => process.exit(130));
  }
}

/**
 * Starts a child in its own process group, tracked so that it is killed when this process exits; its stdin is a
 * pipe that this process never writes to (see {@link exitWithParent}).
 */
export function startChild(
  command: { command: string; args: string[] },
  options: { env?: NodeJS.ProcessEnv; stdout?: 'pipe' | 'inherit'; cwd?: string } = {},
): ChildProcess {
  hookExit();
  return spawnOwned(command.command, command.args, {
    cwd: options.cwd ?? REPO_DIR,
    env: options.env ?? process.env,
    stdio: ['pipe', options.stdout ?? 'inherit', 'inherit'],
  });
}

/** Runs a child to completion within `limitMs` (then kills its group) and reads the JSON it wrote to `out`. */
export async function runChild<T>(
  command: { command: string; args: string[] },
  out: string,
  limitMs: number,
  env?: NodeJS.ProcessEnv,
): Promise<T> {
  const child = startChild(command, env === undefined ? {} : { env });
  const timer = setTimeout(() => killGroup(child), limitMs);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((done) => {
    child.once('exit', (exitCode, exitSignal) => done([exitCode, exitSignal]));
    child.once('error', () => done([null, null]));
  });
  clearTimeout(timer);
  killGroup(child);
  if (code !== 0) {
    const how = signal === null ? `exit code ${code}` : `signal ${signal}`;
    throw new Error(
      `${command.args.find((a) => a.endsWith('.ts')) ?? command.command} failed (${how}; limit ${limitMs / 1000} s)`,
    );
  }
  return JSON.parse(await readFile(out, 'utf8')) as T;
}

/** Progress for the person watching, with the minutes and seconds since the run started; stdout carries only the table. */
export function progress(part: string, line: string): void {
  const seconds = Math.floor(process.uptime());
  const clock = `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}`;
  process.stderr.write(`[bench ${clock} ${part}] ${line}\n`);
}

/**
 * A redis-server on a free loopback port (Debian's `redis-server`, no persistence) and a connected client factory,
 * or `undefined` when redis-server is not installed: the rows that need it are then left out.
 */
export async function benchRedis(): Promise<
  | {
      url: string;
      client: () => Promise<Awaited<ReturnType<typeof import('../test/support/redis-server.js').connectedClient>>>;
      stop: () => Promise<void>;
    }
  | undefined
> {
  const { SKIP_REASON, connectedClient, startRedis } = await import('../test/support/redis-server.js');
  if (SKIP_REASON !== undefined) return undefined;
  const server = await startRedis();
  return { url: server.url, client: () => connectedClient(server.url), stop: () => server.kill() };
}

// The load generator of the HTTP benchmark (bench/http.ts starts it pinned to core 1): for each path one checked
// request and an autocannon warm-up, then for each path the measured autocannon run. Writes LoadRun[] as JSON to --out.
// Tokens come from a 0600 file, never from argv, so that no token shows in a process list.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import autocannon from 'autocannon';
import { exitWithParent, flag, requireFlag } from './common.js';
import type { HttpPath, LoadRun } from './http.js';

exitWithParent();
const argv = process.argv.slice(2);
const url = requireFlag(argv, '--url');
const out = requireFlag(argv, '--out');
const paths = requireFlag(argv, '--paths').split(',') as HttpPath[];
const expected = requireFlag(argv, '--expect').split(',').map(Number);
const warmup = Number(requireFlag(argv, '--warmup'));
const duration = Number(requireFlag(argv, '--duration'));
const connections = Number(flag(argv, '--connections') ?? '10');
const serverPid = flag(argv, '--server-pid');
if (!url.startsWith('http://127.0.0.1:')) throw new Error('load: only 127.0.0.1 is a target');

const tokens = JSON.parse(await readFile(requireFlag(argv, '--tokens'), 'utf8')) as Record<
  Exclude<HttpPath, 'valid' | 'none'> | 'current',
  string
>;
const headersFor = (path: HttpPath): Record<string, string> =>
  path === 'none' ? {} : { authorization: `Bearer ${tokens[path === 'valid' ? 'current' : path]}` };

const ticksPerSecond = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;

/** CPU seconds the server has used so far (user + system, all threads); null without /proc. */
function serverCpu(): number | null {
  if (serverPid === undefined) return null;
  try {
    const stat = readFileSync(`/proc/${serverPid}/stat`, 'latin1');
    // After the command name (which may hold spaces, hence the last ')'), utime and stime are fields 12 and 13.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
  } catch {
    return null;
  }
}

const fire = (path: HttpPath, seconds: number): Promise<autocannon.Result> =>
  autocannon({ url, connections, pipelining: 1, duration: seconds, headers: headersFor(path) });

// Checks and warms every path first, then measures each: the server has seen every kind of request before any
// figure is taken, and every measured run starts on a warm process.
for (const [index, path] of paths.entries()) {
  const status = expected[index] as number;
  // One request first: a server that answers the wrong status would make every figure meaningless.
  const probe = await fetch(url, { headers: headersFor(path), signal: AbortSignal.timeout(10_000) });
  const body = await probe.text();
  if (probe.status !== status || (status === 200 && body !== 'ok')) {
    throw new Error(`load: ${path} answered ${probe.status} (${body.length} body bytes), expected ${status}`);
  }
  await fire(path, warmup);
}
/** Below this share of its core the server was waiting for the load generator, not working: such a run measures
 * whatever else slowed the loader's core (another process on a shared machine), and is run once more. */
const LOADER_BOUND = 0.75;
const runs: LoadRun[] = [];
for (const [index, path] of paths.entries()) {
  const status = expected[index] as number;
  let result: autocannon.Result;
  let cpu: number | null;
  let retried = false;
  for (;;) {
    const cpuBefore = serverCpu();
    result = await fire(path, duration);
    const cpuAfter = serverCpu();
    cpu = cpuBefore === null || cpuAfter === null ? null : cpuAfter - cpuBefore;
    if (retried || cpu === null || cpu / result.duration >= LOADER_BOUND) break;
    retried = true;
  }
  let unexpected = result.errors + result.timeouts;
  for (const [code, { count = 0 }] of Object.entries(result.statusCodeStats ?? {})) {
    if (Number(code) !== status) unexpected += count;
  }
  runs.push({
    path,
    requestsPerSec: result.requests.total / result.duration,
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    unexpected,
    serverCpuUsPerRequest: cpu === null ? null : (cpu * 1e6) / result.requests.total,
    serverBusy: cpu === null ? null : cpu / result.duration,
    retried,
  });
}
await writeFile(out, JSON.stringify(runs));

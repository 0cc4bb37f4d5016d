// What a long forged token costs over HTTP, against a current-token request of the same size (the same bytes on
// the wire: the current token plus a padding header). `npx tsx bench/token-size.ts [--reps N] [--duration S]`.
// Two node:http servers pinned to core 0, one with the default `maxTokenLength` (1024) and one with 4096 (the
// limit before the option); autocannon runs in this process, pinned to core 1. Every path of both servers once per
// repetition, each forgery next to its baseline; the figure is the server's CPU time per request (from /proc), as a
// ratio to the current-token request of the same size measured just before or after it. Prints a table; never part of `npm test`.
import { spawnSync } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';
import { MemorySecretStore, TokenAuthority } from '../src/index.js';
import { flag, killGroup, median, progress, startChild, tsxCommand } from './common.js';

const argv = process.argv.slice(2);
const reps = Number(flag(argv, '--reps') ?? '6');
const duration = Number(flag(argv, '--duration') ?? '2');
if (!Number.isInteger(reps) || reps < 1 || reps > 10) throw new TypeError('--reps must be a whole number from 1 to 10');
if (!(duration >= 1 && duration <= 20)) throw new TypeError('--duration must be from 1 to 20 seconds');
const SIZES = [256, 1024, 4096] as const;
const LIMITS = [1024, 4096] as const;

// This process generates the load on core 1; the servers get core 0.
spawnSync('taskset', ['-pc', '1', String(process.pid)], { stdio: 'ignore' });

const record = {
  id: randomBytes(12).toString('base64url'),
  key: new Uint8Array(randomBytes(32)),
  createdAt: new Date(0),
};
const probe = await TokenAuthority.open({ store: new MemorySecretStore(record) });
const current = probe.issue();
await probe.close();

const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
/** A token of exactly `length` characters with the current header's shape, signed with another key: a forgery. */
function forgery(length: number): string {
  const other = randomBytes(32);
  for (let extra = 0; extra < 4; extra++) {
    const header = b64({ alg: 'HS256', typ: 'JWT', kid: record.id, x: 'h'.repeat(extra) });
    for (let pad = 0; pad < length; pad++) {
      const payload = b64({ jti: record.id, iat: 0, pad: 'p'.repeat(pad) });
      if (header.length + payload.length + 2 + 43 === length) {
        const input = `${header}.${payload}`;
        return `${input}.${createHmac('sha256', other).update(input).digest('base64url')}`;
      }
      if (header.length + payload.length + 2 + 43 > length) break;
    }
  }
  throw new Error(`no forgery of ${length} characters`);
}

interface Path {
  name: string;
  size: number;
  headers: Record<string, string>;
  status: number;
}
/** The current token padded with a header to the bytes of an `Authorization` with a token of `size` characters. */
const padded = (size: number): Record<string, string> => ({
  authorization: `Bearer ${current}`,
  'x-pad': 'p'.repeat(size - current.length - 'x-pad: \r\n'.length),
});
const PATHS: Path[] = SIZES.flatMap((size) => [
  { name: `current token + ${size - current.length} bytes of padding`, size, headers: padded(size), status: 200 },
  {
    name: `forged token of ${size} characters`,
    size,
    headers: { authorization: `Bearer ${forgery(size)}` },
    status: 401,
  },
]);

const work = await mkdtemp(join(tmpdir(), 'launcher-auth-bench-'));
const secretFile = join(work, 'secret.json');
await writeFile(secretFile, JSON.stringify({ id: record.id, key: Buffer.from(record.key).toString('base64url') }), {
  mode: 0o600,
});

const ticks = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;
const cpuOf = (pid: number): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / ticks;
};

async function startServer(limit: number) {
  const child = startChild(
    tsxCommand(
      'token-size-server.ts',
      ['--secret', secretFile, '--max', String(limit), '--lifetime', String(60 + reps * 60)],
      { core: 0 },
    ),
    { stdout: 'pipe' },
  );
  const port = await new Promise<number>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', (line) =>
      line.startsWith('READY ') ? resolve(Number(line.slice(6))) : reject(new Error(line)),
    );
    child.once('exit', () => reject(new Error('server exited')));
  });
  // The server is `taskset node …`: the node process is the one whose CPU time counts; taskset execs into it.
  return { child, port, pid: child.pid as number };
}

/** Server CPU microseconds per request for `path`, after checking its status once. */
async function measure(server: { port: number; pid: number }, path: Path, seconds: number): Promise<number> {
  const url = `http://127.0.0.1:${server.port}/api`;
  const check = await fetch(url, { headers: path.headers, signal: AbortSignal.timeout(10_000) });
  await check.arrayBuffer();
  if (check.status !== path.status) throw new Error(`${path.name}: ${check.status}, expected ${path.status}`);
  const before = cpuOf(server.pid);
  const result = await autocannon({ url, connections: 10, pipelining: 1, duration: seconds, headers: path.headers });
  const cpu = cpuOf(server.pid) - before;
  if (result.errors + result.timeouts > 0)
    throw new Error(`${path.name}: ${result.errors} errors, ${result.timeouts} timeouts`);
  return (cpu * 1e6) / result.requests.total;
}

const servers = [];
try {
  for (const limit of LIMITS) servers.push({ limit, ...(await startServer(limit)) });
  // Warm every path of every server before any figure is taken.
  for (const server of servers) for (const path of PATHS) await measure(server, path, 1);
  const costs = new Map<string, number[]>();
  const add = (key: string, value: number): void => void costs.set(key, [...(costs.get(key) ?? []), value]);
  for (let rep = 0; rep < reps; rep++) {
    progress('token-size', `repetition ${rep + 1} of ${reps}`);
    // Each forgery right next to its baseline (the machine's load drifts), in turns first and second.
    for (const server of rep % 2 === 0 ? servers : [...servers].reverse()) {
      for (const size of SIZES) {
        const pair = PATHS.filter((path) => path.size === size);
        const measured = new Map<Path, number>();
        for (const path of rep % 2 === 0 ? pair : [...pair].reverse())
          measured.set(path, await measure(server, path, duration));
        for (const [path, cost] of measured) add(`${server.limit} ${path.name}`, cost);
        const [base, forged] = pair.map((path) => measured.get(path)!);
        add(`${server.limit} ratio ${size}`, forged! / base!);
      }
    }
  }
  const lines = [
    `current token: ${current.length} characters; ${reps} repetitions of ${duration} s per path; server CPU µs per request (median)`,
    '| maxTokenLength | request | µs per request | ratio to the current token of the same size (median, min–max) |',
    '| --- | --- | --- | --- |',
  ];
  for (const server of servers) {
    for (const path of PATHS) {
      const cost = median(costs.get(`${server.limit} ${path.name}`)!);
      const ratios = path.status === 401 ? costs.get(`${server.limit} ratio ${path.size}`)! : undefined;
      const ratio =
        ratios === undefined
          ? '1 (baseline)'
          : `${median(ratios).toFixed(2)}× (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`;
      lines.push(`| ${server.limit} | ${path.name} | ${cost.toFixed(1)} | ${ratio} |`);
    }
  }
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  for (const server of servers) killGroup(server.child);
  await rm(work, { recursive: true, force: true });
}

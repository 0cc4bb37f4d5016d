// HTTP benchmark: each server configuration in its own process pinned to core 0, autocannon in another process
// pinned to core 1, 10 connections, a warm-up then the measured run per path; every configuration once per
// repetition (interleaved, in a rotating order), several repetitions; medians and min–max, as ratios to the
// bare framework measured in the same repetition.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { SignJWT } from 'jose';
import {
  HTTP_ROUTE,
  fromBuild,
  killGroup,
  median,
  progress,
  runChild,
  startChild,
  tsxCommand,
  type LauncherAuth,
} from './common.js';

/**
 * What a request carries: the current token; nothing; a forgery only the HMAC can refuse (other claims of the same
 * length, signed with another key); the token from before the last "Regenerate token" (what a script that was not
 * updated sends); the current header and claims under another key's signature.
 */
export type HttpPath = 'valid' | 'none' | 'forged' | 'previous' | 'resigned';
export const HTTP_PATHS: readonly HttpPath[] = ['valid', 'none', 'forged', 'previous', 'resigned'];
export const HTTP_PATH_LABELS: Readonly<Record<HttpPath, string>> = {
  valid: '200, current token',
  none: '401, no token',
  forged: '401, forged (needs the HMAC)',
  previous: '401, previous token',
  resigned: '401, current claims re-signed',
};

export type Framework = 'node' | 'express' | 'fastify';
export const FRAMEWORK_LABELS: Readonly<Record<Framework, string>> = {
  node: 'node:http',
  express: 'Express 5',
  fastify: 'Fastify 5',
};

export interface HttpConfig {
  id: string;
  framework: Framework;
  label: string;
  /** `bare` has no authentication: the baseline of its framework. A `floor` checks an opaque key, no JWT. */
  kind: 'bare' | 'launcher-auth' | 'peer' | 'floor';
}

export const HTTP_CONFIGS: readonly HttpConfig[] = [
  { id: 'node-bare', framework: 'node', label: 'node:http, bare', kind: 'bare' },
  { id: 'node-la', framework: 'node', label: 'launcher-auth withAuth()', kind: 'launcher-auth' },
  { id: 'node-jose', framework: 'node', label: 'jose jwtVerify, CryptoKey', kind: 'peer' },
  { id: 'node-tse', framework: 'node', label: 'timingSafeEqual of the header (no JWT)', kind: 'floor' },
  { id: 'express-bare', framework: 'express', label: 'Express 5, bare', kind: 'bare' },
  { id: 'express-la', framework: 'express', label: 'launcher-auth expressAuth()', kind: 'launcher-auth' },
  { id: 'express-jwt', framework: 'express', label: 'express-jwt, KeyObject secret', kind: 'peer' },
  { id: 'fastify-bare', framework: 'fastify', label: 'Fastify 5, bare', kind: 'bare' },
  { id: 'fastify-la', framework: 'fastify', label: 'launcher-auth fastifyAuth', kind: 'launcher-auth' },
  { id: 'fastify-jwt', framework: 'fastify', label: '@fastify/jwt', kind: 'peer' },
  { id: 'fastify-jwt-cache', framework: 'fastify', label: '@fastify/jwt, cache: true', kind: 'peer' },
  { id: 'fastify-bearer', framework: 'fastify', label: '@fastify/bearer-auth (no JWT)', kind: 'floor' },
];

/**
 * The paths measured per kind of configuration, to keep a full run under 15 minutes. A bare server answers 200
 * whatever the token, so it runs the two request shapes only: with a token of the current length, and without.
 * The previous and re-signed tokens are launcher-auth's cheap refusals; to a peer they are forgeries like any other
 * (one signature check), as they are to a floor, which has no JWT at all.
 */
export const PATHS_BY_KIND: Readonly<Record<HttpConfig['kind'], readonly HttpPath[]>> = {
  bare: ['valid', 'none'],
  'launcher-auth': HTTP_PATHS,
  peer: ['valid', 'none', 'forged'],
  floor: ['valid', 'none', 'forged'],
};

/** The bare framework's request that a path is compared with: the same bytes on the wire, answered with 200. */
export const barePathOf = (path: HttpPath): HttpPath => (path === 'none' ? 'none' : 'valid');

/** One measured autocannon run, as bench/http-load.ts reports it. */
export interface LoadRun {
  path: HttpPath;
  requestsPerSec: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  /** Responses with another status than expected, connection errors, timeouts: must all be 0. */
  unexpected: number;
  /** The server's CPU time per request (µs, from /proc) and the share of its core it kept busy. */
  serverCpuUsPerRequest: number | null;
  serverBusy: number | null;
  /** The first try left the server under 75% busy (the loader's core was slowed) and was run once more. */
  retried: boolean;
}

export interface HttpCell {
  /** Median requests/s over the repetitions, and the range. */
  rps: number;
  rpsMin: number;
  rpsMax: number;
  /** Per repetition: this run's requests/s ÷ the bare framework's (same request shape) in the same repetition. */
  ratios: number[];
  /** Their median and range. */
  ratio: number;
  ratioMin: number;
  ratioMax: number;
  /** Median server CPU µs per request ÷ the bare framework's (null without /proc). */
  cpuRatio: number | null;
  serverCpuUs: number | null;
  serverBusy: number | null;
  latencyP99Ms: number;
  unexpected: number;
  /** How many of the repetitions needed a second try (see LoadRun.retried). */
  retries: number;
  /** Requests/s per repetition, for comparisons within a repetition (401 vs 200, launcher-auth vs peers). */
  perRep: number[];
}

export interface HttpResult {
  pinned: boolean;
  reps: number;
  durationSec: number;
  warmupSec: number;
  connections: number;
  nodeEnv: string;
  cells: Record<string, Partial<Record<HttpPath, HttpCell>>>;
}

const CONNECTIONS = 10;
/** Starting a server and its load generator (tsx, the framework, autocannon) and the checked first requests. */
const STARTUP_SECONDS = 2;

/** How long runHttp takes when no run needs a second try: the estimate `npm run bench` prints first. */
export function estimateHttpSeconds(options: { reps: number; durationSec: number; warmupSec: number }): number {
  const perRep = HTTP_CONFIGS.reduce(
    (sum, config) =>
      sum + STARTUP_SECONDS + PATHS_BY_KIND[config.kind].length * (options.warmupSec + options.durationSec),
    0,
  );
  const priming = STARTUP_SECONDS + PATHS_BY_KIND.bare.length * 2;
  return priming + options.reps * perRep;
}

/** True when `taskset` can pin to cores 0 and 1 here. */
function canPin(): boolean {
  if (cpus().length < 2) return false;
  const probe = spawnSync('taskset', ['-c', '1', 'true'], { stdio: 'ignore' });
  return probe.status === 0;
}

interface Files {
  /** The FileSecretStore file holding the current secret, and one holding the secret before it. */
  secret: string;
  previousSecret: string;
  tokens: string;
}

/** Starts one server and resolves with its port once it printed READY; kills it on any failure. */
async function startServer(
  config: HttpConfig,
  files: Files,
  workDir: string,
  core: number | undefined,
  lifetimeSec: number,
): Promise<{ port: number; child: ReturnType<typeof startChild> }> {
  const child = startChild(
    tsxCommand(
      'http-server.ts',
      [
        '--config',
        config.id,
        '--secret',
        files.secret,
        '--previous-secret',
        files.previousSecret,
        '--tokens',
        files.tokens,
        '--work-dir',
        workDir,
        '--lifetime',
        String(lifetimeSec),
      ],
      { core },
    ),
    // An application in production, as a launcher ships it (Express and Fastify read NODE_ENV).
    { env: { ...process.env, NODE_ENV: 'production' }, stdout: 'pipe' },
  );
  try {
    const port = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${config.id}: not ready within 30 s`)), 30_000);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`${config.id}: server exited early (code ${code})`));
      });
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const match = /^READY (\d+)$/.exec(line);
        if (match !== null) {
          clearTimeout(timer);
          resolve(Number(match[1]));
        }
      });
    });
    return { port, child };
  } catch (error) {
    killGroup(child);
    throw error;
  }
}

/**
 * Creates the secrets (FileSecretStore files) and the tokens in `workDir` (0600 files): the secret before a
 * rotation and the current one, and the four tokens the load generator sends. Returns the files' paths.
 */
async function makeSecrets(workDir: string): Promise<Files> {
  const { FileSecretStore, TokenAuthority } = await fromBuild<LauncherAuth>('index');
  const secret = join(workDir, 'secret.json');
  const previousSecret = join(workDir, 'secret-previous.json');
  const store = new FileSecretStore(secret);
  const authority = await TokenAuthority.open({ store });
  const previous = authority.issue();
  const before = await store.load();
  if (before === undefined) throw new Error('http: the store lost its secret');
  await new FileSecretStore(previousSecret).save(before);
  const current = await authority.rotate();
  await authority.close();

  const [header, payload] = current.split('.') as [string, string];
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { jti: string };
  const kid = (JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as { kid: string }).kid;
  // A forgery of the current token's length with other claims (another jti), signed with another key: its signing
  // input differs from the current token's, so only the HMAC refuses it (the dearest refusal there is).
  const jti = randomBytes(claims.jti.length).toString('base64url').slice(0, claims.jti.length);
  const otherKey = randomBytes(32);
  const forged = await new SignJWT({ ...claims, jti })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid })
    .sign(otherKey);
  const resigned = `${header}.${payload}.${forged.split('.')[2] as string}`;
  for (const token of [forged, previous, resigned]) {
    if (token.length !== current.length || token === current) throw new Error('http: a forgery went wrong');
  }
  if (forged.split('.')[1] === payload) throw new Error('http: the forgery kept the current claims');
  const tokens = join(workDir, 'tokens.json');
  await writeFile(tokens, JSON.stringify({ current, forged, previous, resigned }), { mode: 0o600 });
  return { secret, previousSecret, tokens };
}

export async function runHttp(options: {
  workDir: string;
  reps: number;
  durationSec: number;
  warmupSec: number;
}): Promise<HttpResult> {
  const { workDir, reps, durationSec, warmupSec } = options;
  const pinned = canPin();
  if (!pinned) progress('http', 'taskset cannot pin to two cores here: server and loader run UNPINNED');
  const files = await makeSecrets(workDir);
  const runs = new Map<string, LoadRun[][]>(HTTP_CONFIGS.map((c) => [c.id, []]));

  /** One configuration: a fresh server, then the loader's checked, warmed and measured runs of its paths. */
  const measure = async (config: HttpConfig, label: string, warmup: number, duration: number): Promise<LoadRun[]> => {
    progress('http', `${label}: ${config.id}`);
    const paths = PATHS_BY_KIND[config.kind];
    // Every path warmed, measured and possibly measured again, plus room for starting the processes.
    const limitMs = (paths.length * (warmup + 2 * duration) + 60) * 1000;
    const serverDir = join(workDir, `server-${config.id}-${label.replace(/\W+/g, '-')}`);
    await mkdir(serverDir, { mode: 0o700 });
    const { port, child } = await startServer(config, files, serverDir, pinned ? 0 : undefined, limitMs / 1000 + 30);
    try {
      const out = join(serverDir, 'load.json');
      const expect = paths.map((path) => (config.kind === 'bare' || path === 'valid' ? 200 : 401));
      const loaded = await runChild<LoadRun[]>(
        tsxCommand(
          'http-load.ts',
          [
            '--url',
            `http://127.0.0.1:${port}${HTTP_ROUTE}`,
            '--tokens',
            files.tokens,
            '--paths',
            paths.join(','),
            '--expect',
            expect.join(','),
            '--warmup',
            String(warmup),
            '--duration',
            String(duration),
            '--connections',
            String(CONNECTIONS),
            '--server-pid',
            String(child.pid),
            '--out',
            out,
          ],
          { core: pinned ? 1 : undefined },
        ),
        out,
        limitMs,
      );
      const summary = loaded.map(
        (r) =>
          `${r.path} ${(r.requestsPerSec / 1e3).toFixed(1)} k/s${r.serverBusy === null ? '' : ` (${(r.serverBusy * 100).toFixed(0)}% busy${r.retried ? ', second try' : ''})`}`,
      );
      progress('http', `  ${summary.join(', ')}`);
      return loaded;
    } finally {
      killGroup(child);
    }
  };

  // One unmeasured round first: the first server and loader of a run meet cold caches (tsx's transform cache, the
  // page cache), and twice here the first measured run of a run came out far slower than any later one.
  await measure(HTTP_CONFIGS[0]!, 'priming round, not measured', 1, 1);
  for (let rep = 0; rep < reps; rep++) {
    // Rotate the order each repetition, so that no configuration always runs first or right after another.
    const shift = Math.round((rep * HTTP_CONFIGS.length) / reps);
    const order = [...HTTP_CONFIGS.slice(shift), ...HTTP_CONFIGS.slice(0, shift)];
    for (const config of order) {
      runs.get(config.id)!.push(await measure(config, `repetition ${rep + 1} of ${reps}`, warmupSec, durationSec));
    }
  }

  const cells: HttpResult['cells'] = {};
  const known = (values: Array<number | null>): number[] => values.filter((v): v is number => v !== null);
  for (const config of HTTP_CONFIGS) {
    const bare = runs.get(`${config.framework}-bare`)!;
    const mine = runs.get(config.id)!;
    const row: Partial<Record<HttpPath, HttpCell>> = {};
    for (const path of PATHS_BY_KIND[config.kind]) {
      const at = (list: LoadRun[][], rep: number, which: HttpPath): LoadRun =>
        list[rep]!.find((r) => r.path === which)!;
      const own = mine.map((_, rep) => at(mine, rep, path));
      const base = bare.map((_, rep) => at(bare, rep, barePathOf(path)));
      const rps = own.map((r) => r.requestsPerSec);
      const ratios = own.map((r, rep) => r.requestsPerSec / base[rep]!.requestsPerSec);
      const cpu = known(own.map((r) => r.serverCpuUsPerRequest));
      const bareCpu = known(base.map((r) => r.serverCpuUsPerRequest));
      const busy = known(own.map((r) => r.serverBusy));
      row[path] = {
        rps: median(rps),
        rpsMin: Math.min(...rps),
        rpsMax: Math.max(...rps),
        ratios,
        ratio: median(ratios),
        ratioMin: Math.min(...ratios),
        ratioMax: Math.max(...ratios),
        cpuRatio: cpu.length === 0 || bareCpu.length === 0 ? null : median(cpu) / median(bareCpu),
        serverCpuUs: cpu.length === 0 ? null : median(cpu),
        serverBusy: busy.length === 0 ? null : median(busy),
        latencyP99Ms: median(own.map((r) => r.latencyP99Ms)),
        unexpected: own.reduce((sum, r) => sum + r.unexpected, 0),
        retries: own.filter((r) => r.retried).length,
        perRep: rps,
      };
    }
    cells[config.id] = row;
  }
  return {
    pinned,
    reps,
    durationSec,
    warmupSec,
    connections: CONNECTIONS,
    nodeEnv: 'production',
    cells,
  };
}

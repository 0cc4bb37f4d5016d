// Turns the parts' figures into the goals, the one stdout table, bench/RESULTS.md and bench/results.svg.
import {
  FRAMEWORK_LABELS,
  HTTP_CONFIGS,
  HTTP_PATHS,
  HTTP_PATH_LABELS,
  PATHS_BY_KIND,
  type Framework,
  type HttpCell,
  type HttpPath,
  type HttpResult,
} from './http.js';
import { INPUTS, INPUT_LABELS, type Input, type MicroCell, type MicroResult, type MicroRow } from './micro.js';
import type { RotateResult } from './rotate.js';
import { median } from './common.js';

export interface Machine {
  date: string;
  cpuModel: string;
  cores: number;
  memoryGiB: number;
  node: string;
  os: string;
  loadAverage: string;
  commit: string;
}

export interface Settings {
  quick: boolean;
  parts: readonly string[];
  build: string;
  /** How long the whole run took, build included. */
  elapsedSec: number;
}

export interface Results {
  machine: Machine;
  settings: Settings;
  micro?: MicroResult;
  http?: HttpResult;
  rotate?: RotateResult;
}

type Verdict = 'met' | 'MISSED' | 'within noise' | 'info' | 'n/a';
interface Goal {
  goal: string;
  measured: string;
  verdict: Verdict;
}

// ------------------------------------------------------------------------------------------------ formatting
function rate(perSecond: number): string {
  if (perSecond >= 1e6) return `${(perSecond / 1e6).toFixed(2)} M/s`;
  if (perSecond >= 1e3) return `${(perSecond / 1e3).toFixed(1)} k/s`;
  return `${perSecond.toFixed(0)} /s`;
}

function times(ratio: number): string {
  if (ratio >= 100) return `${ratio.toFixed(0)}×`;
  if (ratio >= 10) return `${ratio.toFixed(1)}×`;
  return `${ratio.toFixed(2)}×`;
}

const share = (ratio: number): string => ratio.toFixed(2);
const range = (min: number, max: number, digits = 2): string => `${min.toFixed(digits)}–${max.toFixed(digits)}`;
const ns = (value: number): string => (value >= 1e4 ? `${(value / 1e3).toFixed(1)} µs` : `${value.toFixed(0)} ns`);
const bytes = (value: number | null): string => (value === null ? '?' : `${Math.round(value)} B`);

function table(
  head: readonly string[],
  rows: ReadonlyArray<readonly string[]>,
  right: readonly boolean[] = [],
): string {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    `| ${cells.map((c, i) => (right[i] ? c.padStart(widths[i] as number) : c.padEnd(widths[i] as number))).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (right[i] ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`;
  return [line(head), rule, ...rows.map(line)].join('\n');
}

// ------------------------------------------------------------------------------------------------ lookups
const microRow = (micro: MicroResult, id: string): MicroRow | undefined => micro.rows.find((r) => r.id === id);
const microCell = (micro: MicroResult, id: string, input: Input): MicroCell | undefined =>
  microRow(micro, id)?.cells[input];
/** The reference every micro cell is compared with: jose jwtVerify with a Uint8Array key, on the same input. */
const REFERENCE = 'jose-u8';
const referenceFor = (micro: MicroResult, input: Input): MicroCell | undefined =>
  microCell(micro, REFERENCE, input) ?? microCell(micro, REFERENCE, 'current');

const httpCell = (http: HttpResult, id: string, path: HttpPath): HttpCell | undefined => http.cells[id]?.[path];
const FRAMEWORKS: readonly Framework[] = ['node', 'express', 'fastify'];

// ------------------------------------------------------------------------------------------------ goals
/**
 * The verdict on figures taken once per repetition: "met" when every repetition meets the goal, "MISSED" when none
 * does, "within noise" when some do and some do not. A single run is met or MISSED.
 */
function judge(values: readonly number[], meets: (value: number) => boolean): Verdict {
  const meeting = values.filter(meets).length;
  if (values.length === 0) return 'n/a';
  if (meeting === values.length) return 'met';
  return meeting === 0 ? 'MISSED' : 'within noise';
}

function speedGoal(goal: string, mine: MicroCell | undefined, theirs: MicroCell | undefined, least: number): Goal {
  if (mine === undefined || theirs === undefined) return { goal, measured: 'not measured', verdict: 'n/a' };
  const ratio = mine.opsPerSec / theirs.opsPerSec;
  return {
    goal,
    measured: `${times(ratio)} (${rate(mine.opsPerSec)} vs ${rate(theirs.opsPerSec)})`,
    verdict: ratio >= least ? 'met' : 'MISSED',
  };
}

/** The median of the paired ratios (see MicroResult.redisRatios), with their range. */
function redisGoal(micro: MicroResult): Goal {
  const goal = 'verify(current) with RedisSecretStore ≥ 0.95× MemorySecretStore (no Redis round trip per request)';
  const ratios = micro.redisRatios;
  if (ratios === undefined || ratios.length === 0) return { goal, measured: 'not measured', verdict: 'n/a' };
  const middle = median(ratios);
  return {
    goal,
    measured: `${times(middle)}, median of ${ratios.length} pairs of rounds (${times(Math.min(...ratios))}–${times(Math.max(...ratios))})`,
    verdict: middle >= 0.95 ? 'met' : 'MISSED',
  };
}

function microGoals(micro: MicroResult): Goal[] {
  const verify = (input: Input): MicroCell | undefined => microCell(micro, 'la-verify', input);
  const goals: Goal[] = [
    speedGoal(
      'verify(current) ≥ 100× jose jwtVerify (Uint8Array key)',
      verify('current'),
      microCell(micro, 'jose-u8', 'current'),
      100,
    ),
    {
      ...speedGoal(
        'verify(current) ÷ jose jwtVerify with a CryptoKey (for reference)',
        verify('current'),
        microCell(micro, 'jose-cryptokey', 'current'),
        100,
      ),
      verdict: 'info',
    },
    speedGoal(
      'verify(current) ≥ 5× fast-jwt with its cache',
      verify('current'),
      microCell(micro, 'fastjwt-cache', 'current'),
      5,
    ),
    redisGoal(micro),
    speedGoal(
      'verify(wrong signature) ≥ 5× fast-jwt (no cache)',
      verify('wrongSignature'),
      microCell(micro, 'fastjwt', 'wrongSignature'),
      5,
    ),
    speedGoal(
      'verify(wrong signature) ≥ 5× fast-jwt with its cache (which caches the error)',
      verify('wrongSignature'),
      microCell(micro, 'fastjwt-cache', 'wrongSignature'),
      5,
    ),
    speedGoal(
      'verify(wrong signature) ≥ 5× jsonwebtoken',
      verify('wrongSignature'),
      microCell(micro, 'jsonwebtoken', 'wrongSignature'),
      5,
    ),
  ];
  for (const id of ['la-verify', 'la-authenticate']) {
    for (const input of ['garbage', 'oversize'] as const) {
      const cell = microCell(micro, id, input);
      const name = `${id === 'la-verify' ? 'verify' : 'authenticate'}(${INPUT_LABELS[input]}) ≥ 1 M/s`;
      goals.push(
        cell === undefined
          ? { goal: name, measured: 'not measured', verdict: 'n/a' }
          : { goal: name, measured: rate(cell.opsPerSec), verdict: cell.opsPerSec >= 1e6 ? 'met' : 'MISSED' },
      );
    }
  }
  const wrong = micro.rows.flatMap((row) =>
    Object.entries(row.cells)
      .filter(([, cell]) => cell.accepted !== cell.expectedAccepted)
      .map(([input]) => `${row.id}/${input}`),
  );
  goals.push({
    goal: 'every micro call answered as it should (accept the signed tokens, refuse the rest)',
    measured: wrong.length === 0 ? 'all' : `WRONG: ${wrong.join(', ')}`,
    verdict: wrong.length === 0 ? 'met' : 'MISSED',
  });
  const adapter = microCell(micro, 'la-node-adapter', 'current');
  goals.push({
    goal: 'no allocation on the current-token path (node adapter, sync path; JS heap per call)',
    measured: bytes(adapter?.heapBytes ?? null),
    verdict: adapter?.heapBytes === null || adapter === undefined ? 'n/a' : adapter.heapBytes < 1 ? 'met' : 'MISSED',
  });
  const verifyCurrent = verify('current');
  goals.push({
    goal: 'verify(current): JS heap per call (the Promise the public API returns)',
    measured: bytes(verifyCurrent?.heapBytes ?? null),
    verdict: 'info',
  });
  goals.push({
    goal: 'no cache that attacker input can grow',
    measured: 'not measured here: see test/authority/cheap-rejections.test.ts and test/hardening/memory.test.ts',
    verdict: 'info',
  });
  return goals;
}

/** The median of `values` and, with several, their range: how every per-repetition figure is shown. */
function spread(values: readonly number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const middle =
    sorted.length % 2 === 1
      ? (sorted[(sorted.length - 1) / 2] as number)
      : ((sorted[sorted.length / 2 - 1] as number) + (sorted[sorted.length / 2] as number)) / 2;
  return values.length > 1
    ? `${share(middle)} (${range(sorted[0] as number, sorted.at(-1) as number)})`
    : share(middle);
}

const REFUSALS: ReadonlyArray<{ path: HttpPath; goal: boolean; name: string }> = [
  { path: 'none', goal: true, name: 'no token' },
  { path: 'forged', goal: true, name: 'forged token, refused by the HMAC' },
  { path: 'previous', goal: true, name: 'token from before the last rotation' },
  { path: 'resigned', goal: false, name: "current claims under another key's signature" },
];

function httpGoals(http: HttpResult): Goal[] {
  const goals: Goal[] = [];
  for (const framework of FRAMEWORKS) {
    const name = FRAMEWORK_LABELS[framework];
    const mine = httpCell(http, `${framework}-la`, 'valid');
    if (mine === undefined) continue;
    goals.push({
      goal: `${name}: current token ≥ 0.97 of bare`,
      measured: spread(mine.ratios),
      verdict: judge(mine.ratios, (ratio) => ratio >= 0.97),
    });
    if (mine.cpuRatio !== null) {
      goals.push({
        goal: `${name}: server CPU per request with the current token ÷ bare (lower is better)`,
        measured: `${share(mine.cpuRatio)}, server ${((mine.serverBusy ?? 0) * 100).toFixed(0)}% busy`,
        verdict: 'info',
      });
    }
    // Within each repetition: launcher-auth's requests/s over the best JWT peer's in that same repetition.
    const peers = HTTP_CONFIGS.filter((c) => c.framework === framework && c.kind === 'peer')
      .map((c) => ({ config: c, cell: httpCell(http, c.id, 'valid') }))
      .filter((p): p is { config: (typeof HTTP_CONFIGS)[number]; cell: HttpCell } => p.cell !== undefined);
    if (peers.length > 0) {
      const leads = mine.perRep.map((rps, rep) => rps / Math.max(...peers.map((p) => p.cell.perRep[rep] as number)));
      const best = [...peers].sort((a, b) => b.cell.rps - a.cell.rps)[0]!;
      goals.push({
        goal: `${name}: current token ahead of every JWT peer (requests/s ÷ the best peer's, same repetition)`,
        measured: `${spread(leads)}; best peer ${share(best.cell.ratio)} of bare (${best.config.label})`,
        verdict: judge(leads, (lead) => lead > 1),
      });
    }
    for (const { path, goal, name: refusal } of REFUSALS) {
      const refused = httpCell(http, `${framework}-la`, path);
      if (refused === undefined) continue;
      const ratios = refused.perRep.map((rps, rep) => rps / (mine.perRep[rep] as number));
      goals.push({
        goal: `${name}: 401 (${refusal}) ${goal ? 'no slower than' : 'as a share of'} the 200 path`,
        measured: `${spread(ratios)} of the 200 path's requests/s`,
        verdict: goal ? judge(ratios, (ratio) => ratio >= 1) : 'info',
      });
    }
  }
  const bad = Object.entries(http.cells).flatMap(([id, row]) =>
    Object.entries(row)
      .filter(([, cell]) => cell.unexpected > 0)
      .map(([path, cell]) => `${id}/${path}: ${cell.unexpected}`),
  );
  goals.push({
    goal: 'every HTTP response had the expected status, no errors or timeouts',
    measured: bad.length === 0 ? 'all' : `UNEXPECTED: ${bad.join(', ')}`,
    verdict: bad.length === 0 ? 'met' : 'MISSED',
  });
  return goals;
}

export function goals(results: Results): Goal[] {
  return [
    ...(results.micro === undefined ? [] : microGoals(results.micro)),
    ...(results.http === undefined ? [] : httpGoals(results.http)),
    ...(results.rotate === undefined
      ? []
      : [
          {
            goal: 'rotate() with FileSecretStore: median / p99 latency',
            measured: `${results.rotate.rotate.medianMs.toFixed(2)} / ${results.rotate.rotate.p99Ms.toFixed(2)} ms`,
            verdict: 'info' as const,
          },
          {
            goal: 'rotate() with RedisSecretStore, three instances: p99 ≤ 10 ms (median / p99)',
            measured:
              results.rotate.redis === undefined
                ? 'not measured (no redis-server)'
                : `${results.rotate.redis.medianMs.toFixed(2)} / ${results.rotate.redis.p99Ms.toFixed(2)} ms`,
            verdict:
              results.rotate.redis === undefined
                ? ('n/a' as const)
                : results.rotate.redis.p99Ms <= 10
                  ? ('met' as const)
                  : ('MISSED' as const),
          },
        ]),
  ];
}

// ------------------------------------------------------------------------------------------------ stdout
/** The one table on stdout: every figure of the run, each with its ratio and what the ratio is to. */
export function stdoutTable(results: Results): string {
  const rows: string[][] = [];
  const { micro, http, rotate } = results;
  if (micro !== undefined) {
    for (const row of micro.rows) {
      for (const input of INPUTS) {
        const cell = row.cells[input];
        if (cell === undefined) continue;
        const reference = referenceFor(micro, input);
        rows.push([
          'micro',
          `${row.label}${row.async ? ' (awaited)' : ''}`,
          INPUT_LABELS[input],
          `${rate(cell.opsPerSec)} (${ns(cell.nsPerOp)})`,
          reference === undefined ? '' : times(cell.opsPerSec / reference.opsPerSec),
          'jose (Uint8Array), same input',
          `${bytes(cell.heapBytes)} heap${cell.accepted === cell.expectedAccepted ? '' : ', WRONG ANSWER'}`,
        ]);
      }
    }
  }
  if (http !== undefined) {
    for (const config of HTTP_CONFIGS) {
      for (const path of HTTP_PATHS) {
        const cell = httpCell(http, config.id, path);
        if (cell === undefined) continue;
        rows.push([
          'http',
          `${FRAMEWORK_LABELS[config.framework]}: ${config.label}`,
          config.kind === 'bare' ? HTTP_PATH_LABELS[path].replace(/^\d+/, '200') : HTTP_PATH_LABELS[path],
          `${rate(cell.rps).replace('/s', ' req/s')} (${range(cell.rpsMin / 1e3, cell.rpsMax / 1e3, 1)} k)`,
          spread(cell.ratios),
          `${FRAMEWORK_LABELS[config.framework]} bare, ${path === 'none' ? 'no token' : 'a token of that length'}`,
          cell.cpuRatio === null
            ? `p99 ${cell.latencyP99Ms} ms`
            : `CPU/req ${share(cell.cpuRatio)}× bare, ${((cell.serverBusy ?? 0) * 100).toFixed(0)}% busy${cell.retries > 0 ? ', second try' : ''}${cell.unexpected > 0 ? `, ${cell.unexpected} UNEXPECTED` : ''}`,
        ]);
      }
    }
  }
  if (rotate !== undefined) {
    for (const [label, stats] of [
      ['rotate() with FileSecretStore', rotate.rotate],
      ...(rotate.redis === undefined
        ? []
        : ([['rotate() with RedisSecretStore, three instances', rotate.redis]] as const)),
      ['floor: atomic durable file replacement', rotate.floor],
    ] as const) {
      rows.push([
        'rotate',
        label,
        `${stats.count} calls`,
        `median ${stats.medianMs.toFixed(2)} ms, p99 ${stats.p99Ms.toFixed(2)} ms`,
        times(stats.medianMs / rotate.floor.medianMs),
        'floor median (time, lower is better)',
        `min ${stats.minMs.toFixed(2)}, max ${stats.maxMs.toFixed(2)} ms`,
      ]);
    }
  }
  for (const goal of goals(results)) rows.push(['goal', goal.goal, '', goal.measured, '', '', goal.verdict]);
  return table(['part', 'subject', 'input / path', 'absolute', 'ratio', 'ratio to', 'notes'], rows, [
    false,
    false,
    false,
    true,
    true,
    false,
    false,
  ]);
}

// ------------------------------------------------------------------------------------------------ RESULTS.md
function microSection(micro: MicroResult): string {
  const inputs = INPUTS;
  const speed = table(
    ['call', ...inputs.map((i) => INPUT_LABELS[i])],
    micro.rows.map((row) => [
      `${row.label}${row.async ? ' (awaited)' : ''}`,
      ...inputs.map((input) => {
        const cell = row.cells[input];
        const reference = referenceFor(micro, input);
        if (cell === undefined) return '';
        const mark = cell.accepted === cell.expectedAccepted ? '' : ' **WRONG ANSWER**';
        return `${reference === undefined ? '' : `**${times(cell.opsPerSec / reference.opsPerSec)}** `}${rate(cell.opsPerSec)}${mark}`;
      }),
    ]),
    [false, ...inputs.map(() => true)],
  );
  const memory = table(
    ['call', ...inputs.map((i) => INPUT_LABELS[i])],
    micro.rows.map((row) => [
      row.label,
      ...inputs.map((input) => {
        const cell = row.cells[input];
        if (cell === undefined) return '';
        return `${bytes(cell.heapBytes)}${cell.externalBytes !== null && Math.round(cell.externalBytes) !== 0 ? ` + ${bytes(cell.externalBytes)} ext` : ''}`;
      }),
    ]),
    [false, ...inputs.map(() => true)],
  );
  return [
    '## Micro benchmark',
    '',
    'Each cell: **speed as a multiple of jose `jwtVerify` with a Uint8Array key on the same input** (for the floors',
    'and the reference rows: on the current token), then calls per second. Higher is better.',
    '',
    speed,
    '',
    'Allocation per call: JS heap bytes, plus `process.memoryUsage().external` bytes (Buffers) where not zero.',
    `Async rows are net of the harness's own \`await\` (${bytes(micro.awaitHeapBytes)} per await, the reference row).`,
    '',
    memory,
    '',
  ].join('\n');
}

function httpSection(http: HttpResult): string {
  const several = http.reps > 1;
  const parts = ['## HTTP benchmark', ''];
  parts.push(
    "Each cell: **requests/s as a share of the bare framework's in the same repetition** (median over the",
    `repetitions${several ? ', min–max in brackets' : ''}), then the median requests/s. The bare servers answer 200 to every`,
    'request, so each path is compared with the bare request of the same shape: with a token of the current length',
    '(every path but "no token"), or without one. "CPU/req" is the server\'s CPU time per request as a multiple of the',
    "bare framework's, on the 200 path: a cost figure that does not depend on whether the load generator kept the",
    'server busy. An empty cell was not measured (see Method).',
    '',
  );
  for (const framework of FRAMEWORKS) {
    const configs = HTTP_CONFIGS.filter((c) => c.framework === framework);
    const rows = configs.flatMap((config) => {
      const row = http.cells[config.id];
      if (row === undefined) return [];
      return [
        [
          config.label,
          ...HTTP_PATHS.map((path) => {
            const cell = row[path];
            if (cell === undefined) return '';
            const absolute = rate(cell.rps).replace('/s', ' req/s');
            if (config.kind === 'bare') return `${absolute}${cell.retries > 0 ? ' †' : ''}`;
            return `**${spread(cell.ratios)}** ${absolute}${cell.retries > 0 ? ' †' : ''}${cell.unexpected > 0 ? ` **${cell.unexpected} UNEXPECTED**` : ''}`;
          }),
          row.valid?.cpuRatio === null || row.valid === undefined
            ? ''
            : `${share(row.valid.cpuRatio)} (${row.valid.serverCpuUs?.toFixed(1)} µs, ${((row.valid.serverBusy ?? 0) * 100).toFixed(0)}% busy)`,
        ],
      ];
    });
    if (rows.length === 0) continue;
    parts.push(
      `### ${FRAMEWORK_LABELS[framework]}`,
      '',
      table(['configuration', ...HTTP_PATHS.map((p) => HTTP_PATH_LABELS[p]), 'CPU/req, 200 path'], rows, [
        false,
        ...HTTP_PATHS.map(() => true),
        true,
      ]),
      '',
    );
  }
  parts.push(
    "† a measured run that left the server under 75% busy (its load generator's core was slowed by something",
    '  else) was run once more, and the second try kept.',
    '',
  );
  if (Object.values(http.cells).some((row) => row.valid !== undefined))
    parts.push('![HTTP, 200 path, share of bare](results.svg)', '');
  return parts.join('\n');
}

function rotateSection(rotate: RotateResult): string {
  const rows = [
    ['rotate() with FileSecretStore', rotate.rotate],
    ...(rotate.redis === undefined
      ? []
      : ([
          ['rotate() with RedisSecretStore, three instances (acknowledged by the two others)', rotate.redis],
        ] as const)),
    ['floor: open wx 0600, write, fsync, rename, fsync dir', rotate.floor],
  ] as const;
  return [
    '## rotate()',
    '',
    table(
      ['what', 'calls', 'median', 'p99', 'min–max', 'median ÷ floor'],
      rows.map(([label, s]) => [
        label,
        String(s.count),
        `${s.medianMs.toFixed(2)} ms`,
        `${s.p99Ms.toFixed(2)} ms`,
        `${range(s.minMs, s.maxMs)} ms`,
        times(s.medianMs / rotate.floor.medianMs),
      ]),
      [false, true, true, true, true, true],
    ),
    '',
  ].join('\n');
}

function methodSection(results: Results): string {
  const { http, micro } = results;
  const lines = [
    '## Method',
    '',
    "- launcher-auth is loaded in every child process from `bench/.build/`: the ESM output of the package's own tsup",
    `  options, as published (${results.settings.build}). Children run under tsx, which turns source-mapped stack`,
    "  traces on; each child turns them off first, so the peers' Errors cost what they cost in production.",
  ];
  if (micro !== undefined) {
    lines.push(
      `- Micro: mitata \`measure\`, at least ${micro.minCpuTimeMs} ms of samples per cell, one process, one cell after`,
      '  another; ops/s = 1e9 / median ns per call. `verify()`, `authenticate()` and jose return Promises: they are',
      "  awaited one after another in mitata's batches, so their figures include an `await` (see the reference row).",
      "  The node adapter row calls `withAuth()`'s listener on one reused stub request: the synchronous decision the",
      '  adapters make, without that Promise. The authority has been rotated once, as after "Regenerate token".',
      `- Inputs. "First sight": ${micro.poolSize} distinct correctly signed tokens cycled through, more than fast-jwt's`,
      '  cache (1000 entries) holds, so a cache never hits. "Wrong signature": other claims (another `jti` of the same',
      '  length) signed with another key, as long as the current token: it passes every length and syntax check and',
      '  only an HMAC refuses it. "Token before the last rotation": the token the authority issued before it was',
      '  rotated. "Current claims, other signature": the current header and claims with the wrong-signature token\'s',
      '  signature. "Garbage": printable non-base64url characters, as long as the current token. Every cell is checked',
      '  for the answer it should give (accept the signed tokens, refuse the rest).',
      '- Allocation: a second child started with `--expose-gc --min-semi-space-size=64 --max-semi-space-size=64`. Per',
      '  cell: warm-up, `gc()`, `v8.getHeapStatistics().used_heap_size` and `process.memoryUsage().external`, N calls',
      '  back to back (awaited when async), both readings again, `gc()`; the same readings around 0 calls are',
      '  subtracted, then divided by N. A GC during the N calls (seen by a PerformanceObserver) voids the try, which is',
      "  redone with N / 4. Native memory (OpenSSL's HMAC contexts) is invisible to both readings.",
    );
  }
  if (http !== undefined) {
    const kinds = (['bare', 'launcher-auth', 'peer', 'floor'] as const).map(
      (kind) => `  - ${kind}: ${PATHS_BY_KIND[kind].map((path) => HTTP_PATH_LABELS[path]).join('; ')}`,
    );
    lines.push(
      http.pinned
        ? '- HTTP: every server in its own process pinned to core 0 (`taskset -c 0`), autocannon in another process'
        : '- HTTP: every server in its own process, autocannon in another process, both **UNPINNED** (taskset could not',
      http.pinned
        ? `  pinned to core 1 (\`taskset -c 1\`), ${http.connections} connections, no pipelining; 127.0.0.1 only;`
        : `  pin to two cores here), ${http.connections} connections, no pipelining; 127.0.0.1 only;`,
      `  NODE_ENV=${http.nodeEnv}. Per configuration and repetition: a fresh server; per path one checked request (status`,
      `  and body) and a ${http.warmupSec} s warm-up; then per path a ${http.durationSec} s measured run. ${http.reps} repetition(s); in each, every`,
      '  configuration once, in an order rotated from one repetition to the next. Ratios are taken within a',
      '  repetition, then the median over repetitions. Server CPU from /proc/<pid>/stat. An unmeasured round of the',
      '  first configuration comes before the repetitions. A measured run that left the server under 75% busy is run',
      '  once more (marked †); its first try is dropped.',
      '- Paths: "forged" has other claims than the current token (another `jti`), the same length, and a signature',
      '  made with another key, so only an HMAC can refuse it. "Previous" is the token from before the last "Regenerate',
      '  token", what a script that was not updated still sends: the launcher-auth servers open the secret from before',
      '  the regeneration, then follow the store when another process replaces it (as `launcher-auth rotate` does).',
      '  "Re-signed" is the current header and claims under the forged token\'s signature.',
      '- Paths measured per kind of configuration, to keep a full run under 15 minutes. A bare server answers 200',
      '  whatever it is sent, so the two request shapes cover it; the previous and re-signed tokens are what',
      '  launcher-auth refuses without an HMAC, and to a peer or a floor they are forgeries like the forged one.',
      ...kinds,
      '- The peers as their READMEs show them: express-jwt with a KeyObject secret (401 from an error handler, empty',
      '  body); @fastify/jwt with `request.jwtVerify()` in an onRequest hook, its error sent as the reply (a JSON 401);',
      '  @fastify/bearer-auth with the token as its one key; jose in node:http with a CryptoKey imported once.',
    );
  }
  lines.push(`- This run took ${(results.settings.elapsedSec / 60).toFixed(1)} minutes, build included.`, '');
  return lines.join('\n');
}

/**
 * What the run's own figures say about a missed goal whose floor is known: a forged token needs one HMAC, and a hook
 * costs what the framework makes it cost. Empty when nothing is missed.
 */
function missedNotes(results: Results): string[] {
  const { http, micro } = results;
  if (http === undefined) return [];
  const verdicts = new Map(goals(results).map((g) => [g.goal, g.verdict]));
  const missed = (goal: string): boolean => {
    const verdict = verdicts.get(goal);
    return verdict === 'MISSED' || verdict === 'within noise';
  };
  const hmac = micro === undefined ? undefined : microCell(micro, 'floor-hmac', 'current');
  const notes: string[] = [];
  for (const framework of FRAMEWORKS) {
    const name = FRAMEWORK_LABELS[framework];
    const bare = httpCell(http, `${framework}-bare`, 'valid');
    const mine = httpCell(http, `${framework}-la`, 'valid');
    if (bare === undefined || mine === undefined) continue;
    if (missed(`${name}: 401 (forged token, refused by the HMAC) no slower than the 200 path`)) {
      const forged = httpCell(http, `${framework}-la`, 'forged');
      notes.push(
        `- ${name}, forged token: refusing it takes one HMAC-SHA256 of its signing input, the floor of any check that` +
          ` refuses a well-formed JWT forgery${hmac === undefined ? '' : ` (${ns(hmac.nsPerOp)} per HMAC in the micro floor row)`},` +
          ` where the 200 path compares the token in constant time.` +
          (bare.serverCpuUs === null || forged?.serverCpuUs == null || mine.serverCpuUs === null
            ? ''
            : ` Server CPU per request: ${forged.serverCpuUs.toFixed(1)} µs for the forgery, ${mine.serverCpuUs.toFixed(1)} µs` +
              ` with the current token, ${bare.serverCpuUs.toFixed(1)} µs for a bare request.`) +
          ' `npm run bench -- --profile adapter-wrong` shows where that time goes.',
      );
    }
    if (missed(`${name}: current token ≥ 0.97 of bare`)) {
      const floor = HTTP_CONFIGS.find((c) => c.framework === framework && c.kind === 'floor');
      const floorCell = floor === undefined ? undefined : httpCell(http, floor.id, 'valid');
      notes.push(
        `- ${name}, current token: server CPU per request ${mine.cpuRatio === null ? '?' : share(mine.cpuRatio)}× bare` +
          (floor === undefined || floorCell?.cpuRatio == null
            ? ''
            : `, and ${share(floorCell.cpuRatio)}× for ${floor.label}, the non-JWT floor, which only compares a string`) +
          '. `npm run bench -- --profile adapter-current` profiles the decision itself.',
      );
    }
  }
  return notes.length === 0 ? [] : ['### Missed goals, by the figures of this run', '', ...notes, ''];
}

export function markdown(results: Results): string {
  const { machine, settings } = results;
  const parts = ['# launcher-auth benchmark results', ''];
  if (settings.quick) {
    parts.push(
      '> **QUICK RUN (`--quick`): a smoke check with short runs on a possibly busy machine. Do not quote these',
      '> figures; run `npm run bench` on a quiet machine for the real ones.**',
      '',
    );
  }
  parts.push(
    'Written by `npm run bench` (bench/run.ts); do not edit by hand. Every figure is a ratio within this one run;',
    'absolute numbers stand beside the ratios only to show the scale and depend on the machine.',
    '',
    `- Date: ${machine.date}`,
    `- Machine: ${machine.cores} cores, ${machine.cpuModel}, ${machine.memoryGiB.toFixed(1)} GiB memory; ${machine.os}; load average at start ${machine.loadAverage}`,
    `- Node ${machine.node}; commit ${machine.commit}`,
    `- Mode: ${settings.quick ? '--quick' : 'full'}; parts: ${settings.parts.join(', ')}${results.http === undefined ? '' : `; HTTP: ${results.http.reps} repetition(s), ${results.http.durationSec} s measured per path`}`,
    ...(results.http === undefined
      ? []
      : [
          results.http.pinned
            ? '- Pinning: each HTTP server on core 0, its load generator on core 1 (`taskset`)'
            : '- Pinning: **none** (taskset could not pin to two cores here): server and load generator share the cores',
        ]),
    '',
    '## Goals',
    '',
    'HTTP goals are judged per repetition: "met" when every repetition meets the goal, "**MISSED**" when none does,',
    '"within noise" when some do and some do not. Micro figures come from one run: met or MISSED. "info": a figure',
    'with no goal attached.',
    '',
    table(
      ['goal', 'measured', 'verdict'],
      goals(results).map((g) => [
        g.goal,
        g.measured,
        g.verdict === 'met' || g.verdict === 'info' || g.verdict === 'n/a' ? g.verdict : `**${g.verdict}**`,
      ]),
      [false, true, true],
    ),
    '',
    ...missedNotes(results),
  );
  if (results.micro !== undefined) parts.push(microSection(results.micro));
  if (results.http !== undefined) parts.push(httpSection(results.http));
  if (results.rotate !== undefined) parts.push(rotateSection(results.rotate));
  parts.push(methodSection(results));
  return parts.join('\n');
}

// ------------------------------------------------------------------------------------------------ results.svg
const escapeXml = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A horizontal bar chart, one group per framework: the 200-path share of the bare framework's requests/s. */
export function svgChart(http: HttpResult, quick: boolean): string {
  const groups = FRAMEWORKS.map((framework) => ({
    framework,
    bars: HTTP_CONFIGS.filter((c) => c.framework === framework && c.kind !== 'bare')
      .map((c) => ({ config: c, cell: httpCell(http, c.id, 'valid') }))
      .filter((b): b is { config: (typeof HTTP_CONFIGS)[number]; cell: HttpCell } => b.cell !== undefined),
  })).filter((g) => g.bars.length > 0);

  const labelWidth = 300;
  const plotWidth = 420;
  const barHeight = 18;
  const gap = 6;
  const groupGap = 26;
  const top = quick ? 68 : 52;
  const maxRatio = Math.max(1.1, ...groups.flatMap((g) => g.bars.map((b) => b.cell.ratioMax)));
  const scale = Math.ceil(maxRatio * 10) / 10;
  const x = (ratio: number): number => labelWidth + (ratio / scale) * plotWidth;
  const out: string[] = [];
  let y = top;
  for (const group of groups) {
    out.push(`<text x="8" y="${y + 12}" class="group">${escapeXml(FRAMEWORK_LABELS[group.framework])}</text>`);
    y += 20;
    for (const { config, cell } of group.bars) {
      const fill = config.kind === 'launcher-auth' ? '#2f6fdb' : config.kind === 'floor' ? '#9aa5b1' : '#e0893a';
      out.push(
        `<text x="${labelWidth - 8}" y="${y + 13}" text-anchor="end">${escapeXml(config.label)}</text>`,
        `<rect x="${labelWidth}" y="${y}" width="${(x(cell.ratio) - labelWidth).toFixed(1)}" height="${barHeight}" fill="${fill}"/>`,
      );
      if (http.reps > 1) {
        out.push(
          `<line x1="${x(cell.ratioMin).toFixed(1)}" x2="${x(cell.ratioMax).toFixed(1)}" y1="${y + barHeight / 2}" y2="${y + barHeight / 2}" stroke="#222" stroke-width="1.5"/>`,
        );
      }
      const labelAt = x(http.reps > 1 ? Math.max(cell.ratio, cell.ratioMax) : cell.ratio) + 6;
      out.push(`<text x="${labelAt.toFixed(1)}" y="${y + 13}">${share(cell.ratio)}</text>`);
      y += barHeight + gap;
    }
    y += groupGap - gap;
  }
  const height = y + 44;
  const axis: string[] = [];
  for (let tick = 0; tick <= scale + 1e-9; tick += 0.2) {
    axis.push(
      `<line x1="${x(tick).toFixed(1)}" x2="${x(tick).toFixed(1)}" y1="${top - 6}" y2="${y}" stroke="#e4e7eb"/>`,
      `<text x="${x(tick).toFixed(1)}" y="${y + 16}" text-anchor="middle" class="tick">${tick.toFixed(1)}</text>`,
    );
  }
  axis.push(
    `<text x="${x(scale / 2).toFixed(1)}" y="${y + 32}" text-anchor="middle" class="tick">share of the bare framework's requests/s (median${http.reps > 1 ? ` of ${http.reps} runs` : ', one run'})</text>`,
    `<line x1="${x(1).toFixed(1)}" x2="${x(1).toFixed(1)}" y1="${top - 6}" y2="${y}" stroke="#222" stroke-width="1.5"/>`,
    `<line x1="${x(0.97).toFixed(1)}" x2="${x(0.97).toFixed(1)}" y1="${top - 6}" y2="${y}" stroke="#2f6fdb" stroke-dasharray="4 3"/>`,
  );
  const title = 'HTTP with a valid token: requests/s as a share of the bare framework (1.0)';
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${labelWidth + plotWidth + 60}" height="${height}" viewBox="0 0 ${labelWidth + plotWidth + 60} ${height}" font-family="system-ui, sans-serif" font-size="12">`,
    '<style>.group{font-weight:bold;font-size:13px}.tick{fill:#555;font-size:11px}.title{font-weight:bold;font-size:14px}</style>',
    '<rect width="100%" height="100%" fill="#fff"/>',
    `<text x="8" y="20" class="title">${escapeXml(title)}</text>`,
    `<text x="8" y="38" class="tick">blue: launcher-auth · orange: JWT peers · grey: non-JWT floors · dashed: the 0.97 goal${http.reps > 1 ? ' · whiskers: min–max' : ''}</text>`,
    ...(quick
      ? [
          '<text x="8" y="56" fill="#c0392b" font-weight="bold">QUICK RUN (--quick): short runs on a possibly busy machine, not for quoting</text>',
        ]
      : []),
    ...axis,
    ...out,
    '</svg>',
    '',
  ].join('\n');
}

// Micro benchmark: TokenAuthority.verify() and authenticate() beside jose, fast-jwt and jsonwebtoken on the same
// tokens, and the two floors. Speed (mitata) and allocation are measured in two separate child processes.
//
// Speed: mitata's `measure`, one cell after another in one process; ops/s = 1e9 / median ns per call. A call
// that returns a Promise (verify(), authenticate(), jose) is awaited, one after another, in mitata's batches
// of 4096 calls, so its figure includes the caller's `await`; the row "await of a resolved Promise" shows what
// that await alone costs.
// Allocation: a child started with --expose-gc and a 64 MB young generation. Per cell: warm-up, gc() twice,
// read v8.getHeapStatistics().used_heap_size and process.memoryUsage().external, N calls back to back (awaited
// when async), read both again, gc(). Bytes per call = (difference - the same readings around 0 calls) / N. A
// PerformanceObserver counts GCs: a run during which any GC ran is thrown away and redone with N / 4; the least
// of three GC-free runs is kept (a late JIT compilation can only add bytes). Warm-up: 20 000 calls or 300 ms. Async
// rows are net of the harness's own await (the reference row). Native memory (OpenSSL's HMAC contexts) is
// invisible to both readings.
import { createHmac, createSecretKey, randomBytes, timingSafeEqual, webcrypto } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { getHeapStatistics } from 'node:v8';
import { createVerifier } from 'fast-jwt';
import { SignJWT, jwtVerify } from 'jose';
import jsonwebtoken from 'jsonwebtoken';
import type { SecretRecord } from 'launcher-auth';
import { measure } from 'mitata';
import {
  benchRedis,
  exitWithParent,
  flag,
  fromBuild,
  plainStackTraces,
  progress,
  requireFlag,
  runChild,
  tsxCommand,
  type LauncherAuth,
  type LauncherAuthNode,
  type LauncherAuthRedis,
} from './common.js';

export const INPUTS = [
  'current',
  'otherFirst',
  'otherRepeated',
  'wrongSignature',
  'previous',
  'currentResigned',
  'garbage',
  'oversize',
] as const;
export type Input = (typeof INPUTS)[number];

export const INPUT_LABELS: Readonly<Record<Input, string>> = {
  current: 'current token',
  otherFirst: 'other signed token, first sight',
  otherRepeated: 'other signed token, repeated',
  wrongSignature: 'wrong signature (other claims)',
  previous: 'token before the last rotation',
  currentResigned: 'current claims, other signature',
  garbage: 'garbage',
  oversize: '8 KB string',
};

export interface MicroCell {
  /** Median ns per call, and 1e9 / that. */
  nsPerOp: number;
  opsPerSec: number;
  /** JS heap bytes per call (net of the harness's await for async rows); null when every try saw a GC. */
  heapBytes: number | null;
  /** process.memoryUsage().external bytes per call: Buffers' backing stores, amortised over the 8 KB pool. */
  externalBytes: number | null;
  /** What the call answered on this input (checked against what it should answer). */
  accepted: boolean;
  expectedAccepted: boolean;
}

export interface MicroRow {
  id: string;
  label: string;
  kind: 'launcher-auth' | 'peer' | 'floor' | 'reference';
  async: boolean;
  cells: Partial<Record<Input, MicroCell>>;
}

export interface MicroResult {
  rows: MicroRow[];
  /**
   * verify(current) with RedisSecretStore ÷ with MemorySecretStore (calls per second), measured in alternating
   * rounds, one ratio per pair of rounds, so that a slow moment of a shared machine weighs on both sides of a ratio
   * alike. Absent without redis-server.
   */
  redisRatios?: number[];
  /** JS heap bytes of one `await` of an already resolved Promise in the allocation harness. */
  awaitHeapBytes: number;
  minCpuTimeMs: number;
  poolSize: number;
}

/** Distinct correctly signed tokens cycled through for "first sight": more than fast-jwt's cache (1000) holds. */
const POOL_SIZE = 4096;
/** What the two children take in all, for the estimate `npm run bench` prints first. */
export const MICRO_ESTIMATE_SECONDS = { quick: 76, full: 97 } as const;

interface Contender {
  id: string;
  label: string;
  kind: MicroRow['kind'];
  /** Called with the bare token, or with `Bearer <token>` when `header` is set. */
  call: (input: string) => unknown;
  accepted: (answer: unknown) => boolean;
  header?: boolean;
  /** Only these inputs (the floors have one). */
  inputs?: readonly Input[];
  /** Which inputs it should accept. */
  accepts: readonly Input[];
}

/** A flat one-byte string, as the HTTP parser hands a header over; a concatenation would stay a rope until first read. */
const flat = (text: string): string => Buffer.from(text, 'latin1').toString('latin1');

/** The two authorities of the paired comparison, holding the same record, and its current token. */
interface Pair {
  readonly memory: Verifier;
  readonly redis: Verifier;
  readonly token: string;
}

interface Verifier {
  verify(token: string): Promise<unknown>;
}

async function setup(): Promise<{
  contenders: Contender[];
  inputFor: (input: Input, header: boolean) => () => string;
  pair: Pair | undefined;
  close: () => Promise<void>;
}> {
  const { MemorySecretStore, TokenAuthority } = await fromBuild<LauncherAuth>('index');
  const store = new MemorySecretStore();
  const authority = await TokenAuthority.open({ store });
  // One rotation, so that "the token from before the last rotation" exists, as after "Regenerate token".
  const previous = authority.issue();
  await authority.rotate();
  const record: SecretRecord | undefined = await store.load();
  if (record === undefined) throw new Error('micro: the store lost its record');
  const { withAuth } = await fromBuild<LauncherAuthNode>('node');
  // The same record in Redis, so that the RedisSecretStore row verifies the very same token: the difference is the
  // store's trust bound (one performance.now() comparison per call), never a Redis round trip.
  const redis = await benchRedis();
  const redisClient = redis === undefined ? undefined : await redis.client();
  let redisAuthority: Awaited<ReturnType<typeof TokenAuthority.open>> | undefined;
  if (redisClient !== undefined) {
    const { RedisSecretStore } = await fromBuild<LauncherAuthRedis>('redis');
    await new RedisSecretStore({ client: redisClient, key: 'bench:micro' }).save(record);
    redisAuthority = await TokenAuthority.open({
      store: new RedisSecretStore({ client: redisClient, key: 'bench:micro' }),
    });
  }
  const key = new Uint8Array(record.key);
  const keyObject = createSecretKey(key);
  const cryptoKey = await webcrypto.subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
  const iat = Math.floor(record.createdAt.getTime() / 1000);
  // Same header as the launcher's token and same claim names: only jti differs.
  const sign = (jti: string, signingKey: Uint8Array): Promise<string> =>
    new SignJWT({ jti, iat }).setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: record.id }).sign(signingKey);

  const current = authority.issue();
  const pool: string[] = [];
  for (let i = 0; i < POOL_SIZE; i++) pool.push(await sign(`o${i.toString(36).padStart(15, '0')}`, key));
  const otherRepeated = await sign('other-repeated-0', key);
  // Other claims (another jti of the same length) signed with another key: as long as the current token, so it
  // passes every length and syntax check and is refused only by the HMAC of its signing input.
  const wrongSignature = await sign(
    `${record.id.startsWith('w') ? 'x' : 'w'}${record.id.slice(1)}`,
    new Uint8Array(randomBytes(32)),
  );
  // The current token's header and claims under another key's signature: refused without an HMAC.
  const currentResigned = `${current.slice(0, current.lastIndexOf('.'))}.${wrongSignature.split('.')[2] as string}`;
  // Printable but not base64url, exactly as long as the current token.
  const garbage = '#%!*'.repeat(current.length).slice(0, current.length);
  const oversize = 'A'.repeat(8192);
  for (const forged of [wrongSignature, currentResigned, previous]) {
    if (forged.length !== current.length || forged === current) throw new Error('micro: forgery went wrong');
  }

  const fixed: Readonly<Record<Exclude<Input, 'otherFirst'>, string>> = {
    current,
    otherRepeated,
    wrongSignature,
    previous,
    currentResigned,
    garbage,
    oversize,
  };
  const inputFor = (input: Input, header: boolean): (() => string) => {
    const prefix = header ? 'Bearer ' : '';
    if (input === 'otherFirst') {
      const texts = pool.map((token) => flat(prefix + token));
      let i = 0;
      return () => texts[i++ & (POOL_SIZE - 1)] as string;
    }
    const text = flat(prefix + fixed[input]);
    return () => text;
  };

  const yes = (): boolean => true;
  const no = (): boolean => false;
  const isTrue = (answer: unknown): boolean => answer === true;
  const isOk = (answer: unknown): boolean => (answer as { ok: boolean }).ok;
  // The sync peers throw on a bad token; catching costs nothing when nothing is thrown.
  const boolean =
    (verify: (token: string) => unknown) =>
    (token: string): boolean => {
      try {
        verify(token);
        return true;
      } catch {
        return false;
      }
    };
  const joseOptions = { algorithms: ['HS256'] };
  const fastCached = createVerifier({ key: Buffer.from(key), algorithms: ['HS256'], cache: true });
  const fastUncached = createVerifier({ key: Buffer.from(key), algorithms: ['HS256'] });
  const signed: readonly Input[] = ['current', 'otherFirst', 'otherRepeated'];

  const tokenBytes = Buffer.from(current, 'latin1');
  const tokenCopy = Buffer.from(current, 'latin1');
  const signingInput = flat(current.slice(0, current.lastIndexOf('.')));
  const resolved = Promise.resolve(true);

  // The node adapter's listener called directly on one reused request object: the synchronous path every adapter
  // takes, without the Promise that the public verify()/authenticate() wrap their answer in.
  let handled = false;
  const listener = withAuth(authority, () => {
    handled = true;
  });
  const rawHeaders = ['Host', '127.0.0.1', 'Authorization', ''];
  const request = { method: 'GET', url: '/api', rawHeaders } as unknown as IncomingMessage;
  const response = { writeHead: () => response, end: () => undefined } as unknown as ServerResponse;

  const contenders: Contender[] = [
    {
      id: 'la-verify',
      label: 'launcher-auth verify(token)',
      kind: 'launcher-auth',
      call: (t) => authority.verify(t),
      accepted: isOk,
      accepts: signed,
    },
    {
      id: 'la-authenticate',
      label: 'launcher-auth authenticate("Bearer " + token)',
      kind: 'launcher-auth',
      call: (h) => authority.authenticate(h),
      accepted: isOk,
      header: true,
      accepts: signed,
    },
    {
      id: 'la-node-adapter',
      label: 'launcher-auth/node withAuth() listener, stub req/res',
      kind: 'launcher-auth',
      call: (h) => {
        rawHeaders[3] = h;
        handled = false;
        listener(request, response);
        return handled;
      },
      accepted: isTrue,
      header: true,
      // The inputs it answers synchronously; a signed non-current token goes on to jose, in a later tick.
      inputs: ['current', 'wrongSignature', 'previous', 'currentResigned', 'garbage', 'oversize'],
      accepts: ['current'],
    },
    {
      id: 'jose-u8',
      label: 'jose jwtVerify, Uint8Array key',
      kind: 'peer',
      call: (t) => jwtVerify(t, key, joseOptions).then(yes, no),
      accepted: isTrue,
      accepts: signed,
    },
    {
      id: 'jose-cryptokey',
      label: 'jose jwtVerify, imported CryptoKey',
      kind: 'peer',
      call: (t) => jwtVerify(t, cryptoKey, joseOptions).then(yes, no),
      accepted: isTrue,
      accepts: signed,
    },
    {
      id: 'fastjwt-cache',
      label: 'fast-jwt createVerifier, cache: true',
      kind: 'peer',
      call: boolean(fastCached),
      accepted: isTrue,
      accepts: signed,
    },
    {
      id: 'fastjwt',
      label: 'fast-jwt createVerifier, no cache',
      kind: 'peer',
      call: boolean(fastUncached),
      accepted: isTrue,
      accepts: signed,
    },
    {
      id: 'jsonwebtoken',
      label: 'jsonwebtoken.verify, KeyObject',
      kind: 'peer',
      call: boolean((t) => jsonwebtoken.verify(t, keyObject, { algorithms: ['HS256'] })),
      accepted: isTrue,
      accepts: signed,
    },
    {
      id: 'floor-tse',
      label: 'floor: timingSafeEqual, token already a Buffer',
      kind: 'floor',
      call: () => timingSafeEqual(tokenBytes, tokenCopy),
      accepted: isTrue,
      inputs: ['current'],
      accepts: ['current'],
    },
    {
      id: 'floor-tse-string',
      label: 'floor: timingSafeEqual(Buffer.from(token), Buffer)',
      kind: 'floor',
      call: (t) => t.length === tokenBytes.length && timingSafeEqual(Buffer.from(t, 'latin1'), tokenBytes),
      accepted: isTrue,
      inputs: ['current'],
      accepts: ['current'],
    },
    {
      id: 'floor-hmac',
      label: "floor: createHmac('sha256', KeyObject) of the signing input",
      kind: 'floor',
      call: () => createHmac('sha256', keyObject).update(signingInput, 'latin1').digest().length === 32,
      accepted: isTrue,
      inputs: ['current'],
      accepts: ['current'],
    },
    {
      id: 'await',
      label: 'reference: await of a resolved Promise',
      kind: 'reference',
      call: () => resolved,
      accepted: isTrue,
      inputs: ['current'],
      accepts: ['current'],
    },
  ];
  const close = async (): Promise<void> => {
    await authority.close();
    await redisAuthority?.close();
    redisClient?.destroy();
    await redis?.stop();
  };
  const pair = redisAuthority === undefined ? undefined : { memory: authority, redis: redisAuthority, token: current };
  return { contenders, inputFor, pair, close };
}

let sink: unknown;

async function timeChild(quick: boolean): Promise<Pick<MicroResult, 'rows' | 'minCpuTimeMs' | 'redisRatios'>> {
  const { contenders, inputFor, pair, close } = await setup();
  const minCpuTimeMs = quick ? 30 : 500;
  const rows: MicroRow[] = [];
  for (const c of contenders) {
    const row: MicroRow = { id: c.id, label: c.label, kind: c.kind, async: false, cells: {} };
    for (const input of c.inputs ?? INPUTS) {
      const next = inputFor(input, c.header ?? false);
      const run = (): unknown => c.call(next());
      const first = run();
      row.async = first instanceof Promise;
      const accepted = c.accepted(await first);
      for (let i = 0; i < 300; i++) sink = await run();
      const stats = await measure(run, { min_cpu_time: minCpuTimeMs * 1e6 });
      row.cells[input] = {
        nsPerOp: stats.p50,
        opsPerSec: 1e9 / stats.p50,
        heapBytes: null,
        externalBytes: null,
        accepted,
        expectedAccepted: c.accepts.includes(input),
      };
    }
    process.stderr.write(`[bench micro] ${c.label}\n`);
    rows.push(row);
  }
  const redisRatios = pair === undefined ? undefined : await pairedRatios(pair, quick ? 10 : 50);
  await close();
  return { rows, minCpuTimeMs, ...(redisRatios === undefined ? {} : { redisRatios }) };
}

/**
 * verify(current) with each store in alternating rounds of awaited calls (which goes first alternates), the first
 * rounds as warm-up: one ratio per pair of rounds. Both go through the one call site below: a call site of the rows
 * above has seen every input (and jose's promises) for the MemorySecretStore row and one input for the Redis row,
 * and that difference in the JIT's feedback, not the store, moved their ratio by a factor of three.
 */
async function pairedRatios(pair: Pair, pairs: number): Promise<number[]> {
  const { token } = pair;
  const calls = 20_000;
  const nsPerCall = async (authority: Verifier): Promise<number> => {
    // A turn of the event loop first: awaiting settled promises never yields to timers or I/O, and without its
    // renewals the Redis authority's trust would run out, and refusing is a faster path than accepting.
    await new Promise((resolve) => setTimeout(resolve, 1));
    let refused = 0;
    const started = performance.now();
    for (let i = 0; i < calls; i++) if (((await authority.verify(token)) as { ok?: unknown }).ok !== true) refused++;
    const ns = ((performance.now() - started) * 1e6) / calls;
    if (refused > 0) throw new Error(`micro: ${refused} of ${calls} paired verifications refused the current token`);
    return ns;
  };
  const warmUp = 10;
  const ratios: number[] = [];
  for (let round = 0; round < warmUp + pairs; round++) {
    const memoryFirst = round % 2 === 0;
    const a = await nsPerCall(memoryFirst ? pair.memory : pair.redis);
    const b = await nsPerCall(memoryFirst ? pair.redis : pair.memory);
    const [memoryNs, redisNs] = memoryFirst ? [a, b] : [b, a];
    if (round >= warmUp) ratios.push(memoryNs / redisNs);
  }
  process.stderr.write('[bench micro] RedisSecretStore ÷ MemorySecretStore, in alternating rounds\n');
  return ratios;
}

interface Bytes {
  heap: number;
  external: number;
}

async function allocChild(
  quick: boolean,
): Promise<{ bytes: Record<string, Partial<Record<Input, Bytes | null>>>; awaitHeapBytes: number }> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('micro: the allocation child needs node --expose-gc');
  const { contenders, inputFor, close } = await setup();
  let gcs = 0;
  const observer = new PerformanceObserver((list) => {
    gcs += list.getEntries().length;
  });
  observer.observe({ entryTypes: ['gc'] });
  // GC entries reach the observer on a later turn of the event loop.
  const flush = (): Promise<void> => new Promise((done) => setTimeout(done, 0));

  const once = async (run: () => unknown, isAsync: boolean, n: number): Promise<Bytes | undefined> => {
    gc();
    gc();
    await flush();
    const seen = gcs;
    const heap0 = getHeapStatistics().used_heap_size;
    const external0 = process.memoryUsage().external;
    if (isAsync) for (let i = 0; i < n; i++) sink = await run();
    else for (let i = 0; i < n; i++) sink = run();
    const heap1 = getHeapStatistics().used_heap_size;
    const external1 = process.memoryUsage().external;
    await flush();
    await flush();
    gc();
    return gcs === seen ? { heap: heap1 - heap0, external: external1 - external0 } : undefined;
  };

  const perCall = async (run: () => unknown, isAsync: boolean): Promise<Bytes | null> => {
    // The readings themselves allocate: measured around 0 calls and subtracted.
    let empty: Bytes | undefined;
    for (let i = 0; i < 5 && empty === undefined; i++) empty = await once(run, isAsync, 0);
    if (empty === undefined) return null;
    const probe = await once(run, isAsync, 64);
    const estimate = probe === undefined ? 4096 : Math.max(1, (probe.heap - empty.heap) / 64);
    // Stay far below the 64 MB young generation so that no scavenge runs during the loop.
    let n = Math.max(64, Math.min(quick ? 5_000 : 20_000, Math.floor((16 * 2 ** 20) / estimate)));
    // The least of three GC-free tries: a late JIT compilation or an IC update can only add bytes, never take any.
    let best: Bytes | null = null;
    for (let tries = 0; tries < 3 && n >= 16;) {
      const total = await once(run, isAsync, n);
      if (total === undefined) {
        n = Math.floor(n / 4);
        continue;
      }
      tries++;
      const bytes = { heap: (total.heap - empty.heap) / n, external: (total.external - empty.external) / n };
      if (best === null || bytes.heap < best.heap) best = bytes;
    }
    return best;
  };

  /** Until the JIT has settled: 20 000 calls or 300 ms, whichever comes first. */
  const warm = async (run: () => unknown): Promise<void> => {
    const until = performance.now() + 300;
    for (let i = 0; i < 20_000 && (i < 300 || performance.now() < until); i++) sink = await run();
  };

  const bytes: Record<string, Partial<Record<Input, Bytes | null>>> = {};
  let awaitHeapBytes = 0;
  // The reference row first: async rows are reported net of it.
  const ordered = [...contenders.filter((c) => c.id === 'await'), ...contenders.filter((c) => c.id !== 'await')];
  for (const c of ordered) {
    const cells: Partial<Record<Input, Bytes | null>> = {};
    for (const input of c.inputs ?? INPUTS) {
      const next = inputFor(input, c.header ?? false);
      const run = (): unknown => c.call(next());
      const isAsync = run() instanceof Promise;
      await warm(run);
      const measured = await perCall(run, isAsync);
      if (c.id === 'await') {
        awaitHeapBytes = measured?.heap ?? 0;
        cells[input] = measured;
      } else {
        cells[input] =
          measured === null
            ? null
            : { heap: Math.max(0, measured.heap - (isAsync ? awaitHeapBytes : 0)), external: measured.external };
      }
    }
    bytes[c.id] = cells;
  }
  observer.disconnect();
  await close();
  return { bytes, awaitHeapBytes };
}

/** Runs both children and merges their figures. */
export async function runMicro(options: { quick: boolean; workDir: string }): Promise<MicroResult> {
  const timeOut = join(options.workDir, 'micro-time.json');
  const allocOut = join(options.workDir, 'micro-alloc.json');
  const quickArgs = options.quick ? ['--quick'] : [];
  const timed = await runChild<Pick<MicroResult, 'rows' | 'minCpuTimeMs' | 'redisRatios'>>(
    tsxCommand('micro.ts', ['--child', 'time', '--out', timeOut, ...quickArgs]),
    timeOut,
    (options.quick ? 4 : 15) * 60_000,
  );
  progress('micro', 'allocation, in a child with --expose-gc');
  const alloc = await runChild<Awaited<ReturnType<typeof allocChild>>>(
    tsxCommand('micro.ts', ['--child', 'alloc', '--out', allocOut, ...quickArgs], {
      nodeFlags: ['--expose-gc', '--min-semi-space-size=64', '--max-semi-space-size=64'],
    }),
    allocOut,
    (options.quick ? 4 : 10) * 60_000,
  );
  for (const row of timed.rows) {
    for (const [input, cell] of Object.entries(row.cells) as Array<[Input, MicroCell]>) {
      const measured = alloc.bytes[row.id]?.[input];
      cell.heapBytes = measured?.heap ?? null;
      cell.externalBytes = measured?.external ?? null;
    }
  }
  return {
    rows: timed.rows,
    minCpuTimeMs: timed.minCpuTimeMs,
    ...(timed.redisRatios === undefined ? {} : { redisRatios: timed.redisRatios }),
    awaitHeapBytes: alloc.awaitHeapBytes,
    poolSize: POOL_SIZE,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  exitWithParent();
  const argv = process.argv.slice(2);
  plainStackTraces();
  const mode = flag(argv, '--child');
  const out = requireFlag(argv, '--out');
  const quick = argv.includes('--quick');
  if (mode === 'time') await writeFile(out, JSON.stringify(await timeChild(quick)));
  else if (mode === 'alloc') await writeFile(out, JSON.stringify(await allocChild(quick)));
  else throw new Error('micro: --child time|alloc');
  void sink;
}

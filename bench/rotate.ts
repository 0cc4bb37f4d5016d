// rotate() latency with FileSecretStore in a temporary directory, beside its floor: the same durable, atomic
// replacement of a file of the same size written by hand (open wx 0600, write, fsync, rename, fsync the directory).
// And with RedisSecretStore shared by three instances (three authorities, each on its own connection, in this
// process), rotated on each in turn: rotate() resolves once the two others acknowledged the new key.
import { randomBytes } from 'node:crypto';
import { mkdtemp, open, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  benchRedis,
  exitWithParent,
  flag,
  fromBuild,
  median,
  plainStackTraces,
  quantile,
  requireFlag,
  runChild,
  tsxCommand,
  type LauncherAuth,
  type LauncherAuthRedis,
} from './common.js';

export interface LatencyStats {
  count: number;
  medianMs: number;
  p99Ms: number;
  minMs: number;
  maxMs: number;
}

export interface RotateResult {
  rotate: LatencyStats;
  floor: LatencyStats;
  /** rotate() with RedisSecretStore, three instances; absent when redis-server is not installed. */
  redis?: LatencyStats;
}

function stats(samples: readonly number[]): LatencyStats {
  return {
    count: samples.length,
    medianMs: median(samples),
    p99Ms: quantile(samples, 0.99),
    minMs: Math.min(...samples),
    maxMs: Math.max(...samples),
  };
}

async function syncDirectory(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

async function measureRotations(count: number): Promise<RotateResult> {
  const { FileSecretStore, TokenAuthority } = await fromBuild<LauncherAuth>('index');
  const dir = await mkdtemp(join(tmpdir(), 'launcher-auth-rotate-'));
  // The floor writes elsewhere: in the store's directory every floor write would wake the store's watcher, and the
  // reload it queues would hold up the next rotate().
  const floorDir = await mkdtemp(join(tmpdir(), 'launcher-auth-rotate-floor-'));
  try {
    const path = join(dir, 'secret.json');
    const authority = await TokenAuthority.open({ store: new FileSecretStore(path) });
    const rotations: number[] = [];
    const floor: number[] = [];
    // Interleaved, one of each at a time, so that a busy disk weighs on both alike. The first few warm up.
    for (let i = -5; i < count; i++) {
      const t0 = performance.now();
      await authority.rotate();
      const t1 = performance.now();
      const text = `${JSON.stringify({ version: 1, id: randomBytes(12).toString('base64url'), key: randomBytes(32).toString('base64url'), createdAt: new Date().toISOString() })}\n`;
      const temporary = join(floorDir, `.floor.${randomBytes(6).toString('hex')}.tmp`);
      const t2 = performance.now();
      const handle = await open(temporary, 'wx', 0o600);
      try {
        await handle.writeFile(text, 'utf8');
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(temporary, join(floorDir, 'floor.json'));
      await syncDirectory(floorDir);
      const t3 = performance.now();
      if (i >= 0) {
        rotations.push(t1 - t0);
        floor.push(t3 - t2);
      }
    }
    await authority.close();
    const redis = await measureRedisRotations(count);
    return { rotate: stats(rotations), floor: stats(floor), ...(redis === undefined ? {} : { redis }) };
  } finally {
    await rm(dir, { recursive: true, force: true });
    await rm(floorDir, { recursive: true, force: true });
  }
}

async function measureRedisRotations(count: number): Promise<LatencyStats | undefined> {
  const redis = await benchRedis();
  if (redis === undefined) return undefined;
  const { TokenAuthority } = await fromBuild<LauncherAuth>('index');
  const { RedisSecretStore } = await fromBuild<LauncherAuthRedis>('redis');
  const clients = await Promise.all([redis.client(), redis.client(), redis.client()]);
  try {
    const authorities = [];
    // One after another: the first creates the secret, the others read it.
    for (const client of clients)
      authorities.push(await TokenAuthority.open({ store: new RedisSecretStore({ client, key: 'bench:rotate' }) }));
    const samples: number[] = [];
    for (let i = -5; i < count; i++) {
      const authority = authorities[(i + 6) % authorities.length] as (typeof authorities)[number];
      const t0 = performance.now();
      await authority.rotate();
      const t1 = performance.now();
      if (i >= 0) samples.push(t1 - t0);
    }
    for (const authority of authorities) await authority.close();
    return stats(samples);
  } finally {
    for (const client of clients) client.destroy();
    await redis.stop();
  }
}

export async function runRotate(options: { workDir: string; count: number }): Promise<RotateResult> {
  const out = join(options.workDir, 'rotate.json');
  return runChild<RotateResult>(
    tsxCommand('rotate.ts', ['--count', String(options.count), '--out', out]),
    out,
    5 * 60_000,
  );
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  exitWithParent();
  plainStackTraces();
  const argv = process.argv.slice(2);
  const count = Number(flag(argv, '--count') ?? '200');
  await writeFile(requireFlag(argv, '--out'), JSON.stringify(await measureRotations(count)));
}

// A real redis-server on a free loopback port for the tests and the benchmark: no persistence unless a directory is given. Skips the
// suite (with the reason) when redis-server is not installed, and fails instead when services are required.
import { spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { createClient } from 'redis';
import { afterAll, beforeAll } from 'vitest';
import { killGroup, spawnOwned } from './children.js';
import { until } from './poll.js';

export const REDIS_SERVER = process.env['REDIS_SERVER'] ?? 'redis-server';
const FOUND = spawnSync(REDIS_SERVER, ['--version'], { stdio: 'ignore' }).status === 0;
const REQUIRED = process.env['LAUNCHER_AUTH_REQUIRE_SERVICES'] === '1';

if (!FOUND && REQUIRED) {
  throw new Error(
    `${REDIS_SERVER} is not installed, and LAUNCHER_AUTH_REQUIRE_SERVICES=1 requires it (apt install redis-server).`,
  );
}
/** Why the Redis suites are skipped, or `undefined` when they run. */
export const SKIP_REASON: string | undefined = FOUND
  ? undefined
  : `${REDIS_SERVER} is not installed (apt install redis-server)`;
if (SKIP_REASON !== undefined) console.warn(`Skipping the Redis tests: ${SKIP_REASON}.`);

/**
 * Why a suite that also needs `binary` (from Debian's `aptPackage`) is skipped, or `undefined` when it runs; like
 * redis-server above, a missing tool fails instead when services are required.
 */
export function missingTool(binary: string, aptPackage: string): string | undefined {
  if (SKIP_REASON !== undefined) return SKIP_REASON;
  if (spawnSync(binary, ['--version'], { stdio: 'ignore' }).status === 0) return undefined;
  if (REQUIRED)
    throw new Error(
      `${binary} is not installed, and LAUNCHER_AUTH_REQUIRE_SERVICES=1 requires it (apt install ${aptPackage}).`,
    );
  const reason = `${binary} is not installed (apt install ${aptPackage})`;
  console.warn(`Skipping: ${reason}.`);
  return reason;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

export interface RedisServer {
  readonly port: number;
  readonly url: string;
  readonly process: ChildProcess;
  /** Stops it (SIGKILL, whether or not it is stopped) and waits for the exit. */
  kill(): Promise<void>;
}

/**
 * Starts redis-server on `port` (a free one by default). With `dir`, the data is kept in `dir/dump.rdb` (written
 * when a test sends SAVE) and read back by a server started on the same directory. With `env`, the server runs with
 * that environment (for example a preloaded library that shifts its clock).
 */
export async function startRedis(
  options: { port?: number; dir?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<RedisServer> {
  const port = options.port ?? (await freePort());
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
  if (options.dir !== undefined) args.push('--dir', options.dir, '--dbfilename', 'dump.rdb');
  return launchRedis(REDIS_SERVER, args, port, options.env);
}

/**
 * Runs `binary args` (redis-server or redis-sentinel) and resolves once it answers on `port`; killed on failure, and
 * when this process ends (see children.ts): redis-server cannot notice on its own that the test that started it died.
 */
export async function launchRedis(
  binary: string,
  args: readonly string[],
  port: number,
  env = process.env,
): Promise<RedisServer> {
  const child = spawnOwned(binary, args, { stdio: 'ignore', env });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `redis://127.0.0.1:${port}`;
  const probe = createClient({ url, socket: { reconnectStrategy: false } });
  probe.on('error', () => undefined);
  // Until it answers or exits; the deadline (the polling helper's, stretched by the machine factor) is for a
  // server that never comes up.
  let ready = false;
  await until(
    async () => {
      ready =
        child.exitCode === null &&
        (await probe.connect().then(
          () => true,
          () => false,
        ));
      return ready || child.exitCode !== null;
    },
    10_000,
    50,
  );
  if (ready) probe.destroy();
  if (!ready) {
    killGroup(child);
    throw new Error(`${binary} did not start on port ${port}`);
  }
  return {
    port,
    url,
    process: child,
    async kill() {
      killGroup(child);
      await exited;
    },
  };
}

/** A connected client of `url` that retries quickly while the server is away; closed with `destroy()`. */
export async function connectedClient(url: string) {
  const client = createClient({ url, socket: { reconnectStrategy: () => 50, connectTimeout: 1000 } });
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

export type Client = Awaited<ReturnType<typeof connectedClient>>;

/** One redis-server and one connected client for a whole suite, started before it and killed after. */
export function sharedRedis(): { readonly server: RedisServer; readonly client: Client } {
  const shared = {} as { server: RedisServer; client: Client };
  beforeAll(async () => {
    shared.server = await startRedis();
    shared.client = await connectedClient(shared.server.url);
  });
  afterAll(async () => {
    shared.client?.destroy();
    await shared.server?.kill();
  });
  return shared;
}

// A Redis Sentinel deployment on free loopback ports for the tests: a primary, a replica and three sentinels with
// quick failover timeouts, all in a temporary folder removed at the end. Skips (or, when services are required,
// fails) like redis-server.ts when Debian's redis-sentinel is not installed.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, createSentinel } from 'redis';
import { until } from './poll.js';
import { startProxy, type Proxy } from './redis-proxy.js';
import { REDIS_SERVER, freePort, launchRedis, missingTool, type RedisServer } from './redis-server.js';

const REDIS_SENTINEL = process.env['REDIS_SENTINEL'] ?? 'redis-sentinel';
/** Why the suites are skipped, or `undefined` when they run. */
export const SKIP_REASON = missingTool(REDIS_SENTINEL, 'redis-sentinel');

/** The name the sentinels know the primary by. */
export const PRIMARY_NAME = 'launcher';
/** How long a silent primary takes to be judged down: short, so that a failover takes about a second or two. */
const DOWN_AFTER_MS = 400;

export interface Endpoint {
  readonly host: string;
  readonly port: number;
}

/** The endpoint on loopback at `port`. */
export const at = (port: number): Endpoint => ({ host: '127.0.0.1', port });

export interface SentinelDeployment {
  /** The data servers by port (the primary and the replica, whichever is which now). */
  readonly servers: ReadonlyMap<number, RedisServer>;
  readonly sentinels: readonly RedisServer[];
  /** What `createSentinel()` takes as `sentinelRootNodes`. */
  readonly rootNodes: readonly Endpoint[];
  /** The port of the server the sentinels name as primary now. */
  primaryPort(): Promise<number>;
  /**
   * Has Sentinel fail the primary over (`SENTINEL FAILOVER`: the old primary becomes a replica of the new one) and
   * resolves once the new primary accepts writes and every sentinel names it, with the milliseconds that took.
   */
  failover(): Promise<{ from: number; to: number; ms: number }>;
  /**
   * Freezes the primary (SIGSTOP) until Sentinel has promoted the replica, then lets it run again: it wakes as a
   * primary with clients still connected, until Sentinel turns it into a replica. Resolves with the milliseconds
   * from the freeze to the new primary accepting writes, and the role the old primary first reports on waking.
   */
  freezePrimary(): Promise<{ from: number; to: number; ms: number; wokeAs: string | undefined }>;
  /** Waits until the primary has a replica in sync again (after a failover). */
  replicated(): Promise<void>;
  /** A `createSentinel()` client of this deployment, connected; destroyed by `stop()` if still open. */
  client(): Promise<SentinelClient>;
  /** Kills every process and removes the folder. */
  stop(): Promise<void>;
}

export type SentinelClient = Awaited<ReturnType<typeof connectSentinel>>;

/**
 * A connected `createSentinel()` client of `rootNodes`. With `addressMap` (`host:port` → where to connect instead),
 * every node it is told of is reached through the mapped address: a client on one side of a split.
 */
export async function connectSentinel(rootNodes: readonly Endpoint[], addressMap?: Record<string, Endpoint>) {
  const client = createSentinel({
    name: PRIMARY_NAME,
    sentinelRootNodes: rootNodes.map((node) => ({ ...node })),
    ...(addressMap === undefined ? {} : { nodeAddressMap: addressMap }),
    // Two pooled connections: a WAIT on one leaves the other to the host's own commands.
    masterPoolSize: 2,
    nodeClientOptions: { socket: { connectTimeout: 500, reconnectStrategy: () => 50 } },
    sentinelClientOptions: { socket: { connectTimeout: 500, reconnectStrategy: () => 50 } },
  });
  client.on('error', () => undefined);
  await client.connect();
  return client;
}

/** One command to one node on a short-lived connection. */
export async function command(port: number, args: string[]): Promise<unknown> {
  const client = createClient({
    url: `redis://127.0.0.1:${port}`,
    socket: { reconnectStrategy: false, connectTimeout: 500 },
  });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await client.sendCommand(args);
  } finally {
    client.destroy();
  }
}

/**
 * The polling helper (poll.ts) for a set-up step, every 50 ms, a failed check counting as not yet; rejects naming
 * `what` once the (stretched) deadline passed.
 */
export async function waitFor(what: string, check: () => Promise<boolean>, ms = 15_000): Promise<void> {
  if (!(await until(() => check().catch(() => false), ms, 50))) throw new Error(`timed out waiting for ${what}`);
}

/** A Sentinel reply's entry as an object, whether it came as a RESP3 map or a RESP2 flat list. */
export function fieldsOf(entry: unknown): Record<string, string> {
  if (!Array.isArray(entry)) return entry as Record<string, string>;
  const fields: Record<string, string> = {};
  for (let i = 0; i + 1 < entry.length; i += 2) fields[String(entry[i])] = String(entry[i + 1]);
  return fields;
}

/** One `name:value` line of an INFO reply. */
export function field(info: unknown, name: string): string | undefined {
  return new RegExp(`^${name}:(.*?)\\s*$`, 'm').exec(String(info))?.[1];
}

/** A data server (primary or replica) in `dir`: no persistence, diskless replication that starts at once. */
export function startDataServer(dir: string, port: number, extra: readonly string[]): Promise<RedisServer> {
  return launchRedis(
    REDIS_SERVER,
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
      '--dbfilename',
      `dump-${port}.rdb`,
      '--repl-diskless-sync',
      'yes',
      '--repl-diskless-sync-delay',
      '0',
      ...extra,
    ],
    port,
  );
}

/**
 * A sentinel (quorum two, quick failover) watching the primary at 127.0.0.1:`primaryPort`, which it judges down
 * after `downAfterMs` without an answer; `failoverTimeoutMs` is its `failover-timeout`.
 */
export async function startSentinelProcess(
  dir: string,
  primaryPort: number,
  downAfterMs = DOWN_AFTER_MS,
  { failoverTimeoutMs = 2000 } = {},
): Promise<RedisServer> {
  const port = await freePort();
  const config = join(dir, `sentinel-${port}.conf`);
  // Sentinel rewrites its own configuration file, so each gets one of its own.
  await writeFile(
    config,
    [
      `port ${port}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      `sentinel monitor ${PRIMARY_NAME} 127.0.0.1 ${primaryPort} 2`,
      `sentinel down-after-milliseconds ${PRIMARY_NAME} ${downAfterMs}`,
      `sentinel failover-timeout ${PRIMARY_NAME} ${failoverTimeoutMs}`,
      `sentinel parallel-syncs ${PRIMARY_NAME} 1`,
      '',
    ].join('\n'),
  );
  return launchRedis(REDIS_SENTINEL, [config], port);
}

/** Waits until the primary on `port` lists its first replica as online (in sync). */
export function replicaOnline(port: number): Promise<void> {
  return waitFor(
    'the replica to be in sync',
    async () => field(await command(port, ['INFO', 'replication']), 'slave0')?.includes('state=online') === true,
  );
}

/**
 * What a deployment behind proxies is made of, in a temporary folder named from `prefix`: data servers and proxies
 * started through it, and sentinels and clients the caller adds to `started` and `clients`, all of which `stop()`
 * ends (clients first) before it removes the folder.
 */
export async function proxiedParts(prefix: string) {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  const started: RedisServer[] = [];
  const proxies: Proxy[] = [];
  const clients: SentinelClient[] = [];
  return {
    dir,
    started,
    clients,
    async stop(): Promise<void> {
      for (const client of clients) if (client.isOpen) await client.destroy().catch(() => undefined);
      await Promise.all(proxies.map((proxy) => proxy.close()));
      await Promise.all(started.map((server) => server.kill()));
      await rm(dir, { recursive: true, force: true });
    },
    async proxy(port: number): Promise<Proxy> {
      const created = await startProxy(port);
      proxies.push(created);
      return created;
    },
    async data(port: number, extra: string[]): Promise<RedisServer> {
      const server = await startDataServer(dir, port, extra);
      started.push(server);
      return server;
    },
  };
}

/** Starts the primary, its replica and three sentinels (quorum two), and waits until the sentinels see both. */
export async function startSentinel(): Promise<SentinelDeployment> {
  const dir = await mkdtemp(join(tmpdir(), 'launcher-auth-sentinel-'));
  const started: RedisServer[] = [];
  const clients: SentinelClient[] = [];
  const servers = new Map<number, RedisServer>();
  const stop = async (): Promise<void> => {
    for (const client of clients) if (client.isOpen) await client.destroy().catch(() => undefined);
    await Promise.all(started.map((server) => server.kill()));
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const data = async (port: number, extra: string[]): Promise<RedisServer> => {
      const server = await startDataServer(dir, port, extra);
      started.push(server);
      servers.set(port, server);
      return server;
    };
    const primary = await data(await freePort(), []);
    await data(await freePort(), ['--replicaof', '127.0.0.1', String(primary.port)]);
    // Before the sentinels start: their first INFO of the primary then lists the replica (they read it again only an
    // INFO period later).
    await replicaOnline(primary.port);
    const sentinels: RedisServer[] = [];
    for (let index = 0; index < 3; index += 1) {
      const sentinel = await startSentinelProcess(dir, primary.port);
      started.push(sentinel);
      sentinels.push(sentinel);
    }
    // A sentinel reads a replica's INFO every 10 s, and demotes a deposed primary that wakes still a primary only
    // after it has reported so for four publish periods (8 s): up to 20 s of waiting on Sentinel's own clock, which
    // no budget stretched by the machine factor was made for. Reading every second and publishing every half second
    // keeps the same steps (the wake as a primary, then the demotion) within a few seconds.
    for (const sentinel of sentinels)
      await command(sentinel.port, ['SENTINEL', 'DEBUG', 'INFO-PERIOD', '1000', 'PUBLISH-PERIOD', '500']);
    const rootNodes = sentinels.map((sentinel) => ({ host: '127.0.0.1', port: sentinel.port }));

    const primaryPort = async (sentinel = sentinels[0] as RedisServer): Promise<number> => {
      const reply = (await command(sentinel.port, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', PRIMARY_NAME])) as string[];
      return Number(reply[1]);
    };
    /** The replica is known to every sentinel, in sync, and the sentinels know each other. */
    const replicated = () =>
      waitFor('the sentinels to see an in-sync replica', async () => {
        const port = await primaryPort();
        const info = await command(port, ['INFO', 'replication']);
        if (field(info, 'role') !== 'master' || field(info, 'slave0')?.includes('state=online') !== true) return false;
        for (const sentinel of sentinels) {
          if ((await primaryPort(sentinel)) !== port) return false;
          const replicas = (await command(sentinel.port, ['SENTINEL', 'REPLICAS', PRIMARY_NAME])) as unknown[];
          // A sentinel refreshes a replica's state once an INFO period (a second here): a stale "link down" from
          // before a failover is normal, and corrected before it picks a replica.
          const healthy = replicas.map(fieldsOf).filter((fields) => fields.flags === 'slave');
          const peers = (await command(sentinel.port, ['SENTINEL', 'SENTINELS', PRIMARY_NAME])) as unknown[];
          if (healthy.length === 0 || peers.length < 2) return false;
        }
        return true;
      });
    await replicated();

    /** Resolves once `from` is no longer named, the new primary takes writes and every sentinel agrees. */
    const promoted = async (from: number): Promise<number> => {
      let to = 0;
      await waitFor('the replica to be promoted', async () => {
        to = await primaryPort();
        if (to === from) return false;
        const info = await command(to, ['INFO', 'replication']);
        if (field(info, 'role') !== 'master') return false;
        for (const sentinel of sentinels) if ((await primaryPort(sentinel)) !== to) return false;
        return true;
      });
      return to;
    };

    return {
      servers,
      sentinels,
      rootNodes,
      primaryPort: () => primaryPort(),
      async failover() {
        const from = await primaryPort();
        const began = performance.now();
        await command((sentinels[0] as RedisServer).port, ['SENTINEL', 'FAILOVER', PRIMARY_NAME]);
        const to = await promoted(from);
        return { from, to, ms: Math.round(performance.now() - began) };
      },
      async freezePrimary() {
        const from = await primaryPort();
        const frozen = servers.get(from);
        if (frozen === undefined) throw new Error('no server on the primary port');
        const began = performance.now();
        frozen.process.kill('SIGSTOP');
        let to: number;
        try {
          to = await promoted(from);
        } finally {
          frozen.process.kill('SIGCONT');
        }
        const ms = Math.round(performance.now() - began);
        return { from, to, ms, wokeAs: field(await command(from, ['INFO', 'replication']), 'role') };
      },
      replicated,
      async client() {
        const client = await connectSentinel(rootNodes);
        clients.push(client);
        return client;
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

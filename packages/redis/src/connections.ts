// The connection layer: one RedisConnection (client.ts) over a plain node-redis client, a Sentinel client and a
// Cluster client, so that the store's protocol never asks which deployment it talks to.
import {
  endpointOf,
  type Listener,
  type RedisClientLike,
  type RedisClusterLike,
  type RedisClusterNodeClientLike,
  type RedisConnection,
  type RedisSentinelLike,
  type RunOptions,
  type RunResult,
} from './client.js';

/** What `CLIENT INFO` says of a connection: `id=… addr=… laddr=…`, the same only for the same connection. */
function connectionName(reply: unknown): string | undefined {
  if (typeof reply !== 'string') return undefined;
  const fields = new Map(
    reply.split(' ').map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
  );
  const id = fields.get('id');
  const addr = fields.get('addr');
  if (id === undefined || addr === undefined) return undefined;
  return `${id} ${addr} ${fields.get('laddr') ?? ''}`;
}

type Send = (args: string[]) => Promise<unknown>;

function evalArgs(script: string, keys: readonly string[], args: readonly string[]): string[] {
  return ['EVAL', script, String(keys.length), ...keys, ...args];
}

/**
 * How many replicas `'majority'` asks `WAIT` for, from the primary's `INFO replication`: more than half of the
 * replicas it lists (`connected_slaves`, whatever their sync state), 0 when it lists none; `undefined` when the
 * answer is not a primary's or cannot be read.
 */
function majorityOf(info: unknown): number | undefined {
  const text = typeof info === 'string' ? info : Buffer.isBuffer(info) ? info.toString('utf8') : undefined;
  if (text === undefined || !/^role:master\s*$/m.test(text)) return undefined;
  const listed = /^connected_slaves:(\d+)\s*$/m.exec(text)?.[1];
  if (listed === undefined) return undefined;
  const replicas = Number(listed);
  return replicas === 0 ? 0 : Math.floor(replicas / 2) + 1;
}

/**
 * The script and the commands that must share its connection, issued in one tick so that node-redis writes them in
 * one batch on one socket; `CLIENT INFO` before and after proves it did (the commands of a socket run in order, so
 * equal names around them mean none went elsewhere). For `'majority'`, `WAIT` goes out once `INFO replication`
 * (sent with the script) has answered: a second round trip on the same connection, still between the two
 * `CLIENT INFO`s.
 */
async function runPinned(send: Send, script: string[], options: RunOptions, asking = false): Promise<RunResult> {
  const { wait } = options;
  const before = send(['CLIENT', 'INFO']);
  if (asking) void send(['ASKING']).catch(() => undefined);
  const reply = send(script);
  let required: number | undefined;
  let acked: Promise<unknown> | undefined;
  if (wait?.replicas === 'majority') {
    const counted = send(['INFO', 'replication']).then(majorityOf, () => undefined);
    // Settled handlers now: the script's error may arrive while the count is awaited.
    const started = Promise.allSettled([before, reply]);
    required = await counted;
    const [, saved] = await started;
    if (saved.status === 'fulfilled' && required !== undefined && required > 0) {
      acked = send(['WAIT', String(required), String(wait.timeout)]);
    }
  } else if (wait !== undefined) {
    required = wait.replicas;
    acked = send(['WAIT', String(wait.replicas), String(wait.timeout)]);
  }
  const after = send(['CLIENT', 'INFO']);
  const [first, result, count, last] = await Promise.allSettled([before, reply, acked, after]);
  if (result.status === 'rejected') throw result.reason;
  const same =
    first.status === 'fulfilled' &&
    last.status === 'fulfilled' &&
    connectionName(first.value) !== undefined &&
    connectionName(first.value) === connectionName(last.value);
  if (!same || required === undefined) return { reply: result.value };
  // No replica listed: nothing to wait for, and nothing a failover could promote.
  const replicas =
    acked === undefined ? 0 : count.status === 'fulfilled' && typeof count.value === 'number' ? count.value : undefined;
  return { reply: result.value, required, ...(replicas === undefined ? {} : { replicas }) };
}

function needsPinning(options: RunOptions | undefined): options is RunOptions {
  return options?.wait !== undefined;
}

function checkedOptions(options: RunOptions | undefined): void {
  const wait = options?.wait;
  if (wait === undefined) return;
  const replicas = wait.replicas === 'majority' ? 0 : wait.replicas;
  if (!Number.isInteger(replicas) || replicas < 0 || !Number.isInteger(wait.timeout) || wait.timeout < 1) {
    throw new TypeError("WAIT needs 'majority' or a whole number of replicas, and a timeout of at least 1 ms.");
  }
}

function plainConnection(client: RedisClientLike): RedisConnection {
  const send: Send = (args) => client.sendCommand(args);
  const endpoint = endpointOf(client);
  return {
    endpoint,
    get isOpen() {
      return client.isOpen;
    },
    get isReady() {
      return client.isReady;
    },
    async run(script, keys, args, options) {
      checkedOptions(options);
      if (needsPinning(options)) return runPinned(send, evalArgs(script, keys, args), options);
      return { reply: await client.eval(script, { keys: [...keys], arguments: [...args] }) };
    },
    async subscribe(channels, onMessage) {
      const subscriber = client.duplicate();
      // Reconnection is the client's; a message missed meanwhile is the caller's re-check to catch.
      subscriber.on('error', () => undefined);
      try {
        await subscriber.connect();
        await subscriber.subscribe([...channels], (message, channel) => onMessage(message, channel));
      } catch (error) {
        subscriber.destroy();
        throw error;
      }
      return { close: () => void subscriber.destroy() };
    },
  };
}

function sentinelConnection(sentinel: RedisSentinelLike): RedisConnection {
  return {
    deployment: 'sentinel',
    get endpoint() {
      const primary = sentinel.getMasterNode();
      return primary === undefined
        ? 'the primary named by Redis Sentinel'
        : `${primary.host}:${primary.port} (primary named by Redis Sentinel)`;
    },
    get isOpen() {
      return sentinel.isOpen;
    },
    get isReady() {
      return sentinel.isReady;
    },
    async run(script, keys, args, options) {
      checkedOptions(options);
      const command = evalArgs(script, keys, args);
      // One leased connection of the primary's pool for the script and its WAIT; otherwise the shared one.
      if (needsPinning(options))
        return sentinel.use((lease) => runPinned((a) => lease.sendCommand(false, a), command, options));
      return { reply: await sentinel.sendCommand(false, command) };
    },
    async subscribe(channels, onMessage) {
      const listener: Listener = (message, channel) => onMessage(String(message), String(channel));
      await sentinel.subscribe([...channels], listener);
      return { close: () => void sentinel.unsubscribe([...channels], listener).catch(() => undefined) };
    },
  };
}

/**
 * How many times a script refused by Redis Cluster (`MOVED`, `ASK`, `TRYAGAIN`) is sent again, as node-redis does.
 * The pauses after `TRYAGAIN` add up to 1.36 s, under the store's default `commandTimeout`: a script is not sent
 * again long after its caller gave up on it.
 */
const REDIRECTIONS = 16;

function clusterConnection(cluster: RedisClusterLike): RedisConnection {
  /** Makes node-redis learn the slot's new owner: its own routing follows `MOVED` and refreshes the slot table. */
  const rediscover = (key: string) => cluster.sendCommand(key, false, ['TYPE', key]).catch(() => undefined);

  async function onOwner(key: string, send: (node: RedisClusterNodeClientLike, asking: boolean) => Promise<RunResult>) {
    let node = await cluster.getNodeClientForKey(key);
    let asking = false;
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await send(node, asking);
      } catch (error) {
        const message = error instanceof Error ? error.message : '';
        if (attempt >= REDIRECTIONS) throw error;
        asking = false;
        if (message.startsWith('MOVED')) {
          await rediscover(key);
          node = await cluster.getNodeClientForKey(key);
        } else if (message.startsWith('ASK')) {
          // The slot is being moved and the key is already on its new node: ask that node, once.
          const address = message.slice(message.lastIndexOf(' ') + 1);
          const target = cluster.masters.find((m) => `${m.host}:${m.port}` === address);
          if (target === undefined) {
            await rediscover(key);
            node = await cluster.getNodeClientForKey(key);
          } else {
            node = await cluster.nodeClient(target);
            asking = true;
          }
        } else if (message.startsWith('TRYAGAIN')) {
          // Some keys of the slot are moved and some not yet: the move ends in a moment.
          await new Promise((resolve) => setTimeout(resolve, 10 * (attempt + 1)));
          node = await cluster.getNodeClientForKey(key);
        } else {
          throw error;
        }
      }
    }
  }

  return {
    deployment: 'cluster',
    get endpoint() {
      const nodes = cluster.masters.map((node) => `${node.host}:${node.port}`);
      return nodes.length === 0
        ? 'the Redis Cluster'
        : `the Redis Cluster at ${nodes.slice(0, 3).join(', ')}${nodes.length > 3 ? ', …' : ''}`;
    },
    get isOpen() {
      return cluster.isOpen;
    },
    get isReady() {
      return cluster.isReady;
    },
    run(script, keys, args, options = {}) {
      checkedOptions(options);
      const first = keys[0];
      if (first === undefined) throw new TypeError('A script on Redis Cluster needs a key to route by.');
      const command = evalArgs(script, keys, args);
      return onOwner(first, async (node, asking) => {
        if (needsPinning(options) || asking) return runPinned((a) => node.sendCommand(a), command, options, asking);
        return { reply: await node.sendCommand(command) };
      });
    },
    async subscribe(channels, onMessage) {
      const listener: Listener = (message, channel) => onMessage(String(message), String(channel));
      await cluster.subscribe([...channels], listener);
      return { close: () => void cluster.unsubscribe([...channels], listener).catch(() => undefined) };
    },
  };
}

/** True for a node-redis Sentinel client (it leases connections of the primary it follows). */
function isSentinel(client: object): client is RedisSentinelLike {
  const c = client as Partial<Record<keyof RedisSentinelLike, unknown>>;
  return typeof c.use === 'function' && typeof c.getMasterNode === 'function' && typeof c.sendCommand === 'function';
}

/** True for a node-redis Cluster client (it finds the node that owns a key). */
function isCluster(client: object): client is RedisClusterLike {
  const c = client as Partial<Record<keyof RedisClusterLike, unknown>>;
  return (
    typeof c.getNodeClientForKey === 'function' &&
    typeof c.nodeClient === 'function' &&
    typeof c.sendCommand === 'function'
  );
}

function isPlain(client: object): client is RedisClientLike {
  const c = client as Partial<Record<keyof RedisClientLike, unknown>>;
  return typeof c.eval === 'function' && typeof c.sendCommand === 'function' && typeof c.duplicate === 'function';
}

/**
 * The {@link RedisConnection} over a node-redis client of any deployment, or `undefined` when `client` is none of
 * them (the caller names the option in its `TypeError`).
 */
export function connectionOf(client: unknown): RedisConnection | undefined {
  if (typeof client !== 'object' || client === null) return undefined;
  if (isSentinel(client)) return sentinelConnection(client);
  if (isCluster(client)) return clusterConnection(client);
  if (isPlain(client)) return plainConnection(client);
  return undefined;
}

/** The database number a plain client selects (its URL's path, or its `database` option); 0 by default. */
function databaseOf(client: object): number {
  const options = (client as { options?: { url?: unknown; database?: unknown } }).options;
  if (typeof options?.database === 'number') return options.database;
  if (typeof options?.url === 'string') {
    try {
      const number = Number(new URL(options.url).pathname.slice(1) || '0');
      return Number.isSafeInteger(number) ? number : 0;
    } catch {
      return 0;
    }
  }
  return 0;
}

/**
 * A name of the deployment a client talks to that stays the same across restarts and failovers: a plain client's
 * configured `host:port` (or socket path) and database, a Cluster client's configured root nodes, a Sentinel
 * client's master name where node-redis exposes it. It names the generation file (see generation-file.ts).
 */
export function deploymentOf(client: object): string {
  if (isSentinel(client)) {
    const name = (client as { options?: { name?: unknown } }).options?.name;
    return typeof name === 'string' ? `sentinel ${name}` : 'sentinel';
  }
  if (isCluster(client)) {
    const roots = (client as { _options?: { rootNodes?: unknown } })._options?.rootNodes;
    const nodes = Array.isArray(roots) ? roots.map((node: object) => endpointOf({ options: node })) : [];
    return `cluster ${nodes.sort().join(',')}`;
  }
  return `${endpointOf(client)}/${databaseOf(client)}`;
}

// The connection layer: one interface over a plain node-redis client, a Sentinel client and a Cluster client, so
// that the store's protocol never asks which deployment it talks to. Also how a server that does not answer is told.
import { LauncherAuthError } from '../../authority/errors.js';

/**
 * The part of a connected node-redis client (`createClient()` of the `redis` package, 5.x or 6.x) that the store
 * uses. Structural, so that a client with modules, scripts or RESP3 fits as well.
 */
export interface RedisClientLike {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  /** Sends one command as given; the store uses it for `WAIT`, `INFO` and `CLIENT INFO`. */
  sendCommand(args: string[]): Promise<unknown>;
  /** The store's own pub/sub connection is made with this; the host's client is never closed by the store. */
  duplicate(): RedisSubscriberLike;
}

/** The duplicate connection that follows rotations by pub/sub. */
export interface RedisSubscriberLike {
  on(event: 'error', listener: (error: Error) => void): unknown;
  connect(): Promise<unknown>;
  subscribe(channels: string[], listener: (message: string, channel: string) => unknown): Promise<unknown>;
  destroy(): unknown;
}

/** A pub/sub listener as node-redis types it for `unsubscribe` (a message may arrive as a Buffer in buffer mode). */
type Listener = (message: string | Buffer, channel: string | Buffer) => unknown;

/** A connection of a Sentinel client leased for a sequence of commands (`use()`). */
export interface RedisSentinelLeaseLike {
  sendCommand(isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
}

/**
 * The part of a connected node-redis Sentinel client (`createSentinel()` of the `redis` package, 5.x or 6.x) that
 * the store uses. Commands go to the primary Sentinel names; a command that needs the connection that carried the
 * script (`WAIT`) runs inside `use()`, which holds one of the primary's pooled connections (`masterPoolSize`) for
 * that long.
 */
export interface RedisSentinelLike {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  use<T>(fn: (client: RedisSentinelLeaseLike) => Promise<T>): Promise<T>;
  sendCommand(isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  getMasterNode(): { host: string; port: number } | undefined;
  subscribe(channels: string[], listener: Listener): Promise<unknown>;
  unsubscribe(channels: string[], listener: Listener): Promise<unknown>;
}

/** A node of a Redis Cluster as node-redis lists it. */
export interface RedisClusterNodeLike {
  readonly host: string;
  readonly port: number;
}

/** The client of one cluster node (node-redis keeps one per node). */
export interface RedisClusterNodeClientLike {
  sendCommand(args: string[]): Promise<unknown>;
}

/**
 * The part of a connected node-redis Cluster client (`createCluster()` of the `redis` package, 6.x) that the store
 * uses: the client of the primary that owns a key's slot, and the cluster's own pub/sub connection.
 */
export interface RedisClusterLike {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  readonly masters: readonly RedisClusterNodeLike[];
  getNodeClientForKey(key: string): Promise<RedisClusterNodeClientLike>;
  nodeClient(node: RedisClusterNodeLike): RedisClusterNodeClientLike | Promise<RedisClusterNodeClientLike>;
  sendCommand(firstKey: string | undefined, isReadonly: boolean | undefined, args: string[]): Promise<unknown>;
  subscribe(channels: string[], listener: Listener): Promise<unknown>;
  unsubscribe(channels: string[], listener: Listener): Promise<unknown>;
}

/** Any client the store accepts. */
export type RedisAnyClient = RedisClientLike | RedisSentinelLike | RedisClusterLike;

/** Options of {@link RedisConnection.run}. */
export interface RunOptions {
  /**
   * After the script, `WAIT count timeout` on the connection that carried it: how many replicas have received every
   * write of that connection so far. Both are whole numbers; `timeout` is in milliseconds (0 would wait forever, so
   * it must be at least 1).
   */
  readonly wait?: { readonly replicas: number; readonly timeout: number };
  /** Also read the `run_id` of the server that ran the script, on the same connection. */
  readonly identify?: boolean;
}

/** What {@link RedisConnection.run} learned. */
export interface RunResult {
  /** The script's reply, as node-redis decodes it (a Lua string arrives as a string). */
  readonly reply: unknown;
  /**
   * `WAIT`'s count of replicas that acknowledged the script's write. `undefined` when no wait was asked, or when it
   * cannot be known: `WAIT` failed, or the script and `WAIT` did not provably share one connection (a reconnection
   * or failover in between, after which `WAIT` on a fresh connection would count nothing of the script's write).
   * Treat `undefined` as "not confirmed", never as "confirmed".
   */
  readonly replicas?: number;
  /**
   * The `run_id` of the server that ran the script, when `identify` was asked and it is provably that server
   * (same rule as `replicas`).
   */
  readonly runId?: string;
}

/** A pub/sub subscription; `close()` ends it (best effort, never throws). */
export interface RedisSubscription {
  close(): void;
}

/**
 * The store's view of Redis, whatever the deployment. Every method may reject with the client's own error (a
 * refused command, a closed socket); the caller bounds the time with {@link answered}.
 *
 * Keys: every key a call names must hash to one slot (see `keyNames` in scripts.ts), since a script runs on the
 * one primary that owns its first key. A script may run more than once for one call: node-redis's Sentinel client
 * resends a command after a failover, and this layer resends a script that Redis Cluster refused with `MOVED`,
 * `ASK` or `TRYAGAIN` (where it did not run). Scripts that write must therefore recognise their own earlier write.
 */
export interface RedisConnection {
  /** Which deployment: a single server (or a proxy), Sentinel, or Cluster. */
  readonly kind: 'client' | 'sentinel' | 'cluster';
  /** Where Redis is, for messages: `host:port`s or a socket path, never a user name or password. */
  readonly endpoint: string;
  /** Whether the host's client is open (connected or reconnecting); when false, nothing is sent. */
  readonly isOpen: boolean;
  /** Whether it is connected now (not reconnecting): a command sent now is answered without waiting for a reconnect. */
  readonly isReady: boolean;
  /** Runs a Lua script (`EVAL`) on the primary that owns `keys[0]`. */
  run(script: string, keys: readonly string[], args: readonly string[], options?: RunOptions): Promise<RunResult>;
  /** The `run_id` of the primary that owns `key` now: it changes when that server restarts or another takes over. */
  serverId(key: string): Promise<string>;
  /**
   * Subscribes `onMessage` to `channels` on a connection that carries nothing else of the store's: a duplicate of a
   * plain client, the Sentinel client's pub/sub connection (it follows the primary), the Cluster client's pub/sub
   * connection (ordinary pub/sub: a `PUBLISH` reaches every node, so moving a slot or failing over its primary
   * leaves the subscription in place). Messages published while that connection is down are lost: a store must
   * re-check on its own schedule as well.
   */
  subscribe(channels: readonly string[], onMessage: (message: string, channel: string) => void): Promise<RedisSubscription>;
}

/** What `CLIENT INFO` says of a connection: `id=… addr=… laddr=…`, the same only for the same connection. */
function connectionName(reply: unknown): string | undefined {
  if (typeof reply !== 'string') return undefined;
  const fields = new Map(reply.split(' ').map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
  const id = fields.get('id');
  const addr = fields.get('addr');
  if (id === undefined || addr === undefined) return undefined;
  return `${id} ${addr} ${fields.get('laddr') ?? ''}`;
}

/** `run_id` out of an `INFO server` reply (RESP2 bulk or RESP3 verbatim string). */
export function runIdOf(reply: unknown): string | undefined {
  return /^run_id:([0-9a-f]+)\s*$/m.exec(String(reply))?.[1];
}

type Send = (args: string[]) => Promise<unknown>;

function evalArgs(script: string, keys: readonly string[], args: readonly string[]): string[] {
  return ['EVAL', script, String(keys.length), ...keys, ...args];
}

/**
 * The script and the commands that must share its connection, issued in one tick so that node-redis writes them in
 * one batch on one socket; `CLIENT INFO` before and after proves it did (the commands of a socket run in order, so
 * equal names around them mean none went elsewhere).
 */
async function runPinned(send: Send, script: string[], options: RunOptions, asking = false): Promise<RunResult> {
  const { wait, identify = false } = options;
  const before = send(['CLIENT', 'INFO']);
  if (asking) void send(['ASKING']).catch(() => undefined);
  const reply = send(script);
  const acked = wait === undefined ? undefined : send(['WAIT', String(wait.replicas), String(wait.timeout)]);
  const info = identify ? send(['INFO', 'server']) : undefined;
  const after = send(['CLIENT', 'INFO']);
  const settled = await Promise.allSettled([before, reply, acked, info, after]);
  const [first, result, count, server, last] = settled;
  if (result.status === 'rejected') throw result.reason;
  const same =
    first.status === 'fulfilled' &&
    last.status === 'fulfilled' &&
    connectionName(first.value) !== undefined &&
    connectionName(first.value) === connectionName(last.value);
  const replicas = same && count.status === 'fulfilled' && typeof count.value === 'number' ? count.value : undefined;
  const runId = same && server.status === 'fulfilled' ? runIdOf(server.value) : undefined;
  return {
    reply: result.value,
    ...(replicas === undefined ? {} : { replicas }),
    ...(runId === undefined ? {} : { runId }),
  };
}

function needsPinning(options: RunOptions | undefined): options is RunOptions {
  return options !== undefined && (options.wait !== undefined || options.identify === true);
}

function checkedOptions(options: RunOptions | undefined): void {
  const wait = options?.wait;
  if (wait === undefined) return;
  if (!Number.isInteger(wait.replicas) || wait.replicas < 0 || !Number.isInteger(wait.timeout) || wait.timeout < 1) {
    throw new TypeError('WAIT needs a whole number of replicas and a timeout of at least 1 ms.');
  }
}

async function serverIdFrom(reply: unknown, endpoint: string): Promise<string> {
  const id = runIdOf(reply);
  if (id === undefined) throw new Error(`INFO server at ${endpoint} did not name a run_id`);
  return id;
}

function plainConnection(client: RedisClientLike): RedisConnection {
  const send: Send = (args) => client.sendCommand(args);
  const endpoint = endpointOf(client);
  return {
    kind: 'client',
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
    async serverId() {
      return serverIdFrom(await send(['INFO', 'server']), endpoint);
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
    kind: 'sentinel',
    get endpoint() {
      const primary = sentinel.getMasterNode();
      return primary === undefined ? 'the primary named by Redis Sentinel' : `${primary.host}:${primary.port} (primary named by Redis Sentinel)`;
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
      if (needsPinning(options)) return sentinel.use((lease) => runPinned((a) => lease.sendCommand(false, a), command, options));
      return { reply: await sentinel.sendCommand(false, command) };
    },
    async serverId() {
      return serverIdFrom(await sentinel.sendCommand(false, ['INFO', 'server']), this.endpoint);
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
    kind: 'cluster',
    get endpoint() {
      const nodes = cluster.masters.map((node) => `${node.host}:${node.port}`);
      return nodes.length === 0 ? 'the Redis Cluster' : `the Redis Cluster at ${nodes.slice(0, 3).join(', ')}${nodes.length > 3 ? ', …' : ''}`;
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
    async serverId(key) {
      const result = await onOwner(key, async (node) => {
        // A read of the key first, so that a node that no longer owns it answers MOVED rather than its own run_id.
        const [, info] = await Promise.all([node.sendCommand(['TYPE', key]), node.sendCommand(['INFO', 'server'])]);
        return { reply: info };
      });
      return serverIdFrom(result.reply, this.endpoint);
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
  return typeof c.getNodeClientForKey === 'function' && typeof c.nodeClient === 'function' && typeof c.sendCommand === 'function';
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

interface ClientOptions {
  url?: unknown;
  socket?: { host?: unknown; port?: unknown; path?: unknown };
}

/** `host:port` (or the socket path) of the client's server: never its user name or password. */
export function endpointOf(client: object): string {
  const options = (client as { options?: ClientOptions }).options;
  if (typeof options?.url === 'string') {
    try {
      const url = new URL(options.url);
      return `${url.hostname}:${url.port === '' ? '6379' : url.port}`;
    } catch {
      return 'the configured Redis server';
    }
  }
  const socket = options?.socket;
  if (typeof socket?.path === 'string') return socket.path;
  const host = typeof socket?.host === 'string' ? socket.host : 'localhost';
  const port = typeof socket?.port === 'number' ? socket.port : 6379;
  return `${host}:${port}`;
}

/** An `ERR_STORE_UNAVAILABLE` error for `what` (a short phrase such as "read the secret"). */
export function unavailable(endpoint: string, what: string, cause?: unknown): LauncherAuthError {
  const reason = cause === undefined ? 'no answer in time' : cause instanceof Error ? cause.name : 'an unexpected error';
  return new LauncherAuthError('ERR_STORE_UNAVAILABLE', `Cannot ${what} in Redis at ${endpoint}: ${reason}.`, {
    ...(cause === undefined ? {} : { cause }),
  });
}

/** `promise`, or `ERR_STORE_UNAVAILABLE` after `ms` milliseconds or on any client error. */
export function answered<T>(promise: Promise<T>, ms: number, endpoint: string, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(unavailable(endpoint, what)), ms);
    timer.unref();
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof LauncherAuthError ? error : unavailable(endpoint, what, error));
      },
    );
  });
}

// The connection layer's shapes: the node-redis clients the store accepts, and the one interface over them that the
// store's protocol talks to (connections.ts implements it per deployment). Also how a server that does not answer is
// told.
import { LauncherAuthError } from 'launcher-auth';
import type { Runtime } from 'launcher-auth/store-kit';

/**
 * The part of a connected node-redis client (`createClient()` of the `redis` package, 5.x or 6.x) that the store
 * uses. Structural, so that a client with modules, scripts or RESP3 fits as well.
 */
export interface RedisClientLike {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  /** Sends one command as given; the store uses it for `EVAL`, `WAIT` and `CLIENT INFO`. */
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
export type Listener = (message: string | Buffer, channel: string | Buffer) => unknown;

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
   * write of that connection so far. `timeout` is a whole number of milliseconds (0 would wait forever, so it must
   * be at least 1). `replicas` is a whole number, or `'majority'`: the primary's `INFO replication` on the same
   * connection, after the script, says how many replicas it has (`n`), and `WAIT` asks for `floor(n / 2) + 1` of
   * them (no `WAIT` when `n` is 0).
   */
  readonly wait?: { readonly replicas: number | 'majority'; readonly timeout: number };
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
   * How many replicas `WAIT` had to confirm: the number asked, or for `'majority'` more than half of those the
   * primary reported. `undefined` when no wait was asked, or when the primary's count cannot be known (the same
   * cases as `replicas`): "not confirmed".
   */
  readonly required?: number;
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
  /** Where Redis is, for messages: `host:port`s or a socket path, never a user name or password. */
  readonly endpoint: string;
  /** A deployment that fails over on its own (its saves default to `replicas: 'majority'`); absent for a plain client. */
  readonly deployment?: 'sentinel' | 'cluster';
  /** Whether the host's client is open (connected or reconnecting); when false, nothing is sent. */
  readonly isOpen: boolean;
  /** Whether it is connected now (not reconnecting): a command sent now is answered without waiting for a reconnect. */
  readonly isReady: boolean;
  /** Runs a Lua script (`EVAL`) on the primary that owns `keys[0]`. */
  run(script: string, keys: readonly string[], args: readonly string[], options?: RunOptions): Promise<RunResult>;
  /**
   * Subscribes `onMessage` to `channels` on a connection that carries nothing else of the store's: a duplicate of a
   * plain client, the Sentinel client's pub/sub connection (it follows the primary), the Cluster client's pub/sub
   * connection (ordinary pub/sub: a `PUBLISH` reaches every node, so moving a slot or failing over its primary
   * leaves the subscription in place). Messages published while that connection is down are lost: a store must
   * re-check on its own schedule as well.
   */
  subscribe(
    channels: readonly string[],
    onMessage: (message: string, channel: string) => void,
  ): Promise<RedisSubscription>;
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
  const reason =
    cause === undefined ? 'no answer in time' : cause instanceof Error ? cause.name : 'an unexpected error';
  return new LauncherAuthError('ERR_STORE_UNAVAILABLE', `Cannot ${what} in Redis at ${endpoint}: ${reason}.`, {
    ...(cause === undefined ? {} : { cause }),
  });
}

/** `promise`, or `ERR_STORE_UNAVAILABLE` after `ms` milliseconds (on `runtime`'s timers) or on any client error. */
export function answered<T>(
  promise: Promise<T>,
  ms: number,
  endpoint: string,
  what: string,
  runtime: Runtime,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const cancel = runtime.timer(ms, () => reject(unavailable(endpoint, what)));
    promise.then(
      (value) => {
        cancel();
        resolve(value);
      },
      (error: unknown) => {
        cancel();
        reject(error instanceof LauncherAuthError ? error : unavailable(endpoint, what, error));
      },
    );
  });
}

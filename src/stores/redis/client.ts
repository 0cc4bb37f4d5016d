// What the store needs of a node-redis client, and how it reports a server that does not answer.
import { LauncherAuthError } from '../../core/errors.js';

/**
 * The part of a connected node-redis client (`createClient()` of the `redis` package, 5.x or 6.x) that the store
 * uses. Structural, so that a client with modules, scripts or RESP3 fits as well.
 */
export interface RedisClientLike {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  /** The store's own pub/sub connection is made with this; the host's client is never closed by the store. */
  duplicate(): RedisSubscriberLike;
}

/** The duplicate connection that follows rotations by pub/sub. */
export interface RedisSubscriberLike {
  on(event: 'error', listener: (error: Error) => void): unknown;
  connect(): Promise<unknown>;
  subscribe(channel: string, listener: (message: string, channel: string) => unknown): Promise<unknown>;
  destroy(): unknown;
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

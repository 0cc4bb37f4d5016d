// The secret store that `token` and `rotate` work on: a file (--store), the OS keychain (--keyring) or Redis
// (--redis, with the optional peer `redis` loaded only then), and how messages name it without its credentials.
import { statSync } from 'node:fs';
import type { SecretStore } from '../authority/types.js';
import { FileSecretStore } from '../stores/file.js';
import { KeyringSecretStore } from '../stores/keyring/index.js';
import { StoreSetupError, UsageError, shellQuoted } from './output.js';

export interface StoreChoice {
  /** `--store <file>` */
  store?: string | undefined;
  /** `--keyring <service>/<account>` */
  keyring?: string | undefined;
  /** `--redis <url>` */
  redis?: string | undefined;
  /** `--redis-key <key>` */
  redisKey?: string | undefined;
}

export interface OpenedStore {
  store: SecretStore;
  /** Where the secret is, in words: "file at …", "in the keychain for …", "in Redis at … under the key …". */
  where: string;
  /** The options that name this store again, for a command the CLI suggests. */
  flag: string;
  /** Lets go of what the store needed (the Redis connection); after the authority is closed. */
  release: () => Promise<void>;
}

/** How long `--redis` waits for a connection before it says that Redis is not there. */
const REDIS_CONNECT_TIMEOUT_MS = 5000;
const REDIS_DEFAULT_KEY = 'launcher-auth:secret';

function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false; // Missing or unreadable: the store says which, with the path.
  }
}

export async function openStore(choice: StoreChoice): Promise<OpenedStore> {
  const given = [choice.store, choice.keyring, choice.redis].filter((value) => value !== undefined).length;
  if (given > 1) throw new UsageError('give one of --store, --keyring or --redis, not several.');
  if (choice.redisKey !== undefined && choice.redis === undefined) throw new UsageError('--redis-key goes with --redis <url>.');
  if (choice.redis !== undefined) return redisStore(choice.redis, choice.redisKey);
  if (choice.keyring !== undefined) return keyringStore(choice.keyring);
  return fileStore(choice.store);
}

function fileStore(path: string | undefined): OpenedStore {
  if (path === undefined || path === '') {
    throw new UsageError('--store <file> is required (or --keyring <service>/<account>, or --redis <url>).');
  }
  if (path.includes('\0')) throw new UsageError('--store must be a file path.');
  if (isFolder(path)) throw new UsageError(`--store needs the path of the secret file, not a folder: ${path} is a folder.`);
  const store = new FileSecretStore(path);
  return { store, where: `file at ${store.path}`, flag: `--store ${shellQuoted(store.path)}`, release: async () => undefined };
}

function keyringStore(spec: string): OpenedStore {
  const slash = spec.indexOf('/');
  if (slash < 1 || slash === spec.length - 1) throw new UsageError('--keyring must be <service>/<account>.');
  const [service, account] = [spec.slice(0, slash), spec.slice(slash + 1)];
  let store: KeyringSecretStore;
  try {
    store = new KeyringSecretStore({ service, account });
  } catch (error) {
    throw new UsageError(`--keyring: ${(error as Error).message.replace(/^KeyringSecretStore: /, '')}`);
  }
  return {
    store,
    where: `in the keychain for service "${service}", account "${account}"`,
    flag: `--keyring ${shellQuoted(spec)}`,
    release: async () => undefined,
  };
}

async function redisStore(url: string, key: string | undefined): Promise<OpenedStore> {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined || (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') || parsed.host === '') {
    throw new UsageError('--redis must be a redis:// or rediss:// URL, such as redis://127.0.0.1:6379.');
  }
  if (!/^(?:\/\d*)?$/.test(parsed.pathname)) {
    throw new UsageError('--redis: the path of the URL is a database number, such as redis://127.0.0.1:6379/0.');
  }
  if (key === '') throw new UsageError('--redis-key must not be empty.');
  // A message shows the server, never the user name or password the URL may hold.
  const secret = parsed.username !== '' || parsed.password !== '' || parsed.search !== '';
  const server = `${parsed.protocol}//${parsed.host}${parsed.pathname.replace(/\/+$/, '')}`;
  const redisKey = key ?? REDIS_DEFAULT_KEY;
  const flag = `--redis ${secret ? '<url>' : shellQuoted(url)}${key === undefined ? '' : ` --redis-key ${shellQuoted(key)}`}`;

  let createClient: typeof import('redis').createClient;
  try {
    ({ createClient } = await import('redis'));
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code !== 'ERR_MODULE_NOT_FOUND') throw error;
    throw new StoreSetupError('--redis needs the package redis beside launcher-auth: npm install redis');
  }
  // One attempt: a command run by hand should say at once that Redis is not there, not retry in silence.
  const client = createClient({ url, socket: { reconnectStrategy: false, connectTimeout: REDIS_CONNECT_TIMEOUT_MS } });
  client.on('error', () => undefined); // reported by connect() or by the store's own calls
  try {
    await client.connect();
  } catch (error) {
    client.destroy();
    const reason = error instanceof Error && error.message !== '' ? ` (${error.message.split('\n', 1)[0]})` : '';
    throw new StoreSetupError(`cannot reach Redis at ${server}${reason}: is Redis running there?`);
  }
  let store: SecretStore;
  try {
    const { RedisSecretStore } = await import('../stores/redis/index.js');
    store = new RedisSecretStore({ client, key: redisKey });
  } catch (error) {
    client.destroy();
    throw error;
  }
  return {
    store,
    where: `in Redis at ${server} under the key "${redisKey}"`,
    flag,
    release: async () => {
      await client.close().catch(() => client.destroy());
    },
  };
}

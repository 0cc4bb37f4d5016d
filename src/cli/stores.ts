// The secret store that `token` and `rotate` work on: a file (--store), the OS keychain (--keyring) or Redis
// (--redis, with the optional peers `@launcher-auth/redis` and `redis` loaded only then), and how messages name it
// without its credentials.
import { statSync } from 'node:fs';
import type { SecretStore } from '../authority/types.js';
import { FileSecretStore } from '../stores/file/store.js';
import { KeyringSecretStore } from '../stores/keyring/index.js';
import { StoreSetupError, UsageError, shellQuoted } from './output.js';

export interface StoreChoice {
  /** `--store <file>` */
  store?: string | undefined;
  /** `--keyring <service>/<account>` */
  keyring?: string | undefined;
  /** `--redis <url>` */
  redis?: string | undefined;
  /** `--redis-env <NAME>`: the Redis URL read from that environment variable, kept out of the process list. */
  redisEnv?: string | undefined;
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
  /** Why `rotate` may take a while with this store, told before it starts (Redis); none for the others. */
  rotateWait?: string;
}

/** How long `--redis` waits for a connection before it says that Redis is not there. */
const REDIS_CONNECT_TIMEOUT_MS = 5000;
const REDIS_DEFAULT_KEY = 'launcher-auth:secret';
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false; // Missing or unreadable: the store says which, with the path.
  }
}

export async function openStore(choice: StoreChoice): Promise<OpenedStore> {
  if (choice.redis !== undefined && choice.redisEnv !== undefined)
    throw new UsageError('give either --redis or --redis-env, not both.');
  const given = [choice.store, choice.keyring, choice.redis ?? choice.redisEnv].filter(
    (value) => value !== undefined,
  ).length;
  if (given > 1) throw new UsageError('give one of --store, --keyring or --redis, not several.');
  if (choice.redisKey !== undefined && choice.redis === undefined && choice.redisEnv === undefined) {
    throw new UsageError('--redis-key goes with --redis <url> or --redis-env <NAME>.');
  }
  if (choice.redisEnv !== undefined)
    return redisStore(redisUrlFromEnv(choice.redisEnv), choice.redisKey, choice.redisEnv);
  if (choice.redis !== undefined) return redisStore(choice.redis, choice.redisKey, undefined);
  if (choice.keyring !== undefined) return keyringStore(choice.keyring);
  return fileStore(choice.store);
}

function fileStore(path: string | undefined): OpenedStore {
  if (path === undefined || path === '') {
    throw new UsageError('--store <file> is required (or --keyring <service>/<account>, or --redis <url>).');
  }
  if (path.includes('\0')) throw new UsageError('--store must be a file path.');
  if (isFolder(path))
    throw new UsageError(`--store needs the path of the secret file, not a folder: ${path} is a folder.`);
  const store = new FileSecretStore(path);
  return {
    store,
    where: `file at ${store.path}`,
    flag: `--store ${shellQuoted(store.path)}`,
    release: async () => undefined,
  };
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

/** The URL held by the environment variable `name`; no message quotes the value. */
function redisUrlFromEnv(name: string): string {
  if (!ENV_NAME.test(name)) {
    throw new UsageError(
      '--redis-env takes the name of an environment variable that holds the Redis URL (such as LAUNCHER_REDIS_URL), not the URL itself.',
    );
  }
  const url = process.env[name]?.trim();
  if (url === undefined) throw new UsageError(`--redis-env: the environment variable ${name} is not set.`);
  if (url === '') throw new UsageError(`--redis-env: the environment variable ${name} is empty.`);
  return url;
}

/** `variable` is the environment variable that held `url` (`--redis-env`), `undefined` for `--redis <url>`. */
async function redisStore(url: string, key: string | undefined, variable: string | undefined): Promise<OpenedStore> {
  const source = variable === undefined ? '--redis' : `--redis-env: the environment variable ${variable}`;
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined || (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') || parsed.host === '') {
    throw new UsageError(
      `${source} must ${variable === undefined ? 'be' : 'hold'} a redis:// or rediss:// URL, such as redis://127.0.0.1:6379.`,
    );
  }
  // Every local user reads another's command line (/proc/<pid>/cmdline, ps): a password there lets them read the
  // record, key included. Refused before any connection, and the message quotes nothing of the URL.
  if (variable === undefined && parsed.password !== '') {
    throw new UsageError(
      '--redis: a password on the command line is visible to every local user; put the URL in an environment variable and give its name with --redis-env <NAME>.',
    );
  }
  if (!/^(?:\/\d*)?$/.test(parsed.pathname)) {
    throw new UsageError(`${source}: the path of the URL is a database number, such as redis://127.0.0.1:6379/0.`);
  }
  if (key === '') throw new UsageError('--redis-key must not be empty.');
  // A message shows the server, never the user name or password the URL may hold.
  const secret = parsed.username !== '' || parsed.password !== '' || parsed.search !== '';
  const server = `${parsed.protocol}//${parsed.host}${parsed.pathname.replace(/\/+$/, '')}`;
  const redisKey = key ?? REDIS_DEFAULT_KEY;
  const named = variable === undefined ? `--redis ${secret ? '<url>' : shellQuoted(url)}` : `--redis-env ${variable}`;
  const flag = `${named}${key === undefined ? '' : ` --redis-key ${shellQuoted(key)}`}`;

  let createClient: typeof import('redis').createClient;
  let RedisSecretStore: typeof import('@launcher-auth/redis').RedisSecretStore;
  try {
    [{ createClient }, { RedisSecretStore }] = await Promise.all([import('redis'), import('@launcher-auth/redis')]);
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code !== 'ERR_MODULE_NOT_FOUND') throw error;
    throw new UsageError(
      '--redis needs @launcher-auth/redis and redis installed beside launcher-auth (npm install @launcher-auth/redis redis).',
    );
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
    store = new RedisSecretStore({ client, key: redisKey });
  } catch (error) {
    client.destroy();
    throw error;
  }
  return {
    store,
    where: `in Redis at ${server} under the key "${redisKey}"`,
    flag,
    // A process that has just connected cannot tell that the table of running instances is complete: it waits
    // until every lease granted before its save has run out (RedisSecretStore's default leaseMs + driftMargin).
    rotateWait:
      'waiting up to 5.25 s for the running instances on this key to accept the new token: a command that has just ' +
      "connected cannot tell that no other instance runs, so it waits out their lease (RedisSecretStore's leaseMs).",
    release: async () => {
      await client.close().catch(() => client.destroy());
    },
  };
}

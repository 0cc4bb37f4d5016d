// `npm run demo`: an example launcher on loopback, its automation API and its settings page sharing one token
// whose secret lives in .data/demo/ (git-ignored), so the token survives a restart. `npm run demo -- --help`.
import { spawn } from 'node:child_process';
import { chmod, lstat, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { FileSecretStore, TokenAuthority, type SecretStore } from 'launcher-auth';
import { createApiServer } from './api.ts';
import { LAUNCH_KEY_PARAMETER, createSettingsServer, launchFileHtml, newLaunchKey } from './settings.ts';

export interface DemoOptions {
  /**
   * Port of the automation API on 127.0.0.1; 0 picks a free one.
   * @default 7878
   */
  apiPort?: number;
  /**
   * Port of the settings page on 127.0.0.1; 0 picks a free one.
   * @default 7879
   */
  settingsPort?: number;
  /**
   * Folder of the secret file, `secret.json` (the folder is created with mode 0700, the file with 0600), and of
   * the settings page's launch link: `settings-url` (mode 0600) and the redirect file `launch/settings.html`
   * (mode 0600 in a folder of mode 0700).
   * @default the repository's .data/demo/ (git-ignored)
   */
  dataDir?: string;
  /**
   * A Redis URL: keep the secret in Redis (`@launcher-auth/redis`), shared by every demo started with the same URL.
   * @default undefined (the secret file in `dataDir`)
   */
  redisUrl?: string;
  /**
   * Any other secret store (a test's, or a launcher's own); `dataDir` then keeps only the launch link's files.
   * @default undefined (the secret file in `dataDir`)
   */
  store?: SecretStore;
}

export interface Demo {
  apiUrl: string;
  /** The settings page's origin; it answers 403 until a browser has opened `launchUrl`. */
  settingsUrl: string;
  /**
   * `<settingsUrl>/?key=<launch key>`: the owner's way in, which works once; read anew, it is the fresh link that
   * replaced a used one. Show it to the owner only.
   */
  readonly launchUrl: string;
  /** The file that keeps `launchUrl` for the owner (mode 0600, beside the secret). */
  launchFile: string;
  /**
   * The redirect file: an HTML page that sends a browser to `launchUrl` (mode 0600 in a folder of mode 0700).
   * Opening it by its path, which is no secret, keeps the launch key off every command line.
   */
  redirectFile: string;
  /** Resolves once both files hold the current `launchUrl` (they are rewritten after each use of a link). */
  written(): Promise<void>;
  authority: TokenAuthority;
  /** Ends the event streams, then stops both servers. */
  close(): Promise<void>;
}

export const DEFAULT_DATA_DIR = fileURLToPath(new URL('../../.data/demo/', import.meta.url));

/** The launch link's file in the data folder. */
export const LAUNCH_FILE = 'settings-url';
/** The redirect file's folder (mode 0700) in the data folder, and its name there. */
export const REDIRECT_FOLDER = 'launch';
export const REDIRECT_FILE = 'settings.html';

const PORTS = {
  api: { what: 'the automation API', variable: 'LAUNCHER_API_PORT', flag: '--api-port', fallback: 7878 },
  settings: { what: 'the settings page', variable: 'LAUNCHER_SETTINGS_PORT', flag: '--settings-port', fallback: 7879 },
} as const;
type Which = keyof typeof PORTS;

/** A port that something else holds; its message is the one line the demo prints. */
export class PortInUseError extends Error {
  readonly code = 'EADDRINUSE';
  constructor(
    readonly port: number,
    which: Which,
  ) {
    const { what, variable, flag } = PORTS[which];
    super(`Port ${port} is already in use, so ${what} cannot start: set ${variable} (or ${flag}) to a free port.`);
    this.name = 'PortInUseError';
  }
}

export async function startDemo(options: DemoOptions = {}): Promise<Demo> {
  const { apiPort = PORTS.api.fallback, settingsPort = PORTS.settings.fallback, dataDir = DEFAULT_DATA_DIR } = options;
  const redis = options.redisUrl === undefined ? undefined : await redisStore(options.redisUrl);
  // The data folder still holds the launch link; the file store would have created it.
  if (redis !== undefined || options.store !== undefined)
    await mkdir(resolve(dataDir), { recursive: true, mode: 0o700 });
  // The first run creates the secret; later runs load it, so the token printed last time still works.
  const authority = await TokenAuthority.open({
    store: options.store ?? redis?.store ?? new FileSecretStore(join(resolve(dataDir), 'secret.json')),
    // Redis gone or back empty, a damaged file: the cause, beside the refusals it brings.
    onStoreError: (error) => console.error(`demo: secret store: ${error.message}`),
  }).catch((error: unknown) => {
    redis?.client.destroy();
    throw error;
  });
  // The settings page holds the key to the launcher: only who sees this key (the owner) may open it, once.
  let launchKey = newLaunchKey();
  const servers: Server[] = [];
  // The launch link's files, one write after another, each with the link current when it starts.
  let writing = Promise.resolve();
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      // The authority first: its key's signal aborts and the event streams end properly before sockets are cut.
      await authority.close();
      redis?.client.destroy();
      await Promise.all(servers.map(stop));
      await writing.catch(() => undefined);
    })());

  try {
    const api = createApiServer(authority);
    servers.push(api);
    const apiUrl = await listen(api, apiPort, 'api');
    const launchFile = join(resolve(dataDir), LAUNCH_FILE);
    const redirectFolder = join(resolve(dataDir), REDIRECT_FOLDER);
    const redirectFile = join(redirectFolder, REDIRECT_FILE);
    let settingsUrl = '';
    const launchUrl = (): string => `${settingsUrl}/?${LAUNCH_KEY_PARAMETER}=${launchKey}`;
    const writeLinks = (): Promise<void> =>
      (writing = writing.then(async () => {
        const url = launchUrl();
        await writePrivate(launchFile, `${url}\n`);
        await writePrivate(redirectFile, launchFileHtml(url));
      }));
    const settings = createSettingsServer(authority, apiUrl, {
      launchKey,
      renewLaunchKey: () => {
        launchKey = newLaunchKey();
        writeLinks().catch(() => undefined); // a failed write leaves the old (used) link: the page says what to do
        return launchKey;
      },
      freshLinkFile: redirectFile,
    });
    servers.push(settings);
    settingsUrl = await listen(settings, settingsPort, 'settings');
    await privateFolder(redirectFolder);
    await writeLinks();
    return {
      apiUrl,
      settingsUrl,
      get launchUrl() {
        return launchUrl();
      },
      launchFile,
      redirectFile,
      written: () => writing,
      authority,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}

/** The store for `--redis`: the optional peer `redis` is loaded only then. */
async function redisStore(url: string): Promise<{ store: SecretStore; client: { destroy(): void } }> {
  const [{ createClient }, { RedisSecretStore }] = await Promise.all([import('redis'), import('@launcher-auth/redis')]);
  const client = createClient({
    url,
    socket: { reconnectStrategy: (retries: number) => Math.min(retries * 50, 1000) },
  });
  client.on('error', () => undefined); // an outage shows as refused requests, then recovers by itself
  client.connect().catch(() => undefined); // Redis down: open() reports it (ERR_STORE_UNAVAILABLE)
  return { store: new RedisSecretStore({ client }), client };
}

function listen(server: Server, port: number, which: Which): Promise<string> {
  return new Promise((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException): void => {
      reject(error.code === 'EADDRINUSE' ? new PortInUseError(port, which) : error);
    };
    server.once('error', failed);
    // 127.0.0.1 only: neither the API nor the page that shows its token may be reachable from the network.
    server.listen(port, '127.0.0.1', () => {
      server.off('error', failed);
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    });
  });
}

/** Makes `path` a folder of this user's that only they can enter (0700), refusing a link planted there. */
async function privateFolder(path: string): Promise<void> {
  await mkdir(path, { recursive: true, mode: 0o700 });
  const stats = await lstat(path);
  if (!stats.isDirectory() || (process.getuid !== undefined && stats.uid !== process.getuid())) {
    throw new Error(`${path} is not a folder of this user's: remove it, and the demo makes it anew.`);
  }
  await chmod(path, 0o700);
}

/** Opens `file` in the desktop's browser, by its path: nothing secret goes on the command line. */
function openInBrowser(file: string): void {
  const url = pathToFileURL(file).href;
  const [command, args] =
    process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? ['cmd', ['/c', 'start', '', url]]
        : ['xdg-open', [url]];
  const child = spawn(command, args, { stdio: 'ignore', detached: true });
  child.on('error', () => console.log(`Could not start a browser (${command}): open ${url} yourself.`));
  child.unref();
}

/** Replaces `path` with a file that only this user can read, never through a symlink planted at either name. */
async function writePrivate(path: string, text: string): Promise<void> {
  const temp = `${path}.${process.pid}.tmp`;
  await rm(temp, { force: true });
  await writeFile(temp, text, { mode: 0o600, flag: 'wx' });
  await rename(temp, path);
}

function stop(server: Server): Promise<void> {
  if (!server.listening) return Promise.resolve();
  const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  return stopped;
}

const USAGE = `Usage: npm run demo [-- [--api-port <port>] [--settings-port <port>] [--data-dir <folder> | --redis <url> | --redis-env <NAME>] [--open]]

  --api-port <port>       automation API port on 127.0.0.1 (env LAUNCHER_API_PORT, default 7878; 0: any free port)
  --settings-port <port>  settings page port on 127.0.0.1 (env LAUNCHER_SETTINGS_PORT, default 7879)
  --data-dir <folder>     folder of the secret file (env LAUNCHER_DATA_DIR, default .data/demo)
  --redis <url>           keep the secret in Redis instead (@launcher-auth/redis), shared by every demo on that URL
  --redis-env <NAME>      the same, the URL read from the environment variable NAME: the way for a URL with a
                          password, which --redis refuses (other local users can read a command line)
  --open                  open the settings page in the desktop's browser (through the redirect file)
  -h, --help              this text

Exit codes: 0 stopped with Ctrl-C, 1 could not start (a busy port, an unusable secret file), 2 bad usage.`;

class UsageError extends Error {}

/** The flag, else the environment variable, else the default; a bad value names where it came from. */
function portOption(flag: string | undefined, which: Which): number {
  const { variable, flag: name, fallback } = PORTS[which];
  const env = process.env[variable];
  const [text, source] = flag !== undefined ? [flag, name] : env ? [env, variable] : [undefined, undefined];
  if (text === undefined) return fallback;
  const port = /^\d{1,5}$/.test(text) ? Number(text) : Number.NaN;
  if (!(port <= 65_535)) throw new UsageError(`${source} must be a port number from 0 to 65535, not "${text}".`);
  return port;
}

/**
 * The Redis URL of `--redis` or of the variable `--redis-env` names. A password may come only through the
 * environment: every local user can read a command line. No message quotes the URL.
 */
function redisOption(url: string | undefined, variable: string | undefined): string | undefined {
  if (url !== undefined && variable !== undefined)
    throw new UsageError('Give either --redis or --redis-env, not both.');
  if (variable !== undefined) {
    const value = /^[A-Za-z_][A-Za-z0-9_]*$/.test(variable) ? process.env[variable]?.trim() : undefined;
    if (value === undefined || value === '') {
      throw new UsageError(
        `--redis-env must name a set environment variable that holds the Redis URL (such as LAUNCHER_REDIS_URL).`,
      );
    }
    return value;
  }
  if (url !== undefined && passwordIn(url)) {
    throw new UsageError(
      '--redis: a password on the command line is visible to every local user; put the URL in an environment variable and give its name with --redis-env <NAME>.',
    );
  }
  return url;
}

/**
 * Whether `url` carries a password in any form node-redis reads one: `redis:` and `rediss:` as `URL` parses them,
 * and, for `unix:` (which node-redis parses itself) or text that `URL` cannot parse, any `@` before the host or path.
 */
function passwordIn(url: string): boolean {
  const parsed = URL.canParse(url) ? new URL(url) : undefined;
  if (parsed !== undefined && parsed.protocol !== 'unix:') return parsed.password !== '';
  return /^[^/?#]*\/\/[^/?#]*@/.test(url);
}

async function main(): Promise<number> {
  let demo: Demo;
  let open = false;
  try {
    const { values } = parseArgs({
      options: {
        'api-port': { type: 'string' },
        'settings-port': { type: 'string' },
        'data-dir': { type: 'string' },
        redis: { type: 'string' },
        'redis-env': { type: 'string' },
        open: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
    if (values.help === true) {
      console.log(USAGE);
      return 0;
    }
    open = values.open === true;
    const redisUrl = redisOption(values.redis, values['redis-env']);
    demo = await startDemo({
      apiPort: portOption(values['api-port'], 'api'),
      settingsPort: portOption(values['settings-port'], 'settings'),
      dataDir: values['data-dir'] ?? (process.env['LAUNCHER_DATA_DIR'] || DEFAULT_DATA_DIR),
      ...(redisUrl === undefined ? {} : { redisUrl }),
    });
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    const usage = error instanceof UsageError || (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_'));
    // One line and no stack: every failure here is about the user's set-up, and the message says what to change.
    const message = (error instanceof Error ? error.message : String(error)).replace(/\s*\n\s*/g, ' ');
    console.error(`demo: ${message}${usage ? ' Run with --help for the options.' : ''}`);
    return usage ? 2 : 1;
  }

  const { apiUrl, launchFile, redirectFile, authority } = demo;
  const curl = (): string => `curl -H "Authorization: Bearer ${authority.issue()}" ${apiUrl}/apps`;
  // The token is printed on purpose: this is the launcher owner's own terminal, as the settings page is their
  // window. The launch link is not: a click on it starts a browser with the key on its command line, which every
  // local user can read (and replay first, while the browser starts); its file's path is no secret.
  console.log(
    [
      'Example launcher running. Press Ctrl-C to stop.',
      '',
      `  Settings page   ${pathToFileURL(redirectFile).href}`,
      `  Automation API  ${apiUrl}`,
      `  Token           ${authority.issue()}`,
      '',
      'Open the settings page by opening that file in your browser (or run the demo with --open): it holds a link',
      'that works once, is readable by you alone, and gets a fresh link after each use. The link alone, to paste',
      `into a browser's address bar (never on a command line, where other users can read it), is in ${launchFile}.`,
      '',
      'Try it:',
      `  ${curl()}`,
      '',
    ].join('\n'),
  );
  if (open) openInBrowser(redirectFile);
  authority.onRotate(() => {
    console.log(
      `Token regenerated: the previous token gets 401 and its event streams were closed. Now:\n  ${curl()}\n`,
    );
  });

  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await demo.close();
  console.log('Stopped.');
  return 0;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await main();
}

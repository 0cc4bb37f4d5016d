#!/usr/bin/env node
// The `launcher-auth` command: print or regenerate a launcher's token, and check a live server's wiring.
import { readFileSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { isLauncherAuthError } from '../authority/errors.js';
import type { SecretStore } from '../authority/types.js';
import { generateRecord } from '../authority/record.js';
import { regenerateToken } from '../authority/settings.js';
import { TokenAuthority } from '../authority/token-authority.js';
import { MAX_TIMEOUT_MS } from '../testing/check-server.js';
import { checkCommand } from './check.js';
import { EXIT, StoreSetupError, UsageError, safeLine, type CliIo } from './output.js';
import { openStore } from './stores.js';

export { EXIT, type CliIo } from './output.js';

const USAGE = `Usage:
  launcher-auth token  <store> [--init]
      Print the current token. Without --init a missing secret is an error; with --init a missing
      secret is created with a new key (a file with mode 0600).
  launcher-auth rotate <store>
      Regenerate: save a new secret and print the new token. Every earlier token stops working, and a
      launcher running on the same store follows: on a file or Redis at once, on the keychain within its
      poll interval.
  <store> is one of:
      --store <file>                     the secret file
      --keyring <service>/<account>      the OS keychain entry of that service and account (the service
                                         is the part before the first /)
      --redis <url> [--redis-key <key>]  Redis at <url> (redis:// or rediss://), the record under <key>
                                         (default launcher-auth:secret); needs the package redis
      --redis-env <NAME> [--redis-key <key>]
                                         the same, with the URL read from the environment variable NAME:
                                         a URL with a password must come this way (the process list is
                                         visible to other local users), so --redis refuses one
  launcher-auth check  <base-url> (--token <t> | --token-env <NAME>)
                       [--previous <t> | --previous-env <NAME>] [--path <p>] [--health-path <p>] [--timeout <ms>]
      Run the automation API's test table against a live server and print one line per case
      (status and body length seen; never a token). <base-url> is the API's root (http://127.0.0.1:7878
      for the demo), --path a protected path (default /), --health-path the health path (default
      /health). The token goes alone, without "Bearer ". The cases run at once, and --timeout is the
      deadline of the whole check, in ms from 1 to ${MAX_TIMEOUT_MS} (default 5000). Tokens given on the
      command line are visible to other local users in the process list: prefer --token-env and --previous-env.
      On Linux, no token is sent to a loopback port that another user (not you, not root) listens on.
  launcher-auth --help | --version

Exit codes: 0 success; 1 a check failed (or the server did not answer); 2 usage error;
3 the store cannot be used: the secret is missing, unreadable or damaged, the file is open to others,
or the keychain or Redis cannot be reached; 70 an unexpected internal error.
Nothing is printed but tokens (by token and rotate, whose purpose that is): never a key, and nothing
of the arguments that could be a token.
`;

function packageVersion(): string {
  // The built bin (dist/bin/cli.js, or dist/cli.js) and the source (src/cli/main.ts) sit one or two folders
  // below package.json; the name check keeps a host's own package.json from answering.
  let folder = dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 3; depth++) {
    try {
      const manifest = JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')) as {
        name?: unknown;
        version?: unknown;
      };
      if (manifest.name === 'launcher-auth' && typeof manifest.version === 'string') return manifest.version;
    } catch {
      // Not here; look one folder up.
    }
    folder = dirname(folder);
  }
  return 'unknown';
}

/** Whether the store holds a rollback marker (RedisSecretStore's stand-in for a lost secret); other errors pass. */
async function markedRolledBack(store: SecretStore): Promise<boolean> {
  try {
    await store.load();
    return false;
  } catch (error) {
    if (isLauncherAuthError(error, 'ERR_STORE_ROLLBACK')) return true;
    throw error;
  }
}

async function tokenCommand(args: string[], io: CliIo, rotate: boolean): Promise<number> {
  const { values } = parseArgs({
    args,
    strict: true,
    options: {
      store: { type: 'string' },
      keyring: { type: 'string' },
      redis: { type: 'string' },
      'redis-env': { type: 'string' },
      'redis-key': { type: 'string' },
      ...(rotate ? {} : { init: { type: 'boolean' } }),
    },
  });
  const { store, where, flag, release, rotateWait } = await openStore({
    store: values.store,
    keyring: values.keyring,
    redis: values.redis,
    redisEnv: values['redis-env'],
    redisKey: values['redis-key'],
  });
  try {
    // Redis lost the secret and no instance could write it back: every token is refused until a rotation
    // replaces the marker, as the settings window's Regenerate does. That save is this command's rotation.
    const replaced = rotate && (await markedRolledBack(store));
    if (replaced) {
      io.stderr(
        `launcher-auth: the secret ${where} was lost (Redis went back to an older state), so every token is refused; a new one replaces it.\n`,
      );
      if (rotateWait !== undefined) io.stderr(`launcher-auth: ${rotateWait}\n`);
      await store.save(generateRecord());
    }
    if (values.init !== true && (await store.load()) === undefined) {
      const hint = rotate ? `create one with: launcher-auth token ${flag} --init` : 'use --init to create one';
      io.stderr(`launcher-auth: no secret ${where} (${hint}).\n`);
      return EXIT.store;
    }
    // `rotate` follows the store while it runs (with Redis: a lease in the instance table, left again at close),
    // so that its rotation resolves only while no newer one can have: without a lease, a rotation elsewhere that
    // replaced the new record while the last read was on its way would go unseen, and a dead token be printed.
    // `token` only reads, and a rotation elsewhere must never wait for it.
    const follows = rotate && !replaced;
    const authority = await TokenAuthority.open({
      store: follows ? store : { load: () => store.load(), save: (record, options) => store.save(record, options) },
    });
    try {
      if (!rotate || replaced) {
        io.stdout(`${authority.issue()}\n`);
        return EXIT.ok;
      }
      if (rotateWait !== undefined) io.stderr(`launcher-auth: ${rotateWait}\n`);
      // As the settings window's Regenerate: the token that works now is printed whenever there is one.
      const { outcome, token, message } = await regenerateToken(authority);
      if (outcome !== 'regenerated' || token === undefined) io.stderr(`launcher-auth: ${message}\n`);
      if ((outcome === 'regenerated' || outcome === 'regenerated-elsewhere') && token !== undefined) {
        io.stdout(`${token}\n`);
        return EXIT.ok;
      }
      // `unchanged` or `unconfirmed`, or no token works now: the store did not take the new secret, cannot say
      // yet, or cannot be reached.
      return EXIT.store;
    } finally {
      await authority.close();
    }
  } finally {
    await release();
  }
}

/**
 * A parseArgs error in one line of our own: its messages quote what was given (which could be a token pasted in
 * the wrong place) and add advice about `--` that does not apply here.
 */
function parseArgsMessage(command: string | undefined, error: Error & { code: string }): string {
  if (error.code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL')
    return `${command} takes no arguments besides its options.`;
  if (error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const name = /^Unknown option '(-[^']*)'/.exec(error.message)?.[1];
    return `unknown option${name === undefined ? '' : ` ${name}`} for ${command}.`;
  }
  const option =
    /^Option '(?:-\w, )?(--[\w-]+)(?: <value>)?' (argument missing|does not take an argument|argument is ambiguous)/.exec(
      error.message,
    );
  if (option === null) return `the options of ${command} could not be read.`;
  const [, flag, problem] = option;
  if (problem === 'does not take an argument') return `${flag} takes no value.`;
  if (problem === 'argument missing') return `${flag} needs a value.`;
  return `${flag} needs a value; one that starts with "-" goes as ${flag}=<value>.`;
}

/** Runs the CLI with `argv` (without node and the script) and returns the exit code. Never prints a key. */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const [command, ...rest] = argv;
  // Every message passes here: whatever it quotes, a part that could be a token or a key is not printed, nor a
  // control character (a folder name reached through another user's link can hold any).
  const stderr = (text: string): void => io.stderr(safeLine(text));
  try {
    if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
      (command === undefined ? io.stderr : io.stdout)(USAGE);
      return command === undefined ? EXIT.usage : EXIT.ok;
    }
    if (command === '--version' || command === '-v') {
      io.stdout(`${packageVersion()}\n`);
      return EXIT.ok;
    }
    if (rest.includes('--help') || rest.includes('-h')) {
      io.stdout(USAGE);
      return EXIT.ok;
    }
    // token and rotate print the token on purpose; nothing else they print may hold one.
    if (command === 'token') return await tokenCommand(rest, { stdout: io.stdout, stderr }, false);
    if (command === 'rotate') return await tokenCommand(rest, { stdout: io.stdout, stderr }, true);
    if (command === 'check') return await checkCommand(rest, { stdout: (text) => io.stdout(safeLine(text)), stderr });
    throw new UsageError('unknown command; the commands are token, rotate and check.');
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (error instanceof UsageError || (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_'))) {
      const message =
        error instanceof UsageError ? error.message : parseArgsMessage(command, error as Error & { code: string });
      stderr(`launcher-auth: ${message} See launcher-auth --help.\n`);
      return EXIT.usage;
    }
    if (error instanceof StoreSetupError || isLauncherAuthError(error)) {
      // These messages name the store and the problem, never a key.
      stderr(`launcher-auth: ${error.message}\n`);
      return EXIT.store;
    }
    stderr(`launcher-auth: unexpected error: ${error instanceof Error ? error.message : typeof error}\n`);
    return EXIT.internal;
  }
}

function invokedDirectly(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (invokedDirectly()) {
  const io: CliIo = { stdout: (text) => process.stdout.write(text), stderr: (text) => process.stderr.write(text) };
  void main(process.argv.slice(2), io).then((code) => {
    process.exitCode = code;
  });
}

#!/usr/bin/env node
// The `launcher-auth` command: print or regenerate a launcher's token, and check a live server's wiring.
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { isLauncherAuthError } from '../core/errors.js';
import { TokenAuthority } from '../core/token-authority.js';
import type { SecretStore } from '../core/types.js';
import { FileSecretStore } from '../stores/file.js';
import { KeyringSecretStore } from '../stores/keyring/index.js';
import { checkServer, MAX_TIMEOUT_MS } from '../testing/check-server.js';

/** Where the CLI writes. */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
}

/** Exit codes, as the usage text documents them. */
export const EXIT = Object.freeze({ ok: 0, checkFailed: 1, usage: 2, store: 3, internal: 70 });

const USAGE = `Usage:
  launcher-auth token  --store <file> [--init]
      Print the current token of the secret file. Without --init a missing file is an error;
      with --init a missing file is created (mode 0600) with a new secret.
  launcher-auth rotate --store <file>
      Regenerate: write a new secret and print the new token. Every earlier token stops working;
      a launcher running on the same file follows at once.
  --keyring <service>/<account>, in place of --store <file> (token, rotate)
      Use the OS keychain entry of that service and account (the service is the part before the
      first /) instead of a file; a launcher on the same entry follows within its poll interval.
  launcher-auth check  <base-url> (--token <t> | --token-env <NAME>)
                       [--previous <t> | --previous-env <NAME>] [--path <p>] [--health-path <p>] [--timeout <ms>]
      Run the automation API's test table against a live server and print one line per case
      (status and body length seen; never a token). --path is a protected path (default /),
      --health-path the health path (default /health). The cases run at once, and --timeout is the
      deadline of the whole check, in ms from 1 to ${MAX_TIMEOUT_MS} (default 5000). Tokens given on the
      command line are visible to other local users in the process list: prefer --token-env and --previous-env.
  launcher-auth --help | --version

Exit codes: 0 success; 1 a check failed (or the server did not answer); 2 usage error;
3 the secret file is missing, unreadable, damaged or open to others; 70 an unexpected internal error.
Nothing is ever printed but tokens (by token and rotate, whose purpose that is): never a key.
`;

class UsageError extends Error {}

function packageVersion(): string {
  // The built bin (dist/bin/cli.js, or dist/cli.js) and the source (src/cli/main.ts) sit one or two folders
  // below package.json; the name check keeps a host's own package.json from answering.
  let folder = dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 3; depth++) {
    try {
      const manifest = JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')) as { name?: unknown; version?: unknown };
      if (manifest.name === 'launcher-auth' && typeof manifest.version === 'string') return manifest.version;
    } catch {
      // Not here; look one folder up.
    }
    folder = dirname(folder);
  }
  return 'unknown';
}

/** A token from the command line or the environment; surrounding white space (a newline from a file) dropped. */
function tokenFrom(value: string | undefined, variable: string | undefined, flag: string): string | undefined {
  if (value !== undefined && variable !== undefined) throw new UsageError(`give either --${flag} or --${flag}-env, not both.`);
  if (variable !== undefined) {
    const fromEnvironment = process.env[variable]?.trim();
    if (fromEnvironment === undefined) throw new UsageError(`--${flag}-env: the environment variable ${variable} is not set.`);
    if (fromEnvironment === '') throw new UsageError(`--${flag}-env: the environment variable ${variable} is empty.`);
    return fromEnvironment;
  }
  if (value === undefined) return undefined;
  if (value.trim() === '') throw new UsageError(`--${flag} must not be empty.`);
  return value.trim();
}

/** `text` as one POSIX shell word, so that a printed command can be pasted as it is. */
function shellQuoted(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}

function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false; // Missing or unreadable: the store says which, with the path.
  }
}

/** What checkServer's option names are called on the command line. */
const FLAG_OF: Readonly<Record<string, string>> = {
  baseUrl: '<base-url>',
  path: '--path',
  healthPath: '--health-path',
  timeoutMs: '--timeout',
};

/** The store `--store <file>` or `--keyring <service>/<account>` names, and how messages name it and its flag. */
function storeFrom(path: string | undefined, keyring: string | undefined): { store: SecretStore; where: string; flag: string } {
  if (path !== undefined && keyring !== undefined) throw new UsageError('give either --store or --keyring, not both.');
  if (keyring !== undefined) {
    const slash = keyring.indexOf('/');
    if (slash < 1 || slash === keyring.length - 1) throw new UsageError('--keyring must be <service>/<account>.');
    const [service, account] = [keyring.slice(0, slash), keyring.slice(slash + 1)];
    let store: KeyringSecretStore;
    try {
      store = new KeyringSecretStore({ service, account });
    } catch (error) {
      throw new UsageError(`--keyring: ${(error as Error).message.replace(/^KeyringSecretStore: /, '')}`);
    }
    return { store, where: `in the keychain for service "${service}", account "${account}"`, flag: `--keyring ${shellQuoted(keyring)}` };
  }
  if (typeof path !== 'string' || path === '') throw new UsageError('--store <file> is required (or --keyring <service>/<account>).');
  if (path.includes('\0')) throw new UsageError('--store must be a file path.');
  if (isFolder(path)) {
    throw new UsageError(`--store needs the path of the secret file, not a folder: ${path} is a folder.`);
  }
  const store = new FileSecretStore(path);
  return { store, where: `file at ${store.path}`, flag: `--store ${shellQuoted(store.path)}` };
}

async function tokenCommand(args: string[], io: CliIo, rotate: boolean): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { store: { type: 'string' }, keyring: { type: 'string' }, ...(rotate ? {} : { init: { type: 'boolean' } }) },
    strict: true,
  });
  const { store, where, flag } = storeFrom(values.store, values.keyring);
  if (values.init !== true && (await store.load()) === undefined) {
    const hint = rotate ? `create one with: launcher-auth token ${flag} --init` : 'use --init to create one';
    io.stderr(`launcher-auth: no secret ${where} (${hint}).\n`);
    return EXIT.store;
  }
  const authority = await TokenAuthority.open({ store });
  try {
    io.stdout(`${rotate ? await authority.rotate() : authority.issue()}\n`);
  } finally {
    await authority.close();
  }
  return EXIT.ok;
}

async function checkCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    strict: true,
    options: {
      token: { type: 'string' },
      'token-env': { type: 'string' },
      previous: { type: 'string' },
      'previous-env': { type: 'string' },
      path: { type: 'string' },
      'health-path': { type: 'string' },
      timeout: { type: 'string' },
    },
  });
  if (positionals.length !== 1) throw new UsageError('check takes exactly one <base-url>.');
  const token = tokenFrom(values.token, values['token-env'], 'token');
  if (token === undefined) throw new UsageError('check needs --token <t> or --token-env <NAME>.');
  const previous = tokenFrom(values.previous, values['previous-env'], 'previous');
  const timeoutMs = values.timeout === undefined ? undefined : Number(values.timeout);
  if (timeoutMs !== undefined && (!/^\d+$/.test(values.timeout ?? '') || timeoutMs < 1 || timeoutMs > MAX_TIMEOUT_MS)) {
    throw new UsageError(`--timeout must be a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS}.`);
  }
  const baseUrl = positionals[0] as string;
  let report;
  try {
    report = await checkServer(baseUrl, {
      token,
      ...(previous === undefined ? {} : { previous }),
      ...(values.path === undefined ? {} : { path: values.path }),
      ...(values['health-path'] === undefined ? {} : { healthPath: values['health-path'] }),
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
    });
  } catch (error) {
    if (error instanceof TypeError) {
      const message = error.message.replace(/^checkServer: /, '').replace(/`(\w+)`/g, (quoted, name: string) => FLAG_OF[name] ?? quoted);
      throw new UsageError(message);
    }
    throw error;
  }
  if (report.cases.every((row) => row.status === undefined)) {
    // One line instead of a table of identical failures; checkServer refused a URL with credentials, and the
    // query and fragment (which could hold anything) are left out.
    const { origin, pathname } = new URL(baseUrl);
    const why = report.cases[0]?.detail;
    io.stderr(`launcher-auth: nothing answers at ${origin}${pathname.replace(/\/+$/, '')}: is the launcher running?${why === undefined ? '' : ` (${why})`}\n`);
    return EXIT.checkFailed;
  }
  for (const row of report.cases) {
    const seen = row.status === undefined ? 'no answer' : `${row.status}, body ${row.bodyLength} bytes`;
    io.stdout(`${row.ok ? 'ok  ' : 'FAIL'}  ${row.name}: expected ${row.expected}; got ${seen}${row.detail === undefined ? '' : ` (${row.detail})`}\n`);
  }
  const failed = report.cases.filter((row) => !row.ok).length;
  io.stdout(failed === 0 ? `${report.cases.length} passed, 0 failed\n` : `${report.cases.length - failed} passed, ${failed} failed\n`);
  return failed === 0 ? EXIT.ok : EXIT.checkFailed;
}

/** Runs the CLI with `argv` (without node and the script) and returns the exit code. Never prints a key. */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const [command, ...rest] = argv;
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
    if (command === 'token') return await tokenCommand(rest, io, false);
    if (command === 'rotate') return await tokenCommand(rest, io, true);
    if (command === 'check') return await checkCommand(rest, io);
    throw new UsageError('unknown command; the commands are token, rotate and check.');
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (error instanceof UsageError || (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_'))) {
      // parseArgs quotes a stray argument, which could be a token pasted in the wrong place.
      const message =
        code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL'
          ? `${command} takes no arguments besides its options.`
          : (error as Error).message;
      io.stderr(`launcher-auth: ${message}\n\n${USAGE}`);
      return EXIT.usage;
    }
    if (isLauncherAuthError(error)) {
      // These messages name the path and the problem, never a key.
      io.stderr(`launcher-auth: ${error.message}\n`);
      return EXIT.store;
    }
    io.stderr(`launcher-auth: unexpected error: ${error instanceof Error ? error.message : typeof error}\n`);
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

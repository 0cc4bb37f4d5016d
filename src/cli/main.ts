#!/usr/bin/env node
// The `launcher-auth` command: print or regenerate a launcher's token, and check a live server's wiring.
import { readFileSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { isLauncherAuthError } from '../core/errors.js';
import { TokenAuthority } from '../core/token-authority.js';
import { FileSecretStore } from '../stores/file.js';
import { checkServer } from '../testing/check-server.js';

/** Where the CLI writes. */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
}

/** Exit codes, as the usage text documents them. */
export const EXIT = Object.freeze({ ok: 0, checkFailed: 1, usage: 2, store: 3 });

const USAGE = `Usage:
  launcher-auth token  --store <file> [--init]
      Print the current token of the secret file. Without --init a missing file is an error;
      with --init a missing file is created (mode 0600) with a new secret.
  launcher-auth rotate --store <file>
      Regenerate: write a new secret and print the new token. Every earlier token stops working;
      a launcher running on the same file follows at once.
  launcher-auth check  <base-url> (--token <t> | --token-env <NAME>)
                       [--previous <t> | --previous-env <NAME>] [--path <p>] [--health-path <p>] [--timeout <ms>]
      Run the automation API's test table against a live server and print one line per case
      (status and body length seen; never a token). --path is a protected path (default /),
      --health-path the health path (default /health). Tokens given on the command line are visible
      to other local users in the process list: prefer --token-env and --previous-env.
  launcher-auth --help | --version

Exit codes: 0 success; 1 a check failed; 2 usage error; 3 the secret file is missing, unreadable or damaged.
`;

class UsageError extends Error {}

function packageVersion(): string {
  // dist/cli.js and src/cli/main.ts sit one and two folders below package.json.
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

function fromEnvironment(name: string | undefined, flag: string): string | undefined {
  if (name === undefined) return undefined;
  const value = process.env[name];
  if (value === undefined || value === '') throw new UsageError(`${flag}: the environment variable ${name} is not set.`);
  return value;
}

async function tokenCommand(args: string[], io: CliIo, rotate: boolean): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { store: { type: 'string' }, ...(rotate ? {} : { init: { type: 'boolean' } }) },
    strict: true,
  });
  const path = values.store;
  if (typeof path !== 'string' || path === '') throw new UsageError('--store <file> is required.');
  const store = new FileSecretStore(path);
  if (values.init !== true && (await store.load()) === undefined) {
    io.stderr(`launcher-auth: no secret file at ${store.path}${rotate ? '' : ' (use --init to create one)'}.\n`);
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
  const token = values.token ?? fromEnvironment(values['token-env'], '--token-env');
  if (token === undefined) throw new UsageError('check needs --token <t> or --token-env <NAME>.');
  const previous = values.previous ?? fromEnvironment(values['previous-env'], '--previous-env');
  const timeoutMs = values.timeout === undefined ? undefined : Number(values.timeout);
  let report;
  try {
    report = await checkServer(positionals[0] as string, {
      token,
      ...(previous === undefined ? {} : { previous }),
      ...(values.path === undefined ? {} : { path: values.path }),
      ...(values['health-path'] === undefined ? {} : { healthPath: values['health-path'] }),
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
    });
  } catch (error) {
    if (error instanceof TypeError) throw new UsageError(error.message.replace(/^checkServer: /, ''));
    throw error;
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
    throw new UsageError(`unknown command "${command}".`);
  } catch (error) {
    if (error instanceof UsageError || (error as { code?: unknown })?.code?.toString().startsWith('ERR_PARSE_ARGS')) {
      io.stderr(`launcher-auth: ${(error as Error).message}\n\n${USAGE}`);
      return EXIT.usage;
    }
    if (isLauncherAuthError(error)) {
      io.stderr(`launcher-auth: ${error.message}\n`);
      return EXIT.store;
    }
    throw error;
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
  main(process.argv.slice(2), io).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`launcher-auth: unexpected error: ${error instanceof Error ? error.message : String(error)}\n`);
      process.exitCode = 70;
    },
  );
}

// The launcher-auth command: in-process through main(), and as a real child process against a live host.
// Every test also proves that no output ever held the key of the secret file (in any spelling).
import { spawn } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer, type RequestListener } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { FileSecretStore, TokenAuthority } from 'launcher-auth';
import { withAuth } from 'launcher-auth/node';
import { EXIT, main } from '../../src/cli/main.js';
import { until } from '../support/poll.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
let folder = '';
let store = '';
/** Every output of the test, and every key the secret file held after a command: compared in afterEach. */
let outputs: string[] = [];
let keys: Set<string>;

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'launcher-auth-cli-'));
  store = join(folder, 'data', 'secret.json');
  outputs = [];
  keys = new Set();
});
afterEach(async () => {
  await rememberKey();
  const spellings = [...keys].flatMap((key) => {
    const bytes = Buffer.from(key, 'base64url');
    return [key, bytes.toString('base64'), bytes.toString('hex')];
  });
  // A boolean, so that a leak is not itself printed by the failing assertion.
  expect(outputs.some((text) => spellings.some((spelling) => text.includes(spelling)))).toBe(false);
  await rm(folder, { recursive: true, force: true });
});

async function rememberKey(): Promise<void> {
  const text = await readFile(store, 'utf8').catch(() => undefined);
  if (text === undefined) return;
  try {
    const { key } = JSON.parse(text) as { key?: unknown };
    if (typeof key === 'string' && key.length >= 43) keys.add(key);
  } catch {
    // A file a test damaged on purpose holds no key.
  }
}

/**
 * What a command printed, with every JWT-shaped string replaced by `<token>`, so that a failing assertion
 * never prints a token; `raw()` gives the exact text, for comparisons that end in a boolean.
 */
interface Result {
  code: number | null;
  out: string;
  err: string;
  raw(): { out: string; err: string };
}

const JWT_SHAPED = /[\w-]{10,}\.[\w-]{10,}\.[\w-]{10,}/g;

function resultOf(code: number | null, out: string, err: string): Result {
  outputs.push(out, err);
  const redact = (text: string): string => text.replace(JWT_SHAPED, '<token>');
  return { code, out: redact(out), err: redact(err), raw: () => ({ out, err }) };
}

async function run(...argv: string[]): Promise<Result> {
  let out = '';
  let err = '';
  const code = await main(argv, { stdout: (text) => void (out += text), stderr: (text) => void (err += text) });
  await rememberKey();
  return resultOf(code, out, err);
}

async function listen(handler: RequestListener): Promise<string> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function openAuthority(): Promise<TokenAuthority> {
  const authority = await TokenAuthority.open({ store: new FileSecretStore(store) });
  onTestFinished(() => authority.close());
  return authority;
}

/** The lines of a check run that start with `ok` and with `FAIL`. */
/** True when nothing JWT-shaped was printed: what every check run must hold. */
const printsNoToken = (printed: Result): boolean =>
  `${printed.raw().out}${printed.raw().err}`.match(JWT_SHAPED) === null;

function verdicts(out: string): { ok: number; fail: string[] } {
  const lines = out.split('\n');
  return {
    ok: lines.filter((line) => line.startsWith('ok  ')).length,
    fail: lines.filter((line) => line.startsWith('FAIL')),
  };
}

describe('launcher-auth token', () => {
  it('without --init, a missing file is a store error naming the path, and nothing is created', async () => {
    const { code, out, err } = await run('token', '--store', store);
    expect(code).toBe(EXIT.store);
    expect(code).toBe(3);
    expect(out).toBe('');
    expect(err).toBe(`launcher-auth: no secret file at ${store} (use --init to create one).\n`);
    await expect(stat(join(folder, 'data'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('--init creates the file 0600 and prints the token the library issues; later runs print the same one', async () => {
    const first = await run('token', '--store', store, '--init');
    expect(first).toMatchObject({ code: 0, err: '' });
    expect(((await stat(store)).mode & 0o777).toString(8)).toBe('600');
    const authority = await openAuthority();
    expect(first.out).toBe('<token>\n');
    expect(first.raw().out).toBeSameToken(`${authority.issue()}\n`);
    const second = await run('token', '--store', store);
    expect(second.code).toBe(0);
    expect(second.raw().out === first.raw().out).toBe(true);
    const again = await run('token', '--store', store, '--init');
    expect(again.raw().out === first.raw().out).toBe(true);
  });

  it('a damaged file is a store error naming the path and the problem, and the file is left as it was', async () => {
    await run('token', '--store', store, '--init');
    await writeFile(store, '{"version":1,', { mode: 0o600 });
    const damaged = await run('token', '--store', store, '--init');
    expect(damaged.code).toBe(EXIT.store);
    expect(damaged.out).toBe('');
    expect(damaged.err).toContain(store);
    expect(damaged.err).toContain('not valid JSON');
    expect(await readFile(store, 'utf8')).toBe('{"version":1,');
  });

  it.skipIf(process.platform === 'win32')(
    'a file open to others is a store error that says how to fix it',
    async () => {
      await run('token', '--store', store, '--init');
      await chmod(store, 0o644);
      const open = await run('token', '--store', store);
      expect(open.code).toBe(EXIT.store);
      expect(open.out).toBe('');
      expect(open.err).toContain(`chmod 600 '${store}'`);
    },
  );
});

describe('launcher-auth rotate', () => {
  it('prints a new token that a launcher running on the same file honours at once; the old one is refused', async () => {
    await run('token', '--store', store, '--init');
    const running = await openAuthority();
    const old = running.issue();
    const followed = new Promise<void>((resolve) => {
      const unsubscribe = running.onRotate(() => {
        unsubscribe();
        resolve();
      });
    });
    const rotated = await run('rotate', '--store', store);
    expect(rotated.code).toBe(0);
    expect(rotated.err).toBe('');
    await followed;
    expect(rotated.out).toBe('<token>\n');
    const fresh = rotated.raw().out.trim();
    expect(fresh).not.toBeSameToken(old);
    expect(running.issue()).toBeSameToken(fresh);
    expect((await running.verify(fresh)).ok).toBe(true);
    expect(await running.verify(old)).toEqual({ ok: false, reason: 'rotated' });
    expect((await run('token', '--store', store)).raw().out === `${fresh}\n`).toBe(true);
  });

  it('on a missing file is a store error with the command that creates one; it creates nothing', async () => {
    const missing = await run('rotate', '--store', store);
    expect(missing.code).toBe(EXIT.store);
    expect(missing.err).toBe(
      `launcher-auth: no secret file at ${store} (create one with: launcher-auth token --store ${store} --init).\n`,
    );
    await expect(stat(store)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('quotes the path in the command it suggests when the shell would split it', async () => {
    const odd = join(folder, "my launcher's", 'secret.json');
    const missing = await run('rotate', '--store', odd);
    expect(missing.code).toBe(EXIT.store);
    expect(missing.err).toBe(
      `launcher-auth: no secret file at ${odd} (create one with: launcher-auth token --store '${folder}/my launcher'\\''s/secret.json' --init).\n`,
    );
  });
});

describe('launcher-auth usage', () => {
  it('--help prints the usage with every command and the exit codes, on stdout, exit 0', async () => {
    for (const argv of [['--help'], ['-h'], ['help'], ['token', '--help'], ['check', 'http://x', '--help']]) {
      const help = await run(...argv);
      expect(help.code).toBe(0);
      expect(help.err).toBe('');
      expect(help.out).toMatch(/^Usage:\n {2}launcher-auth token {2}<store> \[--init\]\n/);
      expect(help.out).toContain('launcher-auth rotate <store>');
      for (const option of ['--store <file>', '--keyring <service>/<account>', '--redis <url> [--redis-key <key>]']) {
        expect(help.out).toContain(`\n      ${option} `);
      }
      expect(help.out).toContain('launcher-auth check  <base-url>');
      expect(help.out).toContain(
        '--timeout is the\n      deadline of the whole check, in ms from 1 to 600000 (default 5000).',
      );
      expect(help.out).toContain(
        'Exit codes: 0 success; 1 a check failed (or the server did not answer); 2 usage error;\n3 the store cannot be used',
      );
    }
  });

  it('no command prints the usage on stderr, exit 2', async () => {
    const none = await run();
    expect(none.code).toBe(EXIT.usage);
    expect(none.out).toBe('');
    expect(none.err).toMatch(/^Usage:/);
  });

  it('--version prints the version of package.json', async () => {
    const manifest = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { version: string };
    expect(await run('--version')).toMatchObject({ code: 0, out: `${manifest.version}\n`, err: '' });
    expect(await run('-v')).toMatchObject({ code: 0, out: `${manifest.version}\n`, err: '' });
  });

  it.each([
    [['bogus'], 'unknown command; the commands are token, rotate and check.'],
    [['token'], '--store <file> is required (or --keyring <service>/<account>, or --redis <url>).'],
    [['token', '--store'], '--store needs a value.'],
    [['token', '--store', '--init'], '--store needs a value; one that starts with "-" goes as --store=<value>.'],
    [['token', '--store', 'x', '--unknown'], 'unknown option --unknown for token.'],
    [['rotate', '--store', 'x', '--init'], 'unknown option --init for rotate.'],
    [['token', '--store', 'x', '--init=yes'], '--init takes no value.'],
    [['token', '--store', 'x', 'y'], 'token takes no arguments besides its options.'],
    [
      ['token', '--store', 'x', '--redis', 'redis://127.0.0.1:1'],
      'give one of --store, --keyring or --redis, not several.',
    ],
    [['token', '--redis-key', 'k'], '--redis-key goes with --redis <url> or --redis-env <NAME>.'],
    [
      ['token', '--redis', 'redis://127.0.0.1:1', '--redis-env', 'HOME'],
      'give either --redis or --redis-env, not both.',
    ],
    [['token', '--store', 'x', '--redis-env', 'HOME'], 'give one of --store, --keyring or --redis, not several.'],
    [
      ['token', '--redis-env', 'redis://127.0.0.1:1'],
      '--redis-env takes the name of an environment variable that holds the Redis URL (such as LAUNCHER_REDIS_URL), not the URL itself.',
    ],
    [
      ['token', '--redis-env', 'LAUNCHER_AUTH_SURELY_UNSET'],
      '--redis-env: the environment variable LAUNCHER_AUTH_SURELY_UNSET is not set.',
    ],
    [
      ['token', '--redis-env', 'LAUNCHER_AUTH_CLI_TEST_EMPTY'],
      '--redis-env: the environment variable LAUNCHER_AUTH_CLI_TEST_EMPTY is empty.',
    ],
    [
      ['token', '--redis-env', 'HOME'],
      '--redis-env: the environment variable HOME must hold a redis:// or rediss:// URL, such as redis://127.0.0.1:6379.',
    ],
    [
      ['rotate', '--redis', 'http://127.0.0.1:6379'],
      '--redis must be a redis:// or rediss:// URL, such as redis://127.0.0.1:6379.',
    ],
    [
      ['rotate', '--redis', '127.0.0.1:6379'],
      '--redis must be a redis:// or rediss:// URL, such as redis://127.0.0.1:6379.',
    ],
    [['token', '--redis', 'redis://127.0.0.1:1', '--redis-key', ''], '--redis-key must not be empty.'],
    [
      ['token', '--redis', 'redis://127.0.0.1:1/apps'],
      '--redis: the path of the URL is a database number, such as redis://127.0.0.1:6379/0.',
    ],
    [['check'], 'check takes exactly one <base-url>.'],
    [['check', 'http://127.0.0.1:1', 'http://127.0.0.1:2', '--token', 't'], 'check takes exactly one <base-url>.'],
    [['check', 'http://127.0.0.1:1'], 'check needs --token <t> or --token-env <NAME>.'],
    [['check', 'http://127.0.0.1:1', '--token', ' '], '--token must not be empty.'],
    [
      ['check', 'http://127.0.0.1:1', '--token-env', 'LAUNCHER_AUTH_SURELY_UNSET'],
      '--token-env: the environment variable LAUNCHER_AUTH_SURELY_UNSET is not set.',
    ],
    [
      ['check', 'http://127.0.0.1:1', '--token-env', 'LAUNCHER_AUTH_CLI_TEST_EMPTY'],
      '--token-env: the environment variable LAUNCHER_AUTH_CLI_TEST_EMPTY is empty.',
    ],
    [
      ['check', 'http://127.0.0.1:1', '--token', 't', '--previous-env', 'LAUNCHER_AUTH_CLI_TEST_EMPTY'],
      '--previous-env: the environment variable LAUNCHER_AUTH_CLI_TEST_EMPTY is empty.',
    ],
    [
      ['check', 'http://127.0.0.1:1', '--token', 't', '--token-env', 'HOME'],
      'give either --token or --token-env, not both.',
    ],
    [['check', 'not-a-url', '--token', 't'], '<base-url> must be an absolute http(s) URL.'],
    [['check', 'ftp://127.0.0.1/', '--token', 't'], '<base-url> must be an absolute http(s) URL.'],
    [['check', 'http://u:p@127.0.0.1:1', '--token', 't'], '<base-url> must not contain a user name or password.'],
    [
      ['check', 'http://127.0.0.1:1', '--token', 't', '--path', 'apps'],
      '--path must be a path that starts with a single "/" and has no spaces, backslashes, "?" or "#".',
    ],
    [
      ['check', 'http://127.0.0.1:1', '--token', 't', '--health-path', '/he alth'],
      '--health-path must be a path that starts with a single "/" and has no spaces, backslashes, "?" or "#".',
    ],
    ...['soon', '0', '1.5', '1e3', '600001', '3000000000'].map((timeout) => [
      ['check', 'http://127.0.0.1:1', '--token', 't', '--timeout', timeout],
      '--timeout must be a whole number of milliseconds from 1 to 600000.',
    ]),
  ])(
    '%j is a usage error (exit 2): one line that says what is wrong, and where to read more',
    async (argv, message) => {
      process.env.LAUNCHER_AUTH_CLI_TEST_EMPTY = ' ';
      onTestFinished(() => void delete process.env.LAUNCHER_AUTH_CLI_TEST_EMPTY);
      const { code, out, err } = await run(...(argv as string[]));
      expect(code).toBe(EXIT.usage);
      expect(code).toBe(2);
      expect(out).toBe('');
      expect(err).toBe(`launcher-auth: ${message as string} See launcher-auth --help.\n`);
    },
  );

  it.runIf(process.platform !== 'win32' && (statSync('/tmp').mode & 0o1022) === 0o1022)(
    'a secret file directly in /tmp: exit 3, the hint is a private folder, never a chmod of /tmp',
    async () => {
      const path = `/tmp/launcher-auth-cli-${process.pid}-${Date.now()}.json`;
      const result = await run('token', '--store', path, '--init');
      expect(result).toMatchObject({ code: EXIT.store, out: '' });
      expect(result.err).toContain(
        `launcher-auth: The folder /tmp that holds the secret file ${path} is writable by group or others`,
      );
      expect(result.err).toContain('Keep the secret in a private folder of your own instead');
      expect(result.err.includes('chmod')).toBe(false);
      expect(existsSync(path)).toBe(false);
    },
  );

  it.each([
    ['user:pw@', 'redis://launcher:Pw-4f9e2c@127.0.0.1:PORT/0'],
    [':pw@', 'redis://:Pw-4f9e2c@127.0.0.1:PORT'],
    ['rediss, user:pw@', 'rediss://default:Pw-4f9e2c@127.0.0.1:PORT'],
  ])(
    '--redis with a password (%s) is refused before connecting: exit 2, one line naming --redis-env, the password nowhere',
    async (_case, template) => {
      // A listener in place of Redis counts connection attempts; it closes each one at once, so a CLI that did
      // connect would fail there (exit 3), after the count went up.
      let connections = 0;
      const server = createNetServer((socket) => {
        connections++;
        socket.destroy();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
      const url = template.replace('PORT', String((server.address() as AddressInfo).port));
      for (const command of ['token', 'rotate']) {
        const result = await run(command, '--redis', url, ...(command === 'token' ? ['--init'] : []));
        expect(result).toMatchObject({ code: EXIT.usage, out: '' });
        expect(result.err).toBe(
          'launcher-auth: --redis: a password on the command line is visible to every local user; put the URL in an ' +
            'environment variable and give its name with --redis-env <NAME>. See launcher-auth --help.\n',
        );
        const printed = result.out + result.err;
        expect(printed.includes('Pw-4f9e2c')).toBe(false);
        expect(printed.includes(`${new URL(url).username}:Pw-4f9e2c`)).toBe(false);
        expect(printed.includes('@127.0.0.1')).toBe(false);
      }
      expect(connections).toBe(0);
    },
  );

  it('a folder as --store is a usage error that asks for the path of a file, for token and rotate alike', async () => {
    for (const command of ['token', 'rotate']) {
      const { code, out, err } = await run(command, '--store', folder);
      expect(code).toBe(EXIT.usage);
      expect(out).toBe('');
      expect(err).toBe(
        `launcher-auth: --store needs the path of the secret file, not a folder: ${folder} is a folder. See launcher-auth --help.\n`,
      );
      expect(err).not.toContain('backup');
    }
  });

  it('never echoes a stray argument or an unknown command, which could be a pasted token', async () => {
    const pasted = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2VjcmV0LXRoYXQtbXVzdC1ub3QtYmUtZWNob2Vk';
    for (const argv of [[pasted], ['token', '--store', 'x', pasted], ['rotate', '--store', 'x', pasted]]) {
      const { code, out, err } = await run(...argv);
      expect(code).toBe(EXIT.usage);
      expect((out + err).includes(pasted)).toBe(false);
    }
  });
});

describe('launcher-auth check', () => {
  it('exits 0 against a host wired with withAuth, one ok line per case, no token printed', async () => {
    await run('token', '--store', store, '--init');
    const authority = await openAuthority();
    const previous = authority.issue();
    const token = await authority.rotate();
    const url = await listen(withAuth(authority, (_req, res) => res.end('ok')));
    const result = await run(
      'check',
      url,
      '--token',
      token,
      '--previous',
      previous,
      '--path',
      '/apps',
      '--health-path',
      '/health',
    );
    expect(result.code).toBe(EXIT.ok);
    expect(result.err).toBe('');
    expect(verdicts(result.out)).toEqual({ ok: 13, fail: [] });
    expect(result.out).toContain(
      'ok    GET /apps without Authorization: expected 401, empty body, WWW-Authenticate: Bearer; got 401, body 0 bytes\n',
    );
    expect(result.out).toContain(
      'ok    GET /apps with the current token: expected accepted (not 401/403/5xx); got 200, body 2 bytes\n',
    );
    expect(result.out.endsWith('13 passed, 0 failed\n')).toBe(true);
    expect(result.raw().out.includes(token) || result.raw().out.includes(previous)).toBe(false);
    expect(printsNoToken(result)).toBe(true);
  });

  it('exits 1 with FAIL lines against a host that exempts /health by prefix', async () => {
    await run('token', '--store', store, '--init');
    const authority = await openAuthority();
    const token = authority.issue();
    const url = await listen(async (req, res) => {
      if ((req.url ?? '').startsWith('/health')) return void res.end('ok');
      const result = await authority.authenticate(req.headersDistinct.authorization);
      res.writeHead(result.ok ? 200 : 401, { 'www-authenticate': 'Bearer', 'content-length': '0' });
      res.end();
    });
    process.env.LAUNCHER_AUTH_CLI_TEST_TOKEN = token;
    onTestFinished(() => void delete process.env.LAUNCHER_AUTH_CLI_TEST_TOKEN);
    const checked = await run('check', url, '--token-env', 'LAUNCHER_AUTH_CLI_TEST_TOKEN');
    const { code, out } = checked;
    expect(printsNoToken(checked)).toBe(true);
    expect(code).toBe(EXIT.checkFailed);
    expect(verdicts(out).fail).toEqual([
      'FAIL  POST /health without Authorization: expected 401, empty body, WWW-Authenticate: Bearer; got 200, body 2 bytes (expected status 401, got 200)',
      'FAIL  GET /health/ without Authorization: expected 401, empty body, WWW-Authenticate: Bearer; got 200, body 2 bytes (expected status 401, got 200)',
      'FAIL  GET /healthz without Authorization: expected 401, empty body, WWW-Authenticate: Bearer; got 200, body 2 bytes (expected status 401, got 200)',
      'FAIL  GET /health/x without Authorization: expected 401, empty body, WWW-Authenticate: Bearer; got 200, body 2 bytes (expected status 401, got 200)',
    ]);
    expect(out.endsWith('8 passed, 4 failed\n')).toBe(true);
  });

  it('exits 1 against a host whose 401 carries a JSON body', async () => {
    await run('token', '--store', store, '--init');
    const authority = await openAuthority();
    const url = await listen(async (req, res) => {
      if (req.method === 'GET' && req.url === '/health') return void res.end('ok');
      const result = await authority.authenticate(req.headersDistinct.authorization);
      if (result.ok) return void res.end('ok');
      res.writeHead(401, { 'www-authenticate': 'Bearer', 'content-type': 'application/json' });
      res.end('{"error":"unauthorized"}');
    });
    const checked = await run('check', url, '--token', authority.issue());
    const { code, out } = checked;
    expect(printsNoToken(checked)).toBe(true);
    expect(code).toBe(EXIT.checkFailed);
    expect(out).toContain(
      'FAIL  GET / without Authorization: expected 401, empty body, WWW-Authenticate: Bearer; got 401, body 24 bytes (the 401 has a body of 24 bytes; it must be empty)\n',
    );
    expect(out.endsWith('2 passed, 10 failed\n')).toBe(true);
  });

  it('exits 1 when nothing answers, with one line that says so (no table of identical failures)', async () => {
    // A port that was free a moment ago, and where nothing listens any more.
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const { code, out, err } = await run('check', `${url}/api/?q=1#f`, '--token', 'x.y.z', '--timeout', '2000');
    expect(code).toBe(EXIT.checkFailed);
    expect(out).toBe('');
    expect(err).toMatch(
      new RegExp(
        `^launcher-auth: nothing answers at ${url}/api: is the launcher running\\? \\(connect ECONNREFUSED [^)]+\\)\\n$`,
      ),
    );
  });

  it('against a host that accepts and never answers, ends by the one --timeout deadline with that line', async () => {
    const sockets = new Set<Socket>();
    let connections = 0;
    /** How many connections had come when the CLI first gave one up. */
    let beforeFirstClose: number | undefined;
    const silent = createNetServer((socket) => {
      connections += 1;
      socket.once('close', () => (beforeFirstClose ??= connections));
      sockets.add(socket);
      socket.resume();
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    onTestFinished(
      () =>
        new Promise<void>((resolve) => {
          silent.close(() => resolve());
          for (const socket of sockets) socket.destroy();
        }),
    );
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const { code, out, err } = await run('check', url, '--token', 'x.y.z', '--timeout', '1500');
    expect(code).toBe(EXIT.checkFailed);
    expect(out).toBe('');
    expect(err).toBe(
      `launcher-auth: nothing answers at ${url}: is the launcher running? (no complete answer within 1500 ms)\n`,
    );
    expect(connections).toBe(12);
    // One deadline for the whole run: every case had connected before the first was given up (one after another,
    // each with its own deadline, one case would have).
    expect(await until(() => beforeFirstClose !== undefined)).toBe(true);
    expect(beforeFirstClose).toBe(12);
  });

  it('a refused token gets a hint to copy it again from the settings', async () => {
    await run('token', '--store', store, '--init');
    const authority = await openAuthority();
    const stale = authority.issue();
    await authority.rotate();
    const url = await listen(withAuth(authority, (_req, res) => res.end('ok')));
    const checked = await run('check', url, '--token', stale, '--path', '/apps');
    expect(checked.code).toBe(EXIT.checkFailed);
    expect(verdicts(checked.out).fail).toEqual([
      "FAIL  GET /apps with the current token: expected accepted (not 401/403/5xx); got 401, body 0 bytes (expected the request to pass, got 401: the token was refused; copy it from the launcher's settings again (was it regenerated?))",
    ]);
    expect(printsNoToken(checked)).toBe(true);
  });
});

describe('launcher-auth as a child process', () => {
  it('`node --import tsx src/cli/main.ts` prints the token, and check passes against a real server (exit 0)', async () => {
    const runChild = (args: string[], env: NodeJS.ProcessEnv = {}): Promise<Result> =>
      new Promise((resolve, reject) => {
        const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
          cwd: root,
          env: { ...process.env, ...env },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        let err = '';
        child.stdout.on('data', (chunk: Buffer) => void (out += chunk.toString('utf8')));
        child.stderr.on('data', (chunk: Buffer) => void (err += chunk.toString('utf8')));
        child.on('error', reject);
        child.on('close', (code) => resolve(resultOf(code, out, err)));
      });

    const printed = await runChild(['token', '--store', store, '--init']);
    await rememberKey();
    expect(printed.code).toBe(0);
    expect(printed.err).toBe('');
    const authority = await openAuthority();
    expect(printed.out).toBe('<token>\n');
    expect(printed.raw().out).toBeSameToken(`${authority.issue()}\n`);

    const previous = authority.issue();
    const token = await authority.rotate();
    await rememberKey();
    const url = await listen(withAuth(authority, (_req, res) => res.end('ok')));
    const checked = await runChild(['check', url, '--token-env', 'T', '--previous-env', 'P', '--path', '/apps'], {
      T: token,
      P: previous,
    });
    expect(checked.code).toBe(0);
    expect(checked.err).toBe('');
    expect(verdicts(checked.out)).toEqual({ ok: 13, fail: [] });
    expect(checked.out.endsWith('13 passed, 0 failed\n')).toBe(true);
    expect(checked.raw().out.includes(token) || checked.raw().out.includes(previous)).toBe(false);
    expect(printsNoToken(checked)).toBe(true);
  });
});

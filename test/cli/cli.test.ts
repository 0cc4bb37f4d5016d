// The launcher-auth command: in-process through main(), and once as a real child process against a live host.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileSecretStore, TokenAuthority } from 'launcher-auth';
import { withAuth } from 'launcher-auth/node';
import { EXIT, main } from '../../src/cli/main.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
let folder = '';
let store = '';
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'launcher-auth-cli-'));
  store = join(folder, 'data', 'secret.json');
});
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(argv, { stdout: (text) => (out += text), stderr: (text) => (err += text) });
  return { code, out, err };
}

/** Every spelling of the stored key that could leak: base64url (as stored), base64, hex. */
async function keySpellings(): Promise<string[]> {
  const { key } = JSON.parse(await readFile(store, 'utf8')) as { key: string };
  const bytes = Buffer.from(key, 'base64url');
  return [key, bytes.toString('base64'), bytes.toString('hex')];
}

async function leaks(...outputs: string[]): Promise<boolean> {
  const spellings = await keySpellings();
  return outputs.some((text) => spellings.some((spelling) => text.includes(spelling)));
}

describe('launcher-auth token / rotate', () => {
  it('token without --init on a missing file is a store error naming the path, and creates nothing', async () => {
    const { code, out, err } = await run('token', '--store', store);
    expect(code).toBe(EXIT.store);
    expect(out).toBe('');
    expect(err).toContain(store);
    expect(err).toContain('--init');
    await expect(stat(store)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('token --init creates the file 0600 and prints the token the library issues; again without --init, the same', async () => {
    const first = await run('token', '--store', store, '--init');
    expect(first.code).toBe(EXIT.ok);
    expect(((await stat(store)).mode & 0o777).toString(8)).toBe('600');
    const authority = await TokenAuthority.open({ store: new FileSecretStore(store) });
    expect(first.out === `${authority.issue()}\n`).toBe(true);
    await authority.close();
    const second = await run('token', '--store', store);
    expect(second.code).toBe(EXIT.ok);
    expect(second.out === first.out).toBe(true);
    expect(await leaks(first.out, first.err, second.out, second.err)).toBe(false);
  });

  it('rotate prints a new token that a running authority on the same file follows; the old one is refused', async () => {
    await run('token', '--store', store, '--init');
    const running = await TokenAuthority.open({ store: new FileSecretStore(store) });
    const old = running.issue();
    const followed = new Promise<void>((resolve) => {
      const unsubscribe = running.onRotate(() => {
        unsubscribe();
        resolve();
      });
    });
    const rotated = await run('rotate', '--store', store);
    await followed;
    expect(rotated.code).toBe(EXIT.ok);
    const fresh = rotated.out.trim();
    expect(fresh === old).toBe(false);
    expect((await running.verify(fresh)).ok).toBe(true);
    expect((await running.verify(old)).ok).toBe(false);
    expect(await leaks(rotated.out, rotated.err)).toBe(false);
    await running.close();
  });

  it('rotate on a missing file is a store error; a damaged file is a store error naming the path', async () => {
    expect((await run('rotate', '--store', store)).code).toBe(EXIT.store);
    await run('token', '--store', store, '--init');
    const { writeFile } = await import('node:fs/promises');
    await writeFile(store, '{"version":1,', { mode: 0o600 });
    const damaged = await run('token', '--store', store);
    expect(damaged.code).toBe(EXIT.store);
    expect(damaged.err).toContain(store);
    expect(damaged.err).toContain('not valid JSON');
  });
});

describe('launcher-auth usage', () => {
  it('--help prints the usage with the exit codes; no command is a usage error', async () => {
    const help = await run('--help');
    expect(help.code).toBe(EXIT.ok);
    expect(help.out).toContain('Exit codes: 0 success; 1 a check failed; 2 usage error; 3');
    expect((await run()).code).toBe(EXIT.usage);
    expect((await run('token', '--help')).code).toBe(EXIT.ok);
  });

  it('--version prints the package version', async () => {
    const manifest = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { version: string };
    expect(await run('--version')).toEqual({ code: 0, out: `${manifest.version}\n`, err: '' });
  });

  it.each([
    [['bogus']],
    [['token']],
    [['token', '--store', 'x', '--unknown']],
    [['rotate', '--store', 'x', '--init']],
    [['check']],
    [['check', 'http://127.0.0.1:1']],
    [['check', 'http://127.0.0.1:1', '--token-env', 'LAUNCHER_AUTH_SURELY_UNSET']],
    [['check', 'not-a-url', '--token', 't']],
  ])('%j is a usage error', async (argv) => {
    const { code, err } = await run(...argv);
    expect(code).toBe(EXIT.usage);
    expect(err).toContain('Usage:');
  });
});

describe('launcher-auth check', () => {
  it('passes against a host wired with withAuth, as a real child process, printing no token', async () => {
    await run('token', '--store', store, '--init');
    const authority = await TokenAuthority.open({ store: new FileSecretStore(store) });
    const previous = authority.issue();
    const token = await authority.rotate();
    const server = createServer(withAuth(authority, (_req, res) => res.end('ok')));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const loader = pathToFileURL(join(root, 'node_modules/tsx/dist/loader.mjs')).href;
      const child = spawn(
        process.execPath,
        ['--import', loader, join(root, 'src/cli/main.ts'), 'check', url, '--token-env', 'T', '--previous-env', 'P'],
        { env: { ...process.env, T: token, P: previous, TSX_TSCONFIG_PATH: join(root, 'tsconfig.json') }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
      child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      expect(code).toBe(0);
      expect(out).toContain('12 passed, 0 failed');
      expect(out.split('\n').filter((line) => line.startsWith('ok  ')).length).toBe(12);
      expect(out.includes(token) || out.includes(previous)).toBe(false);
      expect(await leaks(out)).toBe(false);
    } finally {
      await new Promise((resolve) => server.close(resolve));
      await authority.close();
    }
  });

  it('exits 1 with a FAIL line against a host that exempts /health by prefix', async () => {
    const authority = await TokenAuthority.open({ store: new FileSecretStore(store) });
    const server = createServer(async (req, res) => {
      if ((req.url ?? '').startsWith('/health')) return void res.end('ok');
      const result = await authority.authenticate(req.headersDistinct.authorization);
      res.writeHead(result.ok ? 200 : 401, { 'www-authenticate': 'Bearer', 'content-length': '0' });
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const { code, out } = await run('check', url, '--token', authority.issue());
      expect(code).toBe(EXIT.checkFailed);
      expect(out).toMatch(/^FAIL {2}GET \/healthz without Authorization: expected 401, empty body; got 200/m);
      expect(out).toContain('7 passed, 4 failed');
      expect(out.includes(authority.issue())).toBe(false);
    } finally {
      await new Promise((resolve) => server.close(resolve));
      await authority.close();
    }
  });
});

// The library on Bun and on Deno (both from this repository's npm dev dependencies): check.ts runs the fetch
// adapter and launcher-auth/hono on each runtime's own server, the file store, and revocation. Deno gets the narrowest
// permissions that work: the adapters need only loopback; the file store needs to read (it checks every folder
// up to `/`), to write its own folder, and the user id (the owner check). The README's Bun.serve and Deno.serve
// snippets run as written, each on a free port (PORT unset), and the Deno one is typechecked by `deno check`.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import { get } from '../support/get.js';
import { deadline } from '../support/poll.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHECK = 'test/runtimes/check.ts';
const BUN = join(ROOT, 'node_modules/.bin/bun');
const DENO = join(ROOT, 'node_modules/.bin/deno');
const folders: string[] = [];
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

interface Ran {
  code: number | null;
  out: string;
  err: string;
}

const ENV = {
  PATH: process.env.PATH ?? '',
  HOME: process.env.HOME ?? ROOT,
  DENO_NO_UPDATE_CHECK: '1',
  DO_NOT_TRACK: '1',
  NO_COLOR: '1',
};

function run(command: string, args: string[]): Promise<Ran> {
  if (!existsSync(command))
    throw new Error(`${command} is missing: run \`npm ci\` (bun and deno are dev dependencies).`);
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: ROOT,
      // No update check, no telemetry: the tests touch nothing but loopback.
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? ROOT,
        DENO_NO_UPDATE_CHECK: '1',
        DO_NOT_TRACK: '1',
        NO_COLOR: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => void (out += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => void (err += chunk.toString('utf8')));
    const cancel = deadline(25_000, () => child.kill('SIGKILL'));
    child.on('error', reject);
    child.on('close', (code) => {
      cancel();
      resolve({ code, out, err });
    });
  });
}

function scratch(): string {
  const folder = mkdtempSync(join(tmpdir(), 'launcher-auth-runtime-'));
  folders.push(folder);
  return folder;
}

/** Every check passed (the script stops at the first failure), as many as `part` has, and no token was printed. */
function expectPassed(ran: Ran, checks: number): void {
  expect(ran.err).toBe('');
  expect(ran.code).toBe(0);
  const lines = ran.out.trimEnd().split('\n');
  expect(lines.at(-1)).toBe('done');
  expect(lines.filter((line) => line.startsWith('ok ')).length).toBe(checks);
  expect(ran.out.includes('eyJ')).toBe(false);
}

const ADAPTER_CHECKS = 1 + 2 * 9 + 1;
const FILE_CHECKS = 1 + 5;

describe.concurrent('other runtimes', () => {
  it('bun: the fetch adapter, Hono, the file store and revocation', async () => {
    expectPassed(await run(BUN, [CHECK, 'all', scratch()]), ADAPTER_CHECKS + FILE_CHECKS - 1);
  });

  it('deno: the fetch adapter and Hono with loopback network access only', async () => {
    const ran = await run(DENO, [
      'run',
      '--no-prompt',
      '--sloppy-imports',
      '--allow-net=127.0.0.1',
      CHECK,
      'adapters',
      scratch(),
    ]);
    expectPassed(ran, ADAPTER_CHECKS);
  });

  it('deno: the file store with read access, write access to its folder only, and the user id', async () => {
    const folder = scratch();
    const ran = await run(DENO, [
      'run',
      '--no-prompt',
      '--sloppy-imports',
      '--allow-read',
      `--allow-write=${folder}`,
      '--allow-sys=uid',
      CHECK,
      'file',
      folder,
    ]);
    expectPassed(ran, FILE_CHECKS);
  });
});

/** Starts a README server snippet; resolves with the token and URL of the curl line it prints. */
function serve(command: string, args: string[], env: Record<string, string>): Promise<{ token: string; url: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, env: { ...ENV, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    onTestFinished(() => void child.kill('SIGKILL'));
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const line = /Bearer ([\w.-]+)" (http:\/\/127\.0\.0\.1:\d+\/)$/m.exec(out);
      if (line !== null) resolve({ token: line[1] as string, url: line[2] as string });
    });
    child.stderr.on('data', (chunk: Buffer) => void (out += chunk.toString('utf8')));
    child.on('error', reject);
    // A boolean-free message: the output may hold the token once the line is there, and then this never runs.
    child.on('close', (code) => reject(new Error(`the snippet exited (${code}) before printing its curl line`)));
  });
}

/** The snippet's server: the token works, no token gets the empty 401, /health is open, on a port of its own. */
async function expectServes({ token, url }: { token: string; url: string }): Promise<void> {
  expect(new URL(url).port).not.toBe('7878');
  expect(await get(url, token)).toMatchObject({
    status: 200,
    body: expect.stringMatching(/^hello, key [\w-]+\n$/) as unknown,
  });
  expect(await get(url)).toEqual({ status: 401, body: '' });
  expect(await get(new URL('/health', url).href)).toEqual({ status: 200, body: 'ok' });
}

describe("the README's runtime snippets", { timeout: 60_000 }, () => {
  it('Bun.serve (examples/readme/bun-serve.ts)', async () => {
    expect(existsSync(BUN)).toBe(true);
    await expectServes(await serve(BUN, ['examples/readme/bun-serve.ts'], { XDG_CONFIG_HOME: scratch() }));
  });

  it('Deno.serve (examples/readme/deno-serve.ts): deno check passes, and it serves with narrow permissions', async () => {
    const checked = await run(DENO, [
      'check',
      '--sloppy-imports',
      '--config=test/runtimes/deno-check.json',
      'examples/readme/deno-serve.ts',
    ]);
    expect({ code: checked.code, err: checked.err.replace(/^Check .*\n/m, '') }).toEqual({ code: 0, err: '' });
    const folder = scratch();
    const map = join(folder, 'import-map.json');
    const imports = {
      'launcher-auth': join(ROOT, 'src/index.ts'),
      'launcher-auth/fetch': join(ROOT, 'src/adapters/fetch.ts'),
    };
    writeFileSync(map, JSON.stringify({ imports }));
    const args = [
      'run',
      '--no-prompt',
      '--sloppy-imports',
      `--import-map=${map}`,
      '--allow-net=127.0.0.1',
      '--allow-env=PORT,XDG_CONFIG_HOME',
    ];
    args.push('--allow-read', `--allow-write=${folder}`, '--allow-sys=uid,homedir', 'examples/readme/deno-serve.ts');
    await expectServes(await serve(DENO, args, { XDG_CONFIG_HOME: folder }));
  });
});

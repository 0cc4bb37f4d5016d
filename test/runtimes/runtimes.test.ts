// The library on Bun and on Deno (both from this repository's npm dev dependencies): check.ts runs the fetch
// adapter and launcher-auth/hono on each runtime's own server, the file store, and revocation. Deno gets the narrowest
// permissions that work: the adapters need only loopback; the file store needs to read (it checks every folder
// up to `/`), to write its own folder, and the user id (the owner check).
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

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

function run(command: string, args: string[]): Promise<Ran> {
  if (!existsSync(command)) throw new Error(`${command} is missing: run \`npm ci\` (bun and deno are dev dependencies).`);
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: ROOT,
      // No update check, no telemetry: the tests touch nothing but loopback.
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? ROOT, DENO_NO_UPDATE_CHECK: '1', DO_NOT_TRACK: '1', NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => void (out += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => void (err += chunk.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), 25_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
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
  expect(/eyJ/.test(ran.out)).toBe(false);
}

const ADAPTER_CHECKS = 1 + 2 * 9 + 1;
const FILE_CHECKS = 1 + 5;

describe.concurrent('other runtimes', () => {
  it('bun: the fetch adapter, Hono, the file store and revocation', async () => {
    expectPassed(await run(BUN, [CHECK, 'all', scratch()]), ADAPTER_CHECKS + FILE_CHECKS - 1);
  });

  it('deno: the fetch adapter and Hono with loopback network access only', async () => {
    const ran = await run(DENO, ['run', '--no-prompt', '--sloppy-imports', '--allow-net=127.0.0.1', CHECK, 'adapters', scratch()]);
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

// The guide's NestJS recipes (examples/readme/nest-express.ts, nest-fastify.ts) run as written, with tsx and the
// decorators' tsconfig: each listens on a free port (PORT unset), prints a curl line whose token works, and
// answers the empty 401 without it.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it, onTestFinished } from 'vitest';
import { get } from '../support/get.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TSX_LOADER = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;

/** Starts the recipe in an empty folder; resolves with the token and URL of its curl line. */
async function start(name: string): Promise<{ token: string; url: string }> {
  const cwd = await mkdtemp(join(tmpdir(), 'launcher-auth-nest-'));
  onTestFinished(() => rm(cwd, { recursive: true, force: true }));
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TSX_TSCONFIG_PATH: join(ROOT, 'examples/nest/tsconfig.json'),
    XDG_CONFIG_HOME: cwd,
  };
  delete env['PORT'];
  const child = spawn(process.execPath, ['--import', TSX_LOADER, join(ROOT, 'examples/readme', name)], {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  onTestFinished(() => void child.kill('SIGKILL'));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const line = /Bearer ([\w.-]+)" (http:\/\/127\.0\.0\.1:\d+\/apps)$/m.exec(out);
      if (line !== null) resolve({ token: line[1] as string, url: line[2] as string });
    });
    child.on('close', (code) => reject(new Error(`${name} exited (${code}) before printing its curl line`)));
  });
}

describe('the NestJS recipes, run', { timeout: 60_000 }, () => {
  it.each(['nest-express.ts', 'nest-fastify.ts'])('%s prints a curl line whose token works', async (name) => {
    const { token, url } = await start(name);
    expect(new URL(url).port).not.toBe('7878');
    const answer = await get(url, token);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body)).toMatchObject({ apps: ['editor', 'terminal'] });
    expect(await get(url)).toEqual({ status: 401, body: '' });
    expect(await get(new URL('/health', url).href)).toEqual({ status: 200, body: 'ok' });
  });
});

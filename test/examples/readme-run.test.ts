// Runs the README's code blocks (examples/readme/*.ts) as a reader would: each in an empty folder, with tsx.
// They listen on the README's fixed port 7878, so they run one after another in this one file.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { KeychainSecretStore, type Keychain } from '../../examples/readme/secret-store.js';
import { WebSocket } from 'ws';
import { FileSecretStore, TokenAuthority } from 'launcher-auth';

const root = fileURLToPath(new URL('../../', import.meta.url));
// tsx's loader by path: `--import tsx` would be resolved from the child's (empty) working folder.
const tsxLoader = pathToFileURL(join(root, 'node_modules/tsx/dist/loader.mjs')).href;
const running: ChildProcess[] = [];
const folders: string[] = [];

afterEach(async () => {
  for (const child of running.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await gone;
    }
  }
  for (const folder of folders.splice(0)) await rm(folder, { recursive: true, force: true });
});

async function run(name: string): Promise<{ child: ChildProcess; output: () => string; exited: Promise<number | null> }> {
  const cwd = await mkdtemp(join(tmpdir(), 'launcher-auth-readme-'));
  folders.push(cwd);
  // One process (node with tsx's loader), so that killing it frees the port for the next block.
  const child = spawn(process.execPath, ['--import', tsxLoader, join(root, 'examples/readme', name)], {
    cwd,
    env: { ...process.env, TSX_TSCONFIG_PATH: join(root, 'tsconfig.json') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.push(child);
  let text = '';
  child.stdout?.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => text, exited };
}

function get(path: string, token?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: 7878, path, headers: token === undefined ? {} : { authorization: `Bearer ${token}` } },
      (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.setTimeout(5_000, () => req.destroy(new Error('timed out')));
    req.end();
  });
}

async function until<T>(probe: () => Promise<T | undefined> | T | undefined, what: string): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const value = await Promise.resolve(probe()).catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('README code blocks, run', { timeout: 60_000 }, () => {
  it('quick-start.ts prints what its comments promise', async () => {
    const { output, exited } = await run('quick-start.ts');
    expect(await exited).toBe(0);
    expect(output().trim().split('\n')).toEqual(['true', 'true', 'false true']);
  });

  it.each(['node.ts', 'express.ts', 'fastify.ts', 'hono.ts', 'hono-auth.ts', 'koa.ts'])('%s serves: the printed curl line works', async (name) => {
    const { output } = await run(name);
    const token = await until(() => /Bearer ([\w.-]+)"/.exec(output())?.[1], 'the curl line');
    const path = await until(() => / (http:\/\/127\.0\.0\.1:7878\/\S*)$/m.exec(output())?.[1], 'the URL');
    const url = new URL(path);
    expect((await get(url.pathname, token)).status).toBe(200);
    expect(await get(url.pathname)).toEqual({ status: 401, body: '' });
    if (name !== 'node.ts') expect((await get('/health')).status).toBe(200);
  });

  it('long-lived.ts answers /health and refuses the event stream without a token', async () => {
    await run('long-lived.ts');
    expect(await until(() => get('/health'), 'the server')).toEqual({ status: 200, body: 'ok' });
    expect(await get('/events')).toEqual({ status: 401, body: '' });
  });

  it('conformance.ts run against nothing exits 1 and prints why each server case failed', async () => {
    // Nothing listens on 7878 here: every block before this one was killed, and the port is the README's.
    const { output, exited } = await run('conformance.ts');
    expect(await exited).toBe(1);
    const lines = output().trim().split('\n');
    const failures = lines.filter((line) => line.startsWith('FAIL'));
    expect(failures.length).toBe(13);
    for (const line of failures) expect(line).toMatch(/^FAIL {2}\S.*: connect ECONNREFUSED 127\.0\.0\.1:7878$/);
    expect(output()).not.toMatch(/undefined undefined|: undefined$/m);
    expect(lines.filter((line) => line.startsWith('ok    ')).length).toBeGreaterThan(0); // the store's clauses
  });

  it('secret-store.ts keeps a record through a keychain and serves TokenAuthority', async () => {
    const entries = new Map<string, string>();
    const keychain: Keychain = {
      getPassword: async (service, account) => entries.get(`${service}/${account}`) ?? null,
      setPassword: async (service, account, password) => void entries.set(`${service}/${account}`, password),
    };
    const first = await TokenAuthority.open({ store: new KeychainSecretStore(keychain) });
    const again = await TokenAuthority.open({ store: new KeychainSecretStore(keychain) });
    expect(entries.size).toBe(1);
    expect(first.issue() === again.issue()).toBe(true);
    await first.close();
    await again.close();
  });

  it('browser-websocket.ts opens a socket for the token entry, with its own protocol, and refuses one without', async () => {
    const { output } = await run('browser-websocket.ts');
    await until(() => (output().includes('ws://127.0.0.1:7878/') ? true : undefined), 'the server');
    // The block's secret file, in its working folder: the token a settings page would show.
    const reader = await TokenAuthority.open({ store: new FileSecretStore(join(folders.at(-1) as string, '.data/secret.json')) });
    const token = reader.issue();
    const keyId = reader.keyId;
    await reader.close();
    const opened = await new Promise<{ protocol: string; first: string }>((resolve, reject) => {
      const ws = new WebSocket('ws://127.0.0.1:7878/', ['launcher.v1', `authorization.bearer.${token}`]);
      ws.once('message', (data) => {
        resolve({ protocol: ws.protocol, first: String(data) });
        ws.close();
      });
      ws.once('error', reject);
    });
    expect(opened).toEqual({ protocol: 'launcher.v1', first: `hello, key ${keyId}` });
    const refused = await new Promise<number>((resolve, reject) => {
      const ws = new WebSocket('ws://127.0.0.1:7878/', ['launcher.v1']);
      ws.once('unexpected-response', (req, res) => {
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      ws.once('open', () => reject(new Error('opened without a token')));
    });
    expect(refused).toBe(401);
  });
});

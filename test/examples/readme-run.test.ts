// Runs the README's code blocks (examples/readme/*.ts) as a reader would: each in an empty folder, with tsx, and
// with the demo's ports 7878 and 7879 held by another listener the whole time, as when a reader's demo is running.
// Every server snippet listens on PORT, unset here: any free port, which it prints. conformance.ts, a client of the
// reader's server on 7878, is sent to a free port instead (test/support/readme-port.ts).
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { KeychainSecretStore, type Keychain } from '../../examples/readme/secret-store.js';
import { WebSocket } from 'ws';
import { FileSecretStore, TokenAuthority } from 'launcher-auth';
import { budget } from '../support/machine.js';
import { until } from '../support/poll.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
// tsx's loader by path: `--import tsx` would be resolved from the child's (empty) working folder.
const tsxLoader = pathToFileURL(join(root, 'node_modules/tsx/dist/loader.mjs')).href;
const readmePort = pathToFileURL(join(root, 'test/support/readme-port.ts')).href;
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

/** The demo's ports that this file holds; `elsewhere`, those another program held already. */
const holders: Array<{ port: number; server: Server }> = [];
const elsewhere: number[] = [];

beforeAll(async () => {
  for (const port of [7878, 7879]) {
    // A plain answer for whatever else on this machine calls the demo meanwhile.
    const holder = { port, server: createServer((_req, res) => res.writeHead(503).end()) };
    const error = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
      holder.server.once('error', resolve).listen(port, '127.0.0.1', () => resolve(undefined));
    });
    if (error === undefined) holders.push(holder);
    // EADDRINUSE: already held by another program (a running demo), which is just as much in the way.
    else if (error.code === 'EADDRINUSE') elsewhere.push(port);
    else throw error;
  }
});

afterAll(async () => {
  for (const holder of holders.splice(0)) await new Promise((resolve) => holder.server.close(resolve));
});

/** A port that was free a moment ago. */
async function freePort(): Promise<number> {
  const server = createNetServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Where the running snippet's 7878 is: where it listens, or where nothing listens for one that connects. */
let port = 0;

interface Run {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

async function run(name: string): Promise<Run> {
  const cwd = await mkdtemp(join(tmpdir(), 'launcher-auth-readme-'));
  folders.push(cwd);
  port = await freePort();
  // One process (node with tsx's loader), so that killing it frees its port.
  const child = spawn(
    process.execPath,
    ['--import', tsxLoader, '--import', readmePort, join(root, 'examples/readme', name)],
    {
      cwd,
      // secretPath() puts the secret under XDG_CONFIG_HOME: the run's own folder, never the user's configuration.
      env: {
        ...process.env,
        TSX_TSCONFIG_PATH: join(root, 'tsconfig.json'),
        LAUNCHER_README_PORT: String(port),
        XDG_CONFIG_HOME: cwd,
        PORT: '',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
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
      { host: '127.0.0.1', port, path, headers: token === undefined ? {} : { authorization: `Bearer ${token}` } },
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

/** The first value `probe` gives (a rejection counts as none yet), polled by the suite's helper. */
async function valueOf<T>(probe: () => Promise<T | undefined> | T | undefined, what: string): Promise<T> {
  let value: T | undefined;
  const found = async (): Promise<boolean> =>
    (value = await Promise.resolve(probe()).catch(() => undefined)) !== undefined;
  expect(await until(found, 20_000, 50), `waiting for ${what}`).toBe(true);
  return value as T;
}

describe('README code blocks, run', { timeout: budget(60_000) }, () => {
  it('quick-start.ts listens on a free port, keeps its secret under secretPath(), and its curl line works', async () => {
    const { output } = await run('quick-start.ts');
    const [, token = '', url = ''] = await valueOf(
      () => /Bearer ([\w.-]+)" (http:\/\/127\.0\.0\.1:\d+\/)$/m.exec(output()) ?? undefined,
      'the curl line',
    );
    port = Number(new URL(url).port);
    expect(port).toBeGreaterThan(0);
    expect(port).not.toBe(7878);
    expect((await get('/', token)).status).toBe(200);
    expect(await get('/')).toEqual({ status: 401, body: '' });
    expect(await get('/health')).toEqual({ status: 200, body: 'ok' });
    const saved = await TokenAuthority.open({
      store: new FileSecretStore(join(folders.at(-1) as string, 'my-launcher/secret.json')),
    });
    expect(saved.issue()).toBeSameToken(token);
    await saved.close();
  });

  it('settings.ts shows the masked token, then regenerates it with a sentence to show', async () => {
    const { output, exited } = await run('settings.ts');
    expect(await exited).toBe(0);
    const lines = output().trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^Token \u2022{12}[\w-]{4} \(key [\w-]+\): ok$/);
    expect(lines[1]).toBe('regenerated: New token created: the previous token no longer works.');
  });

  it.each(['node.ts', 'express.ts', 'fastify.ts', 'hono.ts', 'hono-auth.ts', 'koa.ts'])(
    '%s serves on a free port: the printed curl line works',
    async (name) => {
      const { output } = await run(name);
      const [, token = '', path = ''] = await valueOf(
        () => /Bearer ([\w.-]+)" (http:\/\/127\.0\.0\.1:\d+\/\S*)$/m.exec(output()) ?? undefined,
        'the curl line',
      );
      const url = new URL(path);
      // PORT unset: a port of its own, never the demo's 7878 (held by this file meanwhile).
      port = Number(url.port);
      expect(port).toBeGreaterThan(0);
      expect(port).not.toBe(7878);
      expect((await get(url.pathname, token)).status).toBe(200);
      expect(await get(url.pathname)).toEqual({ status: 401, body: '' });
      if (name !== 'node.ts') expect((await get('/health')).status).toBe(200);
      expect(output()).not.toMatch(/EADDRINUSE/);
    },
  );

  it('long-lived.ts answers /health and refuses the event stream without a token', async () => {
    const { output } = await run('long-lived.ts');
    port = Number(await valueOf(() => /^http:\/\/127\.0\.0\.1:(\d+)\/$/m.exec(output())?.[1], 'the address'));
    expect(port).not.toBe(7878);
    expect(await valueOf(() => get('/health'), 'the server')).toEqual({ status: 200, body: 'ok' });
    expect(await get('/events')).toEqual({ status: 401, body: '' });
  });

  it('conformance.ts run against nothing exits 1 and prints why each server case failed', async () => {
    // Nothing listens on the port that stands in for 7878: it was free when chosen.
    const { output, exited } = await run('conformance.ts');
    expect(await exited).toBe(1);
    const lines = output().trim().split('\n');
    const failures = lines.filter((line) => line.startsWith('FAIL'));
    expect(failures.length).toBe(13);
    for (const line of failures)
      expect(line).toMatch(new RegExp(`^FAIL {2}\\S.*: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}$`));
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
    expect(first.issue()).toBeSameToken(again.issue());
    await first.close();
    await again.close();
  });

  it('browser-websocket.ts opens a socket for the token entry, with its own protocol, and refuses one without', async () => {
    const { output } = await run('browser-websocket.ts');
    port = Number(await valueOf(() => /^WebSocket on ws:\/\/127\.0\.0\.1:(\d+)\/ /m.exec(output())?.[1], 'the server'));
    expect(port).not.toBe(7878);
    // The block's secret file, in its working folder: the token a settings page would show.
    const reader = await TokenAuthority.open({
      store: new FileSecretStore(join(folders.at(-1) as string, '.data/secret.json')),
    });
    const token = reader.issue();
    const keyId = reader.keyId;
    await reader.close();
    const opened = await new Promise<{ protocol: string; first: string }>((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/`, ['launcher.v1', `authorization.bearer.${token}`]);
      ws.once('message', (data) => {
        resolve({ protocol: ws.protocol, first: (data as Buffer).toString() });
        ws.close();
      });
      ws.once('error', reject);
    });
    expect(opened).toEqual({ protocol: 'launcher.v1', first: `hello, key ${keyId}` });
    const refused = await new Promise<number>((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/`, ['launcher.v1']);
      ws.once('unexpected-response', (req, res) => {
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      ws.once('open', () => reject(new Error('opened without a token')));
    });
    expect(refused).toBe(401);
  });

  it("ran with the demo's ports held by another listener all along", () => {
    expect([...holders.map((holder) => holder.port), ...elsewhere].sort()).toEqual([7878, 7879]);
    for (const holder of holders) expect(holder.server.listening).toBe(true);
  });
});

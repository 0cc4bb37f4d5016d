// Starts every runnable example (examples/*.ts) on port 0 with a temporary data folder and holds it to what the
// README promises: open health check, empty 401, the issued token works, a rotation revokes at once.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import {
  FileSecretStore,
  MemorySecretStore,
  TokenAuthority,
  isLauncherAuthError,
  type SecretRecord,
} from 'launcher-auth';
import { checkServer } from 'launcher-auth/testing';
import { EncryptedSecretStore, start as startEncryptedStore } from '../../examples/encrypted-store.ts';
import { start as startExpress } from '../../examples/express.ts';
import { start as startFastify } from '../../examples/fastify.ts';
import { start as startHono } from '../../examples/hono.ts';
import { start as startNodeHttp } from '../../examples/node-http.ts';
import { CLOSE_TOKEN_REVOKED, start as startWebSocket } from '../../examples/websocket.ts';
import { budget } from '../support/machine.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const UNAUTHORIZED_RAW =
  'HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer realm="launcher"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n';

interface Started {
  url: string;
  authority: TokenAuthority;
  close(): Promise<void>;
}

const cleanups: Array<() => Promise<unknown>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'launcher-auth-examples-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function started(run: Promise<Started>): Promise<Started> {
  const example = await run;
  cleanups.push(() => example.close());
  return example;
}

interface Answer {
  status: number;
  headers: Headers;
  body: Buffer;
}

async function request(url: string, options: { method?: string; token?: string } = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (options.token !== undefined) headers['authorization'] = `Bearer ${options.token}`;
  const response = await fetch(url, { method: options.method ?? 'GET', headers });
  return { status: response.status, headers: response.headers, body: Buffer.from(await response.arrayBuffer()) };
}

function expectUnauthorized(answer: Answer): void {
  expect(answer.status).toBe(401);
  expect(answer.body.byteLength).toBe(0);
  expect(answer.headers.get('www-authenticate')).toBe('Bearer realm="launcher"');
  expect(answer.headers.get('content-length')).toBe('0');
}

/**
 * Sends `text` on a raw TCP connection. `until: 'end'` resolves with everything received once the server has ended
 * the connection; `until: 'head'` with the response head, as soon as it is complete (an upgraded socket stays open).
 */
function rawExchange(url: string, text: string, until: 'end' | 'head' = 'end'): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = '';
    const finish = (): void => {
      socket.destroy();
      resolve(received);
    };
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      received += chunk;
      if (until === 'head' && received.includes('\r\n\r\n')) finish();
    });
    socket.on('end', finish);
    socket.on('error', reject);
    socket.write(text);
  });
}

function upgradeRequest(path: string, token?: string): string {
  return (
    `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
    'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n' +
    (token === undefined ? '' : `Authorization: Bearer ${token}\r\n`) +
    '\r\n'
  );
}

/** A token that is well formed and properly signed, but by another authority's key. */
async function foreignToken(): Promise<string> {
  const other = await TokenAuthority.open({ store: new MemorySecretStore() });
  const token = other.issue();
  await other.close();
  return token;
}

interface HttpExample {
  name: string;
  start(options: { port: number; dataDir: string }): Promise<Started>;
  /** A protected GET route and its exact body for a fresh start. */
  protectedPath: string;
  protectedBody: string;
  /** Whether the example has `POST /api/apps/:app/launch` (whose effect shows in GET /api/running). */
  launches: boolean;
}

const HOST_KEY = new Uint8Array(randomBytes(32));

const LAUNCHER = { protectedPath: '/api/running', protectedBody: '{"running":[]}', launches: true } as const;

const HTTP_EXAMPLES: HttpExample[] = [
  { name: 'node-http', start: startNodeHttp, ...LAUNCHER },
  { name: 'express', start: startExpress, ...LAUNCHER },
  { name: 'fastify', start: startFastify, ...LAUNCHER },
  { name: 'hono', start: startHono, ...LAUNCHER },
  {
    name: 'encrypted-store',
    start: (options) => startEncryptedStore({ ...options, hostKey: HOST_KEY }),
    protectedPath: '/api/status',
    protectedBody: '{"store":"encrypted"}',
    launches: false,
  },
];

describe.each(HTTP_EXAMPLES)('examples/$name.ts', (example) => {
  const boot = async (dataDir?: string): Promise<Started> =>
    started(example.start({ port: 0, dataDir: dataDir ?? (await tempDir()) }));

  it('binds 127.0.0.1 on the port it was given (0: a free one)', async () => {
    const { url } = await boot();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:[1-9]\d*$/);
  });

  it('answers GET and HEAD /health without a token', async () => {
    const { url } = await boot();
    const get = await request(`${url}/health`);
    expect(get.status).toBe(200);
    expect(get.body.toString('utf8')).toBe('{"status":"ok"}');
    const head = await request(`${url}/health`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.body.byteLength).toBe(0);
  });

  it('answers the uniform empty 401 without a valid token, on known and unknown paths alike', async () => {
    const { url } = await boot();
    expectUnauthorized(await request(`${url}${example.protectedPath}`));
    expectUnauthorized(await request(`${url}${example.protectedPath}`, { token: 'not-a-jwt' }));
    expectUnauthorized(await request(`${url}${example.protectedPath}`, { token: await foreignToken() }));
    expectUnauthorized(await request(`${url}/no/such/route`));
    expectUnauthorized(await request(`${url}/health`, { method: 'POST' }));
    expectUnauthorized(await request(`${url}/health/`));
  });

  it('serves a protected route with authority.issue()', async () => {
    const { url, authority } = await boot();
    const answer = await request(`${url}${example.protectedPath}`, { token: authority.issue() });
    expect(answer.status).toBe(200);
    expect(answer.body.toString('utf8')).toBe(example.protectedBody);
  });

  // Only where the example has the route: its effect shows whether the handler ran.
  if (example.launches) {
    it('never runs the launch handler without a token', async () => {
      const { url, authority } = await boot();
      expectUnauthorized(await request(`${url}/api/apps/editor/launch`, { method: 'POST' }));
      const forged = await foreignToken();
      expectUnauthorized(await request(`${url}/api/apps/editor/launch`, { method: 'POST', token: forged }));
      const before = await request(`${url}/api/running`, { token: authority.issue() });
      expect(before.body.toString('utf8')).toBe('{"running":[]}');

      const launch = await request(`${url}/api/apps/editor/launch`, { method: 'POST', token: authority.issue() });
      expect(launch.status).toBe(202);
      expect(JSON.parse(launch.body.toString('utf8')).launched).toBe('editor');
      const after = await request(`${url}/api/running`, { token: authority.issue() });
      expect(after.body.toString('utf8')).toBe('{"running":["editor"]}');
    });
  }

  it('refuses the old token once authority.rotate() resolves, and accepts the new one', async () => {
    const { url, authority } = await boot();
    const old = authority.issue();
    expect((await request(`${url}${example.protectedPath}`, { token: old })).status).toBe(200);
    const fresh = await authority.rotate();
    expect(fresh).not.toBeSameToken(old);
    expectUnauthorized(await request(`${url}${example.protectedPath}`, { token: old }));
    expect((await request(`${url}${example.protectedPath}`, { token: fresh })).status).toBe(200);
  });

  it('passes the conformance kit (checkServer, as `launcher-auth check` runs it), with the previous token', async () => {
    const { url, authority } = await boot();
    const previous = authority.issue();
    const token = await authority.rotate();
    const report = await checkServer(url, { token, previous, path: example.protectedPath });
    expect(report.cases.filter((row) => !row.ok).map((row) => `${row.name}: ${row.detail ?? ''}`)).toEqual([]);
    expect(report.ok).toBe(true);
  });

  it('keeps its token across a restart on the same data folder', async () => {
    const dataDir = await tempDir();
    const first = await example.start({ port: 0, dataDir });
    const token = await first.authority.rotate();
    await first.close();
    const second = await boot(dataDir);
    expect(second.authority.issue()).toBeSameToken(token);
    expect((await request(`${second.url}${example.protectedPath}`, { token })).status).toBe(200);
  });
});

describe('examples/node-http.ts, started as a user would', () => {
  it('rejects start() on a busy port and leaves nothing running', async () => {
    const busy = await started(startNodeHttp({ port: 0, dataDir: await tempDir() }));
    const port = Number(new URL(busy.url).port);
    await expect(startNodeHttp({ port, dataDir: await tempDir() })).rejects.toMatchObject({ code: 'EADDRINUSE' });
  });

  it(
    'runs with one command: PORT=0 npx tsx examples/node-http.ts prints its URL and a working curl line',
    async () => {
      const dataDir = await tempDir();
      const child = spawn('npx', ['tsx', 'examples/node-http.ts'], {
        cwd: REPO,
        env: { ...process.env, PORT: '0', DATA_DIR: dataDir },
        // Its own process group: npx, tsx and node are then stopped together.
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const exited = once(child, 'exit');
      cleanups.push(async () => {
        if (child.exitCode === null && child.signalCode === null) {
          process.kill(-(child.pid as number), 'SIGTERM');
          await exited;
        }
      });

      let stdout = '';
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      // Resolves with the whole banner once the curl line is out; only the URL is ever shown on failure.
      const banner = await new Promise<string>((resolve, reject) => {
        child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
          stdout += chunk;
          if (stdout.includes('/api/running\n')) resolve(stdout);
        });
        child.once('exit', (code) => reject(new Error(`the example exited (${code}) before its banner: ${stderr}`)));
      });

      const url = /listening on (http:\/\/127\.0\.0\.1:\d+)\n/.exec(banner)?.[1];
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:[1-9]\d*$/);
      const health = await request(`${url}/health`);
      expect(health.status).toBe(200);
      expect(health.body.toString('utf8')).toBe('{"status":"ok"}');

      const curl = /Authorization: Bearer ([^"\s]+)" (\S+)\n/.exec(banner);
      expect(curl?.[2]).toBe(`${url}/api/running`);
      expect((await request(`${url}/api/running`, { token: curl?.[1] ?? '' })).status).toBe(200);
      expectUnauthorized(await request(`${url}/api/running`));

      // The secret went to DATA_DIR, private to the user.
      const mode = (await stat(join(dataDir, 'secret.json'))).mode & 0o777;
      if (process.platform !== 'win32') expect(mode).toBe(0o600);

      process.kill(-(child.pid as number), 'SIGTERM');
      const [code, signal] = await exited;
      expect(code === 0 || signal === 'SIGTERM' || code === 143).toBe(true);
    },
    budget(60_000),
  );
});

describe('examples/websocket.ts', () => {
  const boot = async (): Promise<Started & { ws: string }> => {
    const example = await started(startWebSocket({ port: 0, dataDir: await tempDir() }));
    return { ...example, ws: `${example.url.replace(/^http/, 'ws')}/events` };
  };

  /** Opens a client and resolves once its first message (the greeting) arrived. */
  async function connectClient(url: string, token: string): Promise<{ socket: WebSocket; greeting: unknown }> {
    const socket = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
    cleanups.push(async () => socket.terminate());
    const [data] = (await once(socket, 'message')) as [Buffer];
    return { socket, greeting: JSON.parse(data.toString('utf8')) };
  }

  it('answers GET /health without a token', async () => {
    const { url } = await boot();
    const answer = await request(`${url}/health`);
    expect(answer.status).toBe(200);
    expect(answer.body.toString('utf8')).toBe('{"status":"ok"}');
  });

  it('upgrades with the token, echoes, and is closed by rotate()', async () => {
    const { ws, authority } = await boot();
    const { socket, greeting } = await connectClient(ws, authority.issue());
    expect(greeting).toEqual({ hello: 'launcher', keyId: authority.keyId });

    socket.send('ping');
    const [echo] = (await once(socket, 'message')) as [Buffer];
    expect(echo.toString('utf8')).toBe('ping');

    const closed = once(socket, 'close') as Promise<[number, Buffer]>;
    await authority.rotate();
    const [code, reason] = await closed;
    expect(code).toBe(CLOSE_TOKEN_REVOKED);
    expect(reason.toString('utf8')).toBe('token regenerated');

    const again = await connectClient(ws, authority.issue());
    expect(again.greeting).toEqual({ hello: 'launcher', keyId: authority.keyId });
  });

  it('serves a request with Upgrade: h2c (curl --http2, Java HttpClient) as an ordinary request', async () => {
    const { url, authority } = await boot();
    const h2c = (path: string, token?: string): string =>
      `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n` +
      `HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n${token === undefined ? '' : `Authorization: Bearer ${token}\r\n`}\r\n`;
    const health = await rawExchange(url, h2c('/health'));
    expect(health.startsWith('HTTP/1.1 200 OK\r\n')).toBe(true);
    expect(health).toContain('{"status":"ok"}');
    const other = await rawExchange(url, h2c('/other', authority.issue()));
    expect(other.startsWith('HTTP/1.1 404 Not Found\r\n')).toBe(true);
    expect(other).toContain('{"error":"not found"}');
    const refused = await rawExchange(url, h2c('/other'));
    expect(refused.startsWith('HTTP/1.1 401 Unauthorized\r\n')).toBe(true);
    expect(refused).toContain('\r\nWWW-Authenticate: Bearer realm="launcher"\r\n');
  });

  it('answers an upgrade without a valid token with the raw 401 and closes the socket', async () => {
    const { url, authority } = await boot();
    expect(await rawExchange(url, upgradeRequest('/events'))).toBe(UNAUTHORIZED_RAW);
    expect(await rawExchange(url, upgradeRequest('/events', await foreignToken()))).toBe(UNAUTHORIZED_RAW);
    // No upgrade is exempt, not even one asked for on the health path.
    expect(await rawExchange(url, upgradeRequest('/health'))).toBe(UNAUTHORIZED_RAW);

    const old = authority.issue();
    await authority.rotate();
    expect(await rawExchange(url, upgradeRequest('/events', old))).toBe(UNAUTHORIZED_RAW);
    const upgraded = await rawExchange(url, upgradeRequest('/events', authority.issue()), 'head');
    expect(upgraded.startsWith('HTTP/1.1 101 Switching Protocols\r\n')).toBe(true);
  });
});

describe('EncryptedSecretStore (examples/encrypted-store.ts)', () => {
  const record = (): SecretRecord => ({
    id: 'example-key-1',
    key: new Uint8Array(randomBytes(32)),
    createdAt: new Date('2026-01-02T03:04:05.678Z'),
  });

  /** Every text form the key might take on disk. */
  function encodings(key: Uint8Array): string[] {
    const bytes = Buffer.from(key);
    const base64 = bytes.toString('base64');
    const hex = bytes.toString('hex');
    return [base64, base64.replace(/=+$/, ''), bytes.toString('base64url'), hex, hex.toUpperCase()];
  }

  function containsAny(text: string, key: Uint8Array): boolean {
    return encodings(key).some((encoded) => text.includes(encoded));
  }

  async function setUp(): Promise<{ path: string; store: EncryptedSecretStore }> {
    const path = join(await tempDir(), 'secret.json');
    return { path, store: new EncryptedSecretStore(new FileSecretStore(path), HOST_KEY) };
  }

  async function rejection(promise: Promise<unknown>): Promise<unknown> {
    return promise.then(
      () => new Error('expected a rejection, but it resolved'),
      (error: unknown) => error,
    );
  }

  /** Reads the sealed blob that the inner FileSecretStore keeps in its "key" field. */
  async function sealedOnDisk(path: string): Promise<{ json: Record<string, unknown>; sealed: Buffer }> {
    const json = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
    return { json, sealed: Buffer.from(json['key'] as string, 'base64url') };
  }

  it('round-trips a record, and loads undefined while empty', async () => {
    const { store } = await setUp();
    expect(await store.load()).toBeUndefined();
    const original = record();
    await store.save(original);
    const loaded = await store.load();
    expect(loaded?.id).toBe(original.id);
    expect(loaded?.createdAt.getTime()).toBe(original.createdAt.getTime());
    expect(loaded !== undefined && Buffer.from(loaded.key).equals(Buffer.from(original.key))).toBe(true);
  });

  it('keeps no form of the key on disk, and seals it with a fresh IV on every save', async () => {
    const { path, store } = await setUp();
    const original = record();
    await store.save(original);
    const first = await sealedOnDisk(path);
    expect(containsAny(JSON.stringify(first.json), original.key)).toBe(false);
    expect((await readFile(path)).includes(Buffer.from(original.key))).toBe(false);
    expect(first.sealed.byteLength).toBe(1 + 12 + 32 + 16);

    await store.save(original);
    const second = await sealedOnDisk(path);
    expect(second.sealed.subarray(1, 13).equals(first.sealed.subarray(1, 13))).toBe(false);
    expect(second.sealed.equals(first.sealed)).toBe(false);
    expect(Buffer.from((await store.load())?.key ?? []).equals(Buffer.from(original.key))).toBe(true);
  });

  it('rejects a wrong host key with a clear error that names no secret', async () => {
    const { path, store } = await setUp();
    const original = record();
    await store.save(original);
    const otherKey = new Uint8Array(randomBytes(32));
    const error = await rejection(new EncryptedSecretStore(new FileSecretStore(path), otherKey).load());
    expect(isLauncherAuthError(error, 'ERR_STORE_CORRUPT')).toBe(true);
    const message = (error as Error).message;
    expect(message).toContain('host key');
    expect(containsAny(message, original.key) || containsAny(message, HOST_KEY) || containsAny(message, otherKey)).toBe(
      false,
    );
  });

  const flip = (sealed: Buffer, index: number): void => {
    sealed.writeUInt8(sealed.readUInt8(index) ^ 0x01, index);
  };

  it.each([
    ['a bit of the ciphertext', (sealed: Buffer) => flip(sealed, 20)],
    ['a bit of the tag', (sealed: Buffer) => flip(sealed, sealed.length - 1)],
    ['a bit of the IV', (sealed: Buffer) => flip(sealed, 1)],
  ])('rejects a file with %s changed', async (_what, tamper) => {
    const { path, store } = await setUp();
    const original = record();
    await store.save(original);
    const { json, sealed } = await sealedOnDisk(path);
    tamper(sealed);
    await writeFile(path, JSON.stringify({ ...json, key: sealed.toString('base64url') }));
    const error = await rejection(store.load());
    expect(isLauncherAuthError(error, 'ERR_STORE_CORRUPT')).toBe(true);
    expect(containsAny((error as Error).message, original.key)).toBe(false);
  });

  it('rejects a sealed key moved under another id (the id is authenticated)', async () => {
    const { path, store } = await setUp();
    await store.save(record());
    const { json } = await sealedOnDisk(path);
    await writeFile(path, JSON.stringify({ ...json, id: 'example-key-2' }));
    expect(isLauncherAuthError(await rejection(store.load()), 'ERR_STORE_CORRUPT')).toBe(true);
  });

  it('rejects a record a plain store wrote, rather than taking it as sealed', async () => {
    const { path, store } = await setUp();
    await new FileSecretStore(path).save(record());
    expect(isLauncherAuthError(await rejection(store.load()), 'ERR_STORE_CORRUPT')).toBe(true);
  });

  it('refuses a host key that is not 32 bytes', () => {
    const inner = new MemorySecretStore();
    expect(() => new EncryptedSecretStore(inner, new Uint8Array(16))).toThrow(TypeError);
    expect(() => new EncryptedSecretStore(inner, new Uint8Array(33))).toThrow(TypeError);
  });

  it('works under TokenAuthority.open: token kept on reopen, rotation sealed, wrong host key refused', async () => {
    const { path, store } = await setUp();
    const first = await TokenAuthority.open({ store });
    const token = first.issue();
    expect((await first.verify(token)).ok).toBe(true);
    const rotated = await first.rotate();
    await first.close();

    const secret = await store.load();
    expect(secret).toBeDefined();
    expect(containsAny(await readFile(path, 'utf8'), secret?.key ?? new Uint8Array())).toBe(false);
    if (process.platform !== 'win32') expect((await stat(path)).mode & 0o777).toBe(0o600);

    const again = new EncryptedSecretStore(new FileSecretStore(path), HOST_KEY);
    const reopened = await TokenAuthority.open({ store: again });
    cleanups.push(() => reopened.close());
    expect(reopened.issue()).toBeSameToken(rotated);
    expect((await reopened.verify(token)).ok).toBe(false);

    const wrong = new EncryptedSecretStore(new FileSecretStore(path), new Uint8Array(randomBytes(32)));
    expect(isLauncherAuthError(await rejection(TokenAuthority.open({ store: wrong })), 'ERR_STORE_CORRUPT')).toBe(true);
  });

  it("passes the inner store's watch() through: a rotation by another authority on the file is followed", async () => {
    const { path } = await setUp();
    const open = async (): Promise<TokenAuthority> => {
      const authority = await TokenAuthority.open({
        store: new EncryptedSecretStore(new FileSecretStore(path, { pollInterval: 20 }), HOST_KEY),
      });
      cleanups.push(() => authority.close());
      return authority;
    };
    const follower = await open();
    const rotator = await open();
    const followed = new Promise<void>((resolve) => follower.onRotate(() => resolve()));
    const fresh = await rotator.rotate();
    await followed;
    expect(follower.issue()).toBeSameToken(fresh);
  });
});

describe("the runnable examples' ports", () => {
  it('each example that serves has a default port of its own, and docs/adapters.md says which', async () => {
    const ports = new Map<string, number>();
    for (const name of (await readdir(join(REPO, 'examples'))).filter((file) => file.endsWith('.ts')).sort()) {
      const found = /process\.env\.PORT \?\? (\d+)/.exec(await readFile(join(REPO, 'examples', name), 'utf8'));
      if (found !== null) ports.set(name, Number(found[1]));
    }
    expect(ports.size).toBeGreaterThanOrEqual(8);
    expect(new Set(ports.values()).size).toBe(ports.size);
    const guide = (await readFile(join(REPO, 'docs/adapters.md'), 'utf8')).replace(/\s+/g, ' ');
    const missing = [...ports].filter(
      ([name, port]) => !new RegExp(`\`(?:npx tsx examples/)?${name.replace('.', '\\.')}\` \\(${port}\\)`).test(guide),
    );
    expect(missing).toEqual([]);
  });
});

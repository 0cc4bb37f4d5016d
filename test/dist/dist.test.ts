// The built package (dist/) as users load it: `import` and `require` of the root and of every subpath, resolved
// through package.json `exports` (the package names itself). Run by `npm run test:dist` after `npm run build`.
import { spawnSync } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { createServer, type RequestListener, type Server } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import express from 'express';
import { getRequestListener } from '@hono/node-server';
import Fastify from 'fastify';
import { Hono } from 'hono';
import Koa from 'koa';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { AuthContext, TokenAuthority } from 'launcher-auth';
import type { KoaAuthState } from 'launcher-auth/koa';
import { rejectionOf } from '../support/async.js';

type Root = typeof import('launcher-auth');

interface Format {
  name: 'import' | 'require';
  root: Root;
  node: typeof import('launcher-auth/node');
  express: typeof import('launcher-auth/express');
  fastify: typeof import('launcher-auth/fastify');
  fetch: typeof import('launcher-auth/fetch');
  hono: typeof import('launcher-auth/hono');
  koa: typeof import('launcher-auth/koa');
  testing: typeof import('launcher-auth/testing');
}

const require = createRequire(import.meta.url);
const DIST = fileURLToPath(new URL('../../dist/', import.meta.url));
const SUBPATHS = ['node', 'express', 'fastify', 'fetch', 'hono', 'koa', 'testing'] as const;
/** Entries with no Format of their own: loaded, not driven. */
const OTHER_ENTRIES = ['launcher-auth/store-kit', 'launcher-auth/keyring', '@launcher-auth/redis'] as const;
const ADAPTERS = ['node', 'express', 'fastify', 'fetch', 'hono', 'koa'] as const;

let esm: Format;
let cjs: Format;

beforeAll(async () => {
  esm = {
    name: 'import',
    root: await import('launcher-auth'),
    node: await import('launcher-auth/node'),
    express: await import('launcher-auth/express'),
    fastify: await import('launcher-auth/fastify'),
    fetch: await import('launcher-auth/fetch'),
    hono: await import('launcher-auth/hono'),
    koa: await import('launcher-auth/koa'),
    testing: await import('launcher-auth/testing'),
  };
  cjs = {
    name: 'require',
    root: require('launcher-auth') as Format['root'],
    node: require('launcher-auth/node') as Format['node'],
    express: require('launcher-auth/express') as Format['express'],
    fastify: require('launcher-auth/fastify') as Format['fastify'],
    fetch: require('launcher-auth/fetch') as Format['fetch'],
    hono: require('launcher-auth/hono') as Format['hono'],
    koa: require('launcher-auth/koa') as Format['koa'],
    testing: require('launcher-auth/testing') as Format['testing'],
  };
});

const formats = (): Format[] => [esm, cjs];
const FORMAT_NAMES = ['import', 'require'] as const;
const formatNamed = (name: (typeof FORMAT_NAMES)[number]): Format => (name === 'import' ? esm : cjs);

async function opened(root: Root): Promise<TokenAuthority> {
  const authority = await root.TokenAuthority.open({ store: new root.MemorySecretStore() });
  onTestFinished(() => authority.close());
  return authority;
}

describe('resolution through package.json exports', () => {
  it('require() resolves the root and every subpath to dist/*.cjs', () => {
    expect(require.resolve('launcher-auth')).toBe(join(DIST, 'index.cjs'));
    for (const subpath of SUBPATHS) expect(require.resolve(`launcher-auth/${subpath}`)).toBe(join(DIST, `${subpath}.cjs`));
  });

  it('import resolves the root and every subpath to dist/*.js', () => {
    expect(import.meta.resolve('launcher-auth')).toBe(pathToFileURL(join(DIST, 'index.js')).href);
    for (const subpath of SUBPATHS) {
      expect(import.meta.resolve(`launcher-auth/${subpath}`)).toBe(pathToFileURL(join(DIST, `${subpath}.js`)).href);
    }
  });

  it('dist/ is loaded by Node as built, not transformed by the test runner', () => {
    expect(String(esm.root.TokenAuthority).includes('__vite_ssr')).toBe(false);
    // Two formats, two copies of the classes: what the guard below has to bridge.
    expect(esm.root.TokenAuthority === cjs.root.TokenAuthority).toBe(false);
  });

  it.each(FORMAT_NAMES)('%s: the root and each subpath export what the API names', (name) => {
    const format = formatNamed(name);
    for (const exported of ['TokenAuthority', 'MemorySecretStore', 'FileSecretStore', 'LauncherAuthError', 'isLauncherAuthError'] as const) {
      expect(typeof format.root[exported]).toBe('function');
    }
    expect(typeof format.node.withAuth).toBe('function');
    expect(typeof format.node.withUpgradeAuth).toBe('function');
    expect(typeof format.express.expressAuth).toBe('function');
    expect(typeof format.fastify.fastifyAuth).toBe('function');
    expect(typeof format.fetch.fetchAuth).toBe('function');
    expect(typeof format.hono.honoAuth).toBe('function');
    expect(typeof format.koa.koaAuth).toBe('function');
    expect(typeof format.testing.checkServer).toBe('function');
    expect(typeof format.testing.checkSecretStore).toBe('function');
  });
});

describe.each(FORMAT_NAMES)('the core through %s', (name) => {
  it('open() + verify() + rotate() on a MemorySecretStore', async () => {
    const { root } = formatNamed(name);
    const authority = await opened(root);
    const first = authority.issue();
    expect(await authority.verify(first)).toMatchObject({ ok: true, keyId: authority.keyId });
    expect(await authority.authenticate(`Bearer ${first}`)).toMatchObject({ ok: true, keyId: authority.keyId });
    expect(await authority.authenticate(undefined)).toEqual({ ok: false, reason: 'missing' });
    expect(await authority.verify('not-a-token')).toEqual({ ok: false, reason: 'malformed' });
    const second = await authority.rotate();
    expect(await authority.verify(first)).toEqual({ ok: false, reason: 'rotated' });
    expect(await authority.verify(second)).toMatchObject({ ok: true, keyId: authority.keyId });
  });

  it('open() + verify() on a FileSecretStore: the file is 0600 and a second authority issues the same token', async () => {
    const { root } = formatNamed(name);
    const dir = await mkdtemp(join(tmpdir(), 'launcher-auth-dist-'));
    onTestFinished(() => rm(dir, { recursive: true, force: true }));
    const path = join(dir, 'secret.json');
    const authority = await root.TokenAuthority.open({ store: new root.FileSecretStore(path) });
    onTestFinished(() => authority.close());
    if (process.platform !== 'win32') expect((await stat(path)).mode & 0o777).toBe(0o600);
    const again = await root.TokenAuthority.open({ store: new root.FileSecretStore(path) });
    onTestFinished(() => again.close());
    expect(again.issue()).toBeSameToken(authority.issue());
    expect(await again.verify(authority.issue())).toMatchObject({ ok: true, keyId: authority.keyId });
  });

  it('the conformance kit passes for the MemorySecretStore', async () => {
    const { root, testing } = formatNamed(name);
    const report = await testing.checkSecretStore(() => new root.MemorySecretStore());
    expect(report.cases.filter((clause) => !clause.ok)).toEqual([]);
    expect(report.ok).toBe(true);
  });
});

describe('across the two formats', () => {
  it('the same record gives the same token, accepted by both', async () => {
    const record = { id: 'dist', key: new Uint8Array(32).map((_, i) => 0x5a ^ i), createdAt: new Date('2024-05-01T12:00:00.000Z') };
    const viaImport = await esm.root.TokenAuthority.open({ store: new esm.root.MemorySecretStore(record) });
    const viaRequire = await cjs.root.TokenAuthority.open({ store: new cjs.root.MemorySecretStore(record) });
    onTestFinished(async () => {
      await viaImport.close();
      await viaRequire.close();
    });
    expect(viaImport.issue()).toBeSameToken(viaRequire.issue());
    expect(await viaRequire.verify(viaImport.issue())).toMatchObject({ ok: true, keyId: 'dist' });
  });

  it('isLauncherAuthError of either format recognizes an error of the other', async () => {
    const errors: unknown[] = [];
    for (const format of formats()) {
      const authority = await format.root.TokenAuthority.open({ store: new format.root.MemorySecretStore() });
      await authority.close();
      const error = await rejectionOf(authority.rotate());
      expect(error).toBeInstanceOf(format.root.LauncherAuthError);
      errors.push(error);
    }
    const [fromImport, fromRequire] = errors;
    expect(fromImport).not.toBeInstanceOf(cjs.root.LauncherAuthError);
    expect(cjs.root.isLauncherAuthError(fromImport, 'ERR_CLOSED')).toBe(true);
    expect(esm.root.isLauncherAuthError(fromRequire, 'ERR_CLOSED')).toBe(true);
    expect(esm.root.isLauncherAuthError(fromRequire, 'ERR_KEY_ROTATED')).toBe(false);

    const shortKey = { id: 'short', key: new Uint8Array(31), createdAt: new Date() };
    let thrown: unknown = 'nothing thrown';
    try {
      new cjs.root.MemorySecretStore(shortKey);
    } catch (error) {
      thrown = error;
    }
    expect(esm.root.isLauncherAuthError(thrown, 'ERR_INVALID_RECORD')).toBe(true);
  });
});

// ---------------------------------------------------------------------------------------------------------
// Each adapter of a format, given the root's authority, on a real loopback server (fetch: a Web Request).
// With tsup's splitting the core is one chunk per format, so the adapter works with the root's authority and
// what reaches a handler through the subpath (auth.signal's reason) is an instance of the root's error class.

async function listen(listener: RequestListener): Promise<{ url: string; server: Server }> {
  const server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/x`, server };
}

interface Answer {
  status: number;
  body: string;
  wwwAuthenticate: string | null;
}

/** Serves `GET /x` behind the adapter, counting the handler's runs and keeping what it saw as `auth`. */
async function hostFor(format: Format, adapter: (typeof ADAPTERS)[number], authority: TokenAuthority): Promise<{
  ask: (authorization?: string) => Promise<Answer>;
  seen: Array<AuthContext | undefined>;
}> {
  const seen: Array<AuthContext | undefined> = [];
  const fromResponse = async (response: Response): Promise<Answer> => ({
    status: response.status,
    body: await response.text(),
    wwwAuthenticate: response.headers.get('www-authenticate'),
  });
  const headersOf = (authorization?: string): Record<string, string> =>
    authorization === undefined ? {} : { authorization };

  if (adapter === 'fetch') {
    const guard = format.fetch.fetchAuth(authority);
    return {
      seen,
      ask: async (authorization) => {
        const result = await guard(new Request('http://127.0.0.1/x', { headers: headersOf(authorization) }));
        if (result instanceof Response) return fromResponse(result);
        seen.push(result);
        return { status: 200, body: 'ok', wwwAuthenticate: null };
      },
    };
  }

  let url: string;
  if (adapter === 'node') {
    ({ url } = await listen(
      format.node.withAuth(authority, (req, res) => {
        seen.push(req.auth);
        res.end('ok');
      }),
    ));
  } else if (adapter === 'express') {
    const app = express();
    app.use(format.express.expressAuth(authority));
    app.get(
      '/x',
      format.express.authenticated((req, res) => {
        seen.push(req.auth);
        res.send('ok');
      }),
    );
    ({ url } = await listen(app));
  } else if (adapter === 'hono') {
    const app = new Hono().use(format.hono.honoAuth(authority, { healthPath: false }));
    app.get('/x', (c) => {
      seen.push(c.get('auth'));
      return c.text('ok');
    });
    ({ url } = await listen(getRequestListener(app.fetch)));
  } else if (adapter === 'koa') {
    const app = new Koa<KoaAuthState>().use(format.koa.koaAuth(authority, { healthPath: false }));
    app.use((ctx) => {
      seen.push(ctx.state.auth);
      ctx.body = 'ok';
    });
    ({ url } = await listen(app.callback()));
  } else {
    const app = Fastify();
    onTestFinished(() => app.close());
    await app.register(format.fastify.fastifyAuth, { authority });
    app.get('/x', async (request) => {
      seen.push(request.auth);
      return 'ok';
    });
    const address = await app.listen({ port: 0, host: '127.0.0.1' });
    url = `${address}/x`;
  }
  // A host that never answers (a handler that threw) fails the test here instead of at the test's timeout.
  const ask = async (authorization?: string): Promise<Answer> =>
    fromResponse(await fetch(url, { headers: headersOf(authorization), signal: AbortSignal.timeout(5_000) }));
  return { seen, ask };
}

describe.each(FORMAT_NAMES)('the adapters through %s', (name) => {
  it.each(ADAPTERS)('%s: guards with the root authority; a rotation aborts auth.signal with the root error class', async (adapter) => {
    const format = formatNamed(name);
    const other = name === 'import' ? cjs : esm;
    const authority = await opened(format.root);
    const host = await hostFor(format, adapter, authority);
    const old = authority.issue();

    expect(await host.ask(`Bearer ${old}`)).toEqual({ status: 200, body: 'ok', wwwAuthenticate: null });
    expect(await host.ask()).toEqual({ status: 401, body: '', wwwAuthenticate: 'Bearer realm="launcher"' });
    expect(host.seen).toHaveLength(1);
    const auth = host.seen[0];
    expect(auth?.keyId).toBe(authority.keyId);
    expect(auth?.signal.aborted).toBe(false);

    await authority.rotate();
    expect(auth?.signal.aborted).toBe(true);
    const reason: unknown = auth?.signal.reason;
    expect(reason).toBeInstanceOf(format.root.LauncherAuthError);
    expect(format.root.isLauncherAuthError(reason, 'ERR_KEY_ROTATED')).toBe(true);
    expect(other.root.isLauncherAuthError(reason, 'ERR_KEY_ROTATED')).toBe(true);

    expect(await host.ask(`Bearer ${old}`)).toEqual({ status: 401, body: '', wwwAuthenticate: 'Bearer realm="launcher"' });
    expect(await host.ask(`Bearer ${authority.issue()}`)).toEqual({ status: 200, body: 'ok', wwwAuthenticate: null });
    expect(host.seen).toHaveLength(2);
  });
});

describe('@launcher-auth/redis, built', () => {
  const REPO = fileURLToPath(new URL('../../', import.meta.url));
  const REDIS_DIST = join(REPO, 'packages/redis/dist');
  // A child Node process in which loading `redis` (or @redis/*) throws: what a user without the peer sees.
  const BLOCK_ESM = `export async function resolve(specifier, context, next) {
    if (specifier === 'redis' || specifier.startsWith('@redis/')) throw new Error('redis was loaded');
    return next(specifier, context);
  }`;
  const esmChild = (specifier: string): string =>
    `import { register } from 'node:module';
     register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(BLOCK_ESM)}));
     await import(${JSON.stringify(specifier)});`;
  const cjsChild = (specifier: string): string =>
    `const Module = require('node:module');
     const load = Module._load;
     Module._load = function (request, ...rest) {
       if (request === 'redis' || request.startsWith('@redis/')) throw new Error('redis was loaded');
       return load.call(this, request, ...rest);
     };
     require(${JSON.stringify(specifier)});`;
  const run = (args: string[]): number | null => spawnSync(process.execPath, args, { cwd: REPO, stdio: 'ignore' }).status;

  it('import and require resolve it to its own dist/, exporting RedisSecretStore', async () => {
    expect(realpathSync(require.resolve('@launcher-auth/redis'))).toBe(join(REDIS_DIST, 'index.cjs'));
    expect(realpathSync(fileURLToPath(import.meta.resolve('@launcher-auth/redis')))).toBe(join(REDIS_DIST, 'index.js'));
    const esmRedis = await import('@launcher-auth/redis');
    const cjsRedis = require('@launcher-auth/redis') as typeof esmRedis;
    expect(typeof esmRedis.RedisSecretStore).toBe('function');
    expect(typeof cjsRedis.RedisSecretStore).toBe('function');
    expect(() => new cjsRedis.RedisSecretStore({ client: {} as never })).toThrow(TypeError);
  });

  // @launcher-auth/redis too: the store works on the client the host passes, and never imports redis itself.
  it.each(['launcher-auth', 'launcher-auth/node', 'launcher-auth/testing', '@launcher-auth/redis'])('%s loads without redis, by import and require', (specifier) => {
    expect(run(['--input-type=module', '-e', esmChild(specifier)])).toBe(0);
    expect(run(['--input-type=commonjs', '-e', cjsChild(specifier)])).toBe(0);
  });

  it('the block works: redis itself cannot be loaded in those processes', () => {
    expect(run(['--input-type=module', '-e', esmChild('redis')])).not.toBe(0);
    expect(run(['--input-type=commonjs', '-e', cjsChild('redis')])).not.toBe(0);
  });
});

describe('every entry loads without the peers of the others', () => {
  const REPO = fileURLToPath(new URL('../../', import.meta.url));
  const PEERS = ['express', 'fastify', 'hono', 'koa', 'redis', '@napi-rs/keyring'];
  /** The peer each entry may load; every other entry needs none. */
  const OWN: Record<string, string | undefined> = {
    'launcher-auth/express': 'express',
    'launcher-auth/fastify': 'fastify',
    'launcher-auth/keyring': '@napi-rs/keyring',
  };
  const blocked = (specifier: string): string[] => PEERS.filter((peer) => peer !== OWN[specifier]);
  const matches = `(s, list) => list.some((peer) => s === peer || s.startsWith(peer + '/') || (peer === 'redis' && s.startsWith('@redis/')))`;
  const esmChild = (specifier: string): string =>
    `import { register } from 'node:module';
     const list = ${JSON.stringify(blocked(specifier))};
     register('data:text/javascript,' + encodeURIComponent(
       'const matches = ' + ${JSON.stringify(matches)} + '; const list = ' + JSON.stringify(list) + ';' +
       'export async function resolve(s, c, next) { if (matches(s, list)) throw new Error("peer loaded: " + s); return next(s, c); }'));
     await import(${JSON.stringify(specifier)});`;
  const cjsChild = (specifier: string): string =>
    `const Module = require('node:module');
     const matches = ${matches};
     const list = ${JSON.stringify(blocked(specifier))};
     const load = Module._load;
     Module._load = function (request, ...rest) {
       if (matches(request, list)) throw new Error('peer loaded: ' + request);
       return load.call(this, request, ...rest);
     };
     require(${JSON.stringify(specifier)});`;
  const run = (args: string[]): number | null => spawnSync(process.execPath, args, { cwd: REPO, stdio: 'ignore' }).status;

  it.each(['launcher-auth', ...SUBPATHS.map((subpath) => `launcher-auth/${subpath}`), ...OTHER_ENTRIES])(
    '%s, by import and require',
    (specifier) => {
      expect(run(['--input-type=module', '-e', esmChild(specifier)])).toBe(0);
      expect(run(['--input-type=commonjs', '-e', cjsChild(specifier)])).toBe(0);
    },
  );

  it('the block works: a blocked peer cannot be loaded in those processes', () => {
    expect(run(['--input-type=module', '-e', esmChild('hono')])).not.toBe(0);
    expect(run(['--input-type=commonjs', '-e', cjsChild('koa')])).not.toBe(0);
  });
});

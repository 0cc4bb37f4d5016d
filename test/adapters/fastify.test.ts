// Fastify specifics: only the host's unconstrained health route is exempt, the plugin refuses a registration
// where it could not cover the app's 404s, and the README's `frameworkErrors` empties Fastify's own 400.
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { TokenAuthority } from 'launcher-auth';
import { frameworkErrors } from '../../examples/readme/fastify-errors.js';
import { withPrefixedApi } from '../../examples/readme/fastify-prefix.js';
import { fastifyAuth, health } from '../../src/adapters/fastify.js';
import { openCaseAuthority, type Tokens } from './cases.js';
import { expectRefusal, rawRequest } from './harness.js';

const request = (method: string, target: string, headers: Record<string, string> = {}): string =>
  `${method} ${target} HTTP/1.1\r\n${Object.entries({ Host: '127.0.0.1', ...headers })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')}\r\n`;

async function listen(app: FastifyInstance): Promise<number> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  return (app.server.address() as AddressInfo).port;
}

describe('fastify: constrained routes at the health path', () => {
  let authority: TokenAuthority;
  let tokens: Tokens;
  let app: FastifyInstance;
  let port: number;
  const ran: Array<{ route: string; keyId: string | undefined }> = [];
  beforeAll(async () => {
    ({ authority, tokens } = await openCaseAuthority());
    app = Fastify();
    await app.register(fastifyAuth, { authority });
    const record = (route: string) => async (req: { auth: { keyId: string } | undefined }) => {
      ran.push({ route, keyId: req.auth?.keyId });
      return route;
    };
    app.route({ method: 'GET', url: '/health', constraints: { host: 'admin.local' }, handler: record('admin') });
    app.route({ method: 'GET', url: '/health', constraints: { version: '2.0.0' }, handler: record('v2') });
    app.get('/health', record('health'));
    app.route({ method: 'GET', url: '/status', constraints: { host: 'admin.local' }, handler: record('status-admin') });
    port = await listen(app);
  });
  afterAll(async () => {
    await app?.close();
    await authority?.close();
  });

  it.each([
    ['GET, Host: admin.local', request('GET', '/health', { Host: 'admin.local' })],
    ['HEAD, Host: admin.local', request('HEAD', '/health', { Host: 'admin.local' })],
    ['GET, Accept-Version: 2.x', request('GET', '/health', { 'Accept-Version': '2.x' })],
    [
      'GET, Accept-Version: 2.0.0, Host: admin.local',
      request('GET', '/health', { 'Accept-Version': '2.0.0', Host: 'admin.local' }),
    ],
  ])('%s without a token: 401, and the constrained handler did not run', async (_label, text) => {
    ran.length = 0;
    expectRefusal(await rawRequest(port, text));
    expect(ran).toEqual([]);
  });

  it('the constrained handlers run with the token, and see it', async () => {
    ran.length = 0;
    const auth = { Authorization: `Bearer ${tokens.current}` };
    expect((await rawRequest(port, request('GET', '/health', { ...auth, Host: 'admin.local' }))).status).toBe(200);
    expect((await rawRequest(port, request('GET', '/health', { ...auth, 'Accept-Version': '2.x' }))).status).toBe(200);
    expect(ran).toEqual([
      { route: 'admin', keyId: authority.keyId },
      { route: 'v2', keyId: authority.keyId },
    ]);
  });

  it('the unconstrained health route stays open, GET and HEAD', async () => {
    ran.length = 0;
    const res = await rawRequest(port, request('GET', '/health'));
    expect(res.status).toBe(200);
    expect(res.body.toString('latin1')).toBe('health');
    expect((await rawRequest(port, request('HEAD', '/health'))).status).toBe(200);
    expect(ran).toEqual([
      { route: 'health', keyId: undefined },
      { route: 'health', keyId: undefined },
    ]);
  });

  it('with healthPath set to a path that only a constrained route serves, nothing is exempt there', async () => {
    const other = Fastify();
    onTestFinished(() => other.close());
    await other.register(fastifyAuth, { authority, healthPath: '/status' });
    let runs = 0;
    other.route({
      method: 'GET',
      url: '/status',
      constraints: { host: 'admin.local' },
      handler: async () => String(++runs),
    });
    const otherPort = await listen(other);
    expectRefusal(await rawRequest(otherPort, request('GET', '/status', { Host: 'admin.local' })));
    expectRefusal(await rawRequest(otherPort, request('GET', '/status')));
    expect(runs).toBe(0);
  });
});

describe('fastify: the health route, registered in the test', () => {
  it('with `constraints: {}` it is unconstrained and exempt; a host-constrained twin still needs the token', async () => {
    const { authority } = await openCaseAuthority();
    onTestFinished(() => authority.close());
    const app = Fastify();
    onTestFinished(() => app.close());
    await app.register(fastifyAuth, { authority });
    const ran: string[] = [];
    app.route({ method: 'GET', url: '/health', constraints: {}, handler: async () => (ran.push('health'), 'ok') });
    app.route({
      method: 'GET',
      url: '/health',
      constraints: { host: 'admin.local' },
      handler: async () => (ran.push('admin'), 'admin'),
    });
    const port = await listen(app);
    const open = await rawRequest(port, request('GET', '/health'));
    expect([open.status, open.body.toString('latin1')]).toEqual([200, 'ok']);
    expectRefusal(await rawRequest(port, request('GET', '/health', { Host: 'admin.local' })));
    expect(ran).toEqual(['health']);
  });

  it('health() refuses a handler that is not a function, naming it', () => {
    expect(() => health('ok' as never)).toThrow(new TypeError('health: `handler` must be a function.'));
  });
});

describe("fastify: routes under a prefix, with the plugin on the root (the guide's way)", () => {
  it('GET /api/apps: 401 without the token and the handler did not run, 200 with it; an unknown /api path: 401', async () => {
    const { authority, tokens } = await openCaseAuthority();
    onTestFinished(() => authority.close());
    const app = Fastify();
    onTestFinished(() => app.close());
    let ran = 0;
    await withPrefixedApi(app, authority, async (api) => {
      api.get('/apps', async () => {
        ran++;
        return 'apps';
      });
    });
    const port = await listen(app);
    expectRefusal(await rawRequest(port, request('GET', '/api/apps', {})));
    expectRefusal(await rawRequest(port, request('GET', '/api/unknown', {})));
    expect(ran).toBe(0);
    const allowed = await rawRequest(port, request('GET', '/api/apps', { Authorization: `Bearer ${tokens.current}` }));
    expect([allowed.status, allowed.body.toString('utf8'), ran]).toEqual([200, 'apps', 1]);
  });
});

describe('fastify: where the plugin may be registered', () => {
  let authority: TokenAuthority;
  beforeAll(async () => {
    ({ authority } = await openCaseAuthority());
  });
  afterAll(async () => {
    await authority?.close();
  });

  async function registrationError(wire: (app: FastifyInstance) => void): Promise<unknown> {
    const app = Fastify();
    onTestFinished(() => app.close());
    wire(app);
    try {
      await app.ready();
      return undefined;
    } catch (error) {
      return error;
    }
  }

  it('inside a prefixed plugin: refused with an error that says where to register it', async () => {
    const error = await registrationError((app) => {
      void app.register(
        async (child) => {
          await child.register(fastifyAuth, { authority });
          child.get('/apps', async () => 'apps');
        },
        { prefix: '/api' },
      );
    });
    expect(error).toEqual(
      new Error(
        'fastifyAuth: register it on the root instance (`await app.register(fastifyAuth, { authority })`), not ' +
          'inside an encapsulated plugin or under a prefix: there its hook would not cover the 404s of unknown ' +
          'routes, which would tell them apart from the protected ones without a token.',
      ),
    );
  });

  it('inside an encapsulated plugin without a prefix: refused too (the root 404 would not be covered)', async () => {
    const error = await registrationError((app) => {
      void app.register(async (child) => {
        await child.register(fastifyAuth, { authority });
      });
    });
    expect((error as Error).message).toContain('fastifyAuth: register it on the root instance');
  });

  it('on the root instance, or through a non-encapsulated plugin of the root: accepted', async () => {
    expect(await registrationError((app) => void app.register(fastifyAuth, { authority }))).toBeUndefined();
    const shared = Object.assign(
      async (instance: FastifyInstance) => {
        await instance.register(fastifyAuth, { authority });
      },
      { [Symbol.for('skip-override')]: true },
    );
    expect(await registrationError((app) => void app.register(shared))).toBeUndefined();
  });

  it('is marked as fastify-plugin would mark it, without depending on it', async () => {
    const marked = fastifyAuth as unknown as Record<symbol, unknown>;
    expect(marked[Symbol.for('skip-override')]).toBe(true);
    expect(marked[Symbol.for('fastify.display-name')]).toBe('launcher-auth');
    expect(marked[Symbol.for('plugin-meta')]).toEqual({ fastify: '5.x', name: 'launcher-auth' });
    const { readFile } = await import('node:fs/promises');
    const manifest = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    expect(Object.keys(manifest.dependencies)).toEqual(['jose']);
  });
});

describe('fastify: a URL it cannot decode (/%zz)', () => {
  let authority: TokenAuthority;
  beforeAll(async () => {
    ({ authority } = await openCaseAuthority());
  });
  afterAll(async () => {
    await authority?.close();
  });

  async function host(options: FastifyServerOptions): Promise<number> {
    const app = Fastify(options);
    onTestFinished(() => app.close());
    await app.register(fastifyAuth, { authority });
    app.get('/:name', async () => 'page');
    return listen(app);
  }

  it('by default Fastify answers it itself, before any hook: 400 with a JSON body', async () => {
    const port = await host({});
    const res = await rawRequest(port, request('GET', '/%zz'));
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(res.body.toString('utf8'))).toMatchObject({ statusCode: 400, code: 'FST_ERR_BAD_URL' });
  });

  it("the README's frameworkErrors makes it an empty 400, and the rest of the app is unchanged", async () => {
    const port = await host({ frameworkErrors });
    for (const target of ['/%zz', '/%', '/a%zzb']) {
      const res = await rawRequest(port, request('GET', target));
      expect(res.status).toBe(400);
      expect(res.body.length).toBe(0);
      expect(res.headers['content-length']).toBe('0');
      expect(res.headers['content-type']).toBeUndefined();
    }
    expectRefusal(await rawRequest(port, request('GET', '/page')));
  });
});

// The runtime side of the handler types (handler-types.test-d.ts), over real sockets: node:http's `health`
// handler takes the health check away from the main handler; Express's `authenticated()` fails closed when a
// request reaches it without `auth`; Fastify's `health()` route sees no `auth`.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
// @ts-expect-error Express 4 is installed under an alias without types of its own (see harness.ts).
import express4Untyped from 'express4';
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import type { TokenAuthority } from 'launcher-auth';
import { authenticated, expressAuth } from '../../src/adapters/express.js';
import { fastifyAuth, health } from '../../src/adapters/fastify.js';
import { withAuth } from '../../src/adapters/node.js';
import { openCaseAuthority } from './cases.js';
import { expectRefusal, rawRequest } from './harness.js';

const express4 = express4Untyped as typeof express;
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const get = (target: string, token?: string): string =>
  `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n${token === undefined ? '' : `Authorization: Bearer ${token}\r\n`}\r\n`;

async function authority(): Promise<TokenAuthority> {
  const { authority: opened } = await openCaseAuthority();
  cleanups.push(() => opened.close());
  return opened;
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return (server.address() as AddressInfo).port;
}

describe('node:http withAuth(…, { health })', () => {
  it('serves the health check with the health handler (no auth property) and everything else with the main one', async () => {
    const auth = await authority();
    const ran: string[] = [];
    const port = await listen(
      createServer(
        withAuth(auth, (req, res) => void (ran.push(`main ${req.auth.keyId === auth.keyId}`), res.end('main')), {
          health: (req, res) => void (ran.push(`health ${'auth' in req}`), res.end('ok')),
        }),
      ),
    );
    expect((await rawRequest(port, get('/health'))).body.toString()).toBe('ok');
    expect((await rawRequest(port, get('/apps', auth.issue()))).body.toString()).toBe('main');
    expectRefusal(await rawRequest(port, get('/apps')));
    expectRefusal(await rawRequest(port, get('/health/')));
    expect(ran).toEqual(['health false', 'main true']);
  });

  it('refuses a health option that is not a function, naming it', async () => {
    const auth = await authority();
    expect(() => withAuth(auth, () => undefined, { health: 'ok' as never })).toThrow(
      new TypeError('withAuth: `health` must be a function when set.'),
    );
  });
});

describe.each([
  ['express5', express],
  ['express4', express4],
] as const)('%s authenticated()', (_name, make) => {
  it('runs the handler with req.auth; the health route has no auth; a wrapped health route fails closed', async () => {
    const auth = await authority();
    const ran: string[] = [];
    const app = make();
    app.use(expressAuth(auth));
    app.get('/health', (req, res) => void (ran.push(`health ${'auth' in req}`), res.send('ok')));
    app.get(
      '/wrapped-health',
      authenticated((_req, res) => void (ran.push('wrapped'), res.send('no'))),
    );
    app.get(
      '/apps',
      authenticated((req, res) => void (ran.push(`apps ${req.auth.keyId === auth.keyId}`), res.send('apps'))),
    );
    const port = await listen(createServer(app));
    expect((await rawRequest(port, get('/health'))).status).toBe(200);
    expect((await rawRequest(port, get('/apps', auth.issue()))).body.toString()).toBe('apps');
    expectRefusal(await rawRequest(port, get('/apps')));
    expect(ran).toEqual(['health false', 'apps true']);

    // The same app with the health path moved onto the wrapped route: it is exempt, so it has no auth.
    const moved = make();
    moved.use(expressAuth(auth, { healthPath: '/wrapped-health' }));
    moved.get(
      '/wrapped-health',
      authenticated((_req, res) => void (ran.push('wrapped'), res.send('no'))),
    );
    const movedPort = await listen(createServer(moved));
    expectRefusal(await rawRequest(movedPort, get('/wrapped-health')));
    expect(ran).toEqual(['health false', 'apps true']);
  });

  it('fails closed when the middleware is not installed before the route', async () => {
    const auth = await authority();
    let runs = 0;
    const app = make();
    app.get(
      '/apps',
      authenticated((_req, res) => void (runs++, res.send('apps'))),
    );
    const port = await listen(createServer(app));
    expectRefusal(await rawRequest(port, get('/apps', auth.issue())));
    expect(runs).toBe(0);
  });

  it('refuses a handler that is not a function, naming it', () => {
    expect(() => authenticated('apps' as never)).toThrow(new TypeError('authenticated: `handler` must be a function.'));
  });
});

describe('Fastify health()', () => {
  it('the health route sees request.auth undefined; a protected route sees the context', async () => {
    const auth = await authority();
    const ran: string[] = [];
    const app = Fastify();
    cleanups.push(() => app.close());
    await app.register(fastifyAuth, { authority: auth });
    app.get(
      '/health',
      health(async (request) => (ran.push(`health ${String(request.auth)}`), 'ok')),
    );
    app.get('/apps', async (request) => (ran.push(`apps ${request.auth.keyId === auth.keyId}`), 'apps'));
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as AddressInfo).port;
    expect((await rawRequest(port, get('/health'))).body.toString()).toBe('ok');
    expect((await rawRequest(port, get('/apps', auth.issue()))).body.toString()).toBe('apps');
    expectRefusal(await rawRequest(port, get('/apps')));
    expect(ran).toEqual(['health undefined', 'apps true']);
  });
});

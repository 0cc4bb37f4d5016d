// What the README's "Running the automation API" promises, over real loopback sockets: a refused request's
// body is never parsed when the guard comes first, proxy headers never change the decision, and a path prefix
// is matched as received.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type RequestHandler } from 'express';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { MemorySecretStore, TokenAuthority } from 'launcher-auth';
import { expressAuth } from 'launcher-auth/express';
import { fastifyAuth } from 'launcher-auth/fastify';
import { withAuth } from 'launcher-auth/node';

let authority: TokenAuthority;
let token = '';

beforeAll(async () => {
  authority = await TokenAuthority.open({ store: new MemorySecretStore() });
  token = authority.issue();
});
afterAll(() => authority.close());

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function send(url: string, init: RequestInit = {}): Promise<{ status: number; body: string }> {
  const response = await fetch(url, init);
  return { status: response.status, body: await response.text() };
}

const MALFORMED_JSON = { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{not json' } as const;
const bearer = (): Record<string, string> => ({ authorization: `Bearer ${token}` });

/** express.json(), counting the requests whose body it read and parsed. */
function countingJson(counter: { parsed: number }): RequestHandler {
  const json = express.json();
  return (req, res, next) =>
    json(req, res, (error?: unknown) => {
      counter.parsed += 1;
      next(error);
    });
}

describe('body parsers and the guard', () => {
  it('Express, guard first: a refused request gets the empty 401 and its body is never parsed', async () => {
    const counter = { parsed: 0 };
    const app = express();
    app.use(expressAuth(authority));
    app.use(countingJson(counter));
    app.post('/apps', (req, res) => res.json({ got: req.body as unknown }));
    const url = await listen(createServer(app));
    expect(await send(`${url}/apps`, MALFORMED_JSON)).toEqual({ status: 401, body: '' });
    expect(counter.parsed).toBe(0);
    const valid = await send(`${url}/apps`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer() },
      body: '{"a":1}',
    });
    expect(valid).toEqual({ status: 200, body: '{"got":{"a":1}}' });
    expect(counter.parsed).toBe(1);
  });

  it("Express, parser first (what the README warns against): a client without a token gets the parser's 400", async () => {
    const counter = { parsed: 0 };
    const app = express();
    app.use(countingJson(counter));
    app.use(expressAuth(authority));
    app.post('/apps', (_req, res) => res.end('ok'));
    const url = await listen(createServer(app));
    const answer = await send(`${url}/apps`, MALFORMED_JSON);
    expect(answer.status).toBe(400);
    expect(answer.body.length).toBeGreaterThan(0);
    expect(counter.parsed).toBe(1);
  });

  it('Fastify: the hook refuses before the content-type parser runs', async () => {
    let parsed = 0;
    const app = Fastify();
    onTestFinished(() => app.close());
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
      parsed += 1;
      try {
        done(null, JSON.parse(body as string) as unknown);
      } catch (error) {
        done(error as Error, undefined);
      }
    });
    await app.register(fastifyAuth, { authority });
    app.post('/apps', async (request) => ({ got: request.body }));
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    expect(await send(`${url}/apps`, MALFORMED_JSON)).toEqual({ status: 401, body: '' });
    expect(parsed).toBe(0);
    const valid = await send(`${url}/apps`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...bearer() },
      body: '{"a":1}',
    });
    expect(valid).toEqual({ status: 200, body: '{"got":{"a":1}}' });
    expect(parsed).toBe(1);
  });
});

describe('behind a reverse proxy', () => {
  const PROXY_HEADERS: Record<string, string> = {
    'x-forwarded-for': '127.0.0.1',
    'x-forwarded-host': '127.0.0.1',
    'x-forwarded-proto': 'https',
    'x-forwarded-prefix': '/health',
    'x-original-url': '/health',
    'x-rewrite-url': '/health',
    forwarded: 'for=127.0.0.1;host=127.0.0.1;proto=https',
  };

  it('proxy headers never exempt a request or stand in for the token (node:http, Express with trust proxy)', async () => {
    let ran = 0;
    const handler = (_req: unknown, res: { end(text: string): unknown }): void => {
      ran += 1;
      res.end('ok');
    };
    const node = await listen(createServer(withAuth(authority, handler)));
    const app = express().set('trust proxy', true);
    app.use(expressAuth(authority));
    app.use(handler);
    const viaExpress = await listen(createServer(app));
    for (const url of [node, viaExpress]) {
      for (const path of ['/apps', '/launcher/health']) {
        expect(await send(`${url}${path}`, { headers: PROXY_HEADERS })).toEqual({ status: 401, body: '' });
      }
    }
    expect(ran).toBe(0);
  });

  it('a prefix the proxy forwards is matched as received: Express under a mount point needs the full health path', async () => {
    const router = express.Router();
    router.get('/health', (_req, res) => res.send('ok'));
    router.get('/apps', (_req, res) => res.send('apps'));
    const withFullPath = express();
    withFullPath.use('/launcher', expressAuth(authority, { healthPath: '/launcher/health' }), router);
    const withDefault = express();
    withDefault.use('/launcher', expressAuth(authority), router);
    const full = await listen(createServer(withFullPath));
    const plain = await listen(createServer(withDefault));
    expect(await send(`${full}/launcher/health`)).toEqual({ status: 200, body: 'ok' });
    expect(await send(`${full}/launcher/apps`)).toEqual({ status: 401, body: '' });
    expect(await send(`${full}/launcher/apps`, { headers: bearer() })).toEqual({ status: 200, body: 'apps' });
    expect(await send(`${plain}/launcher/health`)).toEqual({ status: 401, body: '' });
  });
});

// launcher-auth/koa beyond the shared table: the exact bytes of its 401 whatever Koa's defaults and the app's error
// handling would add, and the `health` handler.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenAuthority } from 'launcher-auth';
import { koaAuth, type KoaAuthState } from '../../src/adapters/koa.js';
import { openCaseAuthority, type Tokens } from './cases.js';
import { CHALLENGE, rawRequest, sendFramed, type RawResponse } from './harness.js';

const get = (target: string, extra = ''): string => `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n${extra}\r\n`;
const bearer = (token: string): string => `Authorization: Bearer ${token}\r\n`;

describe('koaAuth in an app with an error handler, a body-setting middleware and a health handler', () => {
  let authority: TokenAuthority;
  let tokens: Tokens;
  let server: Server;
  let port: number;
  const runs = { health: 0, app: 0, errorHandler: 0, appErrors: 0 };

  beforeAll(async () => {
    ({ authority, tokens } = await openCaseAuthority());
    const app = new Koa<KoaAuthState>();
    app.on('error', () => void runs.appErrors++);
    // The common outer error handler: it would turn a thrown 401 into a JSON body.
    app.use(async (ctx, next) => {
      try {
        await next();
      } catch (error) {
        runs.errorHandler += 1;
        ctx.status = (error as { status?: number }).status ?? 500;
        ctx.body = { error: 'handled' };
      }
      // And a middleware that decorates every answer after the fact.
      ctx.set('X-After', 'yes');
      ctx.body ??= 'default body';
    });
    app.use(koaAuth(authority, { health: (ctx) => void (runs.health++, (ctx.body = 'ok')) }));
    app.use((ctx) => {
      runs.app += 1;
      if (ctx.path === '/fails') ctx.throw(418);
      ctx.body = ctx.state.auth.keyId;
    });
    server = createServer(app.callback());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await authority?.close();
  });

  /** The whole head of a Koa 401, byte for byte but for the Date value. */
  function expectExactRefusal(res: RawResponse): void {
    const head = res.raw.toString('latin1').replace(/\r\nDate: [^\r]+/, '\r\nDate: <date>');
    expect(head).toBe(
      `HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: ${CHALLENGE}\r\nContent-Length: 0\r\nDate: <date>\r\n` +
        'Connection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n',
    );
    expect(res.body.length).toBe(0);
  }

  it('no token, an invalid one, the previous one: exactly the empty 401, nothing added after the fact, no handler', async () => {
    const before = { ...runs };
    for (const extra of ['', bearer('not.a.token'), bearer(tokens.previous), bearer(tokens.wrongKey)]) {
      expectExactRefusal(await sendFramed(port, get('/apps', extra)));
      expectExactRefusal(await sendFramed(port, get('/nope', extra)));
    }
    expectExactRefusal(await sendFramed(port, `POST /health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n`));
    expect(runs).toEqual(before);
  });

  it("the current token reaches the app with ctx.state.auth; the app's own errors still get its handler", async () => {
    const before = { ...runs };
    const ok = await sendFramed(port, get('/apps', bearer(tokens.current)));
    expect(ok.status).toBe(200);
    expect(ok.body.toString('latin1')).toBe(authority.keyId);
    expect(ok.headers['x-after']).toBe('yes');
    const own = await sendFramed(port, get('/fails', bearer(tokens.current)));
    expect(own.status).toBe(418);
    expect(own.body.toString('latin1')).toBe('{"error":"handled"}');
    expect(runs).toEqual({ ...before, app: before.app + 2, errorHandler: before.errorHandler + 1 });
  });

  it('GET and HEAD /health reach the health handler only, without a token', async () => {
    const before = { ...runs };
    const health = await sendFramed(port, get('/health'));
    expect(health.status).toBe(200);
    expect(health.body.toString('latin1')).toBe('ok');
    const head = await rawRequest(port, `HEAD /health?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    expect(head.status).toBe(200);
    expect(runs).toEqual({ ...before, health: before.health + 2 });
  });

  it('Koa reported no error for any refusal', () => {
    expect(runs.appErrors).toBe(0);
  });
});

describe('koaAuth options', () => {
  it('a health handler that is not a function: a TypeError naming `health`', async () => {
    const { authority } = await openCaseAuthority();
    expect(() => koaAuth(authority, { health: 'ok' as never })).toThrow(/koaAuth: `health`/);
    await authority.close();
  });
});

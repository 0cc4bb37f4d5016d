// Every case of the shared table against every adapter on a real loopback server, plus the adapters' options:
// onReject, healthPath, and the TypeErrors of a bad configuration.
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuthOptions, RejectInfo, TokenAuthority } from 'launcher-auth';
import { expressAuth } from '../../src/adapters/express.js';
import { fastifyAuth } from '../../src/adapters/fastify.js';
import { fetchAuth } from '../../src/adapters/fetch.js';
import { honoAuth } from '../../src/adapters/hono.js';
import { koaAuth } from '../../src/adapters/koa.js';
import { withAuth, withUpgradeAuth } from '../../src/adapters/node.js';
import { CASES, expectationFor, openCaseAuthority, requestText, type AdapterCase, type Tokens } from './cases.js';
import {
  HOST_KINDS,
  checkCase as check,
  expectRefusal,
  rawRequest,
  sendFramed as send,
  startHost,
  type Host,
  type HostKind,
} from './harness.js';

const get = (target: string, authorization?: string): string =>
  `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n${authorization === undefined ? '' : `Authorization: ${authorization}\r\n`}\r\n`;
const method = (name: string, target: string): string =>
  `${name} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n`;

describe.each(HOST_KINDS)('%s adapter', (kind) => {
  describe('the shared table', () => {
    let authority: TokenAuthority;
    let tokens: Tokens;
    let host: Host;
    beforeAll(async () => {
      ({ authority, tokens } = await openCaseAuthority());
      host = await startHost(kind, authority);
    });
    afterAll(async () => {
      await host?.close();
      await authority?.close();
    });

    it.each(CASES)('$name', async (c) => {
      await check(host, authority, tokens, c);
    });
  });

  describe('rotation', () => {
    let authority: TokenAuthority;
    let host: Host;
    beforeAll(async () => {
      ({ authority } = await openCaseAuthority());
      host = await startHost(kind, authority);
    });
    afterAll(async () => {
      await host?.close();
      await authority?.close();
    });

    it('accepts the token from rotate() at once and refuses every earlier one at once', async () => {
      const older = authority.issue();
      for (let round = 0; round < 3; round += 1) {
        const previous = authority.issue();
        const fresh = await authority.rotate();
        // No wait between the rotation and the requests: "at once" is the property.
        const accepted = await rawRequest(host.port, get('/apps', `Bearer ${fresh}`));
        expect(accepted.status).toBe(200);
        expect(host.lastAuth?.keyId).toBe(authority.keyId);
        const before = { ...host.counts };
        expectRefusal(await send(host.port, get('/apps', `Bearer ${previous}`), true));
        expectRefusal(await send(host.port, get('/apps', `Bearer ${older}`), true));
        expect(host.counts).toEqual(before);
      }
    });
  });

  describe('onReject', () => {
    let authority: TokenAuthority;
    let tokens: Tokens;
    let host: Host;
    const infos: RejectInfo[] = [];
    beforeAll(async () => {
      ({ authority, tokens } = await openCaseAuthority());
      host = await startHost(kind, authority, { auth: { onReject: (info) => void infos.push(info) } });
    });
    afterAll(async () => {
      await host?.close();
      await authority?.close();
    });

    it('is called once per refusal with method, path without the query, reason and address; never with the token', async () => {
      infos.length = 0;
      const requests: Array<[string, RejectInfo | undefined]> = [
        [get('/apps?secret=1'), { method: 'GET', path: '/apps', reason: 'missing', remoteAddress: '127.0.0.1' }],
        [
          get('/nope', `Basic ${Buffer.from(`u:${tokens.current}`).toString('base64')}`),
          { method: 'GET', path: '/nope', reason: 'malformed', remoteAddress: '127.0.0.1' },
        ],
        [
          get('/apps', `Bearer ${tokens.current}x`),
          { method: 'GET', path: '/apps', reason: 'malformed', remoteAddress: '127.0.0.1' },
        ],
        [
          `POST /apps/editor/launch?x=y HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${tokens.previous}\r\nContent-Length: 0\r\n\r\n`,
          // The token from before the latest rotate(): told apart from a forgery, for the host's log only.
          { method: 'POST', path: '/apps/editor/launch', reason: 'rotated', remoteAddress: '127.0.0.1' },
        ],
        [
          get('/apps', `Bearer ${tokens.wrongKey}`),
          { method: 'GET', path: '/apps', reason: 'invalid', remoteAddress: '127.0.0.1' },
        ],
        [
          `GET /apps HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${tokens.current}\r\nAuthorization: Bearer ${tokens.current}\r\n\r\n`,
          { method: 'GET', path: '/apps', reason: 'malformed', remoteAddress: '127.0.0.1' },
        ],
        [
          get(`/apps?access_token=${tokens.current}`),
          { method: 'GET', path: '/apps', reason: 'missing', remoteAddress: '127.0.0.1' },
        ],
        [
          method('OPTIONS', '/health'),
          { method: 'OPTIONS', path: '/health', reason: 'missing', remoteAddress: '127.0.0.1' },
        ],
        // Not refused: no call.
        [get('/health?x=1'), undefined],
        [get('/apps', `Bearer ${tokens.current}`), undefined],
        [get('/apps', `Bearer ${tokens.resigned}`), undefined],
      ];
      const expected: RejectInfo[] = [];
      for (const [text, info] of requests) {
        const res = await rawRequest(host.port, text);
        if (info === undefined) expect(res.status).toBe(200);
        else {
          expectRefusal(res);
          expected.push(info);
        }
        // onReject runs before the 401 is written, so the count is final once the answer is in.
        expect(infos.length).toBe(expected.length);
      }
      // Booleans first: a leaked token must not be printed by the assertion that finds it.
      const seen = JSON.stringify(infos);
      for (const token of Object.values(tokens)) expect(seen.includes(token)).toBe(false);
      expect(seen.includes('Bearer')).toBe(false);
      expect(infos).toStrictEqual(expected);
    });

    it('is called exactly once for every refused case of the table and never otherwise', async () => {
      infos.length = 0;
      for (const c of CASES) {
        const before = infos.length;
        await rawRequest(host.port, requestText(c, tokens, host.port));
        // A count per case, named, so a failure says which case; the infos themselves are not printed.
        expect({ case: c.name, calls: infos.length - before }).toEqual({
          case: c.name,
          calls: expectationFor(c, kind) === 401 ? 1 : 0,
        });
      }
      const seen = JSON.stringify(infos);
      for (const token of Object.values(tokens)) expect(seen.includes(token)).toBe(false);
      for (const info of infos) expect(Object.keys(info).sort()).toEqual(['method', 'path', 'reason', 'remoteAddress']);
    });
  });

  describe('a throwing onReject', () => {
    let authority: TokenAuthority;
    let tokens: Tokens;
    let host: Host;
    let calls = 0;
    beforeAll(async () => {
      ({ authority, tokens } = await openCaseAuthority());
      host = await startHost(kind, authority, {
        auth: {
          onReject: () => {
            calls += 1;
            throw new Error('the host logger failed');
          },
        },
      });
    });
    afterAll(async () => {
      await host?.close();
      await authority?.close();
    });

    it('still yields the same 401 and the protected handler does not run', async () => {
      const before = { ...host.counts };
      expectRefusal(await rawRequest(host.port, get('/apps')));
      expectRefusal(await rawRequest(host.port, get('/apps', `Bearer ${tokens.previous}`)));
      expectRefusal(await rawRequest(host.port, get('/nope', 'Bearer x')));
      expect(calls).toBe(3);
      expect(host.counts).toEqual(before);
      // The server is still healthy afterwards.
      expect((await rawRequest(host.port, get('/apps', `Bearer ${tokens.current}`))).status).toBe(200);
    });
  });

  describe('healthPath: "/status"', () => {
    let authority: TokenAuthority;
    let tokens: Tokens;
    let host: Host;
    beforeAll(async () => {
      ({ authority, tokens } = await openCaseAuthority());
      host = await startHost(kind, authority, { auth: { healthPath: '/status' } });
    });
    afterAll(async () => {
      await host?.close();
      await authority?.close();
    });

    const table: AdapterCase[] = [
      { name: 'GET /status', request: { method: 'GET', target: '/status' }, expect: 'health' },
      { name: 'GET /status?x=1', request: { method: 'GET', target: '/status?x=1' }, expect: 'health' },
      { name: 'HEAD /status', request: { method: 'HEAD', target: '/status' }, expect: 'health' },
      { name: 'POST /status', request: { method: 'POST', target: '/status' }, expect: 401 },
      { name: 'GET /status/', request: { method: 'GET', target: '/status/' }, expect: 401 },
      { name: 'GET /health (no longer exempt)', request: { method: 'GET', target: '/health' }, expect: 401 },
      { name: 'GET /apps', request: { method: 'GET', target: '/apps' }, expect: 401 },
      {
        name: 'GET /apps with the token',
        request: { method: 'GET', target: '/apps', headers: (t) => [['Authorization', `Bearer ${t.current}`]] },
        expect: 'protected',
      },
    ];
    it.each(table)('$name', async (c) => {
      await check(host, authority, tokens, c);
    });
  });

  describe('healthPath: false', () => {
    let authority: TokenAuthority;
    let tokens: Tokens;
    let host: Host;
    beforeAll(async () => {
      ({ authority, tokens } = await openCaseAuthority());
      host = await startHost(kind, authority, { auth: { healthPath: false }, healthRoute: '/health' });
    });
    afterAll(async () => {
      await host?.close();
      await authority?.close();
    });

    it('exempts nothing: the health route needs the token too', async () => {
      const before = { ...host.counts };
      expectRefusal(await send(host.port, get('/health'), true));
      expectRefusal(await send(host.port, `HEAD /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`, true));
      expect(host.counts).toEqual(before);
      const res = await rawRequest(host.port, get('/health', `Bearer ${tokens.current}`));
      expect(res.status).toBe(200);
      expect(res.body.toString('latin1')).toBe('ok');
      expect(host.counts).toEqual({ health: before.health + 1, protected: before.protected });
      // Authenticated, not exempt: the handler sees the context.
      expect(host.lastAuth?.keyId).toBe(authority.keyId);
    });
  });

  describe('no health route, and a catch-all GET /:page', () => {
    let authority: TokenAuthority;
    let tokens: Tokens;
    let host: Host;
    beforeAll(async () => {
      ({ authority, tokens } = await openCaseAuthority());
      host = await startHost(kind, authority, { healthRoute: false, catchAll: true });
    });
    afterAll(async () => {
      await host?.close();
      await authority?.close();
    });

    it('the catch-all is protected on every other path', async () => {
      const before = { ...host.counts };
      expectRefusal(await send(host.port, get('/about'), true));
      expect(host.counts).toEqual(before);
      const res = await send(host.port, get('/about', `Bearer ${tokens.current}`), true);
      expect(res.status).toBe(200);
      expect(host.lastRoute).toBe('page');
      expect(host.lastAuth?.keyId).toBe(authority.keyId);
    });

    // Fastify reports the route that matched, so GET /health answered by /:page is not the health check.
    // The other adapters decide before routing and cannot know: a host must mount its health handler at
    // `healthPath` (or set `healthPath: false`), as the adapters' documentation has to say.
    it.runIf(kind === 'fastify')('GET /health reaches /:page, so it is not exempt', async () => {
      const before = { ...host.counts };
      expectRefusal(await send(host.port, get('/health'), true));
      expectRefusal(await send(host.port, `HEAD /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`, true));
      expect(host.counts).toEqual(before);
    });
  });

  describe('bad options', () => {
    let authority: TokenAuthority;
    beforeAll(async () => {
      ({ authority } = await openCaseAuthority());
    });
    afterAll(async () => {
      await authority?.close();
    });

    /** The error `target`'s adapter throws (or its registration rejects with) for these arguments, or undefined. */
    async function errorOf(target: HostKind, options: unknown, auth: unknown): Promise<unknown> {
      const a = auth as TokenAuthority;
      const o = options as AuthOptions;
      if (target === 'fastify') {
        const app = Fastify();
        try {
          await app.register(fastifyAuth, { authority: a, ...o });
          return undefined;
        } catch (error) {
          return error;
        } finally {
          await app.close();
        }
      }
      try {
        if (target === 'node') withAuth(a, () => undefined, o);
        else if (target === 'fetch') fetchAuth(a, o);
        else if (target === 'hono') honoAuth(a, o);
        else if (target === 'koa') koaAuth(a, o);
        else expressAuth(a, o);
        return undefined;
      } catch (error) {
        return error;
      }
    }

    const NAME: Record<HostKind, string> = {
      node: 'withAuth',
      express5: 'expressAuth',
      express4: 'expressAuth',
      fastify: 'fastifyAuth',
      fetch: 'fetchAuth',
      hono: 'honoAuth',
      koa: 'koaAuth',
    };

    it.each([
      ['healthPath without a leading slash', { healthPath: 'health' }, '`healthPath`'],
      ['healthPath with a slash, not first', { healthPath: 'status/health' }, '`healthPath`'],
      ['healthPath a list of a path', { healthPath: ['/status'] }, '`healthPath`'],
      ['healthPath with a query', { healthPath: '/health?x' }, '`healthPath`'],
      ['healthPath with a fragment', { healthPath: '/health#x' }, '`healthPath`'],
      ['healthPath with a space', { healthPath: '/he alth' }, '`healthPath`'],
      ['healthPath empty', { healthPath: '' }, '`healthPath`'],
      ['healthPath true', { healthPath: true }, '`healthPath`'],
      ['healthPath a number', { healthPath: 1 }, '`healthPath`'],
      ['onReject not a function', { onReject: 'log' }, '`onReject`'],
      ['cors not an object', { cors: true }, '`cors`'],
      ['cors null', { cors: null }, '`cors`'],
      ['cors without origins', { cors: {} }, '`cors.origins`'],
      ['cors.origins empty', { cors: { origins: [] } }, '`cors.origins`'],
      ['cors.origins a string other than *', { cors: { origins: 'http://127.0.0.1:5173' } }, '`cors.origins`'],
      ['cors.origins with a wildcard inside', { cors: { origins: ['https://*.example.com'] } }, '`cors.origins`'],
      ['cors.origins with a trailing slash', { cors: { origins: ['http://127.0.0.1:5173/'] } }, '`cors.origins`'],
      ['cors.origins with a path', { cors: { origins: ['http://127.0.0.1:5173/app'] } }, '`cors.origins`'],
      ['cors.origins in upper case', { cors: { origins: ['HTTP://LOCALHOST:5173'] } }, '`cors.origins`'],
      ['cors.origins without a scheme', { cors: { origins: ['127.0.0.1:5173'] } }, '`cors.origins`'],
      ['cors.origins "null"', { cors: { origins: ['null'] } }, '`cors.origins`'],
      ['cors.origins with a list inside', { cors: { origins: [['http://127.0.0.1:5173']] } }, '`cors.origins`'],
      ['cors.maxAge negative', { cors: { origins: '*', maxAge: -1 } }, '`cors.maxAge`'],
      ['cors.maxAge a fraction', { cors: { origins: '*', maxAge: 1.5 } }, '`cors.maxAge`'],
      ['cors.allowHeaders with a space', { cors: { origins: '*', allowHeaders: ['x y'] } }, '`cors.allowHeaders`'],
      ['cors.allowHeaders a string', { cors: { origins: '*', allowHeaders: 'content-type' } }, '`cors.allowHeaders`'],
      ['cors.allowHeaders with a number', { cors: { origins: '*', allowHeaders: [42] } }, '`cors.allowHeaders`'],
      [
        'cors.allowHeaders, one bad of two',
        { cors: { origins: '*', allowHeaders: ['a', 'x y'] } },
        '`cors.allowHeaders`',
      ],
      ['cors.allowMethods with a space', { cors: { origins: '*', allowMethods: ['GET POST'] } }, '`cors.allowMethods`'],
      ['cors.allowMethods empty', { cors: { origins: '*', allowMethods: [] } }, '`cors.allowMethods`'],
      ['realm empty', { realm: '' }, '`realm`'],
      ['realm with a double quote', { realm: 'a"b' }, '`realm`'],
      ['realm with a backslash', { realm: 'a\\b' }, '`realm`'],
      ['realm with a leading space', { realm: ' launcher' }, '`realm`'],
      ['realm with a CR LF', { realm: 'a\r\nSet-Cookie: x=1' }, '`realm`'],
      ['realm with a non-ASCII letter', { realm: 'lanceur-é' }, '`realm`'],
      ['realm of 129 characters', { realm: 'x'.repeat(129) }, '`realm`'],
      ['realm a number', { realm: 1 }, '`realm`'],
    ])('%s: a TypeError naming the option', async (_label, options, option) => {
      const error = await errorOf(kind, options, authority);
      expect(error).toBeInstanceOf(TypeError);
      expect((error as TypeError).message).toContain(option);
      expect((error as TypeError).message).toContain(NAME[kind]);
    });

    it('an authority that is not a TokenAuthority: a TypeError naming `authority`', async () => {
      for (const wrong of [undefined, null, {}, 'token']) {
        expect(await errorOf(kind, undefined, wrong)).toEqual(
          new TypeError(`${NAME[kind]}: \`authority\` must be a TokenAuthority (from TokenAuthority.open()).`),
        );
      }
    });

    it('valid options construct without error', async () => {
      expect(await errorOf(kind, undefined, authority)).toBeUndefined();
      expect(await errorOf(kind, { healthPath: false, onReject: () => undefined }, authority)).toBeUndefined();
      expect(await errorOf(kind, { healthPath: '/status/v1' }, authority)).toBeUndefined();
      const origins = [
        'http://127.0.0.1:5173',
        'chrome-extension://abcdefghijklmnopabcdefghijklmnop',
        'http://[::1]:8080',
      ];
      expect(
        await errorOf(
          kind,
          { cors: { origins, maxAge: 0, allowHeaders: ['Content-Type'], allowMethods: ['GET'] } },
          authority,
        ),
      ).toBeUndefined();
      expect(await errorOf(kind, { cors: { origins: '*' } }, authority)).toBeUndefined();
      expect(await errorOf(kind, { realm: 'Launcher API (v2)' }, authority)).toBeUndefined();
      expect(await errorOf(kind, { realm: 'x'.repeat(128) }, authority)).toBeUndefined();
    });

    it.runIf(kind !== 'fastify')('options that are not an object (null included): a TypeError', async () => {
      for (const options of ['options', null]) {
        expect(await errorOf(kind, options, authority)).toEqual(
          new TypeError(`${NAME[kind]}: options must be an object.`),
        );
      }
    });

    it.runIf(kind === 'node')('a handler that is not a function: a TypeError naming `handler`', () => {
      expect(() => withAuth(authority, 'handler' as never)).toThrow(TypeError);
      expect(() => withAuth(authority, 'handler' as never)).toThrow(/withAuth: `handler`/);
      expect(() => withUpgradeAuth(authority, undefined as never)).toThrow(/withUpgradeAuth: `handler`/);
      expect(() => withUpgradeAuth(authority, () => undefined, { healthPath: 'x' })).toThrow(
        /withUpgradeAuth: `healthPath`/,
      );
    });
  });
});

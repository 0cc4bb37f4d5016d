// The `cors` option over real sockets, against every adapter: an allowed preflight answered by the adapter
// (204, exact headers, no body, no handler), a preflight from any other origin refused with the uniform 401,
// CORS headers on the 401s and the passes of allowed origins only, and none at all when the option is off.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RejectInfo, TokenAuthority } from 'launcher-auth';
import { openCaseAuthority, type Tokens } from './cases.js';
import { CHALLENGE, HOST_KINDS, expectRefusal, rawRequest, startHost, type Host, type RawResponse } from './harness.js';

const PAGE = 'http://127.0.0.1:5173';
const EXTENSION = 'chrome-extension://abcdefghijklmnopabcdefghijklmnop';
const OTHER = 'http://127.0.0.1:6666';

function request(method: string, target: string, headers: Record<string, string>): string {
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  const length = method === 'POST' ? 'Content-Length: 0\r\n' : '';
  return `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n${lines.join('')}${length}\r\n`;
}
const preflight = (target: string, origin: string, extra: Record<string, string> = {}): string =>
  request('OPTIONS', target, {
    Origin: origin,
    'Access-Control-Request-Method': 'POST',
    'Access-Control-Request-Headers': 'authorization,content-type',
    ...extra,
  });

/** The CORS-related headers of a response (and Vary), names in lower case. */
function corsHeaders(res: RawResponse): Record<string, string> {
  return Object.fromEntries(
    Object.entries(res.headers).filter(([name]) => name.startsWith('access-control-') || name === 'vary'),
  );
}

/** The uniform refusal of an adapter with `cors` set: the same, plus `Vary: Origin`. */
function expectVariedRefusal(res: RawResponse): void {
  expect(res.headers.vary).toBe('Origin');
  const { vary: _vary, ...rest } = res.headers;
  expectRefusal({ ...res, headers: rest });
}

/** Headers a framework adds by itself, which carry nothing of the request. */
const FRAMEWORK = new Set(['date', 'connection', 'keep-alive', 'x-powered-by']);

describe.each(HOST_KINDS)('%s adapter with cors', (kind) => {
  let authority: TokenAuthority;
  let tokens: Tokens;
  let host: Host;
  let star: Host;
  let off: Host;
  const infos: RejectInfo[] = [];
  beforeAll(async () => {
    ({ authority, tokens } = await openCaseAuthority());
    host = await startHost(kind, authority, {
      auth: {
        cors: { origins: [PAGE, EXTENSION], maxAge: 300, allowHeaders: ['Content-Type', 'X-Request-Id'] },
        onReject: (info) => void infos.push(info),
      },
    });
    star = await startHost(kind, authority, { auth: { cors: { origins: '*', allowMethods: ['GET', 'POST'] } } });
    off = await startHost(kind, authority);
  });
  afterAll(async () => {
    await host?.close();
    await star?.close();
    await off?.close();
    await authority?.close();
  });

  it.each([
    ['a protected route', '/apps/editor/launch'],
    ['the health path', '/health'],
    ['an unknown path', '/nope'],
  ])('answers an allowed preflight to %s itself: 204, exact headers, no body, no handler', async (_label, target) => {
    for (const origin of [PAGE, EXTENSION]) {
      const before = { ...host.counts };
      const res = await rawRequest(host.port, preflight(target, origin));
      expect(res.status).toBe(204);
      expect(res.body.length).toBe(0);
      expect(corsHeaders(res)).toEqual({
        'access-control-allow-origin': origin,
        'access-control-allow-headers': 'authorization, content-type, x-request-id',
        'access-control-allow-methods': 'GET, HEAD, POST, PUT, PATCH, DELETE',
        'access-control-max-age': '300',
        vary: 'Origin',
      });
      expect(Object.keys(res.headers).filter((name) => !FRAMEWORK.has(name) && !(name in corsHeaders(res)))).toEqual([
        'content-length',
      ]);
      expect(res.headers['content-length']).toBe('0');
      expect(host.counts).toEqual(before);
    }
  });

  it('refuses a preflight from an origin not allowed with the uniform 401, even with a valid token; onReject says missing', async () => {
    const before = { ...host.counts };
    infos.length = 0;
    for (const origin of [OTHER, 'null', `${PAGE}/`, 'HTTP://127.0.0.1:5173']) {
      expectVariedRefusal(await rawRequest(host.port, preflight('/apps', origin)));
      expectVariedRefusal(
        await rawRequest(host.port, preflight('/apps', origin, { Authorization: `Bearer ${tokens.current}` })),
      );
    }
    expect(host.counts).toEqual(before);
    expect(infos.length).toBe(8);
    expect(infos.every((info) => info.method === 'OPTIONS' && info.reason === 'missing' && info.path === '/apps')).toBe(
      true,
    );
  });

  it('adds ACAO, Vary and Expose-Headers to the 401 of an allowed origin, which keeps its status and empty body', async () => {
    const before = { ...host.counts };
    for (const authorization of [undefined, `Bearer ${tokens.previous}`, `Bearer ${tokens.wrongKey}`]) {
      const headers: Record<string, string> = {
        Origin: PAGE,
        ...(authorization === undefined ? {} : { Authorization: authorization }),
      };
      const res = await rawRequest(host.port, request('GET', '/apps', headers));
      expect(res.status).toBe(401);
      expect(res.body.length).toBe(0);
      expect(res.headers['www-authenticate']).toBe(CHALLENGE);
      expect(res.headers['content-length']).toBe('0');
      expect(res.headers['content-type']).toBeUndefined();
      expect(corsHeaders(res)).toEqual({
        'access-control-allow-origin': PAGE,
        'access-control-expose-headers': 'WWW-Authenticate',
        vary: 'Origin',
      });
    }
    expect(host.counts).toEqual(before);
  });

  it('adds the same headers to a request that passes, from an allowed origin only', async () => {
    const before = host.counts.protected;
    const allowed = await rawRequest(
      host.port,
      request('GET', '/apps', { Origin: PAGE, Authorization: `Bearer ${tokens.current}` }),
    );
    expect(allowed.status).toBe(200);
    expect(allowed.body.toString()).toBe('apps');
    expect(corsHeaders(allowed)).toEqual({
      'access-control-allow-origin': PAGE,
      'access-control-expose-headers': 'WWW-Authenticate',
      vary: 'Origin',
    });
    const launched = await rawRequest(
      host.port,
      request('POST', '/apps/editor/launch', { Origin: EXTENSION, Authorization: `Bearer ${tokens.current}` }),
    );
    expect(launched.status).toBe(200);
    expect(corsHeaders(launched)['access-control-allow-origin']).toBe(EXTENSION);
    const health = await rawRequest(host.port, request('GET', '/health', { Origin: PAGE }));
    expect(health.status).toBe(200);
    expect(corsHeaders(health)['access-control-allow-origin']).toBe(PAGE);

    const other = await rawRequest(
      host.port,
      request('GET', '/apps', { Origin: OTHER, Authorization: `Bearer ${tokens.current}` }),
    );
    expect(other.status).toBe(200);
    expect(corsHeaders(other)).toEqual({ vary: 'Origin' });
    const none = await rawRequest(host.port, request('GET', '/apps', { Authorization: `Bearer ${tokens.current}` }));
    expect(corsHeaders(none)).toEqual({ vary: 'Origin' });
    expect(host.counts.protected).toBe(before + 4);
  });

  it('every answer carries Vary: Origin, also without Origin or from an origin not allowed (so no cache mixes them)', async () => {
    const before = { ...host.counts };
    for (const origin of [undefined, OTHER]) {
      const from = origin === undefined ? {} : { Origin: origin };
      expectVariedRefusal(await rawRequest(host.port, request('GET', '/apps', from)));
      expectVariedRefusal(
        await rawRequest(host.port, request('GET', '/apps', { ...from, Authorization: `Bearer ${tokens.previous}` })),
      );
      expectVariedRefusal(await rawRequest(host.port, request('OPTIONS', '/apps', from)));
      const health = await rawRequest(host.port, request('GET', '/health', from));
      expect(health.status).toBe(200);
      expect(corsHeaders(health)).toEqual({ vary: 'Origin' });
    }
    expect(host.counts.protected).toBe(before.protected);
  });

  it('two Access-Control-Request-Method headers, or two Origin headers, make no preflight: the same 401 everywhere', async () => {
    const twice = (lines: string): string => `OPTIONS /apps HTTP/1.1\r\nHost: 127.0.0.1\r\n${lines}\r\n`;
    // Two methods: an ordinary OPTIONS from that origin, which needs the token. Two origins: no origin at all.
    const exposed = (origin: string) => ({
      'access-control-allow-origin': origin,
      'access-control-expose-headers': 'WWW-Authenticate',
      vary: 'Origin',
    });
    const cases = [
      [
        host,
        `Origin: ${PAGE}\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Method: POST\r\n`,
        exposed(PAGE),
      ],
      [
        star,
        `Origin: ${PAGE}\r\nAccess-Control-Request-Method: POST\r\nAccess-Control-Request-Method: GET\r\n`,
        exposed('*'),
      ],
      [star, `Origin: ${PAGE}\r\nOrigin: ${OTHER}\r\nAccess-Control-Request-Method: POST\r\n`, { vary: 'Origin' }],
      [star, `Origin: ${PAGE}\r\nOrigin: ${PAGE}\r\nAccess-Control-Request-Method: POST\r\n`, { vary: 'Origin' }],
      [host, `Origin: ${PAGE}\r\nOrigin: ${PAGE}\r\nAccess-Control-Request-Method: POST\r\n`, { vary: 'Origin' }],
      // Two origins in one line: as absent as two lines.
      [star, `Origin: ${PAGE}, ${OTHER}\r\nAccess-Control-Request-Method: POST\r\n`, { vary: 'Origin' }],
    ] as const;
    for (const [target, lines, expected] of cases) {
      const before = { ...target.counts };
      const res = await rawRequest(target.port, twice(lines));
      expect(res.status).toBe(401);
      expect(res.body.length).toBe(0);
      expect(res.headers['www-authenticate']).toBe(CHALLENGE);
      expect(corsHeaders(res)).toEqual(expected);
      expect(target.counts).toEqual(before);
    }
  });

  it('a GET with Access-Control-Request-Method is no preflight: it needs the token like any request', async () => {
    const before = { ...host.counts };
    const res = await rawRequest(
      host.port,
      request('GET', '/apps', { Origin: PAGE, 'Access-Control-Request-Method': 'POST' }),
    );
    expect(res.status).toBe(401);
    expect(res.body.length).toBe(0);
    expect(corsHeaders(res)['access-control-allow-origin']).toBe(PAGE);
    expect(host.counts).toEqual(before);
  });

  it('an OPTIONS without Access-Control-Request-Method is no preflight: it needs the token like any request', async () => {
    const before = { ...host.counts };
    const res = await rawRequest(host.port, request('OPTIONS', '/apps', { Origin: PAGE }));
    expect(res.status).toBe(401);
    expect(res.body.length).toBe(0);
    expect(corsHeaders(res)['access-control-allow-origin']).toBe(PAGE);
    expect(host.counts).toEqual(before);
  });

  it("origins '*': Access-Control-Allow-Origin is *, for a preflight, a 401 and a pass", async () => {
    const before = { ...star.counts };
    const pre = await rawRequest(star.port, preflight('/apps', OTHER));
    expect(pre.status).toBe(204);
    expect(pre.body.length).toBe(0);
    expect(corsHeaders(pre)).toEqual({
      'access-control-allow-origin': '*',
      'access-control-allow-headers': 'authorization',
      'access-control-allow-methods': 'GET, POST',
      'access-control-max-age': '600',
      vary: 'Origin',
    });
    expect(star.counts).toEqual(before);
    const refused = await rawRequest(star.port, request('GET', '/apps', { Origin: OTHER }));
    expect(refused.status).toBe(401);
    expect(refused.body.length).toBe(0);
    expect(corsHeaders(refused)['access-control-allow-origin']).toBe('*');
    const passed = await rawRequest(
      star.port,
      request('GET', '/apps', { Origin: OTHER, Authorization: `Bearer ${tokens.current}` }),
    );
    expect(passed.status).toBe(200);
    expect(corsHeaders(passed)['access-control-allow-origin']).toBe('*');
  });

  it('onReject is called for refusals only: never for an allowed preflight or a request that passes', async () => {
    infos.length = 0;
    const current = { Authorization: `Bearer ${tokens.current}` };
    expect((await rawRequest(host.port, preflight('/apps', PAGE))).status).toBe(204);
    for (const from of [{ Origin: PAGE }, { Origin: OTHER }, {}]) {
      expect((await rawRequest(host.port, request('GET', '/apps', { ...from, ...current }))).status).toBe(200);
      expect((await rawRequest(host.port, request('GET', '/health', from))).status).toBe(200);
    }
    expect(infos.length).toBe(0);
    // The positive sign that a refusal on the same server is heard.
    expectVariedRefusal(await rawRequest(host.port, request('GET', '/apps', {})));
    expect(infos.map((info) => info.reason)).toEqual(['missing']);
  });

  it('only the Origin header is read as the origin, not another header of six letters', async () => {
    const current = { Authorization: `Bearer ${tokens.current}` };
    const beside = await rawRequest(
      host.port,
      request('GET', '/apps', { Accept: '*/*', Origin: PAGE, Pragma: 'no-cache', ...current }),
    );
    expect(beside.status).toBe(200);
    expect(corsHeaders(beside)['access-control-allow-origin']).toBe(PAGE);
    const instead = await rawRequest(host.port, request('GET', '/apps', { Pragma: PAGE, ...current }));
    expect(instead.status).toBe(200);
    expect(corsHeaders(instead)).toEqual({ vary: 'Origin' });
  });

  it('off by default: no CORS header at all, and a preflight gets the uniform 401', async () => {
    const before = { ...off.counts };
    expectRefusal(await rawRequest(off.port, preflight('/apps', PAGE)));
    expectRefusal(await rawRequest(off.port, request('GET', '/apps', { Origin: PAGE })));
    expect(off.counts).toEqual(before);
    const passed = await rawRequest(
      off.port,
      request('GET', '/apps', { Origin: PAGE, Authorization: `Bearer ${tokens.current}` }),
    );
    expect(passed.status).toBe(200);
    expect(corsHeaders(passed)).toEqual({});
  });
});

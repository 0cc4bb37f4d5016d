// The `cors` option's answers, built in the test (test/adapters/cors.test.ts runs them over real sockets on every
// adapter, with hosts started once): each outcome's exact headers, and which of them onReject hears of.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { MemorySecretStore, TokenAuthority, type RejectInfo } from 'launcher-auth';
import { fetchAuth } from '../../src/adapters/fetch.js';
import { withAuth } from '../../src/adapters/node.js';
import { rawRequest } from '../adapters/harness.js';
import type { CorsOptions } from '../../src/gate/cors.js';

const PAGE = 'http://127.0.0.1:5173';
const OTHER = 'http://127.0.0.1:6666';
const CHALLENGE = 'Bearer realm="launcher"';

async function guarded(cors: CorsOptions) {
  const authority = await TokenAuthority.open({ store: new MemorySecretStore() });
  onTestFinished(() => authority.close());
  const reasons: string[] = [];
  const guard = fetchAuth(authority, { cors, onReject: (info: RejectInfo) => void reasons.push(info.reason) });
  return { authority, guard, reasons };
}

const preflight = (origin: string): Request =>
  new Request('http://127.0.0.1/apps', {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': 'POST' },
  });
const get = (headers: Record<string, string>): Request => new Request('http://127.0.0.1/apps', { headers });

/** Status and every header of an answer (a Response), or what else the guard resolved to. */
function answer(result: unknown): unknown {
  if (!(result instanceof Response)) return result;
  const headers: Record<string, string> = {};
  result.headers.forEach((value, name) => (headers[name] = value));
  return { status: result.status, headers };
}

describe('cors: the answers of listed origins', () => {
  it('an allowed preflight: 204 with its headers, header names in lower case once, and onReject hears nothing', async () => {
    const { guard, reasons } = await guarded({
      origins: [PAGE],
      maxAge: 300,
      allowHeaders: ['Content-Type', 'content-type'],
    });
    expect(answer(await guard(preflight(PAGE)))).toEqual({
      status: 204,
      headers: {
        'access-control-allow-origin': PAGE,
        'access-control-allow-headers': 'authorization, content-type',
        'access-control-allow-methods': 'GET, HEAD, POST, PUT, PATCH, DELETE',
        'access-control-max-age': '300',
        vary: 'Origin',
        'content-length': '0',
      },
    });
    expect(reasons).toEqual([]);
  });

  it("an allowed origin's 401 and pass carry the origin and expose the challenge; onReject hears the 401 only", async () => {
    const { authority, guard, reasons } = await guarded({ origins: [PAGE] });
    const cors = {
      'access-control-allow-origin': PAGE,
      'access-control-expose-headers': 'WWW-Authenticate',
      vary: 'Origin',
    };
    expect(answer(await guard(get({ origin: PAGE })))).toEqual({
      status: 401,
      headers: { 'www-authenticate': CHALLENGE, 'content-length': '0', ...cors },
    });
    const passing = get({ origin: PAGE, authorization: `Bearer ${authority.issue()}` });
    expect(await guard(passing)).toMatchObject({ keyId: authority.keyId });
    expect(answer(guard.cors(passing, new Response(null)))).toEqual({
      status: 200,
      headers: cors,
    });
    expect(reasons).toEqual(['missing']);
  });

  it('a preflight from another origin: the 401 with Vary, told to onReject; no Origin: Vary alone', async () => {
    const { authority, guard, reasons } = await guarded({ origins: [PAGE] });
    const varied = { status: 401, headers: { 'www-authenticate': CHALLENGE, 'content-length': '0', vary: 'Origin' } };
    expect(answer(await guard(preflight(OTHER)))).toEqual(varied);
    expect(reasons).toEqual(['missing']);
    expect(answer(await guard(get({})))).toEqual(varied);
    expect(reasons).toEqual(['missing', 'missing']);
    const passing = get({ authorization: `Bearer ${authority.issue()}` });
    expect(await guard(passing)).toMatchObject({ keyId: authority.keyId });
    expect(answer(guard.cors(passing, new Response(null)))).toEqual({ status: 200, headers: { vary: 'Origin' } });
    expect(reasons).toEqual(['missing', 'missing']);
  });
});

describe('cors: on node:http, which sets the pass headers one by one', () => {
  it('a request without Origin that passes gets `Vary: Origin`', async () => {
    const authority = await TokenAuthority.open({ store: new MemorySecretStore() });
    onTestFinished(() => authority.close());
    const server = createServer(withAuth(authority, (_req, res) => res.end('apps'), { cors: { origins: [PAGE] } }));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => void server.close());
    const { port } = server.address() as AddressInfo;
    const res = await rawRequest(
      port,
      `GET /apps HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${authority.issue()}\r\nConnection: close\r\n\r\n`,
    );
    expect([res.status, res.headers.vary, res.body.toString('latin1')]).toEqual([200, 'Origin', 'apps']);
  });
});

describe("cors: origins '*'", () => {
  it('every origin gets the answers of an allowed one, with `*`; Authorization alone by default', async () => {
    const { guard, reasons } = await guarded({ origins: '*', allowMethods: ['GET'] });
    for (const origin of [PAGE, OTHER]) {
      expect(answer(await guard(preflight(origin)))).toEqual({
        status: 204,
        headers: {
          'access-control-allow-origin': '*',
          'access-control-allow-headers': 'authorization',
          'access-control-allow-methods': 'GET',
          'access-control-max-age': '600',
          vary: 'Origin',
          'content-length': '0',
        },
      });
    }
    expect(reasons).toEqual([]);
  });
});

describe('cors: a bad origin', () => {
  it('a TypeError that says how to write one', async () => {
    const authority = await TokenAuthority.open({ store: new MemorySecretStore() });
    onTestFinished(() => authority.close());
    expect(() => fetchAuth(authority, { cors: { origins: ['http://127.0.0.1:5173/'] } })).toThrow(
      new TypeError(
        "fetchAuth: `cors.origins` must hold origins written exactly scheme://host[:port] in lower case, without a path, a trailing slash or a wildcard (such as 'http://127.0.0.1:5173').",
      ),
    );
  });
});

// withAuth on node:http2's compatibility API, over real h2c sockets (http2.connect to http2.createServer): the
// core cases of the shared table, and the same empty 401 with its challenge.
import {
  connect,
  createServer,
  type ClientHttp2Session,
  type Http2Server,
  type Http2ServerRequest,
  type OutgoingHttpHeaders,
} from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TokenAuthority } from 'launcher-auth';
import { withAuth, withContinueAuth } from '../../src/adapters/node.js';
import { openCaseAuthority, type Tokens } from './cases.js';
import { CHALLENGE } from './harness.js';

interface Answer {
  status: number;
  headers: Record<string, unknown>;
  body: string;
}

let authority: TokenAuthority;
let tokens: Tokens;
let server: Http2Server;
let session: ClientHttp2Session;
const runs: Array<{ path: string; keyId: string | undefined }> = [];

function ask(method: string, path: string, headers: OutgoingHttpHeaders = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':method': method, ':path': path, ...headers }, { endStream: method !== 'POST' });
    if (method === 'POST') stream.end('x=1');
    let body = '';
    let head: Record<string, unknown> = {};
    stream.setEncoding('utf8');
    stream.on('response', (h) => (head = { ...h }));
    stream.on('data', (chunk: string) => (body += chunk));
    stream.on('end', () => resolve({ status: Number(head[':status']), headers: head, body }));
    stream.on('error', reject);
  });
}

beforeAll(async () => {
  ({ authority, tokens } = await openCaseAuthority());
  const handler = withAuth<Http2ServerRequest>(authority, (req, res) => {
    const path = req.url.split('?', 1)[0] ?? '';
    runs.push({ path, keyId: req.auth?.keyId });
    if (path === '/health') res.end('ok');
    else if (path === '/apps') res.end(`apps ${req.httpVersion}`);
    else {
      res.writeHead(404);
      res.end();
    }
  });
  server = createServer(handler);
  server.on('checkContinue', withContinueAuth(authority, handler));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  session = connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});

afterAll(async () => {
  session?.close();
  await new Promise((resolve) => server?.close(resolve));
  await authority?.close();
});

function expectRefused(answer: Answer): void {
  expect(answer.status).toBe(401);
  expect(answer.body).toBe('');
  expect(answer.headers['www-authenticate']).toBe(CHALLENGE);
  expect(answer.headers['content-length']).toBe('0');
  expect(answer.headers['content-type']).toBeUndefined();
}

describe('node:http2 (h2c) with withAuth', () => {
  it.each([
    ['no Authorization', 'GET', '/apps', {}],
    ['an invalid token', 'GET', '/apps', { authorization: 'Bearer not.a.token' }],
    ['the token before the latest rotate()', 'GET', '/apps', { authorization: 'previous' }],
    ['a token signed with another key', 'GET', '/apps', { authorization: 'wrongKey' }],
    ['alg none', 'GET', '/apps', { authorization: 'algNone' }],
    ['an 8 KB token signed with the right key', 'GET', '/apps', { authorization: 'big' }],
    ['the token without the scheme', 'GET', '/apps', { authorization: 'bare' }],
    ['POST /health', 'POST', '/health', {}],
    ['GET /health/', 'GET', '/health/', {}],
    ['GET /HEALTH', 'GET', '/HEALTH', {}],
    ['GET /%68ealth', 'GET', '/%68ealth', {}],
    ['an unknown path', 'GET', '/nope', {}],
  ] as const)('%s: the empty 401, no handler ran', async (_label, method, path, given) => {
    runs.length = 0;
    const which = (given as { authorization?: string }).authorization;
    const value =
      which === undefined
        ? undefined
        : which === 'bare'
          ? tokens.current
          : which in tokens
            ? `Bearer ${tokens[which as keyof Tokens]}`
            : which;
    expectRefused(await ask(method, path, value === undefined ? {} : { authorization: value }));
    expect(runs).toEqual([]);
  });

  it('two credentials in one Authorization field (what combined fields look like), both valid: refused', async () => {
    // Node's http2 client will not send the field twice; a combined value is what a proxy would forward.
    runs.length = 0;
    const valid = `Bearer ${tokens.current}`;
    expectRefused(await ask('GET', '/apps', { authorization: `${valid}, ${valid}` }));
    expect(runs).toEqual([]);
  });

  it('the current token reaches the handler with auth set', async () => {
    runs.length = 0;
    const answer = await ask('GET', '/apps', { authorization: `Bearer ${tokens.current}` });
    expect([answer.status, answer.body]).toEqual([200, 'apps 2.0']);
    expect(runs).toEqual([{ path: '/apps', keyId: authority.keyId }]);
  });

  it('GET and HEAD of the health path are exempt, with or without a query', async () => {
    runs.length = 0;
    expect(await ask('GET', '/health')).toMatchObject({ status: 200, body: 'ok' });
    expect(await ask('GET', '/health?x=1')).toMatchObject({ status: 200, body: 'ok' });
    expect((await ask('HEAD', '/health')).status).toBe(200);
    expect(runs).toEqual([
      { path: '/health', keyId: undefined },
      { path: '/health', keyId: undefined },
      { path: '/health', keyId: undefined },
    ]);
  });

  it('a rotation revokes at once: the old token is refused, the new one accepted', async () => {
    const old = authority.issue();
    const fresh = await authority.rotate();
    expectRefused(await ask('GET', '/apps', { authorization: `Bearer ${old}` }));
    expect((await ask('GET', '/apps', { authorization: `Bearer ${fresh}` })).status).toBe(200);
    tokens = { ...tokens, previous: old, current: fresh };
  });

  it('Expect: 100-continue without a token: refused on its stream, no Connection header (HTTP/2 has none)', async () => {
    runs.length = 0;
    const answer = await ask('POST', '/apps', { expect: '100-continue' });
    expectRefused(answer);
    expect(answer.headers['connection']).toBeUndefined();
    expect(runs).toEqual([]);
  });
});

// Expect: 100-continue (RFC 9110 §10.1.1): with withContinueAuth on 'checkContinue', a client without a valid
// token gets the 401 before it uploads anything; a client with one gets 100 Continue, uploads, and is served.
// Wired on every adapter's node:http server as the README shows (the request goes back to the server's listener).
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { TokenAuthority } from 'launcher-auth';
import { withAuth, withContinueAuth } from '../../src/adapters/node.js';
import { openCaseAuthority, type Tokens } from './cases.js';
import { CHALLENGE, HOST_KINDS, startHost, type Host } from './harness.js';

interface Outcome {
  status: number;
  headers: IncomingMessage['headers'];
  body: string;
  /** Whether the server sent `100 Continue` (and so the body was uploaded). */
  continued: boolean;
}

/** POSTs `body` with `Expect: 100-continue`, sending the body only once the server says 100 Continue. */
function post(port: number, path: string, body: string, token?: string): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = {
      expect: '100-continue',
      'content-type': 'text/plain',
      'content-length': String(Buffer.byteLength(body)),
    };
    if (token !== undefined) headers['authorization'] = `Bearer ${token}`;
    const req = httpRequest({ host: '127.0.0.1', port, path, method: 'POST', headers, agent: false });
    let continued = false;
    req.on('continue', () => {
      continued = true;
      req.end(body);
    });
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        resolve({ status: res.statusCode as number, headers: res.headers, body: text, continued });
        req.destroy();
      });
    });
    req.on('error', reject);
    req.flushHeaders();
  });
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

describe('node:http: withContinueAuth on checkContinue', () => {
  let authority: TokenAuthority;
  let tokens: Tokens;
  let port: number;
  let server: Server;
  const seen: Array<{ path: string; body: string; keyId: string | undefined }> = [];
  beforeAll(async () => {
    ({ authority, tokens } = await openCaseAuthority());
    const handler = withAuth(authority, (req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        seen.push({ path: req.url ?? '', body, keyId: req.auth?.keyId });
        res.end(`got ${body.length}`);
      });
    });
    server = createServer(handler);
    server.on(
      'checkContinue',
      withContinueAuth(authority, (req, res) => server.emit('request', req, res)),
    );
    port = await listen(server);
  });
  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise((resolve) => server?.close(resolve));
    await authority?.close();
  });

  it.each([
    ['no token', undefined],
    ['the previous token', 'previous'],
    ['a forged token', 'wrongKey'],
  ] as const)(
    '%s: 401 before the upload (no 100 Continue), empty, and the connection closes',
    async (_label, which) => {
      seen.length = 0;
      const outcome = await post(port, '/upload', 'x'.repeat(100_000), which === undefined ? undefined : tokens[which]);
      expect(outcome).toEqual({
        status: 401,
        headers: expect.objectContaining({ 'www-authenticate': CHALLENGE, 'content-length': '0', connection: 'close' }),
        body: '',
        continued: false,
      });
      expect(seen).toEqual([]);
    },
  );

  it('the current token: 100 Continue, then the upload reaches the handler', async () => {
    seen.length = 0;
    const outcome = await post(port, '/upload', 'hello', tokens.current);
    expect(outcome.continued).toBe(true);
    expect(outcome.status).toBe(200);
    expect(outcome.body).toBe('got 5');
    expect(seen).toEqual([{ path: '/upload', body: 'hello', keyId: authority.keyId }]);
  });

  it('without the checkContinue listener Node says 100 Continue before any handler decides', async () => {
    const plain = createServer(withAuth(authority, (_req, res) => res.end('never')));
    const plainPort = await listen(plain);
    onTestFinished(async () => {
      plain.closeAllConnections();
      await new Promise((resolve) => plain.close(resolve));
    });
    const outcome = await post(plainPort, '/upload', 'hello');
    expect(outcome.status).toBe(401);
    expect(outcome.continued).toBe(true);
  });
});

describe.each(HOST_KINDS)('%s: checkContinue wired as the README shows', (kind) => {
  let authority: TokenAuthority;
  let tokens: Tokens;
  let host: Host;
  beforeAll(async () => {
    ({ authority, tokens } = await openCaseAuthority());
    host = await startHost(kind, authority, { continue: true });
  });
  afterAll(async () => {
    await host?.close();
    await authority?.close();
  });

  it('no token: 401 before the upload; the current token: 100 Continue, then the protected handler', async () => {
    const before = { ...host.counts };
    const refused = await post(host.port, '/apps/editor/launch', 'hello');
    expect([refused.status, refused.body, refused.continued]).toEqual([401, '', false]);
    expect(refused.headers['www-authenticate']).toBe(CHALLENGE);
    expect(host.counts).toEqual(before);
    const served = await post(host.port, '/apps/editor/launch', 'hello', tokens.current);
    expect([served.status, served.body, served.continued]).toEqual([200, 'launched editor', true]);
    expect(host.counts).toEqual({ health: before.health, protected: before.protected + 1 });
    expect(host.lastAuth?.keyId).toBe(authority.keyId);
  });
});

// launcher-auth/hono beyond the shared table: WebSocket handshakes through Hono's own helper (upgradeWebSocket on
// @hono/node-server's `websocket` option), the `health` handler, errors the app's onError must not turn into a body,
// and onReject where no socket is at hand (as on Bun and Deno, and for fetchAuth without a `peer`).
import type { Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { serve, upgradeWebSocket, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { HTTPException } from 'hono/http-exception';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import type { RejectInfo, TokenAuthority } from 'launcher-auth';
import { fetchAuth } from '../../src/adapters/fetch.js';
import { honoAuth, type HonoAuthEnv } from '../../src/adapters/hono.js';
import { openCaseAuthority, type Tokens } from './cases.js';
import {
  CHALLENGE,
  expectRefusal,
  handshakeStatus,
  rawPipeline,
  rawRequest,
  sendFramed,
  serveWithWebSockets,
  type RawResponse,
} from './harness.js';
import { within } from '../support/poll.js';

function websocket(target: string, extra = ''): string {
  return (
    `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
    `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n${extra}\r\n`
  );
}
const bearer = (token: string): string => `Authorization: Bearer ${token}\r\n`;
const get = (target: string, extra = ''): string => `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n${extra}\r\n`;

function firstMessage(ws: WebSocket): Promise<string> {
  const first = new Promise<string>((resolve, reject) => {
    ws.once('message', (data) => resolve((data as Buffer).toString()));
    ws.once('error', reject);
  });
  return within(first, 'the first message');
}

/** The refusal @hono/node-server writes for an upgrade the app answered with honoAuth's 401. */
function expectUpgradeRefusal(res: RawResponse): void {
  expect(res.status).toBe(401);
  expect(res.body.length).toBe(0);
  expect(res.headerList.map(([name]) => name.toLowerCase()).sort()).toEqual([
    'connection',
    'content-length',
    'www-authenticate',
  ]);
  expect(res.headers['www-authenticate']).toBe(CHALLENGE);
  expect(res.headers['content-length']).toBe('0');
  expect(res.headers['connection']).toBe('close');
  expect(res.closed).toBe(true);
}

describe("WebSocket handshakes through Hono's upgradeWebSocket on @hono/node-server", () => {
  let authority: TokenAuthority;
  let tokens: Tokens;
  let server: ServerType;
  let port: number;
  const wss = new WebSocketServer({ noServer: true });
  /** Runs of the protected handlers: the socket factory and the health and app routes. */
  const runs = { socket: 0, health: 0, app: 0 };
  let onErrorCalls = 0;
  const sockets = new Set<Socket>();
  /** The Sec-WebSocket-Protocol value each accepted handshake showed the app. */
  const offered: Array<string | undefined> = [];

  beforeAll(async () => {
    ({ authority, tokens } = await openCaseAuthority());
    const app = new Hono<HonoAuthEnv>();
    app.use(honoAuth(authority, { health: (c) => (runs.health++, c.text('ok')), subprotocolToken: true }));
    app.onError((_error, c) => (onErrorCalls++, c.json({ error: 'handled by the app' }, 500)));
    app.get(
      '/ws',
      upgradeWebSocket((c) => {
        runs.socket += 1;
        offered.push(c.req.header('sec-websocket-protocol'));
        const { signal } = c.get('auth');
        return {
          onOpen(_event, ws) {
            // A revoked token ends the connection: 1008 is "policy violation".
            const revoke = (): void => ws.close(1008, 'token revoked');
            if (signal.aborted) return revoke();
            signal.addEventListener('abort', revoke, { once: true });
            ws.send('hello');
          },
        };
      }),
    );
    app.get('/apps', (c) => (runs.app++, c.text(c.get('auth').keyId)));
    app.get('/fails', () => {
      throw new HTTPException(418);
    });
    ({ server, port } = await serveWithWebSockets(app.fetch, wss));
    // Upgraded sockets leave node:http's bookkeeping, so closeAllConnections() does not reach them.
    server.on('connection', (socket: Socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    });
  });
  afterAll(async () => {
    for (const client of wss.clients) client.terminate();
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
    await authority?.close();
  });

  it('a handshake without a token, with the previous one, a forged one or two headers: the empty 401, the socket closed, no handler', async () => {
    const before = { ...runs };
    for (const extra of [
      '',
      bearer(tokens.previous),
      bearer(tokens.wrongKey),
      bearer('not.a.token'),
      bearer(tokens.current) + bearer(tokens.current),
      bearer(tokens.current) + bearer(tokens.previous),
    ]) {
      const { responses, trailing } = await rawPipeline(port, [websocket('/ws', extra)]);
      expect(responses.length).toBe(1);
      expectUpgradeRefusal(responses[0] as RawResponse);
      expect(trailing.length).toBe(0);
    }
    expect(runs).toEqual(before);
    expect(onErrorCalls).toBe(0);
  });

  it('a handshake to the health path is not exempt, with or without a query, in any letter case of the protocol', async () => {
    const before = { ...runs };
    for (const text of [
      websocket('/health'),
      websocket('/health?x=1'),
      websocket('/health').replace('websocket', 'WebSocket'),
    ]) {
      expectUpgradeRefusal(await rawRequest(port, text, { untilClose: true }));
    }
    expect(runs).toEqual(before);
  });

  it('the current token opens the socket; rotate() closes it with 1008', async () => {
    const before = runs.socket;
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`, {
      headers: { authorization: `Bearer ${authority.issue()}` },
    });
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      ws.once('close', (code, reason) => resolve({ code, reason: reason.toString('utf8') })),
    );
    const first = await firstMessage(ws);
    expect(first).toBe('hello');
    expect(runs.socket).toBe(before + 1);
    const previous = authority.issue();
    await authority.rotate();
    expect(await within(closed, 'the close after rotate()')).toEqual({ code: 1008, reason: 'token revoked' });
    tokens = { ...tokens, previous, current: authority.issue() };
  });

  it('the ws client sees 401 for the token before the latest rotate()', async () => {
    const previous = authority.issue();
    await authority.rotate();
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`, { headers: { authorization: `Bearer ${previous}` } });
    const status = await handshakeStatus(ws);
    expect(status).toBe(401);
    tokens = { ...tokens, previous, current: authority.issue() };
  });

  it('subprotocolToken: the token entry opens the socket; the app and the answer only ever see the other protocols', async () => {
    const before = runs.socket;
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`, ['launcher.v1', `authorization.bearer.${authority.issue()}`]);
    const first = await firstMessage(ws);
    expect(first).toBe('hello');
    expect(ws.protocol).toBe('launcher.v1');
    expect(runs.socket).toBe(before + 1);
    expect(offered.at(-1)).toBe('launcher.v1');
    ws.terminate();
  });

  it('subprotocolToken: an old or forged entry, an entry beside the header, two entries, an entry on a plain GET: the 401', async () => {
    const before = { ...runs };
    const entry = (token: string): string => `authorization.bearer.${token}`;
    const protocols = (...list: string[]): string => `Sec-WebSocket-Protocol: ${list.join(', ')}\r\n`;
    for (const extra of [
      protocols('launcher.v1', entry(tokens.previous)),
      protocols('launcher.v1', entry(tokens.wrongKey)),
      protocols('launcher.v1', entry(authority.issue())) + bearer(authority.issue()),
      protocols(entry(authority.issue()), entry(authority.issue())),
      protocols('launcher.v1', 'authorization.bearer.'),
    ]) {
      expectUpgradeRefusal(await rawRequest(port, websocket('/ws', extra), { untilClose: true }));
    }
    // The entry is a carrier for WebSocket handshakes only (GET, Connection: upgrade, Upgrade: websocket): a request
    // that only says `Upgrade: websocket`, or a POST, is judged by its Authorization header alone, as withAuth does.
    expectRefusal(await sendFramed(port, get('/apps', protocols(entry(authority.issue())))));
    expectRefusal(await sendFramed(port, get('/apps', `Upgrade: websocket\r\n${protocols(entry(authority.issue()))}`)));
    expectRefusal(
      await sendFramed(
        port,
        `POST /apps HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nContent-Length: 0\r\n${protocols(entry(authority.issue()))}\r\n`,
      ),
    );
    expect(runs).toEqual(before);
    expect(onErrorCalls).toBe(0);
  });

  it('ordinary requests on the same server: the health handler, the 401, and the app with its auth', async () => {
    const before = { ...runs };
    const health = await sendFramed(port, get('/health'));
    expect(health.status).toBe(200);
    expect(health.body.toString('latin1')).toBe('ok');
    expectRefusal(await sendFramed(port, get('/apps')));
    expectRefusal(await sendFramed(port, get('/apps', bearer(tokens.previous))));
    const apps = await sendFramed(port, get('/apps', bearer(tokens.current)));
    expect(apps.status).toBe(200);
    expect(apps.body.toString('latin1')).toBe(authority.keyId);
    expect(runs).toEqual({ socket: before.socket, health: before.health + 1, app: before.app + 1 });
  });

  it("the app's onError never sees a refusal: only the app's own errors reach it", async () => {
    expectRefusal(await sendFramed(port, get('/fails')));
    expect(onErrorCalls).toBe(0);
    const own = await rawRequest(port, get('/fails', bearer(authority.issue())));
    expect(own.status).toBe(500);
    expect(own.body.toString('latin1')).toBe('{"error":"handled by the app"}');
    expect(onErrorCalls).toBe(1);
  });

  // @hono/node-server takes every upgrade once it serves WebSockets and answers only `Upgrade: websocket`
  // exactly: another protocol gets no answer from it (a limit of that server, documented in docs/adapters.md).
  // What matters here: no handler runs.
  it('an upgrade to another protocol runs no handler (@hono/node-server leaves it unanswered)', async () => {
    const before = { ...runs };
    const text = `GET /apps HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: h2c, websocket/13\r\n\r\n`;
    await expect(rawRequest(port, text, { timeout: 300 })).rejects.toThrow(/no complete answer/);
    expect(runs).toEqual(before);
  });
});

describe('honoAuth options', () => {
  it('a health handler that is not a function: a TypeError naming `health`', async () => {
    const { authority } = await openCaseAuthority();
    expect(() => honoAuth(authority, { health: 'ok' as never })).toThrow(/honoAuth: `health`/);
    await authority.close();
  });
});

describe('honoAuth with subprotocolToken where no Node request is at hand (app.request, servers other than @hono/node-server)', () => {
  it('a handshake carrying the entry is refused, even with a valid token in it; without the entry the header decides', async () => {
    const { authority, tokens } = await openCaseAuthority();
    try {
      let runs = 0;
      const app = new Hono<HonoAuthEnv>().use(honoAuth(authority, { healthPath: false, subprotocolToken: true }));
      app.get('/ws', (c) => (runs++, c.text('would upgrade')));
      const handshake = { connection: 'Upgrade', upgrade: 'websocket' };
      const withEntry = await app.request('/ws', {
        headers: { ...handshake, 'sec-websocket-protocol': `launcher.v1, authorization.bearer.${tokens.current}` },
      });
      expect({
        status: withEntry.status,
        body: await withEntry.text(),
        challenge: withEntry.headers.get('www-authenticate'),
      }).toEqual({
        status: 401,
        body: '',
        challenge: CHALLENGE,
      });
      expect(runs).toBe(0);
      const withHeader = await app.request('/ws', {
        headers: { ...handshake, authorization: `Bearer ${tokens.current}`, 'sec-websocket-protocol': 'launcher.v1' },
      });
      expect(withHeader.status).toBe(200);
      expect(runs).toBe(1);
    } finally {
      await authority.close();
    }
  });
});

describe('onReject where the server hands over no socket: fetchAuth called as its docs show, honoAuth as on Bun and Deno', () => {
  let authority: TokenAuthority;
  let tokens: Tokens;
  beforeAll(async () => {
    ({ authority, tokens } = await openCaseAuthority());
  });
  afterAll(() => authority?.close());

  /** Serves `fetch` on 127.0.0.1 without handing it @hono/node-server's bindings (no `incoming`, no socket). */
  async function serveBare(fetch: (request: Request) => Promise<Response>): Promise<{ port: number; close(): void }> {
    const server = await new Promise<ServerType>((resolve) => {
      const started = serve({ fetch: (request) => fetch(request), port: 0, hostname: '127.0.0.1' }, () =>
        resolve(started),
      );
    });
    return {
      port: (server.address() as AddressInfo).port,
      close: () => (server.close(), (server as Server).closeAllConnections()),
    };
  }

  it.each(['fetchAuth', 'honoAuth'] as const)('%s: the uniform 401, onReject told with no address', async (name) => {
    const infos: RejectInfo[] = [];
    const onReject = (info: RejectInfo): void => void infos.push(info);
    let runs = 0;
    let fetch: (request: Request) => Promise<Response>;
    if (name === 'fetchAuth') {
      const guard = fetchAuth(authority, { onReject });
      fetch = async (request) => {
        const result = await guard(request);
        return result instanceof Response ? result : (runs++, new Response('apps'));
      };
    } else {
      const app = new Hono<HonoAuthEnv>().use(honoAuth(authority, { healthPath: false, onReject }));
      app.get('/apps', (c) => (runs++, c.text('apps')));
      fetch = async (request) => app.fetch(request);
    }
    const host = await serveBare(fetch);
    try {
      expectRefusal(await rawRequest(host.port, get('/apps?x=1')));
      expectRefusal(await rawRequest(host.port, get('/apps', bearer(tokens.previous))));
      expect(runs).toBe(0);
      expect(infos).toStrictEqual([
        { method: 'GET', path: '/apps', reason: 'missing', remoteAddress: undefined },
        { method: 'GET', path: '/apps', reason: 'rotated', remoteAddress: undefined },
      ]);
      expect((await rawRequest(host.port, get('/apps', bearer(tokens.current)))).status).toBe(200);
      expect(runs).toBe(1);
    } finally {
      host.close();
    }
  });
});

// fetchAuth as Hono middleware on @hono/node-server, and several Authorization lines: the Request of an ordinary
// request joins them (refused); the Request of a WebSocket handshake holds the first line only, which fetchAuth
// cannot tell from one line (docs/adapters.md names honoAuth for this host; hono.test.ts shows it refusing).
import type { Server } from 'node:http';
import { connect } from 'node:net';
import { upgradeWebSocket, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import type { TokenAuthority } from 'launcher-auth';
import { fetchAuth } from '../../src/adapters/fetch.js';
import { openCaseAuthority, type Tokens } from './cases.js';
import { serveWithWebSockets } from './harness.js';
import { until } from '../support/poll.js';
import { expectRefusal, rawPipeline, type RawResponse } from './harness.js';

const lines = (t: Tokens): string => `Authorization: Bearer ${t.current}\r\nAuthorization: Bearer ${t.previous}\r\n`;

describe('fetchAuth on @hono/node-server with two Authorization lines', () => {
  let authority: TokenAuthority;
  let tokens: Tokens;
  let server: ServerType;
  let port: number;
  const wss = new WebSocketServer({ noServer: true });
  const runs = { app: 0, socket: 0 };
  /** The Authorization header of each Request the guard was given. */
  const seen: Array<string | null> = [];

  beforeAll(async () => {
    ({ authority, tokens } = await openCaseAuthority());
    const guard = fetchAuth(authority);
    const app = new Hono();
    app.use(async (c, next) => {
      seen.push(c.req.raw.headers.get('authorization'));
      const result = await guard(c.req.raw);
      return result instanceof Response ? result : next();
    });
    app.get('/apps', (c) => (runs.app++, c.text('apps')));
    app.get(
      '/ws',
      upgradeWebSocket(() => (runs.socket++, {})),
    );
    ({ server, port } = await serveWithWebSockets(app.fetch, wss));
  });
  afterAll(async () => {
    for (const client of wss.clients) client.terminate();
    (server as Server).closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await authority?.close();
  });

  it('an ordinary request: the Request joins the lines, and fetchAuth refuses it; no handler', async () => {
    seen.length = 0;
    const text = `GET /apps HTTP/1.1\r\nHost: 127.0.0.1\r\n${lines(tokens)}Connection: close\r\n\r\n`;
    const { responses } = await rawPipeline(port, [text]);
    expect(responses.length).toBe(1);
    expectRefusal(responses[0] as RawResponse);
    expect(seen.map((value) => value === `Bearer ${tokens.current}, Bearer ${tokens.previous}`)).toEqual([true]);
    expect(runs.app).toBe(0);
  });

  it('a WebSocket handshake: the Request holds the first line only, so fetchAuth cannot see the second', async () => {
    seen.length = 0;
    const text =
      'GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n' +
      `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n${lines(tokens)}\r\n`;
    const socket = connect(port, '127.0.0.1', () => socket.end(text));
    socket.on('error', () => undefined);
    expect(await until(() => seen.length === 1)).toBe(true);
    socket.destroy();
    expect(seen.map((value) => value === `Bearer ${tokens.current}`)).toEqual([true]);
  });
});

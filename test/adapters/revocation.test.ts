// Long-lived connections do not outlive a regeneration: an SSE stream and a WebSocket opened with a token end
// when rotate() makes it invalid, on every adapter's server; a refused upgrade gets the raw, empty 401.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import type { MemorySecretStore, TokenAuthority } from 'launcher-auth';
import { withUpgradeAuth } from '../../src/adapters/node.js';
import { forgeTokens, openCaseAuthority } from './cases.js';
import {
  HOST_KINDS,
  SSE_FIRST_EVENT,
  handshakeStatus,
  rawPipeline,
  rawRequest,
  startHost,
  type Host,
  type RawResponse,
} from './harness.js';
import { until, within } from '../support/poll.js';

interface Stream {
  response: IncomingMessage;
  /** Everything received so far. */
  text(): string;
  /** Resolves when the server ends the response (the client saw the end of the stream). */
  ended: Promise<void>;
  hasEnded(): boolean;
  destroy(): void;
}

/** Opens GET /events with `token` and resolves once the first event has arrived. */
function openStream(host: Host, token: string): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${host.url}/events`, { headers: { authorization: `Bearer ${token}` }, agent: false });
    req.once('error', reject);
    req.once('response', (response) => {
      if (response.statusCode !== 200) {
        response.resume();
        reject(new Error(`GET /events answered ${response.statusCode}`));
        return;
      }
      let received = '';
      let hasEnded = false;
      const ended = new Promise<void>((resolveEnd, rejectEnd) => {
        response.once('end', () => {
          hasEnded = true;
          resolveEnd();
        });
        response.once('error', rejectEnd);
      });
      // An end before the assertions below get to it must not be an unhandled rejection.
      ended.catch(() => undefined);
      const stream: Stream = {
        response,
        text: () => received,
        ended,
        hasEnded: () => hasEnded,
        destroy: () => req.destroy(),
      };
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        const first = received.length === 0;
        received += chunk;
        if (first) resolve(stream);
      });
    });
    req.end();
  });
}

describe.each(HOST_KINDS)('%s: an SSE stream', (kind) => {
  let authority: TokenAuthority;
  let store: MemorySecretStore;
  let host: Host;
  beforeAll(async () => {
    ({ authority, store } = await openCaseAuthority());
    host = await startHost(kind, authority);
  });
  afterAll(async () => {
    await host?.close();
    await authority?.close();
  });

  it('opened with the old token is ended by rotate(); one opened with the new token stays open until the next', async () => {
    const oldToken = authority.issue();
    const a = await within(openStream(host, oldToken), 'first SSE stream');
    // A different spelling of a valid token (verified by jose, not by comparison) is tied to the same key.
    const resigned = (await forgeTokens(authority, store, oldToken)).resigned;
    const b = await within(openStream(host, resigned), 'second SSE stream');
    expect(a.text()).toBe(SSE_FIRST_EVENT);
    expect(b.text()).toBe(SSE_FIRST_EVENT);
    expect(host.openStreams).toBe(2);

    const newToken = await authority.rotate();
    await within(Promise.all([a.ended, b.ended]), 'the end of the streams after rotate()');
    // Nothing but the first event was written: the stream was ended, not fed an error.
    expect(a.text()).toBe(SSE_FIRST_EVENT);
    expect(b.text()).toBe(SSE_FIRST_EVENT);
    expect(host.openStreams).toBe(0);

    // The old token cannot open it again.
    const refused = await rawRequest(
      host.port,
      `GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${oldToken}\r\n\r\n`,
    );
    expect(refused.status).toBe(401);
    expect(refused.body.length).toBe(0);

    const c = await within(openStream(host, newToken), 'stream with the new token');
    expect(c.text()).toBe(SSE_FIRST_EVENT);
    expect(c.hasEnded()).toBe(false);
    expect(host.openStreams).toBe(1);
    await authority.rotate();
    await within(c.ended, 'the end of the new stream after the next rotate()');
    expect(host.openStreams).toBe(0);
  });

  it('closed by the client leaves no listener behind on the key', async () => {
    const stream = await within(openStream(host, authority.issue()), 'SSE stream');
    expect(host.openStreams).toBe(1);
    const gone = new Promise<void>((resolve) => stream.response.once('close', () => resolve()));
    stream.destroy();
    await gone;
    // The server notices the disconnect on its own schedule: poll a count, not a clock.
    expect(await until(() => host.openStreams === 0, 2_000, 10)).toBe(true);
  });
});

/** An upgrade request for /ws, optionally with an Authorization value. */
function upgradeText(target: string, authorization?: string | string[]): string {
  const values = authorization === undefined ? [] : Array.isArray(authorization) ? authorization : [authorization];
  return (
    `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
    'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n' +
    values.map((value) => `Authorization: ${value}\r\n`).join('') +
    '\r\n'
  );
}

describe.each(HOST_KINDS)('%s: a WebSocket', (kind) => {
  let authority: TokenAuthority;
  let host: Host;
  let wss: WebSocketServer;
  /** Upgrades that reached the host's handler. */
  let upgrades = 0;
  beforeAll(async () => {
    ({ authority } = await openCaseAuthority());
    host = await startHost(kind, authority);
    // The framework must not already own upgrades, or two handlers would answer the same socket.
    expect(host.server.listenerCount('upgrade')).toBe(0);
    wss = new WebSocketServer({ noServer: true });
    host.server.on(
      'upgrade',
      withUpgradeAuth(authority, (req, socket, head) => {
        upgrades += 1;
        wss.handleUpgrade(req, socket, head, (ws) => {
          const signal = req.auth?.signal;
          // A revoked token ends the connection: 1008 is "policy violation".
          const revoke = (): void => ws.close(1008, 'token revoked');
          if (signal === undefined) return revoke();
          if (signal.aborted) return revoke();
          signal.addEventListener('abort', revoke, { once: true });
          ws.once('close', () => signal.removeEventListener('abort', revoke));
          ws.send('hello');
        });
      }),
    );
  });
  afterAll(async () => {
    for (const client of wss?.clients ?? []) client.terminate();
    wss?.close();
    await host?.close();
    await authority?.close();
  });

  it('upgraded with the old token is closed by rotate()', async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${host.port}/ws`, {
      headers: { authorization: `Bearer ${authority.issue()}` },
    });
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      ws.once('close', (code, reason) => resolve({ code, reason: reason.toString('utf8') })),
    );
    const first = await within(
      new Promise<string>((resolve, reject) => {
        ws.once('message', (data) => resolve((data as Buffer).toString()));
        ws.once('error', reject);
      }),
      'the first WebSocket message',
    );
    expect(first).toBe('hello');
    expect(upgrades).toBe(1);

    await authority.rotate();
    expect(await within(closed, 'the close after rotate()')).toEqual({ code: 1008, reason: 'token revoked' });
  });

  it.each([
    ['no token', undefined],
    ['the token before the latest rotate()', 'previous'],
    ['a token signed with another key', 'Bearer eyJhbGciOiJIUzI1NiJ9.e30.ZRrHA1JJJW8opsbCGfG_HACGpVUMN_a9IV7pAx_Zmeo'],
    ['a malformed value', 'Bearer x'],
    ['two Authorization headers', 'twice'],
  ])('refused (%s): the raw 401, empty, then the socket closes', async (_label, which) => {
    const previous = authority.issue();
    await authority.rotate();
    const current = authority.issue();
    const authorization =
      which === 'previous'
        ? `Bearer ${previous}`
        : which === 'twice'
          ? [`Bearer ${current}`, `Bearer ${current}`]
          : which;
    const before = upgrades;
    // Read until the server closes: the close is part of the answer, and nothing may follow the empty 401.
    const { responses, trailing } = await rawPipeline(host.port, [upgradeText('/ws', authorization)]);
    expect(responses.length).toBe(1);
    const res = responses[0] as RawResponse;
    expect(res.raw.toString('latin1').startsWith('HTTP/1.1 401 Unauthorized\r\n')).toBe(true);
    expect(res.status).toBe(401);
    expect(res.headerList.map(([name]) => name.toLowerCase()).sort()).toEqual([
      'connection',
      'content-length',
      'www-authenticate',
    ]);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="launcher"');
    expect(res.headers['content-length']).toBe('0');
    expect(res.headers['connection']).toBe('close');
    expect(res.body.length).toBe(0);
    expect(trailing.length).toBe(0);
    expect(res.closed).toBe(true);
    expect(upgrades).toBe(before);
  });

  it('an upgrade to the health path is not exempt: the health exemption is for the health handler only', async () => {
    const before = { ...host.counts };
    const upgradesBefore = upgrades;
    for (const target of ['/health', '/health?x=1']) {
      // Not untilClose: a wrongly accepted upgrade answers 101 and stays open, which should fail here, not hang.
      const res = await rawRequest(host.port, upgradeText(target));
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toBe('Bearer realm="launcher"');
      expect(res.body.length).toBe(0);
    }
    expect(upgrades).toBe(upgradesBefore);
    expect(host.counts).toEqual(before);
  });

  it('the ws client sees 401 for the old token', async () => {
    const previous = authority.issue();
    await authority.rotate();
    const ws = new WebSocket(`ws://127.0.0.1:${host.port}/ws`, { headers: { authorization: `Bearer ${previous}` } });
    const status = await handshakeStatus(ws);
    expect(status).toBe(401);
  });
});

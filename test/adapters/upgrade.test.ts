// withUpgradeAuth on every adapter's server: a refused upgrade's socket is closed even when the client never
// closes its side, and an upgrade the host does not serve (h2c, RFC 9110 §7.8) is an ordinary request.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { RejectInfo, TokenAuthority } from 'launcher-auth';
import { withAuth, withUpgradeAuth } from '../../src/adapters/node.js';
import { openCaseAuthority, type Tokens } from './cases.js';
import { HOST_KINDS, CHALLENGE, expectRefusal, rawPipeline, rawRequest, startHost, type Host } from './harness.js';
import { until } from '../support/poll.js';

/** What `curl --http2 http://…` and Java's HttpClient send on a plain-text first request. */
function h2c(method: string, target: string, extra = ''): string {
  const length = method === 'POST' ? 'Content-Length: 0\r\n' : '';
  return (
    `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n` +
    `HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n${length}${extra}\r\n`
  );
}

function websocket(target: string, extra = ''): string {
  return (
    `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
    `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n${extra}\r\n`
  );
}

const bearer = (token: string): string => `Authorization: Bearer ${token}\r\n`;

describe.each(HOST_KINDS)('%s adapter, with withUpgradeAuth on its server', (kind) => {
  let authority: TokenAuthority;
  let tokens: Tokens;
  let host: Host;
  const infos: RejectInfo[] = [];
  beforeAll(async () => {
    ({ authority, tokens } = await openCaseAuthority());
    host = await startHost(kind, authority, { upgrade: true, auth: { onReject: (info) => void infos.push(info) } });
  });
  afterAll(async () => {
    await host?.close();
    await authority?.close();
  });

  it('GET /health with Upgrade: h2c gets the health answer (no token needed)', async () => {
    const before = { ...host.counts };
    const res = await rawRequest(host.port, h2c('GET', '/health'));
    expect(res.status).toBe(200);
    expect(res.body.toString('latin1')).toBe('ok');
    expect(host.counts).toEqual({ health: before.health + 1, protected: before.protected });
    expect(host.lastRoute).toBe('health');
    // Served once, then the connection is closed: no second upgrade can follow on it.
    expect(res.headers['connection']).toBe('close');
  });

  it('GET /apps with Upgrade: h2c and the token reaches the ordinary handler', async () => {
    const before = { ...host.counts };
    const res = await rawRequest(host.port, h2c('GET', '/apps', bearer(tokens.current)));
    expect(res.status).toBe(200);
    expect(res.body.toString('latin1')).toBe('apps');
    expect(host.counts).toEqual({ health: before.health, protected: before.protected + 1 });
    expect(host.lastRoute).toBe('apps');
    expect(host.lastAuth?.keyId).toBe(authority.keyId);
  });

  it('POST with Upgrade: h2c and the token reaches the ordinary handler with its body framing intact', async () => {
    const before = { ...host.counts };
    const headers = `${bearer(tokens.current)}Content-Type: text/plain\r\n`;
    const text = `${h2c('POST', '/apps/editor/launch', headers).replace('Content-Length: 0', 'Content-Length: 5')}x=1&y`;
    const res = await rawRequest(host.port, text);
    expect(res.status).toBe(200);
    expect(res.body.toString('latin1')).toBe('launched editor');
    expect(host.counts).toEqual({ health: before.health, protected: before.protected + 1 });
  });

  it('GET /apps with Upgrade: h2c and no token or an old one: the uniform 401 of the ordinary path, one onReject each', async () => {
    const before = { ...host.counts };
    infos.length = 0;
    expectRefusal(await rawRequest(host.port, h2c('GET', '/apps')));
    expectRefusal(await rawRequest(host.port, h2c('GET', '/apps', bearer(tokens.previous))));
    expectRefusal(await rawRequest(host.port, h2c('GET', '/nope')));
    expect(host.counts).toEqual(before);
    expect(infos.map((info) => info.reason)).toEqual(['missing', 'rotated', 'missing']);
  });

  it('a WebSocket upgrade still needs the token, on every path, the health path included', async () => {
    const before = { ...host.counts };
    for (const target of ['/ws', '/health', '/apps']) {
      for (const extra of ['', bearer(tokens.previous), bearer(tokens.wrongKey)]) {
        const res = await rawRequest(host.port, websocket(target, extra), { untilClose: true });
        expectRefusal(res);
        expect(res.raw.toString('latin1')).toBe(
          `HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: ${CHALLENGE}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
        );
        expect(res.closed).toBe(true);
      }
    }
    expect(host.counts).toEqual(before);
    const ok = await rawRequest(host.port, websocket('/ws', bearer(tokens.current)));
    expect(ok.status).toBe(101);
    expect(host.counts).toEqual({ health: before.health, protected: before.protected + 1 });
    expect(host.lastRoute).toBe('upgrade');
    expect(host.lastAuth?.keyId).toBe(authority.keyId);
  });

  it('an upgrade listing h2c and websocket is a WebSocket upgrade: it needs the token', async () => {
    const before = { ...host.counts };
    const res = await rawRequest(
      host.port,
      websocket('/health').replace('Upgrade: websocket', 'Upgrade: h2c, WebSocket/13'),
    );
    expectRefusal(res);
    expect(host.counts).toEqual(before);
  });

  it('a request pipelined behind a relayed h2c upgrade is never served: the relayed one closes the connection', async () => {
    const before = { ...host.counts };
    const { responses } = await rawPipeline(host.port, [
      h2c('GET', '/health'),
      h2c('GET', '/apps', bearer(tokens.current)),
    ]);
    // Node answers bytes after a `Connection: close` request with its own 400, which may overtake an async handler.
    expect(responses.every((r) => r.status === 200 || r.status === 400)).toBe(true);
    expect(responses.filter((r) => r.status === 200).length).toBeLessThanOrEqual(1);
    expect(host.counts.protected).toBe(before.protected);
    expect(host.counts.health - before.health).toBeLessThanOrEqual(1);
  });
});

describe('a refused upgrade does not hold its socket', () => {
  let authority: TokenAuthority;
  let host: Host;
  beforeAll(async () => {
    ({ authority } = await openCaseAuthority());
    host = await startHost('node', authority, { upgrade: true });
  });
  afterAll(async () => {
    await host?.close();
    await authority?.close();
  });

  it('200 refused upgrades from clients that never close: every server-side socket is closed within 1 s of its answer', async () => {
    const COUNT = 200;
    const closedAt = new Map<number, number>();
    const track = (socket: Socket): void => {
      const port = socket.remotePort as number;
      socket.once('close', () => closedAt.set(port, performance.now()));
    };
    host.server.on('connection', track);
    onTestFinished(() => void host.server.off('connection', track));

    const clients: Socket[] = [];
    onTestFinished(() => {
      for (const client of clients) client.destroy();
    });
    const answeredAt = new Map<number, number>();
    await Promise.all(
      Array.from({ length: COUNT }, () => {
        // allowHalfOpen: the client keeps its side open after the server's FIN, as the hostile client did.
        const client = connect({ port: host.port, host: '127.0.0.1', allowHalfOpen: true });
        clients.push(client);
        return new Promise<void>((resolve, reject) => {
          let received = '';
          client.setEncoding('latin1');
          client.on('data', (chunk: string) => {
            received += chunk;
            if (received.endsWith('\r\n\r\n')) {
              answeredAt.set(client.localPort as number, performance.now());
              expect(received.startsWith('HTTP/1.1 401 Unauthorized\r\n')).toBe(true);
              resolve();
            }
          });
          client.on('error', reject);
          client.write(websocket('/ws'));
        });
      }),
    );
    expect(answeredAt.size).toBe(COUNT);
    // The bound: every server-side socket closed by 1 s after its answer.
    expect(await until(() => closedAt.size === COUNT, 5_000, 20)).toBe(true);
    const late = [...answeredAt].filter(([port, at]) => (closedAt.get(port) ?? Infinity) > at + 1_000);
    expect(late).toEqual([]);
    // None of the clients ever closed its side.
    expect(clients.filter((client) => client.writableEnded).length).toBe(0);
  });
});

describe('withUpgradeAuth options', () => {
  it('protocols: a TypeError naming the option for an empty list or a name that is not a token', async () => {
    const { authority } = await openCaseAuthority();
    onTestFinished(() => authority.close());
    for (const protocols of [[], ['web socket'], [''], 'websocket', [1]]) {
      expect(() => withUpgradeAuth(authority, () => undefined, { protocols: protocols as never })).toThrow(
        /withUpgradeAuth: `protocols`/,
      );
    }
    expect(() => withUpgradeAuth(authority, () => undefined, { protocols: ['websocket', 'h2c'] })).not.toThrow();
  });
});

const haveOpenssl = spawnSync('openssl', ['version'], { stdio: 'ignore' }).status === 0;

describe('https: an h2c upgrade on a TLS server', () => {
  it.skipIf(!haveOpenssl)(
    'goes back to the server as an ordinary request too (needs openssl for a test certificate)',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'launcher-auth-tls-'));
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const key = join(dir, 'key.pem');
      const cert = join(dir, 'cert.pem');
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:P-256',
          '-nodes',
          '-keyout',
          key,
          '-out',
          cert,
          '-days',
          '1',
          '-subj',
          '/CN=127.0.0.1',
        ],
        { stdio: 'ignore' },
      );
      const { authority, tokens } = await openCaseAuthority();
      onTestFinished(() => authority.close());
      let upgrades = 0;
      const server = createHttpsServer(
        { key: readFileSync(key), cert: readFileSync(cert) },
        withAuth(authority, (req, res) => res.end(`${req.auth === undefined ? 'health' : 'apps'} ${req.url ?? ''}`)),
      );
      server.on(
        'upgrade',
        withUpgradeAuth(authority, (_req, socket) => void ((upgrades += 1), socket.destroy())),
      );
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      onTestFinished(async () => {
        server.closeAllConnections();
        await new Promise((resolve) => server.close(resolve));
      });
      const port = (server.address() as AddressInfo).port;
      const exchange = (text: string): Promise<string> =>
        new Promise((resolve, reject) => {
          const socket = tlsConnect({ port, host: '127.0.0.1', rejectUnauthorized: false }, () => socket.write(text));
          let received = '';
          socket.setEncoding('latin1');
          socket.on('data', (chunk: string) => (received += chunk));
          socket.on('close', () => resolve(received));
          socket.on('error', reject);
        });
      const health = await exchange(h2c('GET', '/health'));
      expect(health.startsWith('HTTP/1.1 200 OK\r\n')).toBe(true);
      expect(health.endsWith('health /health')).toBe(true);
      const apps = await exchange(h2c('GET', '/apps', bearer(tokens.current)));
      expect(apps.endsWith('apps /apps')).toBe(true);
      const refused = await exchange(h2c('GET', '/apps'));
      expect(refused.startsWith('HTTP/1.1 401 Unauthorized\r\n')).toBe(true);
      expect(upgrades).toBe(0);
    },
  );
});

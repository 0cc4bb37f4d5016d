// Browser clients in Debian's chromium driven by playwright-core: a page of another loopback origin opens a
// WebSocket with the token as a `Sec-WebSocket-Protocol` entry (withUpgradeAuth's `subprotocolToken`, ws as the
// host's server) and reads an event stream with examples/clients/event-stream.js (fetch, the header sent). Both
// end when the token is regenerated; an old, forged or absent token never reaches a handler.
import { readFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { MemorySecretStore, TokenAuthority, type RejectInfo } from 'launcher-auth';
import { withAuth, withUpgradeAuth } from 'launcher-auth/node';
import { launchChromium } from './chromium.js';

const EXAMPLES = new URL('../../examples/clients/', import.meta.url);
/** The browser-side examples of docs/clients.md, served to the page as they are. */
const SCRIPTS = new Map(
  ['/event-stream.js', '/websocket.js'].map((path) => [path, readFileSync(new URL(`.${path}`, EXAMPLES), 'utf8')]),
);
const PREFIX = 'authorization.bearer.';
/** What the host saw, with any token entry masked: a failing assertion must not print a token. */
const redact = (value: string): string => value.replace(/authorization\.bearer\.[^,\s]*/gi, '<token entry>');
/** The page loads the examples as a web UI would, and exposes them to the test. */
const PAGE =
  '<!doctype html><title>web ui</title><script type="module">' +
  "import { readEventStream } from '/event-stream.js'; import { openLauncherSocket } from '/websocket.js';" +
  'Object.assign(window, { readEventStream, openLauncherSocket });</script>';

type Read = (url: string, options: { token: string; onEvent: (event: unknown) => void }) => Promise<unknown>;

async function listen(server: Server): Promise<{ origin: string; port: number }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { origin: `http://127.0.0.1:${port}`, port };
}

function shut(server: Server): Promise<unknown> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(resolve));
}

/** What the host saw: handler runs, and every header value of the upgrades that reached it. */
interface Seen {
  sockets: number;
  streams: number;
  offered: string[][];
  upgradeValues: string[][];
  rejects: string[];
}

/** What the page reports of one WebSocket attempt. */
interface SocketReport {
  opened: boolean;
  protocol?: string;
  first?: string;
  closeCode?: number;
}

/**
 * Opens a WebSocket from the page, with these protocols or, given a token, through examples/clients/websocket.js.
 * When it opens and gets its first message, it is kept as `window.kept`.
 */
async function openFrom(page: Page, url: string, protocols: string[] | { token: string }): Promise<SocketReport> {
  const report = await page.evaluate(
    ({ url, protocols }) =>
      new Promise<SocketReport>((resolve) => {
        const open = (window as unknown as { openLauncherSocket: (url: string, token: string) => WebSocket })
          .openLauncherSocket;
        const ws = Array.isArray(protocols) ? new WebSocket(url, protocols) : open(url, protocols.token);
        ws.onmessage = (event) => {
          const w = window as unknown as { kept?: Promise<number> };
          w.kept = new Promise((closed) => (ws.onclose = (e) => closed(e.code)));
          resolve({ opened: true, protocol: ws.protocol, first: String(event.data) });
        };
        ws.onclose = (event) => resolve({ opened: false, closeCode: event.code });
      }),
    { url, protocols },
  );
  return report.protocol === undefined ? report : { ...report, protocol: redact(report.protocol) };
}

describe('browser clients in chromium', () => {
  let authority: TokenAuthority;
  let api: Server;
  let pages: Server;
  let apiOrigin: string;
  let wsUrl: string;
  let pageOrigin: string;
  let browser: Browser;
  let page: Page;
  const seen: Seen = { sockets: 0, streams: 0, offered: [], upgradeValues: [], rejects: [] };
  const streamOpened: Array<() => void> = [];

  beforeAll(async () => {
    authority = await TokenAuthority.open({ store: new MemorySecretStore() });
    pages = createServer((req, res) => {
      const script = SCRIPTS.get(req.url ?? '');
      if (script !== undefined) res.writeHead(200, { 'content-type': 'text/javascript' }).end(script);
      else res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
    });
    pageOrigin = (await listen(pages)).origin;

    const onReject = (info: RejectInfo): void => void seen.rejects.push(`${info.method} ${info.path} ${info.reason}`);
    api = createServer(
      withAuth(
        authority,
        (req, res: ServerResponse) => {
          if (req.url !== '/events') return void res.writeHead(404).end();
          seen.streams++;
          res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
          res.write('event: hello\ndata: open\n\n');
          res.write('data: line one\r\ndata: line two\r\n\r\n');
          // "Regenerate token": the stream ends, and the page learns from its next call that it needs the new token.
          req.auth.signal.addEventListener('abort', () => res.end(), { once: true });
          streamOpened.shift()?.();
        },
        { healthPath: false, cors: { origins: [pageOrigin] }, onReject },
      ),
    );
    const wss = new WebSocketServer({
      noServer: true,
      handleProtocols: (protocols: Set<string>) => {
        seen.offered.push([...protocols].map(redact));
        return protocols.has('launcher.v1') ? 'launcher.v1' : false;
      },
    });
    api.on(
      'upgrade',
      withUpgradeAuth(
        authority,
        (req, socket, head) => {
          seen.sockets++;
          seen.upgradeValues.push(req.rawHeaders.filter((_, i) => i % 2 === 1));
          wss.handleUpgrade(req, socket, head, (ws) => {
            ws.send('hello');
            req.auth.signal.addEventListener('abort', () => ws.close(1008, 'token regenerated'), { once: true });
          });
        },
        { subprotocolToken: true, onReject },
      ),
    );
    const listening = await listen(api);
    apiOrigin = listening.origin;
    wsUrl = `ws://127.0.0.1:${listening.port}/socket`;

    browser = await launchChromium();
    page = await browser.newPage();
    await page.goto(`${pageOrigin}/`);
    await page.waitForFunction(() => 'readEventStream' in window && 'openLauncherSocket' in window);
  });

  afterAll(async () => {
    await browser?.close();
    if (api !== undefined) await shut(api);
    if (pages !== undefined) await shut(pages);
    await authority?.close();
  });

  it('a WebSocket with the token entry opens with the host protocol, and is closed when the token is regenerated', async () => {
    const token = authority.issue();
    const report = await openFrom(page, wsUrl, { token });
    expect(report).toEqual({ opened: true, protocol: 'launcher.v1', first: 'hello' });
    expect(seen.sockets).toBe(1);
    // ws's handleProtocols and the handler's request never saw the entry.
    expect(seen.offered).toEqual([['launcher.v1']]);
    expect(seen.upgradeValues.flat().some((value) => value.includes(token) || value.includes(PREFIX))).toBe(false);

    await authority.rotate();
    expect(await page.evaluate(() => (window as unknown as { kept: Promise<number> }).kept)).toBe(1008);

    // The old token now, a forged one, none: refused before any handler (1006: the handshake failed).
    const forged = `${token.slice(0, token.lastIndexOf('.') + 1)}${'A'.repeat(43)}`;
    expect(await openFrom(page, wsUrl, { token })).toEqual({ opened: false, closeCode: 1006 });
    expect(await openFrom(page, wsUrl, ['launcher.v1', PREFIX + forged])).toEqual({ opened: false, closeCode: 1006 });
    expect(await openFrom(page, wsUrl, ['launcher.v1'])).toEqual({ opened: false, closeCode: 1006 });
    expect(seen.sockets).toBe(1);
    expect(seen.rejects.splice(0)).toEqual(['GET /socket rotated', 'GET /socket invalid', 'GET /socket missing']);

    // The new token opens again.
    expect(await openFrom(page, wsUrl, ['launcher.v1', PREFIX + authority.issue()])).toEqual({
      opened: true,
      protocol: 'launcher.v1',
      first: 'hello',
    });
    expect(seen.sockets).toBe(2);

    // The entry alone: the handshake passes the gate, but the answer can name none of the page's protocols, and
    // the browser fails it. A page offers one of the host's protocols beside the token.
    const offered = seen.offered.length;
    expect(await openFrom(page, wsUrl, [PREFIX + authority.issue()])).toEqual({ opened: false, closeCode: 1006 });
    // No protocol left to offer: ws never asked the host to choose.
    expect(seen.offered.length).toBe(offered);
    expect(seen.sockets).toBe(3);
  });

  it('an event stream read with the fetch helper gets its events and ends when the token is regenerated', async () => {
    const token = authority.issue();
    const opened = new Promise<void>((resolve) => streamOpened.push(resolve));
    await page.evaluate(
      ({ url, token }) => {
        const w = window as unknown as { events: unknown[]; reading: Promise<unknown>; readEventStream: Read };
        w.events = [];
        w.reading = w.readEventStream(url, { token, onEvent: (event: unknown) => w.events.push(event) });
      },
      { url: `${apiOrigin}/events`, token },
    );
    await opened;
    await authority.rotate();
    const ended = await page.evaluate(() => (window as unknown as { reading: Promise<unknown> }).reading);
    expect(ended).toEqual({ ended: 'closed', status: 200 });
    expect(await page.evaluate(() => (window as unknown as { events: unknown[] }).events)).toEqual([
      { type: 'hello', data: 'open', id: '' },
      { type: 'message', data: 'line one\nline two', id: '' },
    ]);
    expect(seen.streams).toBe(1);

    // Reading again with the same token: refused, the page now needs the new one; no handler ran.
    const again = await page.evaluate(
      ({ url, token }) =>
        (window as unknown as { readEventStream: Read }).readEventStream(url, { token, onEvent: () => {} }),
      { url: `${apiOrigin}/events`, token },
    );
    expect(again).toEqual({ ended: 'refused', status: 401 });
    expect(seen.streams).toBe(1);
    expect(seen.rejects.splice(0)).toEqual(['GET /events rotated']);
  });
});

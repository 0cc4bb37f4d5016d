// Real loopback hosts, one per adapter (node:http, Express 5 and 4, Fastify 5, fetch and Hono on @hono/node-server,
// Koa),
// all with the same routes and handler-run counters, plus a raw TCP client for request lines Node would normalise.
//
// Every host serves the same application:
//   GET  <healthRoute>        the health handler: counts.health += 1, answers 200 "ok"
//   GET  /apps                protected: counts.protected += 1, answers 200 "apps"
//   POST /apps/:id/launch     protected: counts.protected += 1, answers 200 "launched <id>"
//   GET  /events              protected SSE: counts.protected += 1, writes one event, stays open and ends the
//                             response when the request's `auth.signal` aborts (the key was rotated away)
//   GET  /:page               only with `catchAll`: protected, counts.protected += 1, answers 200 "page"
//   upgrade to websocket      only with `upgrade`: guarded by withUpgradeAuth on the node:http server underneath,
//                             counts.protected += 1, answers a bare 101 and closes
// Anything else reaches the framework's own not-found answer (404). The counters are the proof that the gate
// held: a refused request must leave them unchanged, whatever status came back.
//
// To run a table of cases (see cases.ts for the shape) against every adapter:
//   describe.each(HOST_KINDS)('%s', (kind) => {
//     let authority: TokenAuthority, tokens: Tokens, host: Host;
//     beforeAll(async () => { ({ authority, tokens } = await openCaseAuthority()); host = await startHost(kind, authority); });
//     afterAll(async () => { await host.close(); await authority.close(); });
//     it.each(MY_CASES)('$name', (c) => checkCase(host, authority, tokens, c));
//   });
// One host per describe block is enough: checkCase compares counts before and after each case.
import { createServer, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import {
  serve,
  type Http2Bindings,
  type HttpBindings,
  type ServerType,
  type WebSocketServerLike,
} from '@hono/node-server';
import express from 'express';
// @ts-expect-error Express 4 is installed under an alias without types of its own; it is used through the
// Express 5 types below, which cover the few calls made here.
import express4Untyped from 'express4';
import Fastify from 'fastify';
import { Hono } from 'hono';
import Koa from 'koa';
import { expect } from 'vitest';
import type { WebSocket, WebSocketServer } from 'ws';
import type { AuthContext, AuthOptions, TokenAuthority } from 'launcher-auth';
import { expressAuth, type AuthenticatedRequest } from '../../src/adapters/express.js';
import { fastifyAuth } from '../../src/adapters/fastify.js';
import { fetchAuth } from '../../src/adapters/fetch.js';
import { honoAuth, type HonoMaybeAuthEnv } from '../../src/adapters/hono.js';
import { koaAuth, type KoaMaybeAuthState } from '../../src/adapters/koa.js';
import { withAuth, withContinueAuth, withUpgradeAuth } from '../../src/adapters/node.js';
import { deadline, within } from '../support/poll.js';
import { expectationFor, requestText, type AdapterCase, type Tokens } from './cases.js';

const express4 = express4Untyped as typeof express;

export type HostKind = 'node' | 'express5' | 'express4' | 'fastify' | 'fetch' | 'hono' | 'koa';

/** Every kind, in the order the suites run them. */
export const HOST_KINDS: readonly HostKind[] = ['node', 'express5', 'express4', 'fastify', 'fetch', 'hono', 'koa'];

/** Which of the host's handlers ran last. */
export type RouteName = 'health' | 'apps' | 'launch' | 'events' | 'page' | 'upgrade';

export interface HostOptions {
  /** Passed to the adapter as is (`healthPath`, `onReject`). */
  auth?: AuthOptions;
  /**
   * Where the host mounts its health handler; `false` mounts none.
   * @default `auth.healthPath` when it is a string, else '/health'
   */
  healthRoute?: string | false;
  /**
   * Also mounts a protected `GET /:page` that takes any one-segment path no other route has: the host whose
   * catch-all would swallow the health path when no health route is mounted.
   * @default false
   */
  catchAll?: boolean;
  /**
   * Also guards the server's `'upgrade'` event with `withUpgradeAuth` (options `auth`): an authenticated WebSocket
   * upgrade is a protected run answered with a bare `101` and a close; any other upgrade (`h2c`) goes back to the
   * server as an ordinary request.
   * @default false
   */
  upgrade?: boolean;
  /**
   * Also answers the server's `'checkContinue'` event with `withContinueAuth` (options `auth`), which hands a
   * request that may go on back to the server's request listener: `Expect: 100-continue` is refused before
   * the upload. Without it Node answers `100 Continue` itself.
   * @default false
   */
  continue?: boolean;
}

/** Handler runs, live: snapshot with `{ ...host.counts }` before a request and compare after. */
export interface Counts {
  health: number;
  protected: number;
}

export interface Host {
  kind: HostKind;
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** The node:http server underneath, for an `'upgrade'` listener (WebSocket tests). */
  server: Server;
  readonly counts: Readonly<Counts>;
  /** `auth` as the last handler to run saw it (`undefined` for an exempt health check). */
  readonly lastAuth: AuthContext | undefined;
  /** The last handler that ran, `undefined` before any. */
  readonly lastRoute: RouteName | undefined;
  /** SSE responses currently open (written to and not yet ended). */
  readonly openStreams: number;
  /** Stops listening and drops every connection, open streams included. */
  close(): Promise<void>;
}

/** The first (and only) event every SSE stream writes, so a client knows the stream is open. */
export const SSE_FIRST_EVENT = 'event: hello\ndata: open\n\n';

/** Shared bookkeeping of one host's handlers. */
class Recorder {
  readonly counts: Counts = { health: 0, protected: 0 };
  lastAuth: AuthContext | undefined;
  lastRoute: RouteName | undefined;
  openStreams = 0;

  ran(route: RouteName, auth: AuthContext | undefined): void {
    if (route === 'health') this.counts.health += 1;
    else this.counts.protected += 1;
    this.lastAuth = auth;
    this.lastRoute = route;
  }

  /**
   * Calls `end` once, when `signal` aborts (at once if it already has); `cancel` undoes the subscription when
   * the client goes away first, so a long run does not pile up listeners on the key's one signal.
   */
  watch(signal: AbortSignal | undefined, end: () => void): { cancel(): void } {
    this.openStreams += 1;
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      this.openStreams -= 1;
      signal?.removeEventListener('abort', finish);
      end();
    };
    // A protected route always has `auth`; without a signal there is nothing to wait for.
    if (signal === undefined || signal.aborted) queueMicrotask(finish);
    else signal.addEventListener('abort', finish, { once: true });
    return {
      cancel: () => {
        if (done) return;
        done = true;
        this.openStreams -= 1;
        signal?.removeEventListener('abort', finish);
      },
    };
  }

  /** An SSE response on a node:http response (node, Express, Fastify after hijack). */
  events(res: ServerResponse, auth: AuthContext | undefined): void {
    this.ran('events', auth);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
    res.write(SSE_FIRST_EVENT);
    const watch = this.watch(auth?.signal, () => res.end());
    res.once('close', () => watch.cancel());
  }
}

function healthRouteOf(options: HostOptions): string | false {
  if (options.healthRoute !== undefined) return options.healthRoute;
  const healthPath = options.auth?.healthPath;
  return typeof healthPath === 'string' ? healthPath : '/health';
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function closeServer(server: Server): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeAllConnections();
  return closed;
}

const LAUNCH = /^\/apps\/([^/]+)\/launch$/;
const PAGE = /^\/[^/]+$/;

/** A plain node:http host: routes on the request target as received, up to the query string. */
async function nodeHost(authority: TokenAuthority, options: HostOptions, rec: Recorder) {
  const healthRoute = healthRouteOf(options);
  const server = createServer(
    withAuth(
      authority,
      (req, res) => {
        const path = (req.url ?? '').split('?', 1)[0] ?? '';
        const launch = LAUNCH.exec(path)?.[1];
        if ((req.method === 'GET' || req.method === 'HEAD') && path === healthRoute) {
          rec.ran('health', req.auth);
          res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
        } else if (req.method === 'GET' && path === '/apps') {
          rec.ran('apps', req.auth);
          res.writeHead(200, { 'content-type': 'text/plain' }).end('apps');
        } else if (req.method === 'POST' && launch !== undefined) {
          rec.ran('launch', req.auth);
          res.writeHead(200, { 'content-type': 'text/plain' }).end(`launched ${launch}`);
        } else if (req.method === 'GET' && path === '/events') {
          rec.events(res, req.auth);
        } else if (options.catchAll === true && req.method === 'GET' && PAGE.test(path)) {
          rec.ran('page', req.auth);
          res.writeHead(200, { 'content-type': 'text/plain' }).end('page');
        } else {
          res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
        }
      },
      options.auth,
    ),
  );
  const port = await listen(server);
  return { server, port, close: () => closeServer(server) };
}

/** Express 5 or 4: the middleware first, then the routes; unknown paths reach Express's own 404. */
async function expressHost(make: typeof express, authority: TokenAuthority, options: HostOptions, rec: Recorder) {
  const app = make();
  app.use(expressAuth(authority, options.auth));
  const healthRoute = healthRouteOf(options);
  if (healthRoute !== false) {
    app.get(healthRoute, (req, res) => {
      rec.ran('health', (req as AuthenticatedRequest).auth);
      res.type('text/plain').send('ok');
    });
  }
  app.get('/apps', (req, res) => {
    rec.ran('apps', (req as AuthenticatedRequest).auth);
    res.type('text/plain').send('apps');
  });
  app.post('/apps/:id/launch', (req, res) => {
    rec.ran('launch', (req as AuthenticatedRequest<typeof req>).auth);
    res.type('text/plain').send(`launched ${req.params.id}`);
  });
  app.get('/events', (req, res) => {
    rec.events(res, (req as AuthenticatedRequest).auth);
  });
  if (options.catchAll === true) {
    app.get('/:page', (req, res) => {
      rec.ran('page', (req as AuthenticatedRequest<typeof req>).auth);
      res.type('text/plain').send('page');
    });
  }
  const server = createServer(app);
  const port = await listen(server);
  return { server, port, close: () => closeServer(server) };
}

/** Fastify 5: the plugin registered first; unknown routes reach Fastify's own 404 handler. */
async function fastifyHost(authority: TokenAuthority, options: HostOptions, rec: Recorder) {
  const app = Fastify();
  await app.register(fastifyAuth, { authority, ...options.auth });
  const healthRoute = healthRouteOf(options);
  if (healthRoute !== false) {
    app.get(healthRoute, async (request, reply) => {
      rec.ran('health', request.auth);
      return reply.type('text/plain').send('ok');
    });
  }
  app.get('/apps', async (request, reply) => {
    rec.ran('apps', request.auth);
    return reply.type('text/plain').send('apps');
  });
  app.post<{ Params: { id: string } }>('/apps/:id/launch', async (request, reply) => {
    rec.ran('launch', request.auth);
    return reply.type('text/plain').send(`launched ${request.params.id}`);
  });
  app.get('/events', (request, reply) => {
    reply.hijack();
    rec.events(reply.raw, request.auth);
  });
  if (options.catchAll === true) {
    app.get('/:page', async (request, reply) => {
      rec.ran('page', request.auth);
      return reply.type('text/plain').send('page');
    });
  }
  await app.listen({ host: '127.0.0.1', port: 0 });
  const port = (app.server.address() as AddressInfo).port;
  return {
    server: app.server,
    port,
    close: async () => {
      app.server.closeAllConnections();
      await app.close();
    },
  };
}

/** A plain fetch handler `(Request) => Response` guarded by fetchAuth, served by @hono/node-server. */
async function fetchHost(authority: TokenAuthority, options: HostOptions, rec: Recorder) {
  const healthRoute = healthRouteOf(options);
  const guard = fetchAuth(authority, options.auth);
  const text = (body: string, status = 200): Response =>
    new Response(body, { status, headers: { 'content-type': 'text/plain' } });

  const handler = async (request: Request, env: HttpBindings | Http2Bindings): Promise<Response> => {
    // The runtime's own view of the client, as a host passes it for onReject.
    const result = await guard(request, env.incoming.socket);
    if (result instanceof Response) return result;
    // With the `cors` option, the CORS headers of an allowed origin go on every response that passed.
    return guard.cors(request, route(request, result));
  };

  const route = (request: Request, result: AuthContext | undefined): Response => {
    // The router sees the URL as the platform parsed it, exactly as the guard did.
    const path = new URL(request.url).pathname;
    const launch = LAUNCH.exec(path)?.[1];
    if ((request.method === 'GET' || request.method === 'HEAD') && path === healthRoute) {
      rec.ran('health', result);
      return text('ok');
    }
    if (request.method === 'GET' && path === '/apps') {
      rec.ran('apps', result);
      return text('apps');
    }
    if (request.method === 'POST' && launch !== undefined) {
      rec.ran('launch', result);
      return text(`launched ${launch}`);
    }
    if (request.method === 'GET' && path === '/events') return eventStream(rec, result);
    if (options.catchAll === true && request.method === 'GET' && PAGE.test(path)) {
      rec.ran('page', result);
      return text('page');
    }
    return text('not found', 404);
  };

  return serveFetch(handler);
}

/** An SSE body for a Web Response: the first event, then the end when `signal` aborts or the client goes away. */
function eventStream(rec: Recorder, auth: AuthContext | undefined): Response {
  rec.ran('events', auth);
  let watch: { cancel(): void } | undefined;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode(SSE_FIRST_EVENT));
      watch = rec.watch(auth?.signal, () => controller.close());
    },
    cancel() {
      watch?.cancel();
    },
  });
  return new Response(body, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-store' } });
}

/** Serves `fetch` with @hono/node-server on 127.0.0.1, a free port. */
async function serveFetch(fetch: (request: Request, env: HttpBindings | Http2Bindings) => unknown) {
  const server = await new Promise<Server>((resolve, reject) => {
    const started = serve({ fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(started as Server));
    started.once('error', reject);
  });
  const port = (server.address() as AddressInfo).port;
  return { server, port, close: () => closeServer(server) };
}

/** Hono 4 on @hono/node-server: honoAuth first, then the routes; unknown paths reach Hono's own 404. */
async function honoHost(authority: TokenAuthority, options: HostOptions, rec: Recorder) {
  const healthRoute = healthRouteOf(options);
  const app = new Hono<HonoMaybeAuthEnv>();
  app.use(honoAuth(authority, options.auth));
  if (healthRoute !== false) {
    app.get(healthRoute, (c) => {
      rec.ran('health', c.get('auth'));
      return c.text('ok');
    });
  }
  app.get('/apps', (c) => {
    rec.ran('apps', c.get('auth'));
    return c.text('apps');
  });
  app.post('/apps/:id/launch', (c) => {
    rec.ran('launch', c.get('auth'));
    return c.text(`launched ${c.req.param('id')}`);
  });
  app.get('/events', (c) => eventStream(rec, c.get('auth')));
  if (options.catchAll === true) {
    app.get('/:page', (c) => {
      rec.ran('page', c.get('auth'));
      return c.text('page');
    });
  }
  return serveFetch(app.fetch);
}

/** Koa 3: koaAuth first, then one routing middleware on `ctx.path`; anything else is Koa's own 404. */
async function koaHost(authority: TokenAuthority, options: HostOptions, rec: Recorder) {
  const healthRoute = healthRouteOf(options);
  const app = new Koa<KoaMaybeAuthState>();
  // Koa logs every error of a response to stderr, clients' broken pipelines included; the tests assert on the wire.
  app.silent = true;
  app.use(koaAuth(authority, options.auth));
  app.use((ctx) => {
    const { method, path } = ctx;
    const launch = LAUNCH.exec(path)?.[1];
    const auth = ctx.state.auth;
    if ((method === 'GET' || method === 'HEAD') && path === healthRoute) {
      rec.ran('health', auth);
      ctx.type = 'text/plain';
      ctx.body = 'ok';
    } else if (method === 'GET' && path === '/apps') {
      rec.ran('apps', auth);
      ctx.type = 'text/plain';
      ctx.body = 'apps';
    } else if (method === 'POST' && launch !== undefined) {
      rec.ran('launch', auth);
      ctx.type = 'text/plain';
      ctx.body = `launched ${launch}`;
    } else if (method === 'GET' && path === '/events') {
      // Written on the raw response, as the other node:http hosts do.
      ctx.respond = false;
      rec.events(ctx.res, auth);
    } else if (options.catchAll === true && method === 'GET' && PAGE.test(path)) {
      rec.ran('page', auth);
      ctx.type = 'text/plain';
      ctx.body = 'page';
    }
  });
  const server = createServer(app.callback());
  const port = await listen(server);
  return { server, port, close: () => closeServer(server) };
}

/**
 * Starts a real server of `kind` on 127.0.0.1 (a free port) guarded by `authority`, with the routes above.
 * Start one per describe block and close it in afterAll: the counters are cumulative.
 */
export async function startHost(kind: HostKind, authority: TokenAuthority, options: HostOptions = {}): Promise<Host> {
  const rec = new Recorder();
  const started =
    kind === 'node'
      ? await nodeHost(authority, options, rec)
      : kind === 'express5'
        ? await expressHost(express, authority, options, rec)
        : kind === 'express4'
          ? await expressHost(express4, authority, options, rec)
          : kind === 'fastify'
            ? await fastifyHost(authority, options, rec)
            : kind === 'fetch'
              ? await fetchHost(authority, options, rec)
              : kind === 'hono'
                ? await honoHost(authority, options, rec)
                : await koaHost(authority, options, rec);
  if (options.upgrade === true) {
    started.server.on(
      'upgrade',
      withUpgradeAuth(
        authority,
        (req, socket) => {
          rec.ran('upgrade', req.auth);
          socket.end('HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
        },
        options.auth,
      ),
    );
  }
  if (options.continue === true) {
    const { server } = started;
    server.on(
      'checkContinue',
      withContinueAuth(authority, (req, res) => server.emit('request', req, res), options.auth),
    );
  }
  return {
    kind,
    url: `http://127.0.0.1:${started.port}`,
    port: started.port,
    server: started.server,
    counts: rec.counts,
    get lastAuth() {
      return rec.lastAuth;
    },
    get lastRoute() {
      return rec.lastRoute;
    },
    get openStreams() {
      return rec.openStreams;
    },
    close: started.close,
  };
}

// ---------------------------------------------------------------------------------------------------------
// Raw TCP client

export interface RawResponse {
  status: number;
  /** The reason phrase of the status line, as sent. */
  statusText: string;
  /** Header names in lower case; repeated headers joined with ', '. */
  headers: Record<string, string>;
  /** Every header line as sent, in order, names as sent. */
  headerList: Array<[string, string]>;
  /** The body bytes (de-chunked when the response was chunked). */
  body: Buffer;
  /** The bytes of this response, head included (for a single request: every byte received up to its end). */
  raw: Buffer;
  /** True when the server had closed the connection by the time this was returned. */
  closed: boolean;
}

export interface RawRequestOptions {
  /** Rejects when no complete answer has come within this many ms. @default 5000 */
  timeout?: number;
  /** Waits for the server to close the connection, instead of stopping after the body. @default false */
  untilClose?: boolean;
}

/** What {@link rawPipeline} read: the responses in order, and what came after the last one. */
export interface RawExchange {
  responses: RawResponse[];
  /** Bytes after the last complete response: none, unless a response carried more bytes than it declared. */
  trailing: Buffer;
}

interface Head {
  status: number;
  statusText: string;
  headers: Record<string, string>;
  headerList: Array<[string, string]>;
  bodyStart: number;
}

/** The head at the start of `data`, undefined while incomplete; throws on bytes that are not a response head. */
function parseHead(data: Buffer): Head | undefined {
  const end = data.indexOf('\r\n\r\n');
  if (end < 0) {
    if (data.length >= 9 && !data.subarray(0, 9).toString('latin1').startsWith('HTTP/1.')) throw notAHead();
    return undefined;
  }
  const lines = data.subarray(0, end).toString('latin1').split('\r\n');
  const statusLine = /^HTTP\/1\.[01] (\d{3})(?: (.*))?$/.exec(lines[0] ?? '');
  if (statusLine === null) throw notAHead();
  const headers: Record<string, string> = {};
  const headerList: Array<[string, string]> = [];
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw new Error('rawRequest: a response header line has no name');
    const name = line.slice(0, colon);
    const value = line.slice(colon + 1).trim();
    headerList.push([name, value]);
    const key = name.toLowerCase();
    headers[key] = key in headers ? `${headers[key]}, ${value}` : value;
  }
  return { status: Number(statusLine[1]), statusText: statusLine[2] ?? '', headers, headerList, bodyStart: end + 4 };
}

function notAHead(): Error {
  // Typically the previous response sent more body bytes than its Content-Length said.
  return new Error('rawRequest: the bytes where a response should start are not an HTTP/1.x status line');
}

/** `[body, bytes used]` once `data` holds the whole chunked body, else undefined. */
function dechunk(data: Buffer): [Buffer, number] | undefined {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', at);
    if (lineEnd < 0) return undefined;
    const size = Number.parseInt(data.subarray(at, lineEnd).toString('latin1').split(';', 1)[0] ?? '', 16);
    if (!Number.isInteger(size) || size < 0) throw new Error('rawRequest: bad chunk size');
    const start = lineEnd + 2;
    if (size === 0) {
      // Trailers are not used by any host here: the body ends at the next empty line.
      const last = data.indexOf('\r\n', start);
      return last < 0 ? undefined : [Buffer.concat(parts), last + 2];
    }
    if (data.length < start + size + 2) return undefined;
    parts.push(data.subarray(start, start + size));
    at = start + size + 2;
  }
}

/**
 * One complete response at the start of `data` and the bytes it used, or undefined while incomplete. `atEnd`:
 * the server has closed, so a response without a length ends here. Interim 1xx responses (but 101) are skipped.
 */
function parseResponse(
  data: Buffer,
  isHead: boolean,
  atEnd: boolean,
): [Omit<RawResponse, 'closed'>, number] | undefined {
  let offset = 0;
  let head: Head | undefined;
  for (;;) {
    head = parseHead(data.subarray(offset));
    if (head === undefined) return undefined;
    if (head.status >= 200 || head.status === 101) break;
    offset += head.bodyStart;
  }
  const { bodyStart, ...fields } = head;
  const start = offset + bodyStart;
  const rest = data.subarray(start);
  const done = (body: Buffer, used: number): [Omit<RawResponse, 'closed'>, number] => [
    { ...fields, body: Buffer.from(body), raw: Buffer.from(data.subarray(0, start + used)) },
    start + used,
  ];
  if (isHead || head.status === 101 || head.status === 204 || head.status === 304) return done(Buffer.alloc(0), 0);
  if (/\bchunked\b/i.test(head.headers['transfer-encoding'] ?? '')) {
    const chunked = dechunk(rest);
    return chunked === undefined ? undefined : done(...chunked);
  }
  const length = head.headers['content-length'];
  if (length !== undefined) {
    const wanted = Number(length);
    if (!Number.isSafeInteger(wanted) || wanted < 0) throw new Error('rawRequest: bad Content-Length');
    return rest.length >= wanted ? done(rest.subarray(0, wanted), wanted) : undefined;
  }
  return atEnd ? done(rest, rest.length) : undefined;
}

const toBytes = (text: string | Buffer): Buffer => (typeof text === 'string' ? Buffer.from(text, 'latin1') : text);
const isHeadRequest = (bytes: Buffer): boolean => bytes.subarray(0, 5).toString('latin1') === 'HEAD ';

/**
 * Writes `texts` back to back on one connection (pipelined) and reads until the server closes it: the
 * responses in order and any bytes after the last. Make the server close: end with a `Connection: close`
 * request, or send something it refuses to keep the connection for. Because each response is read by its own
 * framing, a response with more body bytes than it declared makes the next one unparseable (a rejection)
 * or shows up in `trailing`.
 */
export function rawPipeline(
  port: number,
  texts: ReadonlyArray<string | Buffer>,
  options: Pick<RawRequestOptions, 'timeout'> = {},
): Promise<RawExchange> {
  const requests = texts.map(toBytes);
  return exchange(port, Buffer.concat(requests), requests.map(isHeadRequest), true, options.timeout ?? 5_000).then(
    ({ responses, trailing }) => ({ responses, trailing }),
  );
}

/**
 * Writes `text` (a string is sent as latin1, one byte per character, so `\xe9` is the byte 0xE9) on a fresh
 * connection to 127.0.0.1:`port` and reads one response: the head, then exactly Content-Length body bytes,
 * a chunked body, nothing for HEAD/101/204/304, or everything until close when no length is given.
 * Never puts the request into an error message (it may carry a token).
 */
export async function rawRequest(
  port: number,
  text: string | Buffer,
  options: RawRequestOptions = {},
): Promise<RawResponse> {
  const bytes = toBytes(text);
  const { responses } = await exchange(
    port,
    bytes,
    [isHeadRequest(bytes)],
    options.untilClose ?? false,
    options.timeout ?? 5_000,
  );
  const [response] = responses;
  if (response === undefined) throw new Error('rawRequest: the connection closed without a complete response');
  return response;
}

function exchange(
  port: number,
  request: Buffer,
  heads: boolean[],
  untilClose: boolean,
  timeout: number,
): Promise<{ responses: RawResponse[]; trailing: Buffer }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1' });
    const responses: Array<Omit<RawResponse, 'closed'>> = [];
    let data = Buffer.alloc(0);
    let offset = 0;
    let closed = false;
    let settled = false;
    const cancel = deadline(timeout, () => fail(new Error(`rawRequest: no complete answer within ${timeout} ms`)));

    const settle = (): void => {
      settled = true;
      cancel();
      socket.destroy();
    };
    const fail = (error: Error): void => {
      if (settled) return;
      settle();
      reject(error);
    };
    const finish = (): void => {
      if (settled) return;
      settle();
      resolve({ responses: responses.map((r) => ({ ...r, closed })), trailing: Buffer.from(data.subarray(offset)) });
    };

    const advance = (atEnd: boolean): void => {
      while (responses.length < heads.length) {
        const parsed = parseResponse(data.subarray(offset), heads[responses.length] ?? false, atEnd);
        if (parsed === undefined) break;
        responses.push(parsed[0]);
        offset += parsed[1];
        // A response that ends at the close consumed everything; nothing can follow it.
        if (atEnd && offset === data.length) break;
      }
      if (atEnd) {
        if (responses.length === 0) fail(new Error('rawRequest: the connection closed without a complete response'));
        else finish();
      } else if (responses.length === heads.length && !untilClose) finish();
    };

    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      try {
        advance(false);
      } catch (error) {
        fail(error as Error);
      }
    });
    let socketError: Error | undefined;
    socket.once('close', () => {
      closed = true;
      try {
        // A reset after a complete response still leaves that response to check.
        if (socketError !== undefined && responses.length === 0 && offset === data.length) fail(socketError);
        else advance(true);
      } catch (error) {
        fail(error as Error);
      }
    });
    // 'close' follows every 'error': decide there, with whatever was received.
    socket.on('error', (error) => {
      socketError = error;
    });
    socket.write(request);
  });
}

// ---------------------------------------------------------------------------------------------------------
// Assertions shared by the suites that run cases

/** The challenge of every 401 with the default `realm`. */
export const CHALLENGE = 'Bearer realm="launcher"';

/** Headers a 401 may carry: the adapter's two, what Node adds to every response, and Express's default banner. */
const REFUSAL_HEADERS = new Set([
  'www-authenticate',
  'content-length',
  'date',
  'connection',
  'keep-alive',
  'x-powered-by',
]);

/** The uniform refusal, byte for byte where it matters. */
export function expectRefusal(res: RawResponse): void {
  expect(res.status).toBe(401);
  expect(res.body.length).toBe(0);
  expect(res.headers['www-authenticate']).toBe(CHALLENGE);
  expect(res.headers['content-length']).toBe('0');
  expect(res.headers['content-type']).toBeUndefined();
  expect(res.headers['transfer-encoding']).toBeUndefined();
  expect(Object.keys(res.headers).filter((name) => !REFUSAL_HEADERS.has(name))).toEqual([]);
}

/** A refused request that closes the connection: pipelined after a case, it proves the case's framing. */
const PROBE = 'GET /__probe HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n';

/**
 * Sends `text`; for an HTTP/1.1 request that the server answers and keeps the connection for, pipelines
 * {@link PROBE} behind it, so that body bytes beyond the declared length (a 401 with a hidden body) cannot go
 * unseen: they would stand where the probe's answer must start. The probe is refused, so it moves no count,
 * but a host's `onReject` sees it.
 */
export async function sendFramed(port: number, text: string, framed = true): Promise<RawResponse> {
  if (!framed || !/^[^\r\n]* HTTP\/1\.1\r\n/.test(text)) return rawRequest(port, text);
  const { responses, trailing } = await rawPipeline(port, [text, PROBE]);
  expect(responses.length).toBe(2);
  expect(responses[1]?.status).toBe(401);
  expect(trailing.length).toBe(0);
  return responses[0] as RawResponse;
}

/**
 * Sends `c` to `host` (a fresh connection, the probe pipelined behind it where it applies) and asserts what
 * `c` expects of `host.kind`: the whole refusal and unchanged counts for 401; 200, one protected run and the
 * current key's context for 'protected'; 200 "ok", one health run and no context for 'health'; the status and
 * unchanged counts for `{ status }`. `authority` is the one the host was started with.
 */
export async function checkCase(
  host: Host,
  authority: TokenAuthority,
  tokens: Tokens,
  c: AdapterCase,
): Promise<RawResponse> {
  const want = expectationFor(c, host.kind);
  const before = { ...host.counts };
  const text = requestText(c, tokens, host.port);
  const res = await sendFramed(host.port, text, typeof want !== 'object' && c.framed !== false);
  if (want === 401) {
    expectRefusal(res);
    // Nothing before the refusal: no `100 Continue` that would invite the upload, no `101`.
    expect(res.raw.subarray(0, 13).toString('latin1')).toBe('HTTP/1.1 401 ');
    expect(host.counts).toEqual(before);
  } else if (want === 'protected') {
    expect(res.status).toBe(200);
    expect(host.counts).toEqual({ health: before.health, protected: before.protected + 1 });
    expect(host.lastRoute).not.toBe('health');
    expect(host.lastAuth?.keyId).toBe(authority.keyId);
    expect(host.lastAuth?.signal.aborted).toBe(false);
  } else if (want === 'health') {
    expect(res.status).toBe(200);
    expect(res.body.toString('latin1')).toBe(text.startsWith('HEAD ') ? '' : 'ok');
    expect(host.counts).toEqual({ health: before.health + 1, protected: before.protected });
    expect(host.lastRoute).toBe('health');
    // Exempt: no authentication was attempted, whatever the request carried.
    expect(host.lastAuth).toBeUndefined();
  } else {
    expect(res.status).toBe(want.status);
    expect(host.counts).toEqual(before);
  }
  return res;
}

/** The status of a WebSocket handshake's refusal, or `undefined` if the socket opened (then it is closed). */
export function handshakeStatus(ws: WebSocket): Promise<number | undefined> {
  return within(
    new Promise<number | undefined>((resolve) => {
      ws.once('unexpected-response', (_req, res) => {
        resolve(res.statusCode);
        res.resume();
        ws.terminate();
      });
      ws.once('open', () => {
        resolve(undefined);
        ws.terminate();
      });
      ws.once('error', () => undefined);
    }),
    'the handshake',
  );
}

/**
 * `fetch` served by @hono/node-server on a free loopback port, its WebSocket upgrades handed to `wss` (as
 * `upgradeWebSocket` from @hono/node-server needs): the server and its port, once it listens.
 */
export async function serveWithWebSockets(
  fetch: Parameters<typeof serve>[0]['fetch'],
  wss: WebSocketServer,
): Promise<{ server: ServerType; port: number }> {
  const server = await new Promise<ServerType>((resolve) => {
    const started = serve(
      { fetch, port: 0, hostname: '127.0.0.1', websocket: { server: wss as unknown as WebSocketServerLike } },
      () => resolve(started),
    );
  });
  return { server, port: (server.address() as AddressInfo).port };
}

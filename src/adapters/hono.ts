// launcher-auth/hono: a Hono 4 middleware, on any runtime Hono runs on (Node through @hono/node-server, Bun, Deno).
import type { Context, MiddlewareHandler } from 'hono';
import { authorizationFromRawHeaders } from '../authority/bearer.js';
import { healthHandler, type AuthOptions, type Peer } from '../gate/gate.js';
import type { CorsOptions } from '../gate/cors.js';
import type { TokenAuthority } from '../authority/token-authority.js';
import type { AuthContext } from '../authority/types.js';
import {
  handshakeOfNode,
  protocolCredentials,
  protocolsFromRawHeaders,
  resolveSubprotocolToken,
  stripTokenEntry,
  type NodeHeaders,
  type SubprotocolTokenOptions,
} from '../gate/subprotocol.js';
import { webGuard } from './shared/web.js';

export type { AuthContext, AuthOptions, CorsOptions };
export type { RejectInfo } from '../gate/gate.js';

/**
 * The Hono environment of an app whose every handler is reached with a valid token: `c.get('auth')` is an
 * `AuthContext`. What `honoAuth` gives with a `health` handler (or `healthPath: false`). It types the app it is
 * given to, `new Hono<HonoAuthEnv>()` or `new Hono().use(honoAuth(…))`, and no other: nothing is added to Hono's
 * global `ContextVariableMap`, which would type every Hono app of the program, the host's unprotected ones too.
 */
export interface HonoAuthEnv {
  Variables: { auth: AuthContext };
}

/** The environment without a `health` handler: the health check reaches the app too, where `c.get('auth')` is undefined. */
export interface HonoMaybeAuthEnv {
  Variables: { auth: AuthContext | undefined };
}

/** Serves the health check (`GET`/`HEAD` of the health path, no token needed); it has no `auth`. */
export type HonoHealthHandler = (c: Context) => Response | Promise<Response>;

/** The options of {@link honoAuth}: those of every adapter, plus the health handler. */
export interface HonoAuthOptions extends AuthOptions, SubprotocolTokenOptions {
  /**
   * Serves the health check in the middleware itself, so that no route of the app sees a request without a
   * token and `c.get('auth')` is always an `AuthContext`.
   * @default undefined (the health check goes on to the app's routes, with `c.get('auth')` undefined)
   */
  health?: HonoHealthHandler;
}

/** The Node request and its socket, as @hono/node-server puts them in `c.env.incoming`. */
type NodeRequest = NodeHeaders & { readonly socket?: Peer; readonly method?: string };

/** The runtime this module runs on, when it is one where `subprotocolToken` cannot work. */
function runtimeWithoutNodeRequests(): string | undefined {
  const global = globalThis as { Bun?: unknown; Deno?: unknown };
  if (global.Bun !== undefined) return 'Bun';
  if (global.Deno !== undefined) return 'Deno';
  return undefined;
}

/** The Node request behind `c` on @hono/node-server; `undefined` on other runtimes. */
function nodeRequestOf(c: Context): NodeRequest | undefined {
  const env: unknown = c.env;
  if (typeof env !== 'object' || env === null) return undefined;
  const incoming = (env as { incoming?: Partial<NodeRequest> }).incoming;
  return typeof incoming === 'object' && incoming !== null && Array.isArray(incoming.rawHeaders)
    ? (incoming as NodeRequest)
    : undefined;
}

/** Two credentials: refused as ambiguous (`malformed`) whatever they hold. */
const REFUSED: readonly string[] = ['', ''];

/**
 * The credential of a request: on Node the Authorization lines as received (@hono/node-server builds a WebSocket
 * handshake's Request from `req.headers`, which keeps only the first of two, and two must be refused), and with
 * `subprotocolToken` the token entry of a WebSocket handshake, removed from both the Node request and the
 * Request before any handler reads them.
 */
function credentialOf(
  c: Context,
  node: NodeRequest | undefined,
  subprotocolToken: boolean,
): string | readonly string[] | undefined {
  const request = c.req.raw;
  if (node === undefined) {
    const authorization = request.headers.get('authorization') ?? undefined;
    if (!subprotocolToken) return authorization;
    // No Node request to strip the entry from (app.request(), a server other than @hono/node-server): a handshake
    // that carries one is refused, never let through with the entry left in place or its token ignored.
    const headers = request.headers;
    const protocols = headers.get('sec-websocket-protocol');
    if (protocols === null) return authorization;
    const handshake = {
      method: request.method,
      connection: headers.get('connection'),
      upgrade: headers.get('upgrade'),
    };
    const offered = protocolCredentials(handshake, authorization, protocols);
    return offered.protocols === undefined ? authorization : REFUSED;
  }
  const authorization = authorizationFromRawHeaders(node.rawHeaders);
  if (!subprotocolToken) return authorization;
  // Most requests carry no Sec-WebSocket-Protocol: the handshake's headers are read only when one does.
  const protocols = protocolsFromRawHeaders(node.rawHeaders);
  if (protocols === undefined) return authorization;
  const handshake = handshakeOfNode(node.method ?? request.method, node.rawHeaders);
  const offered = protocolCredentials(handshake, authorization, protocols);
  if (offered.protocols === undefined) return authorization;
  stripTokenEntry(node, offered.protocols);
  try {
    if (offered.protocols.length === 0) request.headers.delete('sec-websocket-protocol');
    else request.headers.set('sec-websocket-protocol', offered.protocols.join(', '));
  } catch {
    // Immutable headers: the entry would stay where the app can read it, so the handshake is refused.
    return REFUSED;
  }
  return offered.authorization;
}

/**
 * Hono middleware: install it first, for every path (`app.use(honoAuth(authority, { health }))`), so that an
 * unknown path without a token gets the 401 and not a 404. An authenticated request goes on with
 * `c.get('auth')` set; `GET`/`HEAD` of the health path reach `options.health` (or, without it, the app's routes
 * with `c.get('auth')` undefined); every other request, a WebSocket handshake to any path included, gets 401
 * with an empty body and `WWW-Authenticate`, whatever the app's error handler would say. With `cors`, the CORS
 * headers of an allowed origin are added to the app's answers. `onReject` gets the client's address on
 * @hono/node-server; on Bun and Deno, `remoteAddress` is undefined. `subprotocolToken` (a browser's WebSocket
 * token entry, read for a WebSocket handshake only) works on @hono/node-server, where the entry can be removed
 * before the app sees the handshake; on Bun and Deno setting it throws a `TypeError`, and elsewhere a handshake
 * that carries the entry is refused.
 *
 * @example
 * const app = new Hono().use(honoAuth(authority, { health: (c) => c.text('ok') }));
 * app.get('/apps', (c) => c.json({ keyId: c.get('auth').keyId }));
 */
export function honoAuth(
  authority: TokenAuthority,
  options: HonoAuthOptions & ({ health: HonoHealthHandler } | { healthPath: false }),
): MiddlewareHandler<HonoAuthEnv>;
export function honoAuth(authority: TokenAuthority, options?: HonoAuthOptions): MiddlewareHandler<HonoMaybeAuthEnv>;
export function honoAuth(authority: TokenAuthority, options?: HonoAuthOptions): MiddlewareHandler {
  const web = webGuard(authority, options, 'honoAuth');
  const subprotocolToken = resolveSubprotocolToken(options, 'honoAuth');
  const runtime = subprotocolToken ? runtimeWithoutNodeRequests() : undefined;
  if (runtime !== undefined) {
    throw new TypeError(
      `honoAuth: \`subprotocolToken\` is not supported on ${runtime}: its server hands over no request from which the ` +
        'token entry could be removed before the app sees it. Send the Authorization header instead (a browser ' +
        'page can do so through a server-side proxy), or serve the app with @hono/node-server on Node.',
    );
  }
  const health = healthHandler(options?.health, 'honoAuth');
  return async (c, next) => {
    const node = nodeRequestOf(c);
    const result = await web.check(c.req.raw, node?.socket, credentialOf(c, node, subprotocolToken));
    // Returned, not thrown: an HTTPException would go through the app's onError, which may add a body.
    if (result instanceof Response) return result;
    if (result === undefined && health !== undefined) c.res = await health(c);
    else {
      if (result !== undefined) c.set('auth', result);
      await next();
    }
    const pass = web.corsPass(c.req.raw);
    if (pass === undefined) return;
    // The app's own Vary stays: Origin is added to it.
    for (let i = 0; i < pass.length; i += 2) {
      const name = pass[i] as string;
      c.header(name, pass[i + 1] as string, name === 'Vary' ? { append: true } : undefined);
    }
  };
}

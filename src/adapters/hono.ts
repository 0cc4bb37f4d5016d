// launcher-auth/hono: a Hono 4 middleware, on any runtime Hono runs on (Node through @hono/node-server, Bun, Deno).
import type { Context, MiddlewareHandler } from 'hono';
import { authorizationFromRawHeaders } from '../authority/bearer.js';
import { healthHandler, type AuthOptions, type Peer } from '../gate/gate.js';
import type { CorsOptions } from '../gate/cors.js';
import type { TokenAuthority } from '../authority/token-authority.js';
import type { AuthContext } from '../authority/types.js';
import {
  protocolCredentials,
  protocolsFromRawHeaders,
  resolveSubprotocolToken,
  stripTokenEntry,
  type NodeHeaders,
  type SubprotocolTokenOptions,
} from '../gate/subprotocol.js';
import { asksWebSocket, webGuard } from './shared/web.js';

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
type NodeRequest = NodeHeaders & { readonly socket?: Peer };

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
function credentialOf(c: Context, node: NodeRequest | undefined, subprotocolToken: boolean): string | readonly string[] | undefined {
  const request = c.req.raw;
  if (node === undefined) return request.headers.get('authorization') ?? undefined;
  const authorization = authorizationFromRawHeaders(node.rawHeaders);
  if (!subprotocolToken || !asksWebSocket(request.headers)) return authorization;
  const offered = protocolCredentials(authorization, protocolsFromRawHeaders(node.rawHeaders));
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
 * token entry) is read on @hono/node-server, where the entry can be removed before the app sees the handshake;
 * on other runtimes a handshake needs the Authorization header.
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

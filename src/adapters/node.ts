// launcher-auth/node: wraps a node:http request handler and an 'upgrade' handler.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { authorizationFromRawHeaders } from '../core/bearer.js';
import {
  EXEMPT,
  UNAUTHORIZED_HEADER_LIST,
  UNAUTHORIZED_RAW,
  UNAUTHORIZED_STATUS,
  assertAuthority,
  decide,
  decideCors,
  resolveAuthOptions,
  type AuthOptions,
  type Decision,
  type ResolvedAuthOptions,
} from '../core/gate.js';
import { setHeaders, type CorsOptions, type CorsOutcome } from '../core/cors.js';
import type { TokenAuthority } from '../core/token-authority.js';
import type { AuthContext } from '../core/types.js';

export type { AuthContext, AuthOptions, CorsOptions };
export type { RejectInfo } from '../core/gate.js';

/** A request that came with a valid token: what a protected handler receives. */
export type AuthenticatedRequest<Request extends IncomingMessage = IncomingMessage> = Request & {
  auth: AuthContext;
};

/** The health check (`GET`/`HEAD` of the health path), which needs no token: it has no `auth`. */
export type HealthRequest<Request extends IncomingMessage = IncomingMessage> = Request & { readonly auth?: undefined };

/** The options of {@link withAuth}: those of every adapter, plus the handler of the health check. */
export interface NodeAuthOptions<
  Request extends IncomingMessage = IncomingMessage,
  Response extends ServerResponse<Request> = ServerResponse<Request>,
> extends AuthOptions {
  /**
   * Serves the health check, so that the main handler only ever sees authenticated requests and its
   * `req.auth` is an `AuthContext`, never `undefined`.
   * @default undefined (the health check reaches the main handler, with `req.auth` undefined)
   */
  health?: (req: HealthRequest<Request>, res: Response) => void;
}

function destroyOnError(this: Duplex): void {
  this.destroy();
}

/**
 * Wraps a node:http handler: an authenticated request reaches `handler` with `req.auth` set, `GET`/`HEAD` of the
 * health path reach `options.health` without a token, and every other request gets 401 with an empty body.
 * With `health` (or `healthPath: false`) the handler's `req.auth` is always an `AuthContext`.
 *
 * @example
 * const handler = withAuth(authority, (req, res) => res.end(req.auth.keyId), { health: (_req, res) => res.end('ok') });
 * http.createServer(handler).listen(7878, '127.0.0.1');
 */
export function withAuth<
  Request extends IncomingMessage = IncomingMessage,
  Response extends ServerResponse<Request> = ServerResponse<Request>,
>(
  authority: TokenAuthority,
  handler: (req: AuthenticatedRequest<Request>, res: Response) => void,
  options: NodeAuthOptions<Request, Response> &
    ({ health: (req: HealthRequest<Request>, res: Response) => void } | { healthPath: false }),
): (req: Request, res: Response) => void;
/**
 * Without a `health` handler the health check reaches `handler` too, with `req.auth` undefined: test
 * `req.auth === undefined` first.
 */
export function withAuth<
  Request extends IncomingMessage = IncomingMessage,
  Response extends ServerResponse<Request> = ServerResponse<Request>,
>(
  authority: TokenAuthority,
  handler: (req: AuthenticatedRequest<Request> | HealthRequest<Request>, res: Response) => void,
  options?: NodeAuthOptions<Request, Response>,
): (req: Request, res: Response) => void;
export function withAuth<
  Request extends IncomingMessage = IncomingMessage,
  Response extends ServerResponse<Request> = ServerResponse<Request>,
>(
  authority: TokenAuthority,
  handler: (req: AuthenticatedRequest<Request> | HealthRequest<Request>, res: Response) => void,
  options?: NodeAuthOptions<Request, Response>,
): (req: Request, res: Response) => void {
  assertAuthority(authority, 'withAuth');
  if (typeof handler !== 'function') throw new TypeError('withAuth: `handler` must be a function.');
  const resolved = resolveAuthOptions(options, 'withAuth');
  const health = options?.health;
  if (health !== undefined && typeof health !== 'function') {
    throw new TypeError('withAuth: `health` must be a function when set.');
  }

  const apply = (req: Request, res: Response, decision: Decision, cors: CorsOutcome | undefined): void => {
    if (decision === undefined) {
      res.writeHead(UNAUTHORIZED_STATUS, cors?.unauthorized ?? UNAUTHORIZED_HEADER_LIST);
      res.end();
      return;
    }
    if (cors !== undefined) setHeaders(res, cors.pass);
    if (decision !== EXEMPT) {
      const authed = req as AuthenticatedRequest<Request>;
      authed.auth = decision;
      handler(authed, res);
    } else if (health !== undefined) health(req, res);
    else handler(req, res);
  };

  return (req, res) => {
    const cors = decideCors(req.method, req.url, req.rawHeaders, resolved, req.socket);
    if (cors?.answer !== undefined) {
      res.writeHead(cors.answer.status, cors.answer.headers);
      res.end();
      return;
    }
    const authorization = authorizationFromRawHeaders(req.rawHeaders);
    const decision = decide(authority, req.method, req.url, authorization, resolved, undefined, req.socket);
    if (decision instanceof Promise) decision.then((settled) => apply(req, res, settled, cors));
    else apply(req, res, decision, cors);
  };
}

/**
 * Wraps a server's `'upgrade'` handler (WebSocket): an authenticated upgrade reaches `handler` with `req.auth`
 * set; any other gets a raw `HTTP/1.1 401 Unauthorized` with an empty body, and the socket is closed. No upgrade is
 * exempt, not even one to the health path: the exemption is for the host's health handler, and an upgrade would
 * reach this handler (a WebSocket server) instead. `healthPath` is validated but has no effect here.
 */
export function withUpgradeAuth<Request extends IncomingMessage = IncomingMessage>(
  authority: TokenAuthority,
  handler: (req: AuthenticatedRequest<Request>, socket: Duplex, head: Buffer) => void,
  options?: AuthOptions,
): (req: Request, socket: Duplex, head: Buffer) => void {
  assertAuthority(authority, 'withUpgradeAuth');
  if (typeof handler !== 'function') throw new TypeError('withUpgradeAuth: `handler` must be a function.');
  const resolved: ResolvedAuthOptions = { ...resolveAuthOptions(options, 'withUpgradeAuth'), healthPath: false };

  const apply = (req: Request, socket: Duplex, head: Buffer, decision: Decision): void => {
    if (decision === undefined) {
      socket.end(UNAUTHORIZED_RAW);
      return;
    }
    socket.off('error', destroyOnError);
    // Never EXEMPT: healthPath is false here.
    const authed = req as AuthenticatedRequest<Request>;
    authed.auth = decision as AuthContext;
    handler(authed, socket, head);
  };

  return (req, socket, head) => {
    // Node hands the socket over without an error listener: until it reaches the handler (or while it is
    // being refused), an error on it must not become an uncaught exception.
    socket.on('error', destroyOnError);
    const authorization = authorizationFromRawHeaders(req.rawHeaders);
    const decision = decide(authority, req.method, req.url, authorization, resolved, undefined, req.socket);
    if (decision instanceof Promise) decision.then((settled) => apply(req, socket, head, settled));
    else apply(req, socket, head, decision);
  };
}

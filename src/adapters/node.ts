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
  resolveAuthOptions,
  type AuthOptions,
  type Decision,
  type ResolvedAuthOptions,
} from '../core/gate.js';
import type { TokenAuthority } from '../core/token-authority.js';
import type { AuthContext } from '../core/types.js';

export type { AuthContext, AuthOptions };
export type { RejectInfo } from '../core/gate.js';

/** The request a wrapped handler receives: `auth` is set for an authenticated request, `undefined` for the health check. */
export type AuthenticatedRequest<Request extends IncomingMessage = IncomingMessage> = Request & {
  auth: AuthContext | undefined;
};

function destroyOnError(this: Duplex): void {
  this.destroy();
}

/**
 * Wraps a node:http handler: `GET`/`HEAD` of the health path pass without a token, an authenticated request
 * reaches `handler` with `req.auth` set, and every other request gets 401 with an empty body.
 *
 * @example http.createServer(withAuth(authority, (req, res) => res.end('hello'))).listen(7878, '127.0.0.1');
 */
export function withAuth<
  Request extends IncomingMessage = IncomingMessage,
  Response extends ServerResponse<Request> = ServerResponse<Request>,
>(
  authority: TokenAuthority,
  handler: (req: AuthenticatedRequest<Request>, res: Response) => void,
  options?: AuthOptions,
): (req: Request, res: Response) => void {
  assertAuthority(authority, 'withAuth');
  if (typeof handler !== 'function') throw new TypeError('withAuth: `handler` must be a function.');
  const resolved = resolveAuthOptions(options, 'withAuth');

  const apply = (req: Request, res: Response, decision: Decision): void => {
    if (decision === undefined) {
      res.writeHead(UNAUTHORIZED_STATUS, UNAUTHORIZED_HEADER_LIST);
      res.end();
      return;
    }
    const authed = req as AuthenticatedRequest<Request>;
    authed.auth = decision === EXEMPT ? undefined : decision;
    handler(authed, res);
  };

  return (req, res) => {
    const decision = decide(authority, req.method, req.url, authorizationFromRawHeaders(req.rawHeaders), resolved, undefined, req.socket);
    if (decision instanceof Promise) decision.then((settled) => apply(req, res, settled));
    else apply(req, res, decision);
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
    const authed = req as AuthenticatedRequest<Request>;
    authed.auth = decision === EXEMPT ? undefined : decision;
    handler(authed, socket, head);
  };

  return (req, socket, head) => {
    // Node hands the socket over without an error listener: until it reaches the handler (or while it is
    // being refused), an error on it must not become an uncaught exception.
    socket.on('error', destroyOnError);
    const decision = decide(authority, req.method, req.url, authorizationFromRawHeaders(req.rawHeaders), resolved, undefined, req.socket);
    if (decision instanceof Promise) decision.then((settled) => apply(req, socket, head, settled));
    else apply(req, socket, head, decision);
  };
}

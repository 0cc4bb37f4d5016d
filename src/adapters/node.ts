// launcher-auth/node: wraps a node:http (or node:http2 compatibility) request handler, its 'checkContinue'
// handler, and an 'upgrade' handler (node-upgrade.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import { authorizationFromRawHeaders } from '../core/bearer.js';
import {
  EXEMPT,
  UNAUTHORIZED_STATUS,
  assertAuthority,
  decide,
  resolveAuthOptions,
  type AuthOptions,
  type Decision,
} from '../core/gate.js';
import type { TokenAuthority } from '../core/token-authority.js';
import type { AuthContext } from '../core/types.js';

export type { AuthContext, AuthOptions };
export type { RejectInfo } from '../core/gate.js';
export { REFUSED_UPGRADE_LINGER_MS, withUpgradeAuth, type UpgradeAuthOptions } from './node-upgrade.js';

/** A request of `http.createServer` or of `http2.createServer`/`createSecureServer` (compatibility API). */
export type NodeRequest = IncomingMessage | Http2ServerRequest;

/** The response that goes with `Request`. */
export type NodeResponse<Request extends NodeRequest = IncomingMessage> = Request extends IncomingMessage
  ? ServerResponse<Request>
  : Http2ServerResponse;

/** The request a wrapped handler receives: `auth` is set for an authenticated request, `undefined` for the health check. */
export type AuthenticatedRequest<Request extends NodeRequest = IncomingMessage> = Request & {
  auth: AuthContext | undefined;
};

type Listener<Request extends NodeRequest, Response> = (req: Request, res: Response) => void;

/** The shared body of withAuth and withContinueAuth: `pass` runs the handler once the request may go on. */
function guard<Request extends NodeRequest, Response extends ServerResponse<IncomingMessage> | Http2ServerResponse>(
  authority: TokenAuthority,
  handler: Listener<AuthenticatedRequest<Request>, Response>,
  options: AuthOptions | undefined,
  where: string,
  expectContinue: boolean,
): Listener<Request, Response> {
  assertAuthority(authority, where);
  if (typeof handler !== 'function') throw new TypeError(`${where}: \`handler\` must be a function.`);
  const resolved = resolveAuthOptions(options, where);
  // Refused before its body was sent, a request leaves that body unread: HTTP/1 closes the connection rather
  // than read it or mistake it for the next request (RFC 9110 §10.1.1). HTTP/2 frames keep streams apart.
  const closing = expectContinue ? [...resolved.unauthorizedHeaderList, 'Connection', 'close'] : resolved.unauthorizedHeaderList;

  const apply = (req: Request, res: Response, decision: Decision): void => {
    if (decision === undefined) {
      // Both accept a flat list at run time; @types/node declares it for node:http only.
      (res as ServerResponse).writeHead(UNAUTHORIZED_STATUS, req.httpVersionMajor === 1 ? closing : resolved.unauthorizedHeaderList);
      res.end();
      return;
    }
    const authed = req as AuthenticatedRequest<Request>;
    authed.auth = decision === EXEMPT ? undefined : decision;
    if (expectContinue) res.writeContinue();
    handler(authed, res);
  };

  return (req, res) => {
    const decision = decide(authority, req.method, req.url, authorizationFromRawHeaders(req.rawHeaders), resolved);
    if (decision instanceof Promise) decision.then((settled) => apply(req, res, settled));
    else apply(req, res, decision);
  };
}

/**
 * Wraps a node:http handler: `GET`/`HEAD` of the health path pass without a token, an authenticated request
 * reaches `handler` with `req.auth` set, and every other request gets 401 with an empty body. Works on
 * `http.createServer`, `https.createServer` and the compatibility API of `http2.createServer`.
 *
 * @example http.createServer(withAuth(authority, (req, res) => res.end('hello'))).listen(7878, '127.0.0.1');
 */
export function withAuth<Request extends NodeRequest = IncomingMessage, Response extends NodeResponse<Request> = NodeResponse<Request>>(
  authority: TokenAuthority,
  handler: (req: AuthenticatedRequest<Request>, res: Response) => void,
  options?: AuthOptions,
): (req: Request, res: Response) => void {
  return guard(authority, handler, options, 'withAuth', false);
}

/**
 * The same guard for the server's `'checkContinue'` event: a request that sent `Expect: 100-continue` is refused
 * with the 401 (and `Connection: close` on HTTP/1) before the client uploads its body; one that may go on gets
 * `100 Continue` and then reaches `handler`. Without a `'checkContinue'` listener Node answers `100 Continue`
 * itself, before any handler sees the request. Give it the same handler as `withAuth`:
 *
 * @example
 * const server = http.createServer(withAuth(authority, handler));
 * server.on('checkContinue', withContinueAuth(authority, handler));
 */
export function withContinueAuth<Request extends NodeRequest = IncomingMessage, Response extends NodeResponse<Request> = NodeResponse<Request>>(
  authority: TokenAuthority,
  handler: (req: AuthenticatedRequest<Request>, res: Response) => void,
  options?: AuthOptions,
): (req: Request, res: Response) => void {
  return guard(authority, handler, options, 'withContinueAuth', true);
}

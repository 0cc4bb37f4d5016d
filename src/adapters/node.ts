// launcher-auth/node: wraps a node:http (or node:http2 compatibility) request handler, its 'checkContinue'
// handler, and an 'upgrade' handler (shared/node-upgrade.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import { authorizationFromRawHeaders } from '../authority/bearer.js';
import {
  EXEMPT,
  UNAUTHORIZED_STATUS,
  assertAuthority,
  healthHandler,
  decide,
  decideCors,
  resolveAuthOptions,
  unauthorizedHeaderList,
  type AuthOptions,
  type Decision,
} from '../gate/gate.js';
import { setHeaders, type CorsOptions, type CorsOutcome } from '../gate/cors.js';
import type { TokenAuthority } from '../authority/token-authority.js';
import type { AuthContext } from '../authority/types.js';

export type { AuthContext, AuthOptions, CorsOptions };
export type { RejectInfo } from '../gate/gate.js';
export { REFUSED_UPGRADE_LINGER_MS, withUpgradeAuth, type UpgradeAuthOptions } from './shared/node-upgrade.js';

/** A request of `http.createServer` or of `http2.createServer`/`createSecureServer` (compatibility API). */
export type NodeRequest = IncomingMessage | Http2ServerRequest;

/** The response that goes with `Request`. */
export type NodeResponse<Request extends NodeRequest = IncomingMessage> = Request extends IncomingMessage
  ? ServerResponse<Request>
  : Http2ServerResponse;

/** A request that came with a valid token: what a protected handler receives. */
export type AuthenticatedRequest<Request extends NodeRequest = IncomingMessage> = Request & {
  auth: AuthContext;
};

/** The health check (`GET`/`HEAD` of the health path), which needs no token: it has no `auth`. */
export type HealthRequest<Request extends NodeRequest = IncomingMessage> = Request & { readonly auth?: undefined };

/**
 * What a handler receives when no `health` handler is given: the health check reaches it too, without `auth`.
 * Narrow it with `if (req.auth === undefined)`.
 */
export type MaybeAuthenticatedRequest<Request extends NodeRequest = IncomingMessage> =
  AuthenticatedRequest<Request> | HealthRequest<Request>;

type Listener<Request extends NodeRequest, Response> = (req: Request, res: Response) => void;

/** The options of {@link withAuth} and {@link withContinueAuth}: those of every adapter, plus the health handler. */
export interface NodeAuthOptions<
  Request extends NodeRequest = IncomingMessage,
  Response extends NodeResponse<Request> = NodeResponse<Request>,
> extends AuthOptions {
  /**
   * Serves the health check, so that the main handler only ever sees authenticated requests and its
   * `req.auth` is an `AuthContext`, never `undefined`.
   * @default undefined (the health check reaches the main handler, with `req.auth` undefined)
   */
  health?: Listener<HealthRequest<Request>, Response>;
}

/**
 * The signature of {@link withAuth} and {@link withContinueAuth}. With a `health` handler (or `healthPath:
 * false`) the main handler's `req.auth` is always an `AuthContext`; without either, the health check reaches the
 * main handler too, with `req.auth` undefined: test `req.auth === undefined` first.
 */
export interface NodeGuard {
  <Request extends NodeRequest = IncomingMessage, Response extends NodeResponse<Request> = NodeResponse<Request>>(
    authority: TokenAuthority,
    handler: Listener<AuthenticatedRequest<Request>, Response>,
    options: NodeAuthOptions<Request, Response> &
      ({ health: Listener<HealthRequest<Request>, Response> } | { healthPath: false }),
  ): Listener<Request, Response>;
  <Request extends NodeRequest = IncomingMessage, Response extends NodeResponse<Request> = NodeResponse<Request>>(
    authority: TokenAuthority,
    handler: Listener<MaybeAuthenticatedRequest<Request>, Response>,
    options?: NodeAuthOptions<Request, Response>,
  ): Listener<Request, Response>;
}

/** The implementations' view of a handler; {@link NodeGuard} gives callers the precise types. */
type AnyHandler = Listener<MaybeAuthenticatedRequest, ServerResponse>;

/** The shared body of withAuth and withContinueAuth: `pass` runs the handler once the request may go on. */
function guard<Request extends NodeRequest, Response extends ServerResponse | Http2ServerResponse>(
  authority: TokenAuthority,
  handler: Listener<MaybeAuthenticatedRequest<Request>, Response>,
  options: NodeAuthOptions<Request, Response & NodeResponse<Request>> | undefined,
  where: string,
  expectContinue: boolean,
): Listener<Request, Response> {
  assertAuthority(authority, where);
  if (typeof handler !== 'function') throw new TypeError(`${where}: \`handler\` must be a function.`);
  const resolved = resolveAuthOptions(options, where);
  const health = healthHandler(options?.health as Listener<HealthRequest<Request>, Response> | undefined, where);

  const apply = (req: Request, res: Response, decision: Decision, cors: CorsOutcome | undefined): void => {
    if (decision === undefined) {
      // Refused before its body was sent, a request leaves that body unread: Node closes an HTTP/1 connection
      // whose client waited for 100 Continue and got a final status (`Connection: close`) rather than read the body
      // or mistake it for the next request (RFC 9110 §10.1.1). HTTP/2 frames keep streams apart.
      // Both accept a flat list at run time; @types/node declares it for node:http only.
      (res as ServerResponse).writeHead(UNAUTHORIZED_STATUS, unauthorizedHeaderList(resolved, cors));
      res.end();
      return;
    }
    if (cors !== undefined) setHeaders(res, cors.pass);
    if (expectContinue) res.writeContinue();
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
      (res as ServerResponse).writeHead(cors.answer.status, cors.answer.headers);
      res.end();
      return;
    }
    const authorization = authorizationFromRawHeaders(req.rawHeaders);
    const decision = decide(
      authority,
      { method: req.method, target: req.url, authorization, peer: req.socket },
      resolved,
    );
    if (decision instanceof Promise) void decision.then((settled) => apply(req, res, settled, cors));
    else apply(req, res, decision, cors);
  };
}

/**
 * Wraps a node:http handler: an authenticated request reaches `handler` with `req.auth` set, `GET`/`HEAD` of the
 * health path reach `options.health` without a token (or `handler`, with `req.auth` undefined, when there is no
 * `health`), and every other request gets 401 with an empty body. Works on `http.createServer`,
 * `https.createServer` and the compatibility API of `http2.createServer`.
 *
 * @example
 * const handler = withAuth(authority, (req, res) => res.end(req.auth.keyId), { health: (_req, res) => res.end('ok') });
 * http.createServer(handler).listen(7878, '127.0.0.1');
 */
export const withAuth = ((authority: TokenAuthority, handler: AnyHandler, options?: NodeAuthOptions) =>
  guard(authority, handler, options, 'withAuth', false)) as NodeGuard;

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
export const withContinueAuth = ((authority: TokenAuthority, handler: AnyHandler, options?: NodeAuthOptions) =>
  guard(authority, handler, options, 'withContinueAuth', true)) as NodeGuard;

// launcher-auth/express: one middleware for Express 4 and 5.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { authorizationFromRawHeaders } from '../authority/bearer.js';
import {
  EXEMPT,
  UNAUTHORIZED_STATUS,
  assertAuthority,
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

/**
 * An Express request that came with a valid token: what a handler wrapped in {@link authenticated} receives.
 * Nothing is added to Express's global types, so the health route's plain `Request` has no `auth` at all.
 */
export type AuthenticatedRequest<R extends object = Request> = R & { auth: AuthContext };

/** The 401 of the default options: `authenticated()` sees no options (a wrapped route's realm is the default). */
const FALLBACK_UNAUTHORIZED = resolveAuthOptions(undefined, 'authenticated').unauthorizedHeaderList;

/**
 * Wraps a protected route's handler so that its `req.auth` is an `AuthContext` (Express's own signatures cannot
 * require a property its `Request` lacks): `app.get('/apps', authenticated((req, res) => res.send(req.auth.keyId)))`.
 * Route parameters are not inferred through the wrapper: give them, `authenticated<{ id: string }>(…)`. Should a
 * request reach it without `auth` (the middleware is not installed before the route, or the health route is
 * wrapped), it answers the uniform 401 and the handler does not run.
 */
export function authenticated<
  P = Request['params'],
  ResBody = unknown,
  ReqBody = unknown,
  ReqQuery = Request['query'],
  Locals extends Record<string, unknown> = Record<string, unknown>,
>(
  handler: (
    req: AuthenticatedRequest<Request<P, ResBody, ReqBody, ReqQuery, Locals>>,
    res: Response<ResBody, Locals>,
    next: NextFunction,
  ) => unknown,
): RequestHandler<P, ResBody, ReqBody, ReqQuery, Locals> {
  if (typeof handler !== 'function') throw new TypeError('authenticated: `handler` must be a function.');
  return (req, res, next) => {
    const auth = (req as Partial<AuthenticatedRequest<typeof req>>).auth;
    if (auth === undefined) {
      res.writeHead(UNAUTHORIZED_STATUS, FALLBACK_UNAUTHORIZED);
      res.end();
      return undefined;
    }
    return handler(req as AuthenticatedRequest<typeof req>, res, next);
  };
}

/**
 * Express middleware: install it before the routes (`app.use(expressAuth(authority))`). `GET`/`HEAD` of the
 * health path pass without a token (and without `req.auth`), an authenticated request goes on with `req.auth`
 * set (read it through {@link authenticated}), and every other
 * request gets 401 with an empty body; it never calls `next(err)`. Matches the health path against
 * `req.originalUrl`, so under a mount point give the full path.
 */
export function expressAuth(authority: TokenAuthority, options?: AuthOptions): RequestHandler {
  assertAuthority(authority, 'expressAuth');
  const resolved = resolveAuthOptions(options, 'expressAuth');

  type Cors = CorsOutcome | undefined;
  const apply = (req: Request, res: Response, next: NextFunction, decision: Decision, cors: Cors): void => {
    if (decision === undefined) {
      // Written on the raw response: Express's helpers would add a body or a Content-Type.
      res.writeHead(UNAUTHORIZED_STATUS, unauthorizedHeaderList(resolved, cors));
      res.end();
      return;
    }
    if (cors !== undefined) setHeaders(res, cors.pass);
    // The health check gets no `auth` at all, as its handler's plain `Request` type says.
    if (decision !== EXEMPT) (req as AuthenticatedRequest).auth = decision;
    next();
  };

  return (req, res, next) => {
    const cors = decideCors(req.method, req.originalUrl, req.rawHeaders, resolved, req.socket);
    if (cors?.answer !== undefined) {
      res.writeHead(cors.answer.status, cors.answer.headers);
      res.end();
      return;
    }
    const authorization = authorizationFromRawHeaders(req.rawHeaders);
    const decision = decide(
      authority,
      { method: req.method, target: req.originalUrl, authorization, peer: req.socket },
      resolved,
    );
    if (decision instanceof Promise) void decision.then((settled) => apply(req, res, next, settled, cors));
    else apply(req, res, next, decision, cors);
  };
}

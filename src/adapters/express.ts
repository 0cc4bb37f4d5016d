// launcher-auth/express: one middleware for Express 4 and 5.
import type { NextFunction, Request, RequestHandler, Response } from 'express';
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

/**
 * An Express request after `expressAuth`: `auth` is set for an authenticated request and `undefined` for the
 * health check. Type a route's `req` with it (`(req: AuthenticatedRequest, res) => …`); nothing is added to
 * Express's global types. `auth` is optional in the type only so that Express's handler signatures accept it.
 */
export type AuthenticatedRequest<R extends Request = Request> = R & { auth?: AuthContext | undefined };

/**
 * Express middleware: install it before the routes (`app.use(expressAuth(authority))`). `GET`/`HEAD` of the
 * health path pass without a token, an authenticated request goes on with `req.auth` set, and every other
 * request gets 401 with an empty body; it never calls `next(err)`. Matches the health path against
 * `req.originalUrl`, so under a mount point give the full path.
 */
export function expressAuth(authority: TokenAuthority, options?: AuthOptions): RequestHandler {
  assertAuthority(authority, 'expressAuth');
  const resolved = resolveAuthOptions(options, 'expressAuth');

  const apply = (req: Request, res: Response, next: NextFunction, decision: Decision): void => {
    if (decision === undefined) {
      // Written on the raw response: Express's helpers would add a body or a Content-Type.
      res.writeHead(UNAUTHORIZED_STATUS, resolved.unauthorizedHeaderList);
      res.end();
      return;
    }
    (req as AuthenticatedRequest).auth = decision === EXEMPT ? undefined : decision;
    next();
  };

  return (req, res, next) => {
    const decision = decide(authority, req.method, req.originalUrl, authorizationFromRawHeaders(req.rawHeaders), resolved);
    if (decision instanceof Promise) decision.then((settled) => apply(req, res, next, settled));
    else apply(req, res, next, decision);
  };
}

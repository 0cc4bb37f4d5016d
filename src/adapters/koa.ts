// launcher-auth/koa: a Koa 2/3 middleware.
import type { Middleware, ParameterizedContext } from 'koa';
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
} from '../gate/gate.js';
import { setHeaders, type CorsOptions } from '../gate/cors.js';
import type { TokenAuthority } from '../authority/token-authority.js';
import type { AuthContext } from '../authority/types.js';

export type { AuthContext, AuthOptions, CorsOptions };
export type { RejectInfo } from '../gate/gate.js';

/**
 * `ctx.state` of an app whose every middleware after `koaAuth` is reached with a valid token: what `koaAuth`
 * gives with a `health` handler (or `healthPath: false`). Type the app with it, `new Koa<KoaAuthState>()` (and a
 * router, `new Router<KoaAuthState>()`): Koa's global `DefaultState` is left alone.
 */
export interface KoaAuthState {
  auth: AuthContext;
}

/** `ctx.state` without a `health` handler: the health check goes on too, with `ctx.state.auth` undefined. */
export interface KoaMaybeAuthState {
  auth: AuthContext | undefined;
}

/** Serves the health check (`GET`/`HEAD` of the health path, no token needed); `ctx.state.auth` is not set. */
export type KoaHealthHandler = (ctx: ParameterizedContext) => unknown;

/** The options of {@link koaAuth}: those of every adapter, plus the health handler. */
export interface KoaAuthOptions extends AuthOptions {
  /**
   * Serves the health check in the middleware itself, so that no later middleware sees a request without a
   * token and `ctx.state.auth` is always an `AuthContext`.
   * @default undefined (the health check goes on to the next middleware, with `ctx.state.auth` undefined)
   */
  health?: KoaHealthHandler;
}

/**
 * Koa middleware: install it first (`app.use(koaAuth(authority, { health }))`). An authenticated request goes
 * on with `ctx.state.auth` set; `GET`/`HEAD` of the health path reach `options.health` (or, without it, the next
 * middleware with `ctx.state.auth` undefined); every other request gets 401 with an empty body and
 * `WWW-Authenticate`, written on the raw response with `ctx.respond = false`, so that neither Koa's default body
 * ("Unauthorized", `Content-Type: text/plain`) nor its error handling ever touch it. Matches the health path
 * against `ctx.originalUrl`, so under koa-mount give the full path. WebSocket upgrades do not pass through Koa:
 * guard them with `withUpgradeAuth` from `launcher-auth/node` on the server.
 *
 * @example
 * const app = new Koa<KoaAuthState>().use(koaAuth(authority, { health: (ctx) => void (ctx.body = 'ok') }));
 * app.use((ctx) => void (ctx.body = { keyId: ctx.state.auth.keyId }));
 */
export function koaAuth(
  authority: TokenAuthority,
  options: KoaAuthOptions & ({ health: KoaHealthHandler } | { healthPath: false }),
): Middleware<KoaAuthState>;
export function koaAuth(authority: TokenAuthority, options?: KoaAuthOptions): Middleware<KoaMaybeAuthState>;
export function koaAuth(authority: TokenAuthority, options?: KoaAuthOptions): Middleware<KoaMaybeAuthState> {
  assertAuthority(authority, 'koaAuth');
  const resolved = resolveAuthOptions(options, 'koaAuth');
  const health = healthHandler(options?.health, 'koaAuth');
  const answer = (ctx: ParameterizedContext, status: number, headers: string[]): void => {
    // Koa then leaves the response alone: no default body, no Content-Type, no error page.
    ctx.respond = false;
    ctx.res.writeHead(status, headers);
    ctx.res.end();
  };
  return async (ctx, next) => {
    const { req } = ctx;
    const cors = decideCors(req.method, ctx.originalUrl, req.rawHeaders, resolved, req.socket);
    if (cors?.answer !== undefined) {
      answer(ctx, cors.answer.status, cors.answer.headers);
      return;
    }
    const authorization = authorizationFromRawHeaders(req.rawHeaders);
    const pending = decide(
      authority,
      { method: req.method, target: ctx.originalUrl, authorization, peer: req.socket },
      resolved,
    );
    const decision = pending instanceof Promise ? await pending : pending;
    if (decision === undefined) {
      answer(ctx, UNAUTHORIZED_STATUS, unauthorizedHeaderList(resolved, cors));
      return;
    }
    if (cors !== undefined) setHeaders(ctx.res, cors.pass);
    if (decision !== EXEMPT) ctx.state.auth = decision;
    else if (health !== undefined) {
      await health(ctx);
      return;
    }
    return next() as Promise<void>;
  };
}

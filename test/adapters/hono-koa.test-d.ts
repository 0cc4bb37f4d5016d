// What a strict TypeScript host sees through launcher-auth/hono and launcher-auth/koa: `c.get('auth')` and
// `ctx.state.auth` typed without a cast, only in the app the middleware is given to.
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import Koa, { type Middleware } from 'koa';
import { describe, expectTypeOf, it } from 'vitest';
import type { AuthContext, TokenAuthority } from 'launcher-auth';
import {
  honoAuth,
  type AuthOptions as HonoAuthOptionsBase,
  type HonoAuthEnv,
  type HonoAuthOptions,
  type HonoMaybeAuthEnv,
  type RejectInfo as HonoRejectInfo,
} from 'launcher-auth/hono';
import {
  koaAuth,
  type AuthOptions as KoaAuthOptionsBase,
  type KoaAuthOptions,
  type KoaAuthState,
  type KoaMaybeAuthState,
  type RejectInfo as KoaRejectInfo,
} from 'launcher-auth/koa';
import type { AuthOptions, RejectInfo } from 'launcher-auth';

declare const authority: TokenAuthority;

describe('launcher-auth/hono', () => {
  it('with a health handler, c.get("auth") is an AuthContext in the app that uses the middleware', () => {
    const app = new Hono().use(honoAuth(authority, { health: (c) => c.text('ok') }));
    app.get('/apps', (c) => {
      expectTypeOf(c.get('auth')).toEqualTypeOf<AuthContext>();
      expectTypeOf(c.var.auth).toEqualTypeOf<AuthContext>();
      return c.text(c.get('auth').keyId);
    });
    expectTypeOf(honoAuth(authority, { healthPath: false })).toEqualTypeOf<MiddlewareHandler<HonoAuthEnv>>();
  });

  it('new Hono<HonoAuthEnv>() types the handlers too', () => {
    const app = new Hono<HonoAuthEnv>();
    app.use(honoAuth(authority, { health: (c) => c.text('ok') }));
    app.get('/apps', (c) => {
      expectTypeOf(c.get('auth')).toEqualTypeOf<AuthContext>();
      return c.text('apps');
    });
  });

  it('without a health handler the health check reaches the app too: auth may be undefined', () => {
    const middleware = honoAuth(authority);
    expectTypeOf(middleware).toEqualTypeOf<MiddlewareHandler<HonoMaybeAuthEnv>>();
    new Hono().use(middleware).get('/apps', (c) => {
      expectTypeOf(c.get('auth')).toEqualTypeOf<AuthContext | undefined>();
      return c.text(c.get('auth')?.keyId ?? 'health');
    });
  });

  it("adds nothing to Hono's global ContextVariableMap: another app of the program has no `auth`", () => {
    const other = new Hono();
    other.get('/', (c) => {
      // @ts-expect-error `auth` is not a variable of an app that does not use honoAuth
      c.get('auth');
      return c.text('other');
    });
  });

  it('the health handler gets a plain Context; options and their types are exported', () => {
    expectTypeOf<HonoAuthOptions['health']>().toEqualTypeOf<
      ((c: Context) => Response | Promise<Response>) | undefined
    >();
    expectTypeOf<HonoAuthOptionsBase>().toEqualTypeOf<AuthOptions>();
    expectTypeOf<HonoRejectInfo>().toEqualTypeOf<RejectInfo>();
    // @ts-expect-error the health handler must answer with a Response
    honoAuth(authority, { health: () => 'ok' });
    // @ts-expect-error an unknown option
    honoAuth(authority, { heathPath: '/health' });
  });
});

describe('launcher-auth/koa', () => {
  it('with a health handler, ctx.state.auth is an AuthContext in new Koa<KoaAuthState>()', () => {
    const app = new Koa<KoaAuthState>();
    app.use(koaAuth(authority, { health: (ctx) => void (ctx.body = 'ok') }));
    app.use((ctx) => {
      expectTypeOf(ctx.state.auth).toEqualTypeOf<AuthContext>();
      ctx.body = ctx.state.auth.keyId;
    });
    expectTypeOf(koaAuth(authority, { healthPath: false })).toEqualTypeOf<Middleware<KoaAuthState>>();
  });

  it('without a health handler, ctx.state.auth may be undefined', () => {
    const middleware = koaAuth(authority);
    expectTypeOf(middleware).toEqualTypeOf<Middleware<KoaMaybeAuthState>>();
    new Koa<KoaMaybeAuthState>().use(middleware).use((ctx) => {
      expectTypeOf(ctx.state.auth).toEqualTypeOf<AuthContext | undefined>();
    });
  });

  it('options and their types are exported', () => {
    expectTypeOf<KoaAuthOptionsBase>().toEqualTypeOf<AuthOptions>();
    expectTypeOf<KoaRejectInfo>().toEqualTypeOf<RejectInfo>();
    expectTypeOf<KoaAuthOptions>().toHaveProperty('health');
    // @ts-expect-error a realm must be a string
    koaAuth(authority, { realm: 1 });
  });
});

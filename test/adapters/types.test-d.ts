// What a strict TypeScript host sees when it imports the adapters by their package names: `auth` typed
// without casts, no global augmentation beyond Fastify's declaration merging, and every option type exported.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import {
  createSecureServer as createHttp2SecureServer,
  createServer as createHttp2Server,
  type Http2ServerRequest,
  type Http2ServerResponse,
} from 'node:http2';
import type { Duplex } from 'node:stream';
import express, { type Request as ExpressRequest, type RequestHandler } from 'express';
import Fastify, { type FastifyPluginAsync, type FastifyRequest } from 'fastify';
import { describe, expectTypeOf, it } from 'vitest';
import type {
  AuthContext,
  AuthOptions,
  CorsOptions,
  JWTPayload,
  RejectInfo,
  RejectReason,
  TokenAuthority,
} from 'launcher-auth';
import {
  expressAuth,
  type AuthContext as ExpressAuthContext,
  type AuthOptions as ExpressAuthOptions,
  type AuthenticatedRequest,
  type RejectInfo as ExpressRejectInfo,
} from 'launcher-auth/express';
import {
  fastifyAuth,
  type AuthOptions as FastifyAuthOptionsBase,
  type FastifyAuthOptions,
  type RejectInfo as FastifyRejectInfo,
} from 'launcher-auth/fastify';
import {
  fetchAuth,
  type AuthOptions as FetchAuthOptions,
  type FetchAuthResult,
  type FetchGuard,
  type Peer,
  type RejectInfo as FetchRejectInfo,
} from 'launcher-auth/fetch';
import {
  withAuth,
  withContinueAuth,
  withUpgradeAuth,
  type UpgradeAuthOptions,
  type AuthOptions as NodeAuthOptions,
  type AuthenticatedRequest as NodeAuthenticatedRequest,
  type HealthRequest,
  type MaybeAuthenticatedRequest,
  type RejectInfo as NodeRejectInfo,
} from 'launcher-auth/node';

declare const authority: TokenAuthority;

describe('core types the adapters share', () => {
  it('AuthContext carries claims, keyId and the revocation signal, read-only', () => {
    expectTypeOf<AuthContext>().toEqualTypeOf<{
      readonly claims: JWTPayload;
      readonly keyId: string;
      readonly signal: AbortSignal;
    }>();
  });

  it('AuthOptions and RejectInfo', () => {
    expectTypeOf<AuthOptions>().toEqualTypeOf<{
      healthPath?: string | false;
      onReject?: (info: RejectInfo) => void;
      realm?: string;
      cors?: CorsOptions;
    }>();
    expectTypeOf<CorsOptions>().toEqualTypeOf<{
      origins: readonly string[] | '*';
      maxAge?: number;
      allowHeaders?: readonly string[];
      allowMethods?: readonly string[];
    }>();
    expectTypeOf<RejectInfo>().toEqualTypeOf<{
      method: string;
      path: string;
      reason: RejectReason;
      remoteAddress: string | undefined;
    }>();
    expectTypeOf<RejectReason>().toEqualTypeOf<'missing' | 'malformed' | 'invalid' | 'rotated' | 'suspended'>();
    // exactOptionalPropertyTypes: "not set" is leaving it out, not `undefined`.
    // @ts-expect-error undefined is not a healthPath
    const unset: AuthOptions = { healthPath: undefined };
    expectTypeOf(unset).toEqualTypeOf<AuthOptions>();
  });

  it('every subpath exports the same option and info types', () => {
    expectTypeOf<NodeAuthOptions>().toEqualTypeOf<AuthOptions>();
    expectTypeOf<ExpressAuthOptions>().toEqualTypeOf<AuthOptions>();
    expectTypeOf<FastifyAuthOptionsBase>().toEqualTypeOf<AuthOptions>();
    expectTypeOf<FetchAuthOptions>().toEqualTypeOf<AuthOptions>();
    expectTypeOf<NodeRejectInfo>().toEqualTypeOf<RejectInfo>();
    expectTypeOf<ExpressRejectInfo>().toEqualTypeOf<RejectInfo>();
    expectTypeOf<FastifyRejectInfo>().toEqualTypeOf<RejectInfo>();
    expectTypeOf<FetchRejectInfo>().toEqualTypeOf<RejectInfo>();
    expectTypeOf<ExpressAuthContext>().toEqualTypeOf<AuthContext>();
  });
});

describe('launcher-auth/node', () => {
  it('withAuth without a health handler: req.auth is AuthContext | undefined, and the result fits createServer', () => {
    const listener = withAuth(authority, (req, res) => {
      expectTypeOf(req.auth).toEqualTypeOf<AuthContext | undefined>();
      expectTypeOf(req).toExtend<IncomingMessage>();
      expectTypeOf(res).toEqualTypeOf<ServerResponse>();
      res.end(req.auth?.keyId);
    });
    expectTypeOf(listener).toEqualTypeOf<(req: IncomingMessage, res: ServerResponse) => void>();
    createServer(listener);
    expectTypeOf<NodeAuthenticatedRequest['auth']>().toEqualTypeOf<AuthContext>();
  });

  it('adds nothing to IncomingMessage itself', () => {
    expectTypeOf<IncomingMessage>().not.toHaveProperty('auth');
  });

  it('withUpgradeAuth: the handler gets (AuthenticatedRequest, Duplex, Buffer) and fits server.on("upgrade")', () => {
    const upgrade = withUpgradeAuth(authority, (req, socket, head) => {
      expectTypeOf(req.auth).toEqualTypeOf<AuthContext>();
      expectTypeOf(socket).toEqualTypeOf<Duplex>();
      expectTypeOf(head).toEqualTypeOf<Buffer>();
    });
    createServer().on('upgrade', upgrade);
  });

  it('withAuth accepts node:http2 compatibility requests and responses (h2c and TLS)', () => {
    const listener = withAuth(
      authority,
      (req: MaybeAuthenticatedRequest<Http2ServerRequest>, res: Http2ServerResponse) => {
        expectTypeOf(req.auth).toEqualTypeOf<AuthContext | undefined>();
        expectTypeOf(req.url).toEqualTypeOf<string>();
        res.end(req.auth?.keyId ?? '');
      },
    );
    createHttp2Server(listener);
    createHttp2SecureServer({}, listener);
    // Inferred from where it is passed, without annotations.
    createHttp2Server(
      withAuth(authority, (req, res) => {
        expectTypeOf(req).toExtend<Http2ServerRequest>();
        expectTypeOf(res).toEqualTypeOf<Http2ServerResponse>();
      }),
    );
  });

  it('withContinueAuth fits server.on("checkContinue") on node:http and node:http2', () => {
    const handler = (req: MaybeAuthenticatedRequest, res: ServerResponse) => res.end(req.auth?.keyId);
    createServer(withAuth(authority, handler)).on('checkContinue', withContinueAuth(authority, handler));
    const strict = (req: NodeAuthenticatedRequest, res: ServerResponse) => res.end(req.auth.keyId);
    const health = (_req: HealthRequest, res: ServerResponse) => res.end('ok');
    createServer(withAuth(authority, strict, { health })).on(
      'checkContinue',
      withContinueAuth(authority, strict, { health }),
    );
    createHttp2Server().on(
      'checkContinue',
      withContinueAuth(authority, (_req: MaybeAuthenticatedRequest<Http2ServerRequest>, res: Http2ServerResponse) =>
        res.end(),
      ),
    );
    createHttp2Server(
      withAuth(
        authority,
        (req: NodeAuthenticatedRequest<Http2ServerRequest>, res: Http2ServerResponse) => res.end(req.auth.keyId),
        {
          healthPath: false,
        },
      ),
    );
  });

  it('withUpgradeAuth takes protocols besides AuthOptions', () => {
    expectTypeOf<UpgradeAuthOptions>().toExtend<AuthOptions>();
    expectTypeOf<UpgradeAuthOptions['protocols']>().toEqualTypeOf<readonly string[] | undefined>();
    withUpgradeAuth(authority, () => undefined, { protocols: ['websocket'], realm: 'launcher' });
  });

  it('options are AuthOptions', () => {
    withAuth(authority, () => undefined, {
      healthPath: false,
      onReject: (info) => expectTypeOf(info).toEqualTypeOf<RejectInfo>(),
    });
    // @ts-expect-error healthPath is a string or false
    withAuth(authority, () => undefined, { healthPath: true });
  });
});

describe('launcher-auth/express', () => {
  it('expressAuth returns a RequestHandler that app.use takes', () => {
    const middleware = expressAuth(authority, { healthPath: '/status' });
    expectTypeOf(middleware).toEqualTypeOf<RequestHandler>();
    express().use(middleware);
  });

  it('AuthenticatedRequest types req.auth and keeps the route parameters', () => {
    expectTypeOf<AuthenticatedRequest['auth']>().toEqualTypeOf<AuthContext>();
    expectTypeOf<AuthenticatedRequest<ExpressRequest<{ id: string }>>['params']>().toEqualTypeOf<{ id: string }>();
    const app = express();
    app.post('/apps/:id/launch', (req, res) => {
      const { auth, params } = req as AuthenticatedRequest<typeof req>;
      expectTypeOf(auth).toEqualTypeOf<AuthContext>();
      expectTypeOf(params.id).toEqualTypeOf<string>();
      res.send(auth.keyId);
    });
  });

  it("adds nothing to Express's global Request", () => {
    expectTypeOf<ExpressRequest>().not.toHaveProperty('auth');
  });
});

describe('launcher-auth/fastify', () => {
  it('request.auth is typed by declaration merging', () => {
    expectTypeOf<FastifyRequest['auth']>().toEqualTypeOf<AuthContext>();
    const app = Fastify();
    app.get('/apps', async (request) => {
      expectTypeOf(request.auth).toEqualTypeOf<AuthContext>();
      return request.auth.keyId;
    });
  });

  it('fastifyAuth is a plugin whose options are { authority } & AuthOptions', async () => {
    expectTypeOf(fastifyAuth).toEqualTypeOf<FastifyPluginAsync<FastifyAuthOptions>>();
    expectTypeOf<FastifyAuthOptions>().toEqualTypeOf<{ authority: TokenAuthority } & AuthOptions>();
    const app = Fastify();
    await app.register(fastifyAuth, { authority, healthPath: '/status', onReject: () => undefined });
    // @ts-expect-error the authority is required
    await app.register(fastifyAuth, { healthPath: '/status' });
  });
});

describe('launcher-auth/fetch', () => {
  it('fetchAuth resolves with a Response, the context, or undefined for the health check', async () => {
    const guard = fetchAuth(authority);
    expectTypeOf(guard).toEqualTypeOf<FetchGuard>();
    expectTypeOf(guard).toExtend<(request: Request, peer?: Peer) => Promise<FetchAuthResult>>();
    expectTypeOf(guard.cors).toEqualTypeOf<(request: Request, response: Response) => Response>();
    expectTypeOf<Peer>().toEqualTypeOf<{ readonly remoteAddress?: string | undefined }>();
    expectTypeOf<FetchAuthResult>().toEqualTypeOf<Response | AuthContext | undefined>();
    const result = await guard(new Request('http://127.0.0.1/apps'));
    if (result instanceof Response) return;
    // After the one check a handler needs, what is left is the context or the health check.
    expectTypeOf(result).toEqualTypeOf<AuthContext | undefined>();
  });
});

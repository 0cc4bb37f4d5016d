// A protected handler reads `req.auth.keyId` with no cast, no `!` and no `?.` in strict TypeScript, in every
// adapter; the health handler's type says `auth` is absent. (The runtime side is handler-types.test.ts.)
import { createServer, IncomingMessage, type ServerResponse } from 'node:http';
import express, { type Request as ExpressRequest, type RequestHandler } from 'express';
import Fastify, { type FastifyRequest } from 'fastify';
import { describe, expectTypeOf, it } from 'vitest';
import type { AuthContext, TokenAuthority } from 'launcher-auth';
import { authenticated, expressAuth, type AuthenticatedRequest } from 'launcher-auth/express';
import { fastifyAuth, health, type HealthRequest as FastifyHealthRequest } from 'launcher-auth/fastify';
import { withAuth, type HealthRequest, type NodeAuthOptions } from 'launcher-auth/node';

declare const authority: TokenAuthority;

describe('node:http', () => {
  it('with a health handler, the main handler has auth: AuthContext and the health handler has none', () => {
    const listener = withAuth(
      authority,
      (req, res) => {
        expectTypeOf(req.auth).toEqualTypeOf<AuthContext>();
        res.end(req.auth.keyId);
      },
      {
        health: (req, res) => {
          expectTypeOf(req.auth).toEqualTypeOf<undefined>();
          expectTypeOf(req).toEqualTypeOf<HealthRequest>();
          res.end('ok');
        },
      },
    );
    createServer(listener);
  });

  it('with healthPath: false nothing is exempt, so the handler has auth: AuthContext', () => {
    withAuth(authority, (req, res) => res.end(req.auth.keyId), { healthPath: false });
  });

  it('without either, auth may be undefined (the health check reaches the handler) and narrows', () => {
    withAuth(authority, (req, res) => {
      expectTypeOf(req.auth).toEqualTypeOf<AuthContext | undefined>();
      // @ts-expect-error possibly undefined: the health check reaches this handler too
      res.end(req.auth.keyId);
      if (req.auth === undefined) return void res.end('ok');
      res.end(req.auth.keyId);
    });
    withAuth(authority, (req, res) => res.end(req.auth?.keyId), { healthPath: '/status' });
  });

  it('keeps the host’s own request and response types', () => {
    class MyRequest extends IncomingMessage {
      tenant = 'a';
    }
    const listener = withAuth<MyRequest, ServerResponse<MyRequest>>(
      authority,
      (req, res) => res.end(`${req.tenant} ${req.auth.keyId}`),
      { health: (req, res) => res.end(req.tenant) },
    );
    expectTypeOf(listener).toEqualTypeOf<(req: MyRequest, res: ServerResponse<MyRequest>) => void>();
  });

  it('options: health is a handler; the health handler cannot read a context', () => {
    expectTypeOf<NodeAuthOptions['health']>().toEqualTypeOf<
      ((req: HealthRequest, res: ServerResponse) => void) | undefined
    >();
    withAuth(authority, (req, res) => res.end(req.auth.keyId), {
      // @ts-expect-error the health check has no auth
      health: (req, res) => res.end(req.auth.keyId),
    });
  });
});

describe('Express', () => {
  it('authenticated() gives its handler auth: AuthContext and fits app.get/post/use and Router', () => {
    const app = express();
    app.use(expressAuth(authority));
    app.get('/health', (req, res) => {
      // @ts-expect-error Express's Request has no auth: the health check has none
      res.send(req.auth);
    });
    app.get(
      '/apps',
      authenticated((req, res) => {
        expectTypeOf(req.auth).toEqualTypeOf<AuthContext>();
        expectTypeOf(req).toExtend<ExpressRequest>();
        res.json({ keyId: req.auth.keyId });
      }),
    );
    app.post(
      '/apps/:id/launch',
      authenticated<{ id: string }>(async (req, res) => {
        expectTypeOf(req.params.id).toEqualTypeOf<string>();
        res.send(`${req.params.id} ${req.auth.keyId}`);
      }),
    );
    express.Router().get(
      '/x',
      authenticated((req, res) => res.send(req.auth.keyId)),
    );
    expectTypeOf(authenticated(() => undefined)).toExtend<RequestHandler>();
  });

  it('a handler annotated with AuthenticatedRequest is not accepted by Express directly: use authenticated()', () => {
    const app = express();
    // @ts-expect-error Express's signatures cannot require a property its Request lacks
    app.get('/apps', (req: AuthenticatedRequest, res) => res.send(req.auth.keyId));
    expectTypeOf<AuthenticatedRequest<ExpressRequest<{ id: string }>>['auth']>().toEqualTypeOf<AuthContext>();
  });
});

describe('Fastify', () => {
  it('request.auth is AuthContext in a protected route; health() types the health route without it', async () => {
    const app = Fastify();
    await app.register(fastifyAuth, { authority });
    app.get('/apps', async (request) => {
      expectTypeOf(request.auth).toEqualTypeOf<AuthContext>();
      return request.auth.keyId;
    });
    app.get(
      '/health',
      health(async (request, reply) => {
        expectTypeOf(request.auth).toEqualTypeOf<undefined>();
        // @ts-expect-error the health check has no auth
        void request.auth.keyId;
        return reply.send('ok');
      }),
    );
    app.get(
      '/status',
      health(async () => 'ok'),
    );
    expectTypeOf<FastifyHealthRequest['auth']>().toEqualTypeOf<undefined>();
    expectTypeOf<FastifyHealthRequest['url']>().toEqualTypeOf<FastifyRequest['url']>();
  });
});

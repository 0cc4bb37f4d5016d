// launcher-auth/fastify: a Fastify 5 plugin, not encapsulated (as fastify-plugin would mark it), so its hook
// covers the whole app.
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { authorizationFromRawHeaders } from '../authority/bearer.js';
import {
  EXEMPT,
  UNAUTHORIZED_STATUS,
  assertAuthority,
  decide,
  decideCors,
  isHealthRequest,
  resolveAuthOptions,
  unauthorizedHeaderList,
  type AuthOptions,
  type Decision,
} from '../gate/gate.js';
import type { CorsOptions, CorsOutcome } from '../gate/cors.js';
import type { TokenAuthority } from '../authority/token-authority.js';
import type { AuthContext } from '../authority/types.js';

export type { AuthContext, AuthOptions, CorsOptions };
export type { RejectInfo } from '../gate/gate.js';

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * Set by launcher-auth: every request that reaches a handler came with a valid token, except the health
     * check, whose handler should be wrapped in `health()` so that its type says it has no `auth`.
     */
    auth: AuthContext;
  }
}

/** The health check's request: it needs no token and has no `auth`. */
export type HealthRequest<R extends FastifyRequest = FastifyRequest> = Omit<R, 'auth'> & { readonly auth?: undefined };

/**
 * Types the health route's handler: `app.get('/health', health(async (request) => 'ok'))`. Its `request.auth` is
 * `undefined` in the type as at runtime (Fastify's declaration merging cannot give one route another type).
 */
export function health<R extends FastifyRequest, Reply extends FastifyReply, Result>(
  handler: (request: HealthRequest<R>, reply: Reply) => Result,
): (request: R, reply: Reply) => Result {
  if (typeof handler !== 'function') throw new TypeError('health: `handler` must be a function.');
  return handler as unknown as (request: R, reply: Reply) => Result;
}

/** The options of {@link fastifyAuth}. */
export type FastifyAuthOptions = { authority: TokenAuthority } & AuthOptions;

/**
 * Marks, in its `config`, a route registered without host or version constraints. The health route is the one of
 * them at exactly `healthPath` that a `GET` or `HEAD` reached: the gate checks the path and the method.
 */
const UNCONSTRAINED = Symbol('launcher-auth.unconstrained');

function isUnconstrained(route: RouteOptions): boolean {
  const constraints = route.constraints as Record<string, unknown> | undefined;
  return constraints === undefined || Object.keys(constraints).length === 0;
}

/**
 * The root instance is the one `Fastify()` returned; every encapsulated child is made with `Object.create(parent)`.
 * Registered on a child, the hook would not cover the app's 404 handler: unknown routes would answer 404 where
 * known ones answer 401, which tells routes apart without a token.
 */
function isRoot(fastify: FastifyInstance): boolean {
  return Object.getPrototypeOf(fastify) === Object.prototype;
}

const plugin: FastifyPluginAsync<FastifyAuthOptions> = async (fastify, options) => {
  const { authority, ...rest } = options;
  assertAuthority(authority, 'fastifyAuth');
  const resolved = resolveAuthOptions(rest, 'fastifyAuth');
  if (!isRoot(fastify)) {
    throw new Error(
      'fastifyAuth: register it on the root instance (`await app.register(fastifyAuth, { authority })`), not ' +
        'inside an encapsulated plugin or under a prefix: there its hook would not cover the 404s of unknown ' +
        'routes, which would tell them apart from the protected ones without a token.',
    );
  }

  // `undefined` stays only on the health check, which `health()` types as having no `auth`.
  fastify.decorateRequest('auth', undefined as unknown as AuthContext);

  // A second route at the health path with host or version constraints is another handler: it needs the token.
  fastify.addHook('onRoute', (route) => {
    if (isUnconstrained(route)) route.config = { ...route.config, [UNCONSTRAINED]: true };
  });

  // hijack() keeps the host's hooks and serializers away from the answer: no body, whatever they do.
  const answer = (reply: FastifyReply, status: number, headers: string[]): void => {
    reply.hijack();
    reply.raw.writeHead(status, headers);
    reply.raw.end();
  };

  const apply = (
    request: FastifyRequest,
    reply: FastifyReply,
    done: () => void,
    decision: Decision,
    cors: CorsOutcome | undefined,
  ): void => {
    if (decision === undefined) {
      answer(reply, UNAUTHORIZED_STATUS, unauthorizedHeaderList(resolved, cors));
      return;
    }
    const pass = cors?.pass ?? [];
    for (let i = 0; i < pass.length; i += 2) reply.header(pass[i] as string, pass[i + 1]);
    // The health check keeps the decorator's `undefined`.
    if (decision !== EXEMPT) request.auth = decision;
    done();
  };

  fastify.addHook('onRequest', (request, reply, done) => {
    const { method, url } = request.raw;
    const cors = decideCors(method, url, request.raw.rawHeaders, resolved, request.raw.socket);
    if (cors?.answer !== undefined) {
      answer(reply, cors.answer.status, cors.answer.headers);
      return;
    }
    // For a health request the route that matched decides too: exempt only when it is the host's plain health
    // route, reached with the exact spelling (not through ignoreTrailingSlash or case-insensitive routing).
    // Read only then: `routeOptions` is a getter that builds an object on every call.
    let route: string | undefined;
    if (isHealthRequest(method, url, resolved.healthPath)) {
      const config = request.routeOptions.config as unknown as Record<symbol, unknown>;
      route = config[UNCONSTRAINED] === true ? request.routeOptions.url : '';
    }
    const authorization = authorizationFromRawHeaders(request.raw.rawHeaders);
    const decision = decide(
      authority,
      { method, target: url, authorization, route, peer: request.raw.socket },
      resolved,
    );
    if (decision instanceof Promise) void decision.then((settled) => apply(request, reply, done, settled, cors));
    else apply(request, reply, done, decision, cors);
  });
};

// What fastify-plugin would set: skip-override keeps the hook on the instance it is registered on (no
// encapsulation); the meta makes Fastify check its own version and name the plugin in its errors.
Object.assign(plugin, {
  [Symbol.for('skip-override')]: true,
  [Symbol.for('fastify.display-name')]: 'launcher-auth',
  [Symbol.for('plugin-meta')]: { fastify: '5.x', name: 'launcher-auth' },
});

/**
 * Fastify plugin: `await app.register(fastifyAuth, { authority })` on the root instance, before the routes.
 * `GET`/`HEAD` of the host's health route (registered without constraints) pass without a token, an
 * authenticated request goes on with `request.auth` set, every other request (unknown routes included: no 404s
 * to enumerate routes) gets 401 with an empty body. Registering it inside an encapsulated plugin or under a
 * prefix fails with an error that says so.
 */
export const fastifyAuth: FastifyPluginAsync<FastifyAuthOptions> = plugin;

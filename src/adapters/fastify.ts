// launcher-auth/fastify: a Fastify 5 plugin (wrapped with fastify-plugin, so its hook covers the whole app).
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { authorizationFromRawHeaders } from '../core/bearer.js';
import {
  EXEMPT,
  UNAUTHORIZED_HEADER_LIST,
  UNAUTHORIZED_STATUS,
  assertAuthority,
  decide,
  decideCors,
  isHealthRequest,
  resolveAuthOptions,
  type AuthOptions,
  type Decision,
} from '../core/gate.js';
import type { CorsOptions, CorsOutcome } from '../core/cors.js';
import type { TokenAuthority } from '../core/token-authority.js';
import type { AuthContext } from '../core/types.js';

export type { AuthContext, AuthOptions, CorsOptions };
export type { RejectInfo } from '../core/gate.js';

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

const plugin: FastifyPluginAsync<FastifyAuthOptions> = async (fastify, options) => {
  const { authority, ...rest } = options;
  assertAuthority(authority, 'fastifyAuth');
  const resolved = resolveAuthOptions(rest, 'fastifyAuth');

  // `undefined` stays only on the health check, which `health()` types as having no `auth`.
  fastify.decorateRequest('auth', undefined as unknown as AuthContext);

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
      return answer(reply, UNAUTHORIZED_STATUS, cors?.unauthorized ?? UNAUTHORIZED_HEADER_LIST);
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
    if (cors?.answer !== undefined) return answer(reply, cors.answer.status, cors.answer.headers);
    // For a health request the route that matched decides too, with the exact spelling: a health route reached
    // through another spelling (ignoreTrailingSlash, case-insensitive routing) is not exempt. No route: ''.
    // Read only then: `routeOptions` is a getter that builds an object on every call.
    const route = isHealthRequest(method, url, resolved.healthPath) ? (request.routeOptions.url ?? '') : undefined;
    const authorization = authorizationFromRawHeaders(request.raw.rawHeaders);
    const decision = decide(authority, method, url, authorization, resolved, route, request.raw.socket);
    if (decision instanceof Promise) decision.then((settled) => apply(request, reply, done, settled, cors));
    else apply(request, reply, done, decision, cors);
  });
};

/**
 * Fastify plugin: `await app.register(fastifyAuth, { authority })` before the routes. `GET`/`HEAD` of the
 * health route pass without a token, an authenticated request goes on with `request.auth` set, every other
 * request (unknown routes included: no 404s to enumerate routes) gets 401 with an empty body.
 */
export const fastifyAuth: FastifyPluginAsync<FastifyAuthOptions> = fp(plugin, {
  fastify: '5.x',
  name: 'launcher-auth',
});

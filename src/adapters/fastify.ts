// launcher-auth/fastify: a Fastify 5 plugin (wrapped with fastify-plugin, so its hook covers the whole app).
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { authorizationFromRawHeaders } from '../core/bearer.js';
import {
  EXEMPT,
  UNAUTHORIZED_STATUS,
  assertAuthority,
  decide,
  isHealthRequest,
  resolveAuthOptions,
  type AuthOptions,
  type Decision,
} from '../core/gate.js';
import type { TokenAuthority } from '../core/token-authority.js';
import type { AuthContext } from '../core/types.js';

export type { AuthContext, AuthOptions };
export type { RejectInfo } from '../core/gate.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by launcher-auth: the authentication of this request; `undefined` for the health check. */
    auth: AuthContext | undefined;
  }
}

/** The options of {@link fastifyAuth}. */
export type FastifyAuthOptions = { authority: TokenAuthority } & AuthOptions;

const plugin: FastifyPluginAsync<FastifyAuthOptions> = async (fastify, options) => {
  const { authority, ...rest } = options;
  assertAuthority(authority, 'fastifyAuth');
  const resolved = resolveAuthOptions(rest, 'fastifyAuth');

  fastify.decorateRequest('auth', undefined);

  const apply = (request: FastifyRequest, reply: FastifyReply, done: () => void, decision: Decision): void => {
    if (decision === undefined) {
      // hijack() keeps the host's hooks and serializers away from the 401: no body, whatever they do.
      reply.hijack();
      reply.raw.writeHead(UNAUTHORIZED_STATUS, resolved.unauthorizedHeaderList);
      reply.raw.end();
      return;
    }
    request.auth = decision === EXEMPT ? undefined : decision;
    done();
  };

  fastify.addHook('onRequest', (request, reply, done) => {
    const { method, url } = request.raw;
    // For a health request the route that matched decides too, with the exact spelling: a health route reached
    // through another spelling (ignoreTrailingSlash, case-insensitive routing) is not exempt. No route: ''.
    // Read only then: `routeOptions` is a getter that builds an object on every call.
    const route = isHealthRequest(method, url, resolved.healthPath) ? (request.routeOptions.url ?? '') : undefined;
    const decision = decide(authority, method, url, authorizationFromRawHeaders(request.raw.rawHeaders), resolved, route);
    if (decision instanceof Promise) decision.then((settled) => apply(request, reply, done, settled));
    else apply(request, reply, done, decision);
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

// Routes under a prefix with Fastify: fastifyAuth on the root instance, the prefixed routes in a plugin of their own.
// The root's hook covers them, and the 404s of unknown paths under the prefix too.
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { TokenAuthority } from 'launcher-auth';
import { fastifyAuth } from 'launcher-auth/fastify';

export async function withPrefixedApi(app: FastifyInstance, authority: TokenAuthority, api: FastifyPluginAsync) {
  await app.register(fastifyAuth, { authority }); // on the root, never inside the prefixed plugin
  await app.register(api, { prefix: '/api' }); // e.g. api.get('/apps', ...) answers GET /api/apps
}

// Fastify answers a URL it cannot decode (such as `/%zz`) itself, before any hook: a 400 with a JSON body.
// `frameworkErrors` makes that answer empty too (the launcher-auth hook never sees such a request).
import Fastify, { type FastifyServerOptions } from 'fastify';

export const frameworkErrors: NonNullable<FastifyServerOptions['frameworkErrors']> = (_error, _request, reply) => {
  reply.hijack(); // Fastify's serializers and error handler stay out of it
  reply.raw.writeHead(400, { 'content-length': '0' });
  reply.raw.end();
};

export const app = Fastify({ frameworkErrors });

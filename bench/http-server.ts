// One server of the HTTP benchmark (bench/http.ts starts it pinned to core 0): `--config <id> --secret <file>
// --previous-secret <file> --tokens <file> --work-dir <dir> --lifetime <s>`. Answers GET /api with 200 `ok` once
// authenticated; prints `READY <port>` when listening on 127.0.0.1. launcher-auth is loaded from bench/.build/.
import { createSecretKey, timingSafeEqual, webcrypto } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import fastifyBearerAuth from '@fastify/bearer-auth';
import fastifyJwt from '@fastify/jwt';
import express, { type ErrorRequestHandler } from 'express';
import { expressjwt } from 'express-jwt';
import Fastify, { type FastifyInstance } from 'fastify';
import { jwtVerify } from 'jose';
import type { TokenAuthority as Authority } from 'launcher-auth';
import {
  HTTP_ROUTE,
  exitWithParent,
  fromBuild,
  plainStackTraces,
  requireFlag,
  type LauncherAuth,
  type LauncherAuthExpress,
  type LauncherAuthFastify,
  type LauncherAuthNode,
} from './common.js';

exitWithParent();
plainStackTraces();
const argv = process.argv.slice(2);
const config = requireFlag(argv, '--config');
const { current } = JSON.parse(await readFile(requireFlag(argv, '--tokens'), 'utf8')) as { current: string };
// Whatever happens, the server lives no longer than this.
setTimeout(() => process.exit(3), Number(requireFlag(argv, '--lifetime')) * 1000).unref();

const { FileSecretStore, TokenAuthority } = await fromBuild<LauncherAuth>('index');
const record = await new FileSecretStore(requireFlag(argv, '--secret')).load();
if (record === undefined) throw new Error('server: no secret in the secret file');
const key = new Uint8Array(record.key);

/**
 * The same empty 401 launcher-auth sends, written the same way (a flat header list), for the hand-written node:http
 * peers and express-jwt's error handler: their 401 paths differ from launcher-auth's only by the check.
 */
const UNAUTHORIZED = ['WWW-Authenticate', 'Bearer', 'Content-Length', '0'];
const ok = (_req: IncomingMessage, res: ServerResponse): void => {
  res.end('ok');
};

function bearer(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  return header?.startsWith('Bearer ') ? header.slice(7) : undefined;
}

/** jose as its README shows it, in a node:http handler, with a CryptoKey imported once. */
async function joseListener(): Promise<RequestListener> {
  const cryptoKey = await webcrypto.subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['verify']);
  const options = { algorithms: ['HS256'] };
  return (req, res) => {
    const token = bearer(req);
    if (token === undefined) {
      res.writeHead(401, UNAUTHORIZED).end();
      return;
    }
    jwtVerify(token, cryptoKey, options).then(
      () => ok(req, res),
      () => res.writeHead(401, UNAUTHORIZED).end(),
    );
  };
}

/** The non-JWT floor in node:http: one constant-time comparison of the whole header with the expected one. */
function timingSafeListener(): RequestListener {
  const expected = Buffer.from(`Bearer ${current}`, 'latin1');
  return (req, res) => {
    const header = req.headers.authorization;
    if (header?.length === expected.length && timingSafeEqual(Buffer.from(header, 'latin1'), expected)) {
      ok(req, res);
    } else {
      res.writeHead(401, UNAUTHORIZED).end();
    }
  };
}

function expressApp(setup: (app: express.Express) => void): express.Express {
  const app = express();
  setup(app);
  app.get(HTTP_ROUTE, (_req, res) => {
    res.send('ok');
  });
  return app;
}

async function fastifyApp(setup: (app: FastifyInstance) => Promise<void>): Promise<FastifyInstance> {
  const app = Fastify({ logger: false });
  await setup(app);
  app.get(HTTP_ROUTE, (_request, reply) => {
    reply.send('ok');
  });
  return app;
}

/**
 * launcher-auth as a launcher runs it, right after "Regenerate token": opened on the secret from before, then the
 * secret replaced by another process (as `launcher-auth rotate --store` does), which the running authority follows,
 * keeping the token it replaced among the few it refuses without an HMAC.
 */
async function regenerated(): Promise<Authority> {
  const before = await new FileSecretStore(requireFlag(argv, '--previous-secret')).load();
  if (before === undefined) throw new Error('server: no secret in the previous secret file');
  // A directory of its own: nothing else written during the run wakes the store's watcher.
  const directory = join(requireFlag(argv, '--work-dir'), 'store');
  await mkdir(directory, { mode: 0o700 });
  const path = join(directory, 'secret.json');
  await new FileSecretStore(path).save(before);
  const opened = await TokenAuthority.open({ store: new FileSecretStore(path) });
  await new FileSecretStore(path).save(record!);
  for (const deadline = Date.now() + 10_000; opened.issue() !== current;) {
    if (Date.now() > deadline)
      throw new Error('server: the authority did not follow the regenerated secret within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return opened;
}

const authority = config.endsWith('-la') ? await regenerated() : undefined;

async function nodeListener(): Promise<RequestListener> {
  switch (config) {
    case 'node-bare':
      return ok;
    case 'node-la': {
      const { withAuth } = await fromBuild<LauncherAuthNode>('node');
      return withAuth(authority!, ok);
    }
    case 'node-jose':
      return joseListener();
    case 'node-tse':
      return timingSafeListener();
    case 'express-bare':
      return expressApp(() => undefined);
    case 'express-la': {
      const { expressAuth } = await fromBuild<LauncherAuthExpress>('express');
      return expressApp((app) => app.use(expressAuth(authority!)));
    }
    case 'express-jwt': {
      // express-jwt reports every failure through next(err); this handler answers with the same empty 401.
      const unauthorized: ErrorRequestHandler = (_error, _req, res, _next) => {
        res.writeHead(401, UNAUTHORIZED).end();
      };
      const app = expressApp((a) => a.use(expressjwt({ secret: createSecretKey(key), algorithms: ['HS256'] })));
      app.use(unauthorized);
      return app;
    }
    default:
      throw new Error(`server: unknown configuration ${config}`);
  }
}

async function fastifyServer(): Promise<FastifyInstance> {
  switch (config) {
    case 'fastify-bare':
      return fastifyApp(async () => undefined);
    case 'fastify-la': {
      const { fastifyAuth } = await fromBuild<LauncherAuthFastify>('fastify');
      return fastifyApp(async (app) => {
        await app.register(fastifyAuth, { authority: authority! });
      });
    }
    case 'fastify-jwt':
    case 'fastify-jwt-cache': {
      const cache = config === 'fastify-jwt-cache';
      return fastifyApp(async (app) => {
        await app.register(fastifyJwt, { secret: Buffer.from(key), verify: { algorithms: ['HS256'], cache } });
        // The plugin's README pattern: the error it throws is the reply (a JSON 401).
        app.addHook('onRequest', async (request, reply) => {
          try {
            await request.jwtVerify();
          } catch (error) {
            reply.send(error);
          }
        });
      });
    }
    case 'fastify-bearer':
      return fastifyApp(async (app) => {
        await app.register(fastifyBearerAuth, { keys: new Set([current]) });
      });
    default:
      throw new Error(`server: unknown configuration ${config}`);
  }
}

let port: number;
if (config.startsWith('fastify-')) {
  const app = await fastifyServer();
  await app.listen({ port: 0, host: '127.0.0.1' });
  port = (app.server.address() as AddressInfo).port;
} else {
  const server = createServer(await nodeListener());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
}
// The parent kills this process's group when it is done: nothing to close gracefully.
process.stdout.write(`READY ${port}\n`);

// checkServer against real hosts on loopback: the library's adapters pass, and each deliberately broken host
// fails exactly the case that names its fault.
import { createServer, type RequestListener, type Server, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import express from 'express';
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { MemorySecretStore, TokenAuthority } from 'launcher-auth';
import { expressAuth } from 'launcher-auth/express';
import { fastifyAuth } from 'launcher-auth/fastify';
import { withAuth } from 'launcher-auth/node';
import { checkServer, type CheckReport } from 'launcher-auth/testing';
import { until } from '../support/poll.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Listens on a free loopback port; the cleanup closes the server and destroys every socket it still holds. */
async function listening(server: Server | NetServer): Promise<{ url: string; sockets: Set<Socket> }> {
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise((resolve) => {
        server.close(resolve);
        for (const socket of sockets) socket.destroy();
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, sockets };
}

async function listen(handler: RequestListener): Promise<string> {
  return (await listening(createServer(handler))).url;
}

async function authorityWithHistory(): Promise<{ authority: TokenAuthority; previous: string; token: string }> {
  const authority = await TokenAuthority.open({ store: new MemorySecretStore() });
  cleanups.push(() => authority.close());
  const previous = authority.issue();
  const token = await authority.rotate();
  return { authority, previous, token };
}

/** A server that accepts every connection and never sends a byte; counts connections and those still open. */
async function silentHost(): Promise<{
  url: string;
  connections: () => number;
  open: () => number;
  beforeFirstClose: () => number | undefined;
}> {
  let connections = 0;
  /** How many connections had come when the client first gave one up. */
  let beforeFirstClose: number | undefined;
  const server = createNetServer((socket) => {
    connections += 1;
    socket.resume(); // read the request, answer nothing
    socket.once('close', () => (beforeFirstClose ??= connections));
  });
  const { url, sockets } = await listening(server);
  return { url, connections: () => connections, open: () => sockets.size, beforeFirstClose: () => beforeFirstClose };
}

const failed = (report: CheckReport): string[] => report.cases.filter((row) => !row.ok).map((row) => row.name);
const names = (report: CheckReport): string[] => report.cases.map((row) => row.name);

/** Whether either token appears anywhere in the report (a boolean, so a failure does not print the token). */
const mentions = (report: CheckReport, ...tokens: string[]): boolean =>
  tokens.some((token) => JSON.stringify(report).includes(token));

/** The cases a correct host must refuse on a protected `path` with 401 and an empty body. */
const REFUSED_ON = (path: string): string[] => [
  `GET ${path} without Authorization`,
  `GET ${path} with a forged signature`,
  `GET ${path} with an unsigned (alg none) token`,
  `GET ${path} with a garbage token`,
  `GET ${path} with the token under the Basic scheme`,
];
const NOT_EXEMPT = [
  'POST /health without Authorization',
  'GET /health/ without Authorization',
  'GET /healthz without Authorization',
  'GET /health/x without Authorization',
  'GET an unknown path without Authorization',
];

/** A host that authenticates with the core but answers a refusal its own way: the broken hosts below. */
function hostAnswering(
  authority: TokenAuthority,
  exempt: (method: string, url: string) => boolean,
  refuse: (res: ServerResponse) => void,
): RequestListener {
  return async (req, res) => {
    if (exempt(req.method ?? '', req.url ?? '')) return void res.end('ok');
    const result = await authority.authenticate(req.headersDistinct.authorization);
    if (result.ok) return void res.end('ok');
    refuse(res);
  };
}

const correctRefusal = (res: ServerResponse): void => {
  res.writeHead(401, { 'www-authenticate': 'Bearer', 'content-length': '0' });
  res.end();
};
const exactHealth = (method: string, url: string): boolean => method === 'GET' && url === '/health';

describe('checkServer against correct hosts', () => {
  it('passes node:http with withAuth; the protected handler ran only for the current token and the health check', async () => {
    const { authority, previous, token } = await authorityWithHistory();
    const ran: string[] = [];
    const url = await listen(
      withAuth(authority, (req, res) => {
        ran.push(`${req.method} ${req.url}`);
        res.end('ok');
      }),
    );
    const report = await checkServer(url, { token, previous, path: '/apps' });
    expect(failed(report)).toEqual([]);
    expect(report.ok).toBe(true);
    expect(names(report)).toEqual([
      ...REFUSED_ON('/apps'),
      'GET /apps with the token from before the latest regeneration',
      'GET /apps with the current token',
      'GET /health without Authorization',
      ...NOT_EXEMPT,
    ]);
    expect(ran).toEqual(['GET /apps', 'GET /health']);
    const accepted = report.cases.find((row) => row.name === 'GET /apps with the current token');
    expect(accepted).toEqual({
      name: 'GET /apps with the current token',
      expected: 'accepted (not 401/403/5xx)',
      status: 200,
      bodyLength: 2,
      ok: true,
    });
    for (const row of report.cases.filter((each) => each.expected.startsWith('401'))) {
      expect(row).toMatchObject({ status: 401, bodyLength: 0, ok: true });
    }
    expect(mentions(report, token, previous)).toBe(false);
  });

  it('defaults to the path "/" and skips the previous-token case when none is given', async () => {
    const { authority, token } = await authorityWithHistory();
    const url = await listen(withAuth(authority, (_req, res) => res.end('ok')));
    const report = await checkServer(url, { token });
    expect(report.ok).toBe(true);
    expect(names(report)).toEqual([
      ...REFUSED_ON('/'),
      'GET / with the current token',
      'GET /health without Authorization',
      ...NOT_EXEMPT,
    ]);
  });

  it('appends the paths to the base URL path, for a host mounted under a prefix', async () => {
    const { authority, token } = await authorityWithHistory();
    const seen: string[] = [];
    const url = await listen(
      withAuth(
        authority,
        (req, res) => {
          seen.push(req.url ?? '');
          res.end('ok');
        },
        { healthPath: '/api/health' },
      ),
    );
    const report = await checkServer(`${url}/api/`, { token, path: '/apps' });
    expect(failed(report)).toEqual([]);
    expect(seen).toEqual(['/api/apps', '/api/health']);
  });

  it('passes Express and Fastify wired with their adapters', async () => {
    const { authority, previous, token } = await authorityWithHistory();
    const app = express();
    app.use(expressAuth(authority));
    app.get('/health', (_req, res) => void res.send('ok'));
    app.get('/apps', (_req, res) => void res.json([]));
    const expressUrl = await listen(app);
    expect(failed(await checkServer(expressUrl, { token, previous, path: '/apps' }))).toEqual([]);

    const fastify = Fastify();
    await fastify.register(fastifyAuth, { authority });
    fastify.get('/health', async () => 'ok');
    fastify.get('/apps', async () => []);
    await fastify.listen({ port: 0, host: '127.0.0.1' });
    cleanups.push(() => fastify.close());
    const port = (fastify.server.address() as AddressInfo).port;
    expect(failed(await checkServer(`http://127.0.0.1:${port}`, { token, previous, path: '/apps' }))).toEqual([]);
  });
});

describe('checkServer against broken hosts', () => {
  it('fails every refusal of a host whose 401 carries a JSON body, and says why', async () => {
    const { authority, previous, token } = await authorityWithHistory();
    const url = await listen(
      hostAnswering(authority, exactHealth, (res) => {
        res.writeHead(401, { 'www-authenticate': 'Bearer', 'content-type': 'application/json' });
        res.end('{"error":"unauthorized"}');
      }),
    );
    const report = await checkServer(url, { token, previous });
    expect(report.ok).toBe(false);
    expect(failed(report)).toEqual([
      ...REFUSED_ON('/'),
      'GET / with the token from before the latest regeneration',
      ...NOT_EXEMPT,
    ]);
    expect(report.cases.find((row) => row.name === 'GET / without Authorization')).toEqual({
      name: 'GET / without Authorization',
      expected: '401, empty body, WWW-Authenticate: Bearer',
      status: 401,
      bodyLength: 24,
      ok: false,
      detail: 'the 401 has a body of 24 bytes; it must be empty',
    });
    expect(mentions(report, token, previous)).toBe(false);
  });

  it('fails a host that exempts /health by prefix, on exactly the spellings it lets through', async () => {
    const { authority, token } = await authorityWithHistory();
    const ran: string[] = [];
    const url = await listen(async (req, res) => {
      if ((req.url ?? '').startsWith('/health')) {
        ran.push(`${req.method} ${req.url}`);
        return void res.end('ok');
      }
      correctRefusalUnlessAuthenticated(await authority.authenticate(req.headersDistinct.authorization), res);
    });
    const report = await checkServer(url, { token });
    expect(failed(report)).toEqual([
      'POST /health without Authorization',
      'GET /health/ without Authorization',
      'GET /healthz without Authorization',
      'GET /health/x without Authorization',
    ]);
    expect(report.cases.find((row) => row.name === 'GET /healthz without Authorization')).toMatchObject({
      status: 200,
      bodyLength: 2,
      detail: 'expected status 401, got 200',
    });
    // The checker's requests really reached the exempted handler: the fault it reports is real.
    expect(ran).toEqual(['GET /health', 'POST /health', 'GET /health/', 'GET /healthz', 'GET /health/x']);
  });

  it('fails a host whose 401 has no WWW-Authenticate challenge', async () => {
    const { authority, token } = await authorityWithHistory();
    const url = await listen(
      hostAnswering(authority, exactHealth, (res) => {
        res.writeHead(401, { 'content-length': '0' });
        res.end();
      }),
    );
    const report = await checkServer(url, { token });
    expect(failed(report)).toEqual([...REFUSED_ON('/'), ...NOT_EXEMPT]);
    expect(new Set(report.cases.filter((row) => !row.ok).map((row) => row.detail))).toEqual(
      new Set(['the 401 has no `WWW-Authenticate: Bearer` header']),
    );
  });

  it('fails a host that still accepts the token from before the regeneration', async () => {
    const { previous, token } = await authorityWithHistory();
    const url = await listen((req, res) => {
      // Compares header values only: a host that kept the old token in an allow-list.
      const allowed = [`Bearer ${token}`, `Bearer ${previous}`].includes(req.headers.authorization ?? '');
      if (exactHealth(req.method ?? '', req.url ?? '') || allowed) return void res.end('ok');
      correctRefusal(res);
    });
    const report = await checkServer(url, { token, previous });
    expect(failed(report)).toEqual(['GET / with the token from before the latest regeneration']);
    expect(mentions(report, token, previous)).toBe(false);
  });

  it('fails a host that protects only its known routes and lets an unknown path through', async () => {
    const { authority, token } = await authorityWithHistory();
    const url = await listen(async (req, res) => {
      const known = req.url === '/' || req.url?.startsWith('/health');
      if (!known) {
        res.writeHead(404, { 'content-length': '0' });
        return void res.end();
      }
      if (exactHealth(req.method ?? '', req.url ?? '')) return void res.end('ok');
      correctRefusalUnlessAuthenticated(await authority.authenticate(req.headersDistinct.authorization), res);
    });
    const report = await checkServer(url, { token });
    expect(failed(report)).toEqual(['GET an unknown path without Authorization']);
    expect(report.cases.find((row) => row.name === 'GET an unknown path without Authorization')).toMatchObject({
      status: 404,
      ok: false,
    });
  });

  it('fails the current-token case when the host answers it with a 5xx', async () => {
    const { authority, token } = await authorityWithHistory();
    const url = await listen(
      withAuth(authority, (req, res) => {
        res.statusCode = req.url === '/health' ? 200 : 500;
        res.end();
      }),
    );
    const report = await checkServer(url, { token });
    expect(failed(report)).toEqual(['GET / with the current token']);
    expect(report.cases.find((row) => !row.ok)?.detail).toBe('the token passed but the host failed with 500');
  });

  it('fails the current-token case with a hint when the host refuses the token (a stale or mistyped copy)', async () => {
    const { authority } = await authorityWithHistory();
    const other = await authorityWithHistory();
    const url = await listen(withAuth(authority, (_req, res) => res.end('ok')));
    const report = await checkServer(url, { token: other.token, path: '/apps' });
    expect(failed(report)).toEqual(['GET /apps with the current token']);
    expect(report.cases.find((row) => !row.ok)?.detail).toBe(
      "expected the request to pass, got 401: the token was refused; copy it from the launcher's settings again (was it regenerated?)",
    );
    expect(mentions(report, other.token)).toBe(false);
  });

  it('sets `detail` on exactly the failed cases', async () => {
    const { authority, token } = await authorityWithHistory();
    const url = await listen(
      hostAnswering(authority, (method, target) => method === 'GET' && target.startsWith('/health'), correctRefusal),
    );
    const report = await checkServer(url, { token });
    expect(report.cases.filter((row) => !row.ok).length).toBe(3);
    for (const row of report.cases) expect(row.detail === undefined).toBe(row.ok);
  });
});

describe('checkServer never hangs or throws on a misbehaving server', () => {
  it('bounds the whole run: a host that trickles its body forever fails every case by the one deadline', async () => {
    const timers = new Set<NodeJS.Timeout>();
    cleanups.push(async () => timers.forEach((timer) => clearInterval(timer)));
    const url = await listen((_req, res) => {
      // Headers at once, then one byte every 20 ms: an idle timeout alone would never fire.
      res.writeHead(200, { 'content-type': 'text/plain' });
      // eslint-disable-next-line launcher-auth-tests/no-wall-clock-wait -- the server under test drips, slowly on purpose
      const timer = setInterval(() => res.write('.'), 20);
      timers.add(timer);
      res.on('close', () => {
        clearInterval(timer);
        timers.delete(timer);
      });
    });
    const report = await checkServer(url, { token: 'x.y.z', timeoutMs: 150 });
    expect(report.ok).toBe(false);
    expect(report.cases.length).toBe(12);
    for (const row of report.cases) {
      expect(row).toMatchObject({
        ok: false,
        status: undefined,
        bodyLength: undefined,
        detail: 'no complete answer within 150 ms',
      });
    }
  });

  it('bounds the whole run: against a host that accepts and never answers, it ends by the one deadline', async () => {
    const { token } = await authorityWithHistory();
    const { url, connections, open, beforeFirstClose } = await silentHost();
    const report = await checkServer(url, { token, timeoutMs: 1500 });
    expect(report.cases.length).toBe(12);
    expect(
      report.cases.every((row) => row.detail === 'no complete answer within 1500 ms' && row.status === undefined),
    ).toBe(true);
    // All at once: every case had its connection before the deadline (one after another, a single one would).
    expect(connections()).toBe(12);
    expect(await until(() => open() === 0, 10_000, 50)).toBe(true);
    // One deadline for the run, not one per case: every case had connected before the first was given up (one
    // after another, each with its own deadline, one case would have).
    expect(beforeFirstClose()).toBe(12);
  });

  it('reports an unreachable server as failed cases', async () => {
    const url = await listen((_req, res) => res.end());
    await cleanups.pop()?.();
    const report = await checkServer(url, { token: 'x.y.z', timeoutMs: 2000 });
    expect(report.ok).toBe(false);
    expect(
      report.cases.every((row) => !row.ok && row.status === undefined && (row.detail ?? '').includes('ECONNREFUSED')),
    ).toBe(true);
  });

  it('reports a token Node refuses to send as failed cases, without the token in the report', async () => {
    const url = await listen((_req, res) => correctRefusal(res));
    const token = 'line.break\r\nX-Injected: yes';
    const report = await checkServer(url, { token });
    expect(report.ok).toBe(false);
    const unsent = report.cases.filter((row) => row.status === undefined).map((row) => row.name);
    // Every case that carries the token (raw, or inside a forgery) is refused by Node before sending.
    expect(unsent).toEqual([
      'GET / with a forged signature',
      'GET / with the token under the Basic scheme',
      'GET / with the current token',
    ]);
    expect(mentions(report, token, 'line.break', 'X-Injected')).toBe(false);
  });
});

describe('checkServer options', () => {
  it('throws a TypeError naming the option, before any request', async () => {
    const requests: string[] = [];
    const url = await listen((req, res) => {
      requests.push(req.url ?? '');
      res.end();
    });
    const port = new URL(url).port;
    await expect(checkServer('not a url', { token: 't' })).rejects.toThrow(/`baseUrl`/);
    await expect(checkServer('ftp://127.0.0.1/', { token: 't' })).rejects.toThrow(/`baseUrl`/);
    await expect(checkServer(`http://user:pass@127.0.0.1:${port}`, { token: 't' })).rejects.toThrow(
      /user name or password/,
    );
    await expect(checkServer(url, { token: '' })).rejects.toThrow(/`token`/);
    await expect(checkServer(url, { token: 't', previous: '' })).rejects.toThrow(/`previous`/);
    await expect(checkServer(url, { token: 't', path: 'apps' })).rejects.toThrow(/`path`/);
    await expect(checkServer(url, { token: 't', path: '/apps?x=1' })).rejects.toThrow(/`path`/);
    await expect(checkServer(url, { token: 't', healthPath: '/he alth' })).rejects.toThrow(/`healthPath`/);
    await expect(checkServer(url, { token: 't', timeoutMs: 0 })).rejects.toThrow(/`timeoutMs`/);
    await expect(checkServer(url, { token: 't', timeoutMs: 1.5 })).rejects.toThrow(/`timeoutMs`/);
    // Node's timers overflow past 2^31 - 1 ms and would fire at once, with a warning.
    await expect(checkServer(url, { token: 't', timeoutMs: 600_001 })).rejects.toThrow(
      'checkServer: `timeoutMs` must be a whole number of milliseconds from 1 to 600000.',
    );
    await expect(checkServer(url, { token: 't', timeoutMs: 3_000_000_000 })).rejects.toThrow(/`timeoutMs`/);
    expect(requests).toEqual([]);
  });

  it('never sends the token to another origin: "//host" and "/\\host" paths are refused', async () => {
    const elsewhere: string[] = [];
    const other = new URL(
      await listen((req, res) => {
        elsewhere.push(req.url ?? '');
        res.end();
      }),
    );
    const url = await listen((_req, res) => res.end());
    for (const path of [`//${other.host}/steal`, `/\\${other.host}/steal`]) {
      await expect(checkServer(url, { token: 't.t.t', path })).rejects.toBeInstanceOf(TypeError);
      await expect(checkServer(url, { token: 't.t.t', healthPath: path })).rejects.toBeInstanceOf(TypeError);
    }
    expect(elsewhere).toEqual([]);
  });
});

function correctRefusalUnlessAuthenticated(result: { ok: boolean }, res: ServerResponse): void {
  if (result.ok) return void res.end('ok');
  correctRefusal(res);
}

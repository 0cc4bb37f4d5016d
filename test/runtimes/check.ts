// Runs on Bun and on Deno (started by runtimes.test.ts): the fetch adapter and launcher-auth/hono served by the
// runtime's own HTTP server, the file store, and revocation at "Regenerate token".
// Prints one line per check that passed and never a token; the first failure exits with status 1.
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import process from 'node:process';
import { Hono } from 'hono';
import { FileSecretStore, MemorySecretStore, TokenAuthority, type AuthContext } from '../../src/index.ts';
import { fetchAuth } from '../../src/adapters/fetch.ts';
import { honoAuth, type HonoAuthEnv } from '../../src/adapters/hono.ts';

type Handler = (request: Request) => Response | Promise<Response>;
interface Served {
  url: string;
  close(): Promise<void>;
}

/** The part of each runtime's API used here (neither ships types to this repository's tsc). */
interface Runtimes {
  Bun?: {
    version: string;
    serve(options: { port: number; hostname: string; fetch: Handler }): {
      port: number;
      stop(force: boolean): Promise<void> | void;
    };
  };
  Deno?: {
    version: { deno: string };
    serve(
      options: { port: number; hostname: string; onListen(addr: unknown): void },
      handler: Handler,
    ): { addr: { port: number }; shutdown(): Promise<void> };
  };
}

const runtimes = globalThis as unknown as Runtimes;
const CHALLENGE = 'Bearer realm="launcher"';

async function serve(handler: Handler): Promise<Served> {
  if (runtimes.Bun !== undefined) {
    const server = runtimes.Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: handler });
    return { url: `http://127.0.0.1:${server.port}`, close: async () => void (await server.stop(true)) };
  }
  if (runtimes.Deno !== undefined) {
    const server = runtimes.Deno.serve({ port: 0, hostname: '127.0.0.1', onListen() {} }, handler);
    return { url: `http://127.0.0.1:${server.addr.port}`, close: () => server.shutdown() };
  }
  throw new Error('neither Bun nor Deno');
}

function check(condition: boolean, what: string): void {
  if (!condition) {
    console.error(`FAILED: ${what}`);
    process.exit(1);
  }
  console.log(`ok ${what}`);
}

/** An event stream that stays open until the request's key is rotated away. */
function events(auth: AuthContext): Response {
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode('data: open\n\n'));
      auth.signal.addEventListener('abort', () => controller.close(), { once: true });
    },
  });
  return new Response(stream, { headers: { 'content-type': 'text/event-stream' } });
}

const bearer = (token: string): HeadersInit => ({ authorization: `Bearer ${token}` });

/** The same cases through any host: the counter proves that a refused request reached no handler. */
async function cases(name: string, authority: TokenAuthority, served: Served, runs: () => number): Promise<void> {
  const { url } = served;
  const health = await fetch(`${url}/health`);
  check(health.status === 200 && (await health.text()) === 'ok', `${name}: GET /health without a token`);

  const before = runs();
  const none = await fetch(`${url}/apps`);
  const noneBody = await none.arrayBuffer();
  check(
    none.status === 401 && noneBody.byteLength === 0 && none.headers.get('www-authenticate') === CHALLENGE,
    `${name}: no token gets 401, an empty body and the challenge`,
  );
  const token = authority.issue();
  const forged = `${token.slice(0, token.lastIndexOf('.') + 1)}${'A'.repeat(43)}`;
  const forgedAnswer = await fetch(`${url}/apps`, { headers: bearer(forged) });
  check(
    forgedAnswer.status === 401 && (await forgedAnswer.arrayBuffer()).byteLength === 0,
    `${name}: a forged token gets the 401`,
  );
  check(runs() === before, `${name}: no handler ran for a refused request`);

  const ok = await fetch(`${url}/apps`, { headers: bearer(token) });
  check(
    ok.status === 200 && (await ok.text()) === 'apps' && runs() === before + 1,
    `${name}: the current token reaches the handler`,
  );

  const stream = await fetch(`${url}/events`, { headers: bearer(token) });
  const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
  const first = await reader.read();
  check(
    stream.status === 200 && new TextDecoder().decode(first.value) === 'data: open\n\n',
    `${name}: an event stream opens`,
  );

  const fresh = await authority.rotate();
  const old = await fetch(`${url}/apps`, { headers: bearer(token) });
  check(
    old.status === 401 && (await old.arrayBuffer()).byteLength === 0,
    `${name}: the old token is refused as soon as rotate() resolves`,
  );
  const end = await reader.read();
  check(end.done, `${name}: the open event stream ends at the rotation`);
  const renewed = await fetch(`${url}/apps`, { headers: bearer(fresh) });
  check(renewed.status === 200 && (await renewed.text()) === 'apps', `${name}: the new token works`);
}

async function fetchAdapter(): Promise<void> {
  const authority = await TokenAuthority.open({ store: new MemorySecretStore() });
  const guard = fetchAuth(authority);
  let runs = 0;
  const served = await serve(async (request) => {
    const result = await guard(request);
    if (result instanceof Response) return result;
    if (result === undefined) return new Response('ok');
    runs++;
    return new URL(request.url).pathname === '/events' ? events(result) : new Response('apps');
  });
  await cases('fetch', authority, served, () => runs);
  await served.close();
  await authority.close();
}

async function hono(): Promise<void> {
  const authority = await TokenAuthority.open({ store: new MemorySecretStore() });
  let runs = 0;
  const app = new Hono<HonoAuthEnv>().use(honoAuth(authority, { health: (c) => c.text('ok') }));
  app.get('/apps', (c) => {
    runs++;
    return c.text('apps');
  });
  app.get('/events', (c) => {
    runs++;
    return events(c.get('auth'));
  });
  const served = await serve((request) => app.fetch(request));
  await cases('hono', authority, served, () => runs);
  await served.close();
  // The WebSocket token entry cannot be removed from a handshake here: the option is refused at set-up, by name.
  const name = runtimes.Bun !== undefined ? 'Bun' : 'Deno';
  let refused = '';
  try {
    honoAuth(authority, { health: (c) => c.text('ok'), subprotocolToken: true });
  } catch (error) {
    refused = error instanceof TypeError ? error.message : `not a TypeError: ${String(error)}`;
  }
  check(
    refused.startsWith(`honoAuth: \`subprotocolToken\` is not supported on ${name}: `),
    'hono: subprotocolToken: true throws a TypeError at set-up that names the runtime',
  );
  await authority.close();
}

async function fileStore(folder: string): Promise<void> {
  const path = join(folder, 'secret.json');
  const first = await TokenAuthority.open({ store: new FileSecretStore(path) });
  check(((await stat(path)).mode & 0o777) === 0o600, 'file: the secret file is created with mode 0600');
  const second = await TokenAuthority.open({ store: new FileSecretStore(path) });
  const token = first.issue();
  check((await second.verify(token)).ok, 'file: a second authority on the same file accepts the token');

  // The other authority's own report of the new key, heard through its file watch: an event, not a wait. Should it
  // never come, runtimes.test.ts ends this run at its deadline and counts the checks missing.
  const followed = new Promise<void>((resolve) => second.onRotate(() => resolve()));
  const fresh = await first.rotate();
  check(
    !(await first.verify(token)).ok,
    'file: the rotating authority refuses the old token as soon as rotate() resolves',
  );
  await followed;
  check(
    !(await second.verify(token)).ok && (await second.verify(fresh)).ok,
    'file: the other authority follows the file (old token refused, new one accepted)',
  );
  await first.close();
  await second.close();
  const reopened = await TokenAuthority.open({ store: new FileSecretStore(path) });
  check((await reopened.verify(fresh)).ok && !(await reopened.verify(token)).ok, 'file: a restart keeps the new key');
  await reopened.close();
}

// Arguments: which part to run (`adapters`, `file` or `all`), then the scratch folder for the file store.
const [part = 'all', folder = ''] = process.argv.slice(-2);
const runtime = runtimes.Bun ? `bun ${runtimes.Bun.version}` : `deno ${runtimes.Deno?.version.deno}`;
check(['adapters', 'file', 'all'].includes(part) && folder.startsWith('/'), `${runtime}: ${part}`);
if (part !== 'file') {
  await fetchAdapter();
  await hono();
}
if (part !== 'adapters') await fileStore(folder);
console.log('done');

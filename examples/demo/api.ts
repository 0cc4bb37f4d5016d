// The demo launcher's automation API on node:http, guarded by launcher-auth/node: installed apps, simulated
// launches, what is running, and a server-sent event stream of launches that ends when the token is regenerated.
import { addAbortListener } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { isLauncherAuthError, type TokenAuthority } from 'launcher-auth';
import { withAuth, type AuthenticatedRequest } from 'launcher-auth/node';

export interface App {
  id: string;
  name: string;
  version: string;
}

export interface Launch {
  /** Counts the launches of this run, from 1. */
  launchId: number;
  appId: string;
  name: string;
  /** Made up: the demo starts nothing. */
  pid: number;
  /** ISO 8601. */
  launchedAt: string;
}

/** What this launcher has installed: fixed, so that a reader's curl answers look like the README's. */
export const INSTALLED_APPS: readonly App[] = Object.freeze([
  { id: 'code-editor', name: 'Code Editor', version: '1.96.2' },
  { id: 'terminal', name: 'Terminal', version: '3.8.0' },
  { id: 'web-browser', name: 'Web Browser', version: '131.0.2' },
  { id: 'music-player', name: 'Music Player', version: '2.4.1' },
  { id: 'photo-viewer', name: 'Photo Viewer', version: '5.0.3' },
  { id: 'notes', name: 'Notes', version: '12.1.0' },
]);

/** A comment this often keeps an idle stream open through proxies and client timeouts. */
const KEEP_ALIVE_MS = 15_000;

/** The automation API, not yet listening (listen on 127.0.0.1 only). Every route but GET /health needs the token. */
export function createApiServer(authority: TokenAuthority): Server {
  const apps = new Map(INSTALLED_APPS.map((app) => [app.id, app]));
  const running: Launch[] = [];
  const streams = new Set<(launch: Launch) => void>();
  let nextPid = 20_000 + Math.floor(Math.random() * 10_000);

  function launch(app: App): Launch {
    // Simulated: a real launcher would start the app here; the demo only records it.
    const entry: Launch = {
      launchId: running.length + 1,
      appId: app.id,
      name: app.name,
      pid: nextPid++,
      launchedAt: new Date().toISOString(),
    };
    running.push(entry);
    for (const notify of streams) notify(entry);
    return entry;
  }

  function events(req: AuthenticatedRequest, res: ServerResponse, signal: AbortSignal): void {
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store' });
    // Sent at once, so that a client knows the stream is open before the first launch.
    res.write(': launches of the example launcher\n\n');
    const notify = (entry: Launch): void => {
      res.write(`id: ${entry.launchId}\nevent: launch\ndata: ${JSON.stringify(entry)}\n\n`);
    };
    streams.add(notify);
    const keepAlive = setInterval(() => res.write(': keep-alive\n\n'), KEEP_ALIVE_MS);
    // The stream must not outlive the token that opened it: the signal aborts when that token is regenerated
    // away, or when the launcher closes the authority on its way out. The last event says which.
    const revoked = addAbortListener(signal, () => {
      const regenerated = isLauncherAuthError(signal.reason) && signal.reason.code === 'ERR_KEY_ROTATED';
      res.end(
        `event: end\ndata: ${JSON.stringify({ reason: regenerated ? 'token-regenerated' : 'launcher-stopped' })}\n\n`,
      );
    });
    // Whoever ends it, the client leaving or the signal: nothing of this stream may stay behind.
    res.once('close', () => {
      streams.delete(notify);
      clearInterval(keepAlive);
      revoked[Symbol.dispose]();
    });
    req.resume();
  }

  return createServer(
    withAuth(authority, (req, res) => {
      const path = (req.url ?? '/').split('?', 1)[0] ?? '/';
      // HEAD is answered as GET; node:http leaves the body out by itself.
      const method = req.method === 'HEAD' ? 'GET' : req.method;
      // Only GET/HEAD /health arrive without `auth`: withAuth has answered every other such request with 401.
      if (req.auth === undefined || path === '/health') {
        return method === 'GET' ? send(res, 200, { status: 'ok' }) : notAllowed(res, 'GET, HEAD');
      }
      if (path === '/apps')
        return method === 'GET' ? send(res, 200, { apps: INSTALLED_APPS }) : notAllowed(res, 'GET, HEAD');
      if (path === '/running') return method === 'GET' ? send(res, 200, { running }) : notAllowed(res, 'GET, HEAD');
      if (path === '/events') return req.method === 'GET' ? events(req, res, req.auth.signal) : notAllowed(res, 'GET');
      const appId = /^\/apps\/([^/]+)\/launch$/.exec(path)?.[1];
      if (appId !== undefined) {
        if (method !== 'POST') return notAllowed(res, 'POST');
        req.resume(); // a launch takes no body: drain whatever came, so that the connection can be reused
        const app = apps.get(decodeSegment(appId));
        if (app === undefined) return send(res, 404, { error: 'no installed app has this id', apps: [...apps.keys()] });
        return send(res, 202, launch(app));
      }
      send(res, 404, { error: 'not found' });
    }),
  );
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment; // not valid percent-encoding: no app has such an id, so the lookup answers 404
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  });
  res.end(text);
}

function notAllowed(res: ServerResponse, allow: string): void {
  res.setHeader('allow', allow);
  send(res, 405, { error: 'method not allowed' });
}

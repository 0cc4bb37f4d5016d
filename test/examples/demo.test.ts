// The demo launcher (examples/demo/) over real sockets, without a browser: its API, its settings server's
// owner-only access (the launch link and its cookie), regeneration and refusals (another local program, DNS
// rebinding, CSRF, framing), the token surviving a restart, and `npm run demo` itself.
import { spawn } from 'node:child_process';
import { getEventListeners, once } from 'node:events';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { request, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { checkServer } from 'launcher-auth/testing';
import { LauncherAuthError, tokenView, type TokenAuthority } from 'launcher-auth';
import { INSTALLED_APPS } from '../../examples/demo/api.ts';
import {
  LAUNCH_FILE,
  PortInUseError,
  REDIRECT_FILE,
  REDIRECT_FOLDER,
  startDemo,
  type Demo,
} from '../../examples/demo/main.ts';
import { CONTENT_SECURITY_POLICY, launchFileHtml, refusalPage } from '../../examples/demo/settings.ts';
import { budget } from '../support/machine.js';
import { until } from '../support/poll.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
// tsx's loader by path, so that the child is one node process (a signal reaches the demo itself) and so that
// it resolves from the child's empty working folder.
const TSX_LOADER = pathToFileURL(join(REPO, 'node_modules/tsx/dist/loader.mjs')).href;
const MAIN = join(REPO, 'examples/demo/main.ts');

const cleanups: Array<() => Promise<unknown>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'launcher-auth-demo-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function demo(dataDir?: string): Promise<Demo> {
  const started = await startDemo({ apiPort: 0, settingsPort: 0, dataDir: dataDir ?? (await tempDir()) });
  cleanups.push(() => started.close());
  return started;
}

/** A port that something else holds until the test ends. */
async function busyPort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  return (server.address() as { port: number }).port;
}

interface Options {
  method?: string;
  token?: string;
  /** Sent as given, Host included: node:http lets a test send what a rebinding or cross-site page would. */
  headers?: Record<string, string>;
}

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

function send(url: string, options: Options = {}): Promise<IncomingMessage> {
  const target = new URL(url);
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers['authorization'] = `Bearer ${options.token}`;
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: options.method ?? 'GET',
        headers,
        agent: false,
      },
      resolve,
    );
    req.on('error', reject);
    req.end();
  });
}

async function call(url: string, options: Options = {}): Promise<Answer> {
  const res = await send(url, options);
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  return { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) };
}

function json(answer: Answer): unknown {
  return JSON.parse(answer.body.toString('utf8'));
}

function expectUnauthorized(answer: Answer): void {
  expect(answer.status).toBe(401);
  expect(answer.body.byteLength).toBe(0);
  expect(answer.headers['www-authenticate']).toBe('Bearer realm="launcher"');
  expect(answer.headers['content-length']).toBe('0');
}

interface EventStream {
  status: number;
  contentType: string | undefined;
  text(): string;
  /** Resolves once the received text contains `part`. */
  until(part: string): Promise<void>;
  /** 'end' when the server ended the response properly, 'aborted' when the connection was cut. */
  ended: Promise<'end' | 'aborted'>;
  leave(): void;
}

async function openEvents(apiUrl: string, token: string): Promise<EventStream> {
  const res = await send(`${apiUrl}/events`, { token });
  cleanups.push(async () => res.destroy());
  let text = '';
  const waiting: Array<{ part: string; resolve: () => void }> = [];
  res.setEncoding('utf8').on('data', (chunk: string) => {
    text += chunk;
    for (const wait of waiting.filter((w) => text.includes(w.part))) {
      waiting.splice(waiting.indexOf(wait), 1);
      wait.resolve();
    }
  });
  const ended = new Promise<'end' | 'aborted'>((resolve) => {
    res.once('end', () => resolve('end'));
    res.once('aborted', () => resolve('aborted'));
    res.once('error', () => resolve('aborted'));
  });
  return {
    status: res.statusCode ?? 0,
    contentType: res.headers['content-type'],
    text: () => text,
    until: (part) =>
      text.includes(part) ? Promise.resolve() : new Promise<void>((resolve) => waiting.push({ part, resolve })),
    ended,
    leave: () => res.destroy(),
  };
}

/** The abort listeners on the key that `token` verifies with: one per open event stream of that key. */
async function streamsOn(authority: TokenAuthority, token: string): Promise<number> {
  const verified = await authority.verify(token);
  if (!verified.ok) throw new Error('the token does not verify');
  return getEventListeners(verified.signal, 'abort').length;
}

/** Waits for `probe` with the suite's polling helper; a stuck run fails naming `what`. */
async function waitFor(probe: () => Promise<boolean> | boolean, what: string): Promise<void> {
  expect(await until(probe, 30_000, 20), `waiting for ${what}`).toBe(true);
}

/** The page key in the launch link's answer: a page whose one script keeps it and goes to `/`. */
function pageKeyOf(answer: Answer): string | undefined {
  return /^<!doctype html>\n[^]*<script>localStorage\.setItem\('page-key','([\w-]{43})'\);[^<]*location\.replace\('\/'\);<\/script>\n/.exec(
    answer.body.toString('utf8'),
  )?.[1];
}

/**
 * Opens the launch link as the owner's browser does: 200, the cookie, and a page that keeps the page key and goes
 * to `/`. Answers the cookie as `name=value` and the page key, which the page's script keeps and sends in
 * its header.
 */
async function owner(launchUrl: string): Promise<{ cookie: string; pageKey: string }> {
  const answer = await call(launchUrl);
  expect(answer.status).toBe(200);
  expect(answer.headers.location).toBeUndefined();
  const pageKey = pageKeyOf(answer);
  expect(pageKey).toMatch(/^[\w-]{43}$/);
  const cookie = answer.headers['set-cookie']?.[0]?.split(';', 1)[0];
  expect(cookie).toMatch(/^launcher_settings_\d+=[\w-]{43}$/);
  return { cookie: cookie ?? '', pageKey: pageKey ?? '' };
}

async function ownerCookie(launchUrl: string): Promise<string> {
  return (await owner(launchUrl)).cookie;
}

/** What the settings page's own script sends from the owner's browser; each refusal test spoils one part of it. */
async function pageHeaders({ settingsUrl, launchUrl }: Demo): Promise<Record<string, string>> {
  const { cookie, pageKey } = await owner(launchUrl);
  return { cookie, origin: settingsUrl, 'x-launcher-settings': pageKey, 'sec-fetch-site': 'same-origin' };
}

async function regenerate(started: Demo, headers?: Record<string, string>): Promise<Answer> {
  return call(`${started.settingsUrl}/regenerate`, {
    method: 'POST',
    headers: headers ?? (await pageHeaders(started)),
  });
}

/**
 * The settings server's one refusal: 403, the one page that says how to get a fresh link (none to a HEAD), and the
 * headers that forbid framing and caching. Which page exactly: see the test of the refusal page.
 */
function expectForbidden(answer: Answer): void {
  expect(answer.status).toBe(403);
  const body = answer.body.toString('utf8');
  expect(
    body === '' ||
      (body.startsWith('<!doctype html>') && body.includes('<h1>Open the settings from the launcher</h1>')),
  ).toBe(true);
  expect(Number(answer.headers['content-length'])).toBeGreaterThan(0);
  expect(answer.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(answer.headers['set-cookie']).toBeUndefined();
  expect(answer.headers['x-frame-options']).toBe('DENY');
  expect(answer.headers['cache-control']).toBe('no-store');
  expect(answer.headers['content-security-policy']).toMatch(/^default-src 'none'; style-src 'sha256-[\w+/]{43}='; /);
}

function rotations(authority: TokenAuthority): () => number {
  let count = 0;
  const unsubscribe = authority.onRotate(() => count++);
  cleanups.push(async () => unsubscribe());
  return () => count;
}

describe('the demo API (examples/demo/api.ts)', () => {
  it('listens on 127.0.0.1 and answers GET and HEAD /health without a token', async () => {
    const { apiUrl, settingsUrl } = await demo();
    expect(apiUrl).toMatch(/^http:\/\/127\.0\.0\.1:[1-9]\d*$/);
    expect(settingsUrl).toMatch(/^http:\/\/127\.0\.0\.1:[1-9]\d*$/);
    const health = await call(`${apiUrl}/health`);
    expect(health.status).toBe(200);
    expect(health.body.toString('utf8')).toBe('{"status":"ok"}');
    const head = await call(`${apiUrl}/health`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.body.byteLength).toBe(0);
  });

  it('refuses /apps without the token (401, empty body) and lists the installed apps with it', async () => {
    const { apiUrl, authority } = await demo();
    expectUnauthorized(await call(`${apiUrl}/apps`));
    expectUnauthorized(await call(`${apiUrl}/apps`, { token: 'not-a-token' }));
    const apps = await call(`${apiUrl}/apps`, { token: authority.issue() });
    expect(apps.status).toBe(200);
    expect(apps.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(json(apps)).toEqual({ apps: INSTALLED_APPS });
    expect(INSTALLED_APPS.length).toBeGreaterThan(2);
    for (const app of INSTALLED_APPS) expect(Object.keys(app)).toEqual(['id', 'name', 'version']);
  });

  it('passes the conformance kit (checkServer) on /apps, with the token from before a regeneration', async () => {
    const { apiUrl, authority } = await demo();
    const previous = authority.issue();
    const token = await authority.rotate();
    const report = await checkServer(apiUrl, { token, previous, path: '/apps' });
    expect(report.cases.filter((row) => !row.ok).map((row) => `${row.name}: ${row.detail ?? ''}`)).toEqual([]);
    expect(report.ok).toBe(true);
  });

  it('records a launch (time and pid) and shows it in /running; an unknown app is a 404 in JSON', async () => {
    const { apiUrl, authority } = await demo();
    const token = authority.issue();
    expect(json(await call(`${apiUrl}/running`, { token }))).toEqual({ running: [] });

    const launched = await call(`${apiUrl}/apps/terminal/launch`, { method: 'POST', token });
    expect(launched.status).toBe(202);
    const launch = json(launched) as Record<string, unknown>;
    expect(launch).toEqual({
      launchId: 1,
      appId: 'terminal',
      name: 'Terminal',
      pid: expect.any(Number),
      launchedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    expect(Number.isInteger(launch['pid']) && (launch['pid'] as number) > 0).toBe(true);

    const unknown = await call(`${apiUrl}/apps/solitaire/launch`, { method: 'POST', token });
    expect(unknown.status).toBe(404);
    expect(unknown.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(json(unknown)).toEqual({ error: 'no installed app has this id', apps: INSTALLED_APPS.map((app) => app.id) });
    // Without the token the launch handler never runs: nothing more is recorded.
    expectUnauthorized(await call(`${apiUrl}/apps/notes/launch`, { method: 'POST' }));
    expectUnauthorized(await call(`${apiUrl}/running`));

    expect(json(await call(`${apiUrl}/running`, { token }))).toEqual({ running: [launch] });
  });

  it('streams launches as server-sent events and lets go of a stream whose client left', async () => {
    const { apiUrl, authority } = await demo();
    const token = authority.issue();
    const before = await streamsOn(authority, token);
    const events = await openEvents(apiUrl, token);
    expect(events.status).toBe(200);
    expect(events.contentType).toBe('text/event-stream; charset=utf-8');
    await events.until('\n\n');
    expect(await streamsOn(authority, token)).toBe(before + 1);

    const launched = await call(`${apiUrl}/apps/notes/launch`, { method: 'POST', token });
    await events.until('event: launch\n');
    expect(events.text()).toContain(`id: 1\nevent: launch\ndata: ${launched.body.toString('utf8')}\n\n`);

    events.leave();
    await waitFor(async () => (await streamsOn(authority, token)) === before, 'the stream to be released');
    // Launches after it left still work and reach no one.
    expect((await call(`${apiUrl}/apps/notes/launch`, { method: 'POST', token })).status).toBe(202);
  });

  it('refuses /events without the token, and close() ends open streams', async () => {
    const started = await demo();
    expectUnauthorized(await call(`${started.apiUrl}/events`));
    const events = await openEvents(started.apiUrl, started.authority.issue());
    await events.until('\n\n');
    await started.close();
    expect(await events.ended).toBe('end');
    expect(events.text()).toMatch(/event: end\ndata: \{"reason":"launcher-stopped"\}\n\n$/);
  });
});

describe('the settings server (examples/demo/settings.ts)', () => {
  it('refuses every route without the owner cookie (403, the refusal page), even to a perfect copy of the page', async () => {
    const started = await demo();
    const { apiUrl, settingsUrl, authority } = started;
    const before = authority.issue();
    const rotated = rotations(authority);
    // Another local program: it can send the page's Host, Origin, header and fetch metadata, but has no cookie.
    const { cookie: _cookie, ...forged } = await pageHeaders(started);
    for (const headers of [{}, forged, { ...forged, origin: 'http://evil.example' }]) {
      for (const path of ['/', '/settings.js', '/settings.css', '/icon.svg', '/token', '/no-such-file']) {
        expectForbidden(await call(`${settingsUrl}${path}`, { headers }));
        expectForbidden(await call(`${settingsUrl}${path}`, { method: 'HEAD', headers }));
      }
      expectForbidden(await regenerate(started, headers));
    }
    // The regeneration did not happen: the token from before still opens the API.
    expect(rotated()).toBe(0);
    expect(authority.issue()).toBeSameToken(before);
    expect((await call(`${apiUrl}/apps`, { token: before })).status).toBe(200);
  });

  it('refuses a wrong launch key or a wrong cookie with 403 and sets no cookie', async () => {
    const started = await demo();
    const { settingsUrl, launchUrl } = started;
    const key = new URL(launchUrl).searchParams.get('key') ?? '';
    expect(key).toMatch(/^[\w-]{43}$/); // 32 random bytes, base64url
    const flipped = `${key.slice(0, -1)}${key.endsWith('A') ? 'B' : 'A'}`;
    for (const query of [
      `key=${flipped}`, // the same length, one character off
      `key=${key.slice(0, -1)}`,
      `key=${key}A`,
      'key=',
      `key=${key.toLowerCase()}`,
      `key=${flipped}&key=${key}`, // a second value cannot ride along with the right one
      `key=${key}&key=${key}`,
    ]) {
      expectForbidden(await call(`${settingsUrl}/?${query}`));
    }
    // The launch key is not itself a cookie, and the cookie is the exact value the server set.
    const { cookie: pair, pageKey } = await owner(launchUrl);
    const [name, value = ''] = pair.split('=');
    const wrongValue = `${value.slice(0, -1)}${value.endsWith('A') ? 'B' : 'A'}`;
    for (const cookie of [
      `${name}=${key}`,
      `${name}=${wrongValue}`,
      `${name}=`,
      `other=${value}`,
      `${name}x=${value}`,
    ]) {
      const headers = { cookie, 'x-launcher-settings': pageKey };
      expectForbidden(await call(`${settingsUrl}/`, { headers }));
      expectForbidden(await call(`${settingsUrl}/token`, { headers }));
    }
    // A decoy of the same name that another program on 127.0.0.1 set beside the real one hides nothing.
    const both = { cookie: `${name}=${wrongValue}; ${name}=${value}`, 'x-launcher-settings': pageKey };
    expect((await call(`${settingsUrl}/token`, { headers: both })).status).toBe(200);
  });

  it('the launch link sets an HttpOnly, SameSite=Strict cookie and sends the browser to / without the key', async () => {
    const started = await demo();
    const { settingsUrl, launchUrl, launchFile } = started;
    expect(launchUrl).toMatch(new RegExp(`^${settingsUrl}/\\?key=[\\w-]{43}$`));
    const answer = await call(launchUrl);
    expect(answer.status).toBe(200);
    expect(pageKeyOf(answer)).toMatch(/^[\w-]{43}$/);
    // Its one script, by hash: nothing else runs there.
    expect(answer.headers['content-security-policy']).toMatch(
      /^default-src 'none'; script-src 'sha256-[\w+/]{43}='; base-uri 'none'; form-action 'none'; frame-ancestors 'none'$/,
    );
    expect(answer.headers['cache-control']).toBe('no-store');
    expect(answer.headers['referrer-policy']).toBe('no-referrer');
    const setCookie = answer.headers['set-cookie'] ?? [];
    expect(setCookie).toHaveLength(1);
    const [pair = '', ...attributes] = (setCookie[0] ?? '').split('; ');
    expect(attributes.sort()).toEqual(['HttpOnly', 'Path=/', 'SameSite=Strict']);
    // The cookie holds its own secret, not the launch key.
    expect(pair.includes(new URL(launchUrl).searchParams.get('key') ?? '')).toBe(false);

    // The link works once: replayed (by whoever read it on a command line), it gets the refusal and no cookie.
    expectForbidden(await call(launchUrl));
    // The fresh link, which the owner finds in the files, gives the same cookie and page key (a second browser).
    await started.written();
    const fresh = started.launchUrl;
    expect(fresh === launchUrl).toBe(false);
    expect(await readFile(launchFile, 'utf8')).toBe(`${fresh}\n`);
    expect(await owner(fresh)).toEqual({ cookie: pair, pageKey: pageKeyOf(answer) });
    const page = await call(`${settingsUrl}/`, { headers: { cookie: pair } });
    expect(page.status).toBe(200);
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(page.headers['referrer-policy']).toBe('no-referrer');

    // The owner finds the link again in a file beside the secret that only they can read.
    expect(launchFile).toBe(join(dirname(launchFile), LAUNCH_FILE));
    expect((await stat(launchFile)).mode & 0o777).toBe(0o600);
  });

  it('a launch link works once: a replay, even right after the owner used it, gets the refusal and no cookie', async () => {
    const started = await demo();
    const { apiUrl, settingsUrl, authority } = started;
    const rotated = rotations(authority);
    const link = started.launchUrl;
    const { cookie, pageKey } = await owner(link);
    // Another local user who read `link` in the browser's /proc/<pid>/cmdline replays it, again and again.
    for (let i = 0; i < 3; i++) {
      const replay = await call(link);
      expectForbidden(replay);
      expect(replay.headers.location).toBeUndefined();
      expect(replay.body.includes(pageKey)).toBe(false);
      expect(replay.body.includes(cookie.split('=')[1] ?? '')).toBe(false);
      expectForbidden(await call(link, { method: 'HEAD' }));
    }
    // Without the cookie and the page key, neither the token nor a regeneration.
    expectForbidden(
      await call(`${settingsUrl}/token`, { headers: { origin: settingsUrl, 'sec-fetch-site': 'same-origin' } }),
    );
    expectForbidden(await regenerate(started, { origin: settingsUrl, 'sec-fetch-site': 'same-origin' }));
    expect(rotated()).toBe(0);
    expect((await call(`${apiUrl}/apps`, { token: authority.issue() })).status).toBe(200);
    // Two fresh links in a row: each works once, the first one's replay still fails.
    const second = started.launchUrl;
    expect((await call(second)).status).toBe(200);
    expectForbidden(await call(second));
    expectForbidden(await call(link));
  });

  it('the redirect file (0600 in a 0700 folder) sends a browser to a fresh link, and is rewritten after each use', async () => {
    const dataDir = await tempDir();
    const started = await demo(dataDir);
    const { redirectFile, settingsUrl } = started;
    expect(redirectFile).toBe(join(dataDir, REDIRECT_FOLDER, REDIRECT_FILE));
    expect((await stat(redirectFile)).mode & 0o777).toBe(0o600);
    expect((await stat(dirname(redirectFile))).mode & 0o777).toBe(0o700);
    const first = started.launchUrl;
    const html = await readFile(redirectFile, 'utf8');
    expect(html).toBe(launchFileHtml(first));
    expect(html).toContain(`<meta http-equiv="refresh" content="0;url=${first}">`);
    expect(html).toContain('<meta name="referrer" content="no-referrer">');
    // What the browser does with it: the link in it trades for the cookie, once.
    expect((await call(first)).status).toBe(200);
    await started.written();
    const second = started.launchUrl;
    expect(second.startsWith(`${settingsUrl}/?key=`) && second !== first).toBe(true);
    expect(await readFile(redirectFile, 'utf8')).toBe(launchFileHtml(second));
    expect((await stat(redirectFile)).mode & 0o777).toBe(0o600);
    expectForbidden(await call(first));
    expect((await call(second)).status).toBe(200);
    // A folder made more open in between is closed again at the next start.
    await started.close();
    const { chmod } = await import('node:fs/promises');
    await chmod(dirname(redirectFile), 0o755);
    const again = await demo(dataDir);
    expect((await stat(dirname(again.redirectFile))).mode & 0o777).toBe(0o700);
  });

  it('every refusal carries the same page, which says where a fresh link is and holds no secret', async () => {
    const started = await demo();
    const { settingsUrl, authority, redirectFile } = started;
    const expected = refusalPage(redirectFile);
    const link = started.launchUrl;
    const key = new URL(link).searchParams.get('key') ?? '';
    const { cookie, pageKey } = await owner(link);
    const answers = [
      await call(link), // used
      await call(`${settingsUrl}/`), // no cookie
      await call(`${settingsUrl}/token`, { headers: { cookie } }), // no page key
      await call(`${settingsUrl}/`, { headers: { host: 'evil.example' } }), // not its own Host
    ];
    for (const answer of answers) {
      expectForbidden(answer);
      expect(answer.body.toString('utf8')).toBe(expected);
    }
    expect(expected).toContain(
      `Open the file <code>${redirectFile}</code> in this browser: it always holds a fresh link`,
    );
    for (const secret of [key, pageKey, cookie.split('=')[1] ?? '', authority.issue(), started.launchUrl]) {
      expect(expected.includes(secret)).toBe(false);
    }
  });

  it("a new launch key and cookie at every start: the earlier run's link and cookie are refused", async () => {
    const dataDir = await tempDir();
    const first = await demo(dataDir);
    const oldCookie = await ownerCookie(first.launchUrl);
    const oldLink = new URL(first.launchUrl);
    await first.close();
    const second = await demo(dataDir);
    expect(second.launchUrl === first.launchUrl).toBe(false);
    expect(await readFile(second.launchFile, 'utf8')).toBe(`${second.launchUrl}\n`);
    const [, oldValue] = oldCookie.split('=');
    const cookie = `launcher_settings_${new URL(second.settingsUrl).port}=${oldValue}`;
    expectForbidden(await call(`${second.settingsUrl}/`, { headers: { cookie } }));
    expectForbidden(await call(`${second.settingsUrl}/?${oldLink.searchParams}`));
  });

  it('serves the owner a page without the token, under a strict CSP, with script and style as their own files', async () => {
    const started = await demo();
    const { settingsUrl, authority } = started;
    const { cookie } = await pageHeaders(started);
    const page = await call(`${settingsUrl}/`, { headers: { cookie: cookie ?? '' } });
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
    expect(CONTENT_SECURITY_POLICY).toMatch(/^default-src 'none'; script-src 'self'; style-src 'self';/);
    expect(CONTENT_SECURITY_POLICY).not.toContain('unsafe');
    const html = page.body.toString('utf8');
    expect(html.includes(authority.issue())).toBe(false);
    // Nothing inline that the CSP would have to allow: no inline script or style, no handler attributes.
    expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
    expect(html).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
    expect(html).toContain('<dialog');
    expect(html).toContain('Regenerate token');
    for (const [path, type] of [
      ['/settings.js', 'text/javascript; charset=utf-8'],
      ['/settings.css', 'text/css; charset=utf-8'],
    ] as const) {
      const file = await call(`${settingsUrl}${path}`, { headers: { cookie: cookie ?? '' } });
      expect(file.status).toBe(200);
      expect(file.headers['content-type']).toBe(type);
      expect(file.headers['x-content-type-options']).toBe('nosniff');
    }
  });

  it('the owner cookie alone, which a program on another port of 127.0.0.1 can collect, gets no token', async () => {
    const started = await demo();
    const { apiUrl, authority } = started;
    const before = authority.issue();
    const rotated = rotations(authority);
    const own = await pageHeaders(started);
    const pageKey = own['x-launcher-settings'] ?? '';
    const { 'x-launcher-settings': _header, ...cookieOnly } = own;
    const flipped = `${pageKey.slice(0, -1)}${pageKey.endsWith('A') ? 'B' : 'A'}`;
    for (const value of [
      undefined,
      '1',
      '',
      flipped,
      `${pageKey}A`,
      (await owner(started.launchUrl)).cookie.split('=')[1],
    ]) {
      const headers = value === undefined ? cookieOnly : { ...cookieOnly, 'x-launcher-settings': value };
      expectForbidden(await call(`${started.settingsUrl}/token`, { headers }));
      expectForbidden(await regenerate(started, headers));
    }
    // The page and its files hold no secret: for them the cookie is enough.
    expect((await call(`${started.settingsUrl}/`, { headers: cookieOnly })).status).toBe(200);
    expect(rotated()).toBe(0);
    expect((await call(`${apiUrl}/apps`, { token: before })).status).toBe(200);
  });

  it('a cookie that another port replaced: the page key alone gets the owner a new one (POST /session), nothing else does', async () => {
    const started = await demo();
    const { settingsUrl } = started;
    const own = await pageHeaders(started);
    const [name] = (own.cookie ?? '').split('=');
    const replaced: Record<string, string> = { ...own, cookie: `${name}=planted` };
    const session = (headers: Record<string, string>, method = 'POST'): Promise<Answer> =>
      call(`${settingsUrl}/session`, { method, headers });
    const { 'x-launcher-settings': _header, ...withoutKey } = replaced;
    const pageKey = own['x-launcher-settings'] ?? '';
    for (const headers of [
      withoutKey,
      { ...replaced, 'x-launcher-settings': `${pageKey.slice(0, -1)}${pageKey.endsWith('A') ? 'B' : 'A'}` },
      { ...replaced, origin: 'http://127.0.0.1:1' },
      { ...replaced, 'sec-fetch-site': 'same-site' },
    ]) {
      expectForbidden(await session(headers));
    }
    expectForbidden(await session(replaced, 'GET'));
    const answer = await session(replaced);
    expect(answer.status).toBe(204);
    expect(answer.body.byteLength).toBe(0);
    expect(answer.headers['set-cookie']).toEqual([`${own.cookie}; HttpOnly; SameSite=Strict; Path=/`]);
    expect((await call(`${settingsUrl}/token`, { headers: own })).status).toBe(200);
  });

  it("gives the token only to its own page in the owner's browser, never to be cached", async () => {
    const started = await demo();
    const { settingsUrl, authority } = started;
    const own = await pageHeaders(started);
    const answer = await call(`${settingsUrl}/token`, { headers: own });
    expect(answer.status).toBe(200);
    expect(answer.headers['cache-control']).toBe('no-store');
    expect(answer.headers['x-frame-options']).toBe('DENY');
    const info = json(answer) as { token: string; masked: string; state: string; keyId: string; createdAt: string };
    expect(info.token).toBeSameToken(authority.issue());
    // The page shows the launcher's own masked form until Show, and whether the token works now.
    expect([info.masked === tokenView(authority).masked, info.state]).toEqual([true, 'ok']);
    expect(info.keyId).toBe(authority.keyId);
    expect(info.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/);

    // The second layer: with the owner's cookie, still only the page's own script.
    const { 'x-launcher-settings': _header, ...withoutHeader } = own;
    for (const headers of [
      withoutHeader, // a plain navigation or a simple cross-site request: no page header
      { ...own, 'sec-fetch-site': 'cross-site' },
      { ...own, origin: 'http://evil.example' },
    ]) {
      expectForbidden(await call(`${settingsUrl}/token`, { headers }));
    }
  });

  it('POST /regenerate rotates: the old token gets 401, the new one 200, and the open event stream ends', async () => {
    const started = await demo();
    const { apiUrl, authority } = started;
    const old = authority.issue();
    const events = await openEvents(apiUrl, old);
    await events.until('\n\n');

    const answer = await regenerate(started);
    expect(answer.status).toBe(200);
    expect(answer.headers['cache-control']).toBe('no-store');
    const fresh = (json(answer) as { token: string }).token;
    expect(json(answer)).toMatchObject({
      outcome: 'regenerated',
      message: 'New token created: the previous token no longer works.',
    });
    expect(fresh).toBeSameToken(authority.issue());
    expect(fresh).not.toBeSameToken(old);

    expectUnauthorized(await call(`${apiUrl}/apps`, { token: old }));
    expect((await call(`${apiUrl}/apps`, { token: fresh })).status).toBe(200);
    expect(await events.ended).toBe('end');
    expect(events.text()).toMatch(/event: end\ndata: \{"reason":"token-regenerated"\}\n\n$/);
    expectUnauthorized(await call(`${apiUrl}/events`, { token: old }));
  });

  it.each([
    // [code, whether a rotation happened before rotate() rejected (another one's, or this one then replaced), outcome]
    ['ERR_SAVE_FAILED', false, 'unchanged'],
    ['ERR_SAVE_CONFLICT', true, 'regenerated-elsewhere'],
    ['ERR_ROTATION_SUPERSEDED', true, 'regenerated-elsewhere'],
  ] as const)(
    'POST /regenerate after rotate() rejects %s: 200 with its outcome, its message and the token that works now',
    async (code, changed, outcome) => {
      const started = await demo();
      const { apiUrl, authority } = started;
      const before = authority.issue();
      const real = authority.rotate.bind(authority);
      // rotate() as the core settles it for each code: the token is the one the authority issues afterwards.
      authority.rotate = async () => {
        if (changed) await real();
        throw new LauncherAuthError(code, `rotate() rejected with ${code}.`);
      };
      const answer = await regenerate(started);
      expect(answer.status).toBe(200);
      const info = json(answer) as { token: string; keyId: string; outcome: string; message: string };
      expect(info.outcome).toBe(outcome);
      expect(info.message).toMatch(/^[A-Z].*\.$/);
      expect(info.token).toBeSameToken(authority.issue());
      expect(info.keyId).toBe(authority.keyId);
      if (changed) expect(info.token).not.toBeSameToken(before);
      else expect(info.token).toBeSameToken(before);
      expect((await call(`${apiUrl}/apps`, { token: info.token })).status).toBe(200);
    },
  );

  it('POST /regenerate after ERR_SAVE_UNCERTAIN: 200, unconfirmed, no token, and the message says which works is not known', async () => {
    const started = await demo();
    const { authority } = started;
    authority.rotate = async () => {
      throw new LauncherAuthError('ERR_SAVE_UNCERTAIN', 'rotate() rejected with ERR_SAVE_UNCERTAIN.');
    };
    const answer = await regenerate(started);
    expect(answer.status).toBe(200);
    expect(json(answer)).toEqual({
      outcome: 'unconfirmed',
      state: 'ok',
      message:
        'The secret store has not confirmed the regeneration yet: which token works is not known yet; check again in a moment.',
    });
  });

  it('POST /regenerate after ERR_CLOSED: 503, stopped, no token; after an unknown failure: 500 with its message', async () => {
    const started = await demo();
    const { authority } = started;
    authority.rotate = async () => {
      throw new LauncherAuthError('ERR_CLOSED', 'The token authority was closed.');
    };
    const stopped = await regenerate(started);
    expect(stopped.status).toBe(503);
    expect(json(stopped)).toEqual({
      outcome: 'stopped',
      message: 'The automation API has stopped: no token works until the launcher starts it again.',
    });
    authority.rotate = async () => {
      throw new Error('broken');
    };
    const broken = await regenerate(started);
    expect(broken.status).toBe(500);
    expect(json(broken)).toEqual({ error: 'broken' });
  });

  it('refuses a cross-origin or header-less POST /regenerate with 403 even with the owner cookie, and does not rotate', async () => {
    const started = await demo();
    const { apiUrl, settingsUrl, authority } = started;
    const before = authority.issue();
    const rotated = rotations(authority);
    const port = new URL(settingsUrl).port;
    const own = await pageHeaders(started);
    const { origin: _origin, ...withoutOrigin } = own;
    const { 'x-launcher-settings': _header, ...withoutHeader } = own;
    for (const headers of [
      { ...own, origin: 'http://evil.example' }, // a cross-site script
      { ...own, origin: 'null' }, // a sandboxed frame or a file:// page
      { ...own, origin: `http://localhost:${port}` }, // the other loopback spelling is another origin
      { ...own, origin: `${settingsUrl}.evil.example` },
      withoutOrigin,
      { ...withoutHeader, 'content-type': 'application/x-www-form-urlencoded' }, // a plain HTML form
      { ...own, 'x-launcher-settings': '0' },
      { ...own, 'sec-fetch-site': 'cross-site' },
    ]) {
      expectForbidden(await regenerate(started, headers));
    }
    expect(rotated()).toBe(0);
    expect(authority.issue()).toBeSameToken(before);
    expect((await call(`${apiUrl}/apps`, { token: before })).status).toBe(200);
  });

  it('refuses a request whose Host is not its own (DNS rebinding) with 403 and does not rotate', async () => {
    const started = await demo();
    const { settingsUrl, authority } = started;
    const before = authority.issue();
    const rotated = rotations(authority);
    const port = new URL(settingsUrl).port;
    const key = new URL(started.launchUrl).search;
    const own = await pageHeaders(started);
    for (const host of [
      `evil.example:${port}`,
      'evil.example',
      `127.0.0.1:${Number(port) + 1}`,
      `127.0.0.2:${port}`,
      '127.0.0.1',
    ]) {
      // A rebinding page is same-origin with itself: its Origin matches its Host, and it can send any header
      // (here even the owner's cookie, which its own cookie jar would not hold).
      const headers = { ...own, host, origin: `http://${host}` };
      for (const [method, path] of [
        ['GET', '/'],
        ['GET', `/${key}`],
        ['GET', '/token'],
        ['POST', '/regenerate'],
      ] as const) {
        expectForbidden(await call(`${settingsUrl}${path}`, { method, headers }));
      }
    }
    expect(rotated()).toBe(0);
    expect(authority.issue()).toBeSameToken(before);

    // Its own name, in either loopback spelling, is served.
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`]) {
      const headers = { ...own, host, origin: `http://${host}` };
      expect((await call(`${settingsUrl}/`, { headers })).status).toBe(200);
      expect((await call(`${settingsUrl}/token`, { headers })).status).toBe(200);
    }
    expect(rotated()).toBe(0);
    const viaLocalhost = { ...own, host: `localhost:${port}`, origin: `http://localhost:${port}` };
    expect((await regenerate(started, viaLocalhost)).status).toBe(200);
    expect(rotated()).toBe(1);
  });
});

describe('the secret file', () => {
  it('keeps the token across a restart with the same data folder', async () => {
    const dataDir = await tempDir();
    const first = await demo(dataDir);
    await regenerate(first); // a regenerated token must survive too, not only the first one
    const token = first.authority.issue();
    await first.close();
    expect((await stat(join(dataDir, 'secret.json'))).mode & 0o777).toBe(0o600);

    const second = await demo(dataDir);
    expect(second.authority.issue()).toBeSameToken(token);
    expect((await call(`${second.apiUrl}/apps`, { token })).status).toBe(200);
  });

  it('startDemo rejects on a busy port with PortInUseError, naming the port and the variable', async () => {
    const port = await busyPort();
    const failed = startDemo({ apiPort: 0, settingsPort: port, dataDir: await tempDir() });
    await expect(failed).rejects.toBeInstanceOf(PortInUseError);
    await expect(failed).rejects.toThrow(
      `Port ${port} is already in use, so the settings page cannot start: set LAUNCHER_SETTINGS_PORT (or --settings-port) to a free port.`,
    );
  });
});

interface Run {
  output(): string;
  stderr(): string;
  exited: Promise<number | null>;
  signal(name: NodeJS.Signals): void;
}

async function runMain(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const cwd = await tempDir();
  const child = spawn(process.execPath, ['--import', TSX_LOADER, MAIN, ...args], {
    cwd,
    // Free ports unless a test says otherwise: the demo's own 7878 and 7879 may be taken by a running demo.
    env: {
      ...process.env,
      TSX_TSCONFIG_PATH: join(REPO, 'tsconfig.json'),
      LAUNCHER_DATA_DIR: cwd,
      LAUNCHER_API_PORT: '0',
      LAUNCHER_SETTINGS_PORT: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  cleanups.push(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  let output = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return { output: () => output, stderr: () => stderr, exited, signal: (name) => child.kill(name) };
}

describe('npm run demo (examples/demo/main.ts)', { timeout: budget(60_000) }, () => {
  it.each([
    ['--api-port', 'the automation API', 'LAUNCHER_API_PORT'],
    ['--settings-port', 'the settings page', 'LAUNCHER_SETTINGS_PORT'],
  ])('a busy port given by %s: one clear line naming the port and %s, exit 1', async (flag, what, variable) => {
    const port = await busyPort();
    const run = await runMain(['--api-port', '0', '--settings-port', '0', flag, String(port)]);
    expect(await run.exited).toBe(1);
    expect(run.output()).toBe('');
    expect(run.stderr()).toBe(
      `demo: Port ${port} is already in use, so ${what} cannot start: set ${variable} (or ${flag}) to a free port.\n`,
    );
    expect(run.stderr()).not.toMatch(/^\s+at /m);
  });

  it('a busy port given by LAUNCHER_API_PORT names it too', async () => {
    const port = await busyPort();
    const run = await runMain(['--settings-port', '0'], { LAUNCHER_API_PORT: String(port) });
    expect(await run.exited).toBe(1);
    expect(run.stderr()).toBe(
      `demo: Port ${port} is already in use, so the automation API cannot start: set LAUNCHER_API_PORT (or --api-port) to a free port.\n`,
    );
  });

  it('a port that is not a number is bad usage, exit 2', async () => {
    const run = await runMain(['--settings-port', '0'], { LAUNCHER_API_PORT: 'http' });
    expect(await run.exited).toBe(2);
    expect(run.stderr()).toBe(
      'demo: LAUNCHER_API_PORT must be a port number from 0 to 65535, not "http". Run with --help for the options.\n',
    );
  });

  it('--redis with a password, in each form node-redis reads one, is refused before connecting: exit 2, one line naming --redis-env, the password nowhere', async () => {
    let connections = 0;
    const count = (socket: Socket): void => {
      connections++;
      socket.destroy();
    };
    const server = createServer(count);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const socketPath = join(await tempDir(), 'redis.sock');
    const local = createServer(count);
    await new Promise<void>((resolve) => local.listen(socketPath, resolve));
    cleanups.push(() => new Promise<void>((resolve) => local.close(() => resolve())));
    const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    const urls = [
      `redis://launcher:Pw-4f9e2c@${host}`,
      `rediss://:Pw-4f9e2c@${host}`,
      // Not WHATWG URLs: node-redis parses unix: itself, and would send the password to the socket.
      `unix://launcher:Pw-4f9e2c@${socketPath}`,
      `unix://:Pw-4f9e2c@${socketPath}`,
      // One that URL cannot parse (the port), with a user and password before the host.
      `redis://launcher:Pw-4f9e2c@${host}0000`,
    ];
    for (const url of urls) {
      const run = await runMain(['--redis', url]);
      expect(await run.exited).toBe(2);
      expect(run.stderr()).toBe(
        'demo: --redis: a password on the command line is visible to every local user; put the URL in an environment ' +
          'variable and give its name with --redis-env <NAME>. Run with --help for the options.\n',
      );
      expect(run.output()).toBe('');
      expect(run.stderr().includes('Pw-4f9e2c') || run.stderr().includes('launcher:')).toBe(false);
    }
    // A connection of ours to each, after every run: accepted after any a run made, so counted last.
    connect((server.address() as AddressInfo).port, '127.0.0.1').on('error', () => undefined);
    connect(socketPath).on('error', () => undefined);
    expect(await until(() => connections >= 2)).toBe(true);
    expect(connections).toBe(2);
  });

  it('--redis-env names a variable that is not set: exit 2, before connecting', async () => {
    const run = await runMain(['--redis-env', 'LAUNCHER_AUTH_DEMO_SURELY_UNSET']);
    expect(await run.exited).toBe(2);
    expect(run.stderr()).toBe(
      'demo: --redis-env must name a set environment variable that holds the Redis URL (such as LAUNCHER_REDIS_URL). ' +
        'Run with --help for the options.\n',
    );
  });

  it('prints the redirect file (never the launch key), the API URL, the token and a curl line that works; Ctrl-C ends the streams and exits 0', async () => {
    const dataDir = await tempDir();
    const run = await runMain(['--api-port', '0', '--settings-port', '0', '--data-dir', dataDir]);
    await waitFor(() => run.output().includes('\nTry it:\n') && run.output().endsWith('\n\n'), 'the banner');
    const text = run.output();
    const apiUrl = /^ {2}Automation API {2}(http:\/\/127\.0\.0\.1:\d+)$/m.exec(text)?.[1];
    const launchFile = join(dataDir, LAUNCH_FILE);
    const launchUrl = /^(http:\/\/127\.0\.0\.1:\d+\/\?key=[\w-]{43})\n$/.exec(await readFile(launchFile, 'utf8'))?.[1];
    const token = /^ {2}Token {11}(\S+)$/m.exec(text)?.[1];
    const curl = /^ {2}curl -H "Authorization: Bearer (\S+)" (http:\/\/127\.0\.0\.1:\d+\/apps)$/m.exec(text);
    expect(apiUrl !== undefined && launchUrl !== undefined && token !== undefined && curl !== null).toBe(true);
    if (apiUrl === undefined || launchUrl === undefined || token === undefined || curl === null) return;
    expect(curl[1]).toBeSameToken(token);
    // The token on its line and in the curl line, nowhere else.
    expect(text.split(token).length - 1).toBe(2);
    expect(curl[2]).toBe(`${apiUrl}/apps`);

    // The settings page is offered as the redirect file, by its path; the link itself is for an address bar.
    const redirectFile = join(dataDir, REDIRECT_FOLDER, REDIRECT_FILE);
    expect(text).toContain(`\n  Settings page   ${pathToFileURL(redirectFile).href}\n`);
    expect(text).toContain('(or run the demo with --open)');
    expect(text).toContain(`(never on a command line, where other users can read it), is in ${launchFile}.\n`);
    // The link's key is nowhere in what the demo prints.
    expect(text.includes(new URL(launchUrl).searchParams.get('key') ?? '')).toBe(false);

    // What the printed curl line does.
    const apps = await call(curl[2] as string, { token });
    expect(apps.status).toBe(200);
    expect(json(apps)).toEqual({ apps: INSTALLED_APPS });
    // The settings page: only through the link kept in files only its owner reads.
    expect(await readFile(redirectFile, 'utf8')).toBe(launchFileHtml(launchUrl));
    expect((await stat(launchFile)).mode & 0o777).toBe(0o600);
    const settingsUrl = new URL(launchUrl).origin;
    expectForbidden(await call(`${settingsUrl}/`));
    expect((await call(`${settingsUrl}/`, { headers: { cookie: await ownerCookie(launchUrl) } })).status).toBe(200);

    const events = await openEvents(apiUrl, token);
    await events.until('\n\n');
    run.signal('SIGINT');
    expect(await run.exited).toBe(0);
    expect(await events.ended).toBe('end');
    expect(run.output().endsWith('Stopped.\n')).toBe(true);
    expect(run.stderr()).toBe('');
  });
});

// The demo launcher's settings page, standing in for the launcher's own settings window: it shows the automation
// token (masked, Show, Copy) and regenerates it. Only the launcher's owner gets in: through a launch link that works
// once, exchanged for a cookie. It answers only its own loopback origin, under a strict CSP.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import {
  regenerateToken,
  tokenView,
  type RegenerateOutcome,
  type TokenAuthority,
  type TokenState,
} from 'launcher-auth';

/** What GET /token and POST /regenerate answer. */
export interface TokenInfo {
  /** The token that works now; absent when which one works is not known yet, or none does (see `state`). */
  token?: string;
  /** tokenView()'s masked form of `token`, which the page shows until Show. */
  masked?: string;
  /** Whether the launcher accepts its token now: tokenView()'s `state`. */
  state?: TokenState;
  /** The key's id (the token's `kid`); not secret. */
  keyId?: string;
  /** When the token's secret was made (its `iat`), ISO 8601. */
  createdAt?: string;
  /** POST /regenerate only: what happened (regenerateToken()'s outcome). */
  outcome?: RegenerateOutcome;
  /** POST /regenerate only: regenerateToken()'s sentence, which the page shows as is. */
  message?: string;
}

/**
 * The header that carries the page key to /token and /regenerate. Only the page's own script has that key, and a
 * form or a simple cross-site request cannot send a custom header at all.
 */
export const SETTINGS_HEADER = 'x-launcher-settings';

/** The query parameter of the launch link, `http://127.0.0.1:<port>/?key=<launch key>`. */
export const LAUNCH_KEY_PARAMETER = 'key';

/** Nothing but this server's own files: no inline script or style, no external resource, no framing, no form. */
export const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const HEADERS = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  // frame-ancestors for browsers that predate it: no page may frame the token's page and trick a click.
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  // Nothing of this origin (the launch link's key included) goes to another site in a Referer.
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  // The token passes through this server: no cache may keep a copy of anything it sends.
  'cache-control': 'no-store',
} as const;

const TEXT = 'text/plain; charset=utf-8';

/** 32 random bytes, base64url: the secret of a launch link, or of the owner's cookie. */
export function newLaunchKey(): string {
  return randomBytes(32).toString('base64url');
}

export interface SettingsServerOptions {
  /**
   * The owner's credential: only a visit to `/?key=<launchKey>` gets the cookie that every route requires, and
   * only the first one: any later use is refused, so that a link seen on a command line (a browser started with
   * it, in `/proc/<pid>/cmdline`) is worth nothing once the owner used it. Show it to the launcher's owner alone
   * (their console, a file only they can read). At least 32 characters.
   */
  launchKey: string;
  /**
   * Called when the launch key was used: returns the next one (the host keeps it where the owner finds it, such
   * as {@link launchFileHtml}'s file), so that the owner can open the page again from another browser.
   * @default undefined (a launch key per start, used once)
   */
  renewLaunchKey?: () => string;
  /**
   * Where the owner finds a fresh link, named on the page that every refused request gets (a path is no secret).
   * @default undefined (the page says to look where the launcher printed its link)
   */
  freshLinkFile?: string;
}

/**
 * A redirect file, as Jupyter writes one: opening it in a browser goes to `launchUrl`, so that the owner can open the
 * page by the file's path, which is no secret, and the key never stands on a command line. Write it readable by the
 * owner alone (mode 0600 in a 0700 folder).
 */
export function launchFileHtml(launchUrl: string): string {
  const url = escapeHtml(launchUrl);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="referrer" content="no-referrer">
<meta http-equiv="refresh" content="0;url=${url}">
<title>Opening the settings page · Example Launcher</title>
</head>
<body>
<p>Opening the launcher's settings page. If nothing happens, <a href="${url}">open it here</a>.</p>
<p>This file holds a link that works once; the launcher writes a fresh one here after each use.</p>
</body>
</html>
`;
}

/**
 * The page every refusal carries (403): it says how to get a fresh link and holds no secret, and it is the same
 * whichever check failed, so that a prober learns nothing from it.
 */
export function refusalPage(freshLinkFile: string | undefined): string {
  const where =
    freshLinkFile === undefined
      ? 'Open the settings link that the launcher printed when it started.'
      : `Open the file <code>${escapeHtml(freshLinkFile)}</code> in this browser: it always holds a fresh link, and only ` +
        'you can read it. The launcher printed its path when it started.';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Open the settings from the launcher · Example Launcher</title>
<style>${REFUSAL_STYLE}</style>
</head>
<body>
<div id="refused" class="refused" role="alert">
  <h1>Open the settings from the launcher</h1>
  <p>This page opens only through the launcher's own link, and each link works once. A restarted launcher also
    signs every browser out.</p>
  <p>${where}</p>
</div>
<script>${REPAIR_SCRIPT}</script>
</body>
</html>
`;
}

/**
 * The refusal page's one script. A server on another port of 127.0.0.1 can replace the owner's cookie (cookies
 * ignore ports), but not this origin's storage: with the page key kept there, the page asks for a new cookie and
 * loads again, at most twice a tab, so that a replaced cookie never signs the owner out.
 */
const REPAIR_SCRIPT =
  "(function(){var k=localStorage.getItem('page-key'),n=Number(sessionStorage.getItem('repairs')||0);" +
  "if(!k||n>=2)return;sessionStorage.setItem('repairs',String(n+1));" +
  "fetch('/session',{method:'POST',cache:'no-store',headers:{'X-Launcher-Settings':k}})" +
  '.then(function(r){if(r.status===204)location.reload();},function(){});})();';

const REFUSAL_STYLE =
  'body{margin:0;font:15px/1.5 system-ui,sans-serif;background:#eef0f4;color:#1d2330}' +
  '.refused{max-width:560px;margin:12vh auto;padding:24px 28px;background:#fff;border:1px solid #dde1e8;border-radius:10px}' +
  '.refused h1{font-size:19px;margin:0 0 10px}code{font-size:13px;word-break:break-all}' +
  '@media (prefers-color-scheme:dark){body{background:#14161b;color:#e6e8ee}.refused{background:#1d2027;border-color:#2c313b}}';

const sha256 = (text: string): string => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

/** The refusal page's policy: its one inline style and its one script, by hash, and a call to its own origin. */
const REFUSAL_POLICY =
  `default-src 'none'; style-src ${sha256(REFUSAL_STYLE)}; script-src ${sha256(REPAIR_SCRIPT)}; ` +
  "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * The launch link's answer: one script keeps the page key in this origin's storage, which no other port shares
 * and no other page can write, and goes to `/`. Not a fragment of `/`: any page on 127.0.0.1 may navigate a tab
 * to `/#<anything>`. Not by a 303 either: a navigation that came from elsewhere (the redirect file is a file:
 * page) would follow it as a cross-site one, without the SameSite=Strict cookie; this page's own is same-site.
 */
function launchAnswer(pageKey: string): { body: Buffer; policy: string } {
  const script = `localStorage.setItem('page-key','${pageKey}');sessionStorage.removeItem('repairs');location.replace('/');`;
  return {
    body: Buffer.from(
      `<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>Settings · Example Launcher</title>\n` +
        `<script>${script}</script>\n</head>\n<body></body>\n</html>\n`,
    ),
    policy: `default-src 'none'; script-src ${sha256(script)}; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
  };
}

/**
 * The settings server, not yet listening (listen on 127.0.0.1 only). `apiUrl` is shown on the page.
 * Every route (the page, its files, /token, /regenerate) answers 403 with an empty body unless the request
 * carries the owner's cookie, which a visit to the launch link sets.
 */
export function createSettingsServer(
  authority: TokenAuthority,
  apiUrl: string,
  options: SettingsServerOptions,
): Server {
  if (typeof options?.launchKey !== 'string' || options.launchKey.length < 32) {
    throw new TypeError('`launchKey` must be a random string of at least 32 characters (see newLaunchKey()).');
  }
  // The key of the next launch: `undefined` once used, unless the host gives a new one.
  let launchKey: Buffer | undefined = Buffer.from(options.launchKey);
  const renewLaunchKey = options.renewLaunchKey;
  if (renewLaunchKey !== undefined && typeof renewLaunchKey !== 'function') {
    throw new TypeError('`renewLaunchKey` must be a function when set.');
  }
  const refused = Buffer.from(refusalPage(options.freshLinkFile));
  const refuse = (res: ServerResponse): void => {
    res.writeHead(403, {
      ...HEADERS,
      'content-security-policy': REFUSAL_POLICY,
      'content-type': 'text/html; charset=utf-8',
      'content-length': refused.byteLength,
    });
    res.end(refused);
  };
  // The cookie holds its own secret, not the launch key, so that its value is never in a URL, a console or a
  // file. A new one at every start: a restart signs every browser out.
  const session = newLaunchKey();
  const sessionBytes = Buffer.from(session);
  // Cookies are not kept apart by port (RFC 6265 §8.5): the owner's browser sends this one to any server on
  // 127.0.0.1, another user's too, and such a server can replace it. So the session is the page key: the launch
  // answer alone carries it, and the page keeps it in its origin's storage, which no other port shares. /token
  // and /regenerate need it, and /session trades it for a new cookie when another port replaced the owner's.
  const pageKey = newLaunchKey();
  const pageKeyBytes = Buffer.from(pageKey);
  const launch = launchAnswer(pageKey);
  const files = new Map([
    ['/', { type: 'text/html; charset=utf-8', body: page(apiUrl) }],
    ['/settings.css', { type: 'text/css; charset=utf-8', body: STYLE }],
    ['/settings.js', { type: 'text/javascript; charset=utf-8', body: SCRIPT }],
    ['/icon.svg', { type: 'image/svg+xml', body: ICON }],
    // What a browser asks for on a page that names no icon (the launch link's redirect): the same icon, not a 404.
    ['/favicon.ico', { type: 'image/svg+xml', body: ICON }],
  ]);

  return createServer((req, res) => {
    const target = req.url ?? '/';
    const mark = target.indexOf('?');
    const [path, query] = mark === -1 ? [target, ''] : [target.slice(0, mark), target.slice(mark + 1)];
    // The Host first: a rebinding page's requests are refused whatever they carry.
    if (!ownHost(req)) return refuse(res);
    // The cookie is named after the port: two launchers on one machine keep one cookie each.
    const cookie = `launcher_settings_${req.socket.localPort}`;

    const keys = new URLSearchParams(query).getAll(LAUNCH_KEY_PARAMETER);
    if (path === '/' && (req.method === 'GET' || req.method === 'HEAD') && keys.length > 0) {
      if (keys.length !== 1 || launchKey === undefined || !sameSecret(keys[0] ?? '', launchKey)) return refuse(res);
      // Used: whoever else saw this link (on a command line, in a history) gets the refusal from now on.
      launchKey = undefined;
      const next = renewLaunchKey?.();
      if (next !== undefined) launchKey = Buffer.from(next);
      // The owner's own navigation: trade the key for the cookie and the page key (launchAnswer()).
      res.writeHead(200, {
        ...HEADERS,
        'content-security-policy': launch.policy,
        'content-type': 'text/html; charset=utf-8',
        'set-cookie': `${cookie}=${session}; HttpOnly; SameSite=Strict; Path=/`,
        'content-length': launch.body.byteLength,
      });
      res.end(launch.body);
      return;
    }
    if (path === '/session') {
      if (req.method !== 'POST' || !fromOwnPage(req, path, pageKeyBytes)) return refuse(res);
      req.resume();
      res.writeHead(204, { ...HEADERS, 'set-cookie': `${cookie}=${session}; HttpOnly; SameSite=Strict; Path=/` });
      res.end();
      return;
    }
    if (!hasCookie(req, cookie, sessionBytes)) return refuse(res);
    // A second layer behind the owner's cookie: only the page itself, from its own origin.
    if (!fromOwnPage(req, path, pageKeyBytes)) return refuse(res);

    if (path === '/regenerate') {
      if (req.method !== 'POST') return notAllowed(res, 'POST');
      req.resume(); // no body is expected; drain whatever came
      regenerateToken(authority).then(
        async ({ outcome, state, token, message }) => {
          if (outcome === 'stopped') sendJson(res, 503, { outcome, message });
          // No token known to work (the store has not answered, or cannot be reached): the message says why.
          else if (token === undefined) sendJson(res, 200, { outcome, state, message });
          else sendJson(res, 200, { ...(await tokenInfo(authority, token)), outcome, message });
        },
        // Not an outcome of rotate() (a bug): the authority's message names no secret.
        (error: unknown) =>
          sendJson(res, 500, { error: error instanceof Error ? error.message : 'regeneration failed' }),
      );
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') return notAllowed(res, 'GET, HEAD');
    if (path === '/token') {
      void tokenInfo(authority, authority.issue()).then((info) => sendJson(res, 200, info));
      return;
    }
    const file = files.get(path);
    if (file === undefined) return reply(res, 404, TEXT, 'Not found\n');
    reply(res, 200, file.type, file.body);
  });
}

/** Compares in constant time; only the length, which is public (43 characters), may end it early. */
function sameSecret(given: string, expected: Buffer): boolean {
  const bytes = Buffer.from(given);
  return bytes.length === expected.length && timingSafeEqual(bytes, expected);
}

/**
 * Whether a `name=value` pair of the Cookie header(s) holds the session. Every pair of that name is compared:
 * another program on 127.0.0.1 (another port, the same cookie jar) may have set a decoy beside the real one.
 */
function hasCookie(req: IncomingMessage, name: string, session: Buffer): boolean {
  let found = false;
  for (const header of headerValues(req, 'cookie')) {
    for (const pair of header.split(';')) {
      const at = pair.indexOf('=');
      if (at !== -1 && pair.slice(0, at).trim() === name && sameSecret(pair.slice(at + 1).trim(), session))
        found = true;
    }
  }
  return found;
}

/**
 * The Host is this server's own `127.0.0.1:<port>` or `localhost:<port>`: a DNS-rebinding page, whose host name
 * resolves to 127.0.0.1, still sends its own name there (and its own cookie jar, without the owner's cookie).
 */
function ownHost(req: IncomingMessage): boolean {
  const port = req.socket.localPort;
  const hosts = headerValues(req, 'host');
  return hosts.length === 1 && (hosts[0] === `127.0.0.1:${port}` || hosts[0] === `localhost:${port}`);
}

/**
 * Whether a request with the owner's cookie comes from the page itself, in case a browser sent the cookie where
 * it should not have:
 * - a POST carries an Origin (browsers always send one) that is this very origin: a cross-site form or
 *   script has its own, and so does a page at the other spelling of loopback;
 * - /token, /regenerate and /session need the page key in the page's own header (a cross-site request cannot send one
 *   without a CORS preflight that this server never grants), and a fetch-metadata `same-origin` where the
 *   browser sends it.
 */
function fromOwnPage(req: IncomingMessage, path: string, pageKey: Buffer): boolean {
  const origins = headerValues(req, 'origin');
  const ownOrigin = origins.length === 1 && origins[0] === `http://${headerValues(req, 'host')[0]}`;
  if ((req.method !== 'GET' && req.method !== 'HEAD') || origins.length > 0) {
    if (!ownOrigin) return false;
  }
  if (path === '/token' || path === '/regenerate' || path === '/session') {
    const custom = headerValues(req, SETTINGS_HEADER);
    if (custom.length !== 1 || !sameSecret(custom[0] ?? '', pageKey)) return false;
    const site = headerValues(req, 'sec-fetch-site');
    if (site.length > 0 && site[0] !== 'same-origin') return false;
  }
  return true;
}

/** Every value of a header as sent, so that a second Host or Origin cannot hide behind the first. */
function headerValues(req: IncomingMessage, name: string): string[] {
  const values: string[] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    if (req.rawHeaders[i]?.toLowerCase() === name) values.push(req.rawHeaders[i + 1] ?? '');
  }
  return values;
}

async function tokenInfo(authority: TokenAuthority, token: string): Promise<TokenInfo> {
  // The key id and date of this very token, read through the authority's own verification.
  const { masked, state } = tokenView(authority);
  const verified = await authority.verify(token);
  // Not accepted: already regenerated again (by another request or process), or refused for now (`state`).
  if (!verified.ok) return { token, masked, state };
  const { iat } = verified.claims;
  const createdAt = typeof iat === 'number' ? { createdAt: new Date(iat * 1000).toISOString() } : {};
  return { token, masked, state, keyId: verified.keyId, ...createdAt };
}

function reply(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { ...HEADERS, 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  reply(res, status, 'application/json; charset=utf-8', JSON.stringify(body));
}

function notAllowed(res: ServerResponse, allow: string): void {
  res.setHeader('allow', allow);
  reply(res, 405, TEXT, 'Method not allowed\n');
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

// The token is not in the page: its script asks for it, so that the HTML itself holds no secret.
function page(apiUrl: string): string {
  const api = escapeHtml(apiUrl);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Settings · Example Launcher</title>
<link rel="icon" href="/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/settings.css">
<script src="/settings.js" defer></script>
</head>
<body>
<div class="window">
  <nav class="sidebar" aria-label="Settings sections">
    <div class="brand"><img src="/icon.svg" alt="" width="24" height="24"><span>Example Launcher</span></div>
    <ul>
      <li><span class="item" aria-disabled="true">General</span></li>
      <li><span class="item" aria-disabled="true">Library</span></li>
      <li><span class="item" aria-disabled="true">Downloads</span></li>
      <li><span class="item" aria-disabled="true">Notifications</span></li>
      <li><a class="item" href="#automation-api" aria-current="page">Automation API</a></li>
    </ul>
  </nav>
  <main>
    <h1>Settings</h1>
    <section id="automation-api" class="card" aria-labelledby="automation-api-title">
      <h2 id="automation-api-title">Automation API</h2>
      <p class="lead">Scripts and other apps can control this launcher over HTTP at <code>${api}</code>.
        Every request except <code>GET /health</code> must send this token in an
        <code>Authorization: Bearer</code> header. Keep it secret, like a password.</p>
      <div class="field">
        <div class="field-head"><span id="token-label" class="label">Access token</span><span id="token-created" class="hint"></span></div>
        <div class="token-line">
          <code id="token" class="token masked" aria-labelledby="token-label">Loading…</code>
          <button type="button" id="show" aria-pressed="false" disabled>Show</button>
          <button type="button" id="copy" disabled>Copy</button>
        </div>
      </div>
      <p id="status" role="status" aria-live="polite"></p>
      <div class="field">
        <span id="try-label" class="label">Try it</span>
        <p class="hint">From a terminal on this computer (Copy copies the command with the token):</p>
        <div class="token-line">
          <pre class="example"><code id="try" data-api="${api}" aria-labelledby="try-label">curl -H "Authorization: Bearer …" ${api}/apps</code></pre>
          <button type="button" id="copy-try" aria-label="Copy the command" disabled>Copy</button>
        </div>
      </div>
      <div class="field danger-zone">
        <div>
          <span class="label">Regenerate token</span>
          <p class="hint">Replaces the token at once. The current token stops working immediately, and event
            streams opened with it are closed.</p>
        </div>
        <button type="button" id="regenerate" class="danger" disabled>Regenerate token</button>
      </div>
    </section>
  </main>
</div>
<dialog id="confirm" aria-labelledby="confirm-title" aria-describedby="confirm-text">
  <h3 id="confirm-title">Regenerate the token?</h3>
  <p id="confirm-text" class="warning">Scripts and apps that use the current token will stop working: they get
    <code>401 Unauthorized</code> until you give them the new token, and their open event streams close now.</p>
  <div class="actions">
    <button type="button" id="cancel" autofocus>Cancel</button>
    <button type="button" id="confirm-regenerate" class="danger solid">Regenerate</button>
  </div>
</dialog>
</body>
</html>
`;
}

// Plain browser JavaScript, served as /settings.js. The token lives in this script's memory and reaches the page
// only after Show, so a screenshot or a look over the shoulder sees the mask.
const SCRIPT = `'use strict';
(() => {
  const $ = (id) => document.getElementById(id);
  const tokenBox = $('token');
  const showButton = $('show');
  const copyButton = $('copy');
  const tryBox = $('try');
  const copyTryButton = $('copy-try');
  const regenerateButton = $('regenerate');
  const created = $('token-created');
  const status = $('status');
  const dialog = $('confirm');
  // Why no token works now, for tokenView()'s states other than ok.
  const STATES = {
    suspended: 'The launcher cannot reach its secret store: every token is refused until it answers again.',
    lost: 'The launcher lost its secret: every token is refused until you regenerate the token.',
    stopped: 'The automation API has stopped: no token works until the launcher starts it again.',
  };
  const dates = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
  // The page key: the launch link's answer kept it in this origin's storage, for later visits and other tabs.
  // The page loaded, so the refusal page's repairs of the cookie count from zero again.
  sessionStorage.removeItem('repairs');
  const pageKey = localStorage.getItem('page-key') || '';
  let current = null;
  let shown = false;
  let busy = false;

  // The real command: with the token itself when shown, masked otherwise; Copy always copies the real one.
  const command = (token) => 'curl -H "Authorization: Bearer ' + token + '" ' + tryBox.dataset.api + '/apps';

  function render() {
    const known = current !== null && current.token !== undefined;
    // The launcher's own masked form (tokenView().masked) until Show; a dash while no token is known to work.
    const text = !known ? '\u2014' : shown ? current.token : current.masked;
    if (current !== null) tokenBox.textContent = text;
    if (current !== null) tryBox.textContent = command(known ? text : '\u2026');
    tokenBox.classList.toggle('masked', !shown);
    showButton.textContent = shown ? 'Hide' : 'Show';
    showButton.setAttribute('aria-pressed', String(shown));
    created.textContent = current !== null && current.createdAt ? 'Created ' + dates.format(new Date(current.createdAt)) : '';
    showButton.disabled = copyButton.disabled = copyTryButton.disabled = !known;
    regenerateButton.disabled = current === null || busy;
  }

  function say(text, kind) {
    status.textContent = text;
    status.className = kind || '';
    // Beside the token, and brought into view in a short window.
    if (text !== '') status.scrollIntoView({ block: 'nearest' });
  }

  // The page key in the page's own header: the server refuses /token and /regenerate without it.
  async function call(method, path) {
    const send = () => fetch(path, { method, cache: 'no-store', headers: { 'X-Launcher-Settings': pageKey } });
    let response = await send();
    if (response.status === 403) {
      // A server on another port may have replaced the cookie: the page key gets a new one, and one more try.
      const session = await fetch('/session', { method: 'POST', cache: 'no-store', headers: { 'X-Launcher-Settings': pageKey } });
      if (session.status === 204) response = await send();
    }
    if (response.status === 403) {
      // The cookie or the kept page key is from an earlier run (a restart signs browsers out): the server's
      // refusal page says how to get a fresh link; it takes this page's place, and the token leaves it.
      signedOut(await response.text());
      throw Object.assign(new Error('refused'), { status: 403 });
    }
    if (!response.ok) throw Object.assign(new Error(method + ' ' + path + ': ' + response.status), { status: response.status });
    return response.json();
  }

  function signedOut(html) {
    current = null;
    // Without its style, which this page's policy does not allow (this page's own style sheet has the class).
    const bare = html.replace(/<style>[^<]*<\\/style>/, '');
    const refused = new DOMParser().parseFromString(bare, 'text/html').getElementById('refused');
    const message = refused === null ? document.createElement('p') : document.adoptNode(refused);
    if (refused === null) message.textContent = 'Open the settings page again from the launcher.';
    message.classList.add('refused');
    document.body.replaceChildren(message);
    document.title = 'Open the settings from the launcher · Example Launcher';
  }

  function failed(error, what) {
    if (error.status !== 403) say(what, 'error');
  }

  async function copy(text, done) {
    try {
      await navigator.clipboard.writeText(text);
      say(done, 'ok');
      return true;
    } catch {
      return false;
    }
  }

  // How each outcome of POST /regenerate is shown; its sentence comes from the launcher (regenerateToken()).
  const KINDS = { regenerated: 'ok' };

  async function load() {
    try {
      const info = await call('GET', '/token');
      const changed = current !== null && info.token !== current.token;
      if (current === null || changed) current = info;
      if (info.state !== 'ok') say(STATES[info.state], 'error');
      else if (status.textContent === STATES.suspended) say('');
      render();
      return changed;
    } catch (error) {
      failed(error, 'Could not read the token from the launcher. Is it still running?');
      return false;
    }
  }

  // After an uncertain outcome the launcher settles on what its store finally holds: look again for a while.
  async function recheck() {
    for (let i = 0; i < 15; i++) {
      await new Promise((resolve) => setTimeout(resolve, 2000));
      if (await load()) {
        say('The token that works now is shown above (Show reveals it); the previous one no longer works.', 'ok');
        return;
      }
      if (current === null) return;
    }
  }

  showButton.addEventListener('click', () => {
    shown = !shown;
    render();
  });

  copyButton.addEventListener('click', async () => {
    if (await copy(current.token, 'Token copied to the clipboard.')) return;
    shown = true;
    render();
    getSelection().selectAllChildren(tokenBox);
    say('Could not copy: the token is selected, copy it yourself.', 'error');
  });

  copyTryButton.addEventListener('click', async () => {
    if (await copy(command(current.token), 'Command copied to the clipboard.')) return;
    shown = true;
    render();
    getSelection().selectAllChildren(tryBox);
    say('Could not copy: the command is selected, copy it yourself.', 'error');
  });

  regenerateButton.addEventListener('click', () => dialog.showModal());
  $('cancel').addEventListener('click', () => dialog.close());
  $('confirm-regenerate').addEventListener('click', async () => {
    dialog.close();
    busy = true;
    render();
    say('Regenerating…');
    let uncertain = false;
    try {
      const info = await call('POST', '/regenerate');
      // Masked like any token until Show: a regenerated token is as secret as the one before.
      current = info;
      shown = false;
      say(info.message, KINDS[info.outcome] || 'error');
      uncertain = info.token === undefined;
    } catch (error) {
      failed(error, 'Could not regenerate the token. Reload this page to see the token that works now.');
    } finally {
      busy = false;
      if (current !== null) render();
    }
    if (uncertain) recheck();
  });

  // Another program (the CLI, a second window) may have regenerated it meanwhile.
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible') load();
  });
  load();
})();
`;

const STYLE = `:root {
  color-scheme: light dark;
  --bg: #eef0f4; --panel: #ffffff; --sidebar: #f7f8fa; --text: #1d2330; --muted: #667085; --line: #dde1e8;
  --accent: #3563e9; --accent-soft: #e8eefd; --danger: #c4322b; --danger-soft: #fdecea; --ok: #1f7a4d;
  --field: #f4f6f9;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #14161b; --panel: #1d2027; --sidebar: #181a20; --text: #e6e8ee; --muted: #9aa3b2; --line: #2c313b;
    --accent: #7c9cff; --accent-soft: #243154; --danger: #ff6b61; --danger-soft: #3a1f1e; --ok: #5fd39a;
    --field: #23262e;
  }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--text);
  font: 14px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Liberation Sans", sans-serif; }
code, .token { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, "Liberation Mono", "DejaVu Sans Mono", monospace; }
code { font-size: 12.5px; background: var(--field); border-radius: 4px; padding: 1px 5px; }
.window { display: flex; min-height: 100vh; max-width: 1040px; margin: 0 auto; background: var(--panel);
  box-shadow: 0 0 0 1px var(--line); }
.sidebar { width: 220px; flex: none; background: var(--sidebar); border-right: 1px solid var(--line); padding: 20px 12px; }
.brand { display: flex; align-items: center; gap: 10px; font-weight: 600; padding: 0 8px 18px; }
.sidebar ul { list-style: none; margin: 0; padding: 0; }
.item { display: block; padding: 7px 10px; border-radius: 6px; color: var(--muted); text-decoration: none; }
.item[aria-current="page"] { background: var(--accent-soft); color: var(--accent); font-weight: 600; }
main { flex: 1; padding: 28px 36px; min-width: 0; }
h1 { font-size: 22px; margin: 0 0 20px; }
h2 { font-size: 16px; margin: 0 0 6px; }
.card { border: 1px solid var(--line); border-radius: 10px; padding: 20px 22px; }
.lead { color: var(--muted); margin: 0 0 18px; }
.field { padding: 16px 0; border-top: 1px solid var(--line); }
.field-head { display: flex; justify-content: space-between; align-items: baseline; margin-bottom: 8px; }
.label { font-weight: 600; }
.hint { color: var(--muted); font-size: 13px; margin: 2px 0 0; }
.token-line { display: flex; gap: 8px; align-items: flex-start; }
.token { flex: 1; min-width: 0; display: block; padding: 7px 10px; border: 1px solid var(--line); border-radius: 6px;
  background: var(--field); font-size: 12.5px; line-height: 1.6; word-break: break-all; user-select: all; }
.token.masked { letter-spacing: 2px; color: var(--muted); user-select: none; overflow: hidden; white-space: nowrap; }
button { font: inherit; padding: 7px 14px; border-radius: 6px; border: 1px solid var(--line); background: var(--panel);
  color: var(--text); cursor: pointer; min-width: 72px; }
button:hover:not(:disabled) { border-color: var(--accent); }
button:focus-visible { outline: 2px solid var(--accent); outline-offset: 2px; }
button:disabled { opacity: .55; cursor: default; }
button.danger { color: var(--danger); border-color: color-mix(in srgb, var(--danger) 45%, var(--line)); }
button.danger:hover:not(:disabled) { background: var(--danger-soft); border-color: var(--danger); }
button.danger.solid { background: var(--danger); color: #fff; border-color: var(--danger); }
button.danger.solid:hover { filter: brightness(1.08); background: var(--danger); }
.example { flex: 1; min-width: 0; margin: 0; padding: 7px 10px; background: var(--field); border: 1px solid var(--line);
  border-radius: 6px; white-space: pre-wrap; overflow-wrap: anywhere; }
.example code { background: none; padding: 0; line-height: 1.6; }
.field .hint + .token-line { margin-top: 8px; }
.refused { max-width: 560px; margin: 12vh auto; padding: 24px 28px; background: var(--panel); border: 1px solid var(--line);
  border-radius: 10px; }
.refused h1 { font-size: 19px; margin: 0 0 10px; }
.refused code { word-break: break-all; }
.danger-zone { display: flex; justify-content: space-between; align-items: center; gap: 24px; padding-bottom: 0; }
.danger-zone button { flex: none; white-space: nowrap; }
#status { margin: 12px 0 0; color: var(--muted); }
#status:empty { display: none; }
#status.ok { color: var(--ok); }
#status.error { color: var(--danger); }
dialog { border: 1px solid var(--line); border-radius: 12px; padding: 22px 24px; max-width: 440px;
  background: var(--panel); color: var(--text); box-shadow: 0 18px 50px rgba(0, 0, 0, .25); }
dialog::backdrop { background: rgba(20, 22, 27, .45); }
dialog h3 { margin: 0 0 8px; font-size: 16px; }
dialog p { margin: 0 0 20px; color: var(--muted); }
.actions { display: flex; justify-content: flex-end; gap: 8px; }
@media (max-width: 640px) { .sidebar { display: none; } main { padding: 20px; } .card { padding: 16px; }
  .danger-zone { flex-direction: column; align-items: flex-start; } }
@media (max-width: 420px) { main { padding: 12px; } .token-line { flex-wrap: wrap; } .token, .example { flex-basis: 100%; }
  .token-line button { flex: 1; } }
`;

const ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">
<defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="#4f7cff"/><stop offset="1" stop-color="#2747c9"/></linearGradient></defs>
<rect width="32" height="32" rx="8" fill="url(#g)"/>
<rect x="7" y="7" width="7.5" height="7.5" rx="2" fill="#fff"/><rect x="17.5" y="7" width="7.5" height="7.5" rx="2" fill="#fff" opacity=".75"/>
<rect x="7" y="17.5" width="7.5" height="7.5" rx="2" fill="#fff" opacity=".75"/><rect x="17.5" y="17.5" width="7.5" height="7.5" rx="2" fill="#fff"/>
</svg>
`;

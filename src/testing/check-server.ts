// checkServer: the DEVELOPERS.md table, run against a live server over HTTP, as a structured report.
import { request as httpRequest, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { randomBytes } from 'node:crypto';

/** Options of {@link checkServer}. */
export interface CheckServerOptions {
  /** The current token (from the launcher's settings): it must be accepted. */
  token: string;
  /** A token from before the latest "Regenerate token": it must be refused. @default undefined (case skipped) */
  previous?: string;
  /** A path the host protects, appended to the base URL's path. @default '/' */
  path?: string;
  /** The host's health path, appended to the base URL's path. @default '/health' */
  healthPath?: string;
  /** How long one request may take, in ms. @default 5000 */
  timeoutMs?: number;
}

/** One row of the report. Never holds a token. */
export interface CheckCase {
  /** What was sent, in words. */
  name: string;
  /** What the table expects, in words. */
  expected: string;
  /** The status seen, or `undefined` when no response came. */
  status: number | undefined;
  /** The number of body bytes seen, or `undefined` when no response came. */
  bodyLength: number | undefined;
  /** Whether the response met the expectation. */
  ok: boolean;
  /** Why it failed, when it did. */
  detail?: string;
}

/** What {@link checkServer} found: `ok` only when every case held. */
export interface CheckReport {
  ok: boolean;
  cases: CheckCase[];
}

interface Seen {
  status: number;
  headers: IncomingHttpHeaders;
  bodyLength: number;
}

type Expectation = 'refused' | 'accepted' | 'not refused';

function send(url: URL, method: string, headers: OutgoingHttpHeaders, timeoutMs: number): Promise<Seen> {
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers, agent: false }, (res) => {
      let bodyLength = 0;
      res.on('data', (chunk: Buffer) => (bodyLength += chunk.length));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, bodyLength }));
      res.on('error', reject);
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

function judge(seen: Seen, expectation: Expectation): string | undefined {
  if (expectation === 'refused') {
    if (seen.status !== 401) return `expected status 401, got ${seen.status}`;
    if (seen.bodyLength !== 0) return `the 401 has a body of ${seen.bodyLength} bytes; it must be empty`;
    const challenge = seen.headers['www-authenticate'];
    if (typeof challenge !== 'string' || !/^bearer\b/i.test(challenge)) return 'the 401 has no `WWW-Authenticate: Bearer`';
    return undefined;
  }
  if (seen.status === 401 || seen.status === 403) return `expected the request to pass, got ${seen.status}`;
  if (expectation === 'accepted' && seen.status >= 500) return `the token passed but the host failed with ${seen.status}`;
  return undefined;
}

/** The token with one signature character changed: JWT-shaped, and signed by nobody. */
function forge(token: string): string {
  const dot = token.lastIndexOf('.');
  if (dot < 0 || dot === token.length - 1) return `${token}.x`;
  const first = token.charAt(dot + 1);
  return `${token.slice(0, dot + 1)}${first === 'A' ? 'B' : 'A'}${token.slice(dot + 2)}`;
}

function resolveOptions(baseUrl: string, options: CheckServerOptions): { base: URL; prefix: string } & Required<Omit<CheckServerOptions, 'previous'>> {
  let base: URL;
  try {
    base = new URL(baseUrl);
  } catch {
    throw new TypeError('checkServer: `baseUrl` must be an absolute http(s) URL.');
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') {
    throw new TypeError('checkServer: `baseUrl` must be an absolute http(s) URL.');
  }
  if (typeof options !== 'object' || options === null) throw new TypeError('checkServer: `options` must be an object.');
  const { token, previous, path = '/', healthPath = '/health', timeoutMs = 5000 } = options;
  if (typeof token !== 'string' || token.length === 0) throw new TypeError('checkServer: `token` must be a non-empty string.');
  if (previous !== undefined && (typeof previous !== 'string' || previous.length === 0)) {
    throw new TypeError('checkServer: `previous` must be a non-empty string when set.');
  }
  for (const [name, value] of [['path', path], ['healthPath', healthPath]] as const) {
    if (typeof value !== 'string' || !value.startsWith('/')) throw new TypeError(`checkServer: \`${name}\` must start with "/".`);
  }
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1) throw new TypeError('checkServer: `timeoutMs` must be a positive whole number.');
  return { base, prefix: base.pathname.replace(/\/+$/, ''), token, path, healthPath, timeoutMs };
}

/**
 * Runs the DEVELOPERS.md table against a live server: the protected path without a token, with a forged and a
 * garbage token, with the previous token (401, empty body, `WWW-Authenticate: Bearer`) and with the current
 * token (accepted); the health path without a token (not refused); and the spellings a host must not exempt
 * (`POST` health, `/health/`, `/healthz`, `/health/x`, an unknown path). Never throws for a misbehaving server:
 * every fault is a failed case. The report never contains a token.
 */
export async function checkServer(baseUrl: string, options: CheckServerOptions): Promise<CheckReport> {
  const { base, prefix, token, path, healthPath, timeoutMs } = resolveOptions(baseUrl, options);
  const at = (p: string): URL => new URL(`${prefix}${p}`, base);
  const bearer = (t: string): OutgoingHttpHeaders => ({ authorization: `Bearer ${t}` });
  const unknown = `/launcher-auth-check-${randomBytes(6).toString('hex')}`;

  const plan: Array<{ name: string; method: string; url: URL; headers: OutgoingHttpHeaders; expect: Expectation }> = [
    { name: `GET ${path} without Authorization`, method: 'GET', url: at(path), headers: {}, expect: 'refused' },
    { name: `GET ${path} with a forged signature`, method: 'GET', url: at(path), headers: bearer(forge(token)), expect: 'refused' },
    { name: `GET ${path} with a garbage token`, method: 'GET', url: at(path), headers: bearer('not-a-token'), expect: 'refused' },
    { name: `GET ${path} with another scheme`, method: 'GET', url: at(path), headers: { authorization: `Basic ${token}` }, expect: 'refused' },
  ];
  if (options.previous !== undefined) {
    plan.push({ name: `GET ${path} with the token from before the latest regeneration`, method: 'GET', url: at(path), headers: bearer(options.previous), expect: 'refused' });
  }
  plan.push(
    { name: `GET ${path} with the current token`, method: 'GET', url: at(path), headers: bearer(token), expect: 'accepted' },
    { name: `GET ${healthPath} without Authorization`, method: 'GET', url: at(healthPath), headers: {}, expect: 'not refused' },
    { name: `POST ${healthPath} without Authorization`, method: 'POST', url: at(healthPath), headers: {}, expect: 'refused' },
    { name: `GET ${healthPath}/ without Authorization`, method: 'GET', url: at(`${healthPath}/`), headers: {}, expect: 'refused' },
    { name: `GET ${healthPath}z without Authorization`, method: 'GET', url: at(`${healthPath}z`), headers: {}, expect: 'refused' },
    { name: `GET ${healthPath}/x without Authorization`, method: 'GET', url: at(`${healthPath}/x`), headers: {}, expect: 'refused' },
    { name: 'GET an unknown path without Authorization', method: 'GET', url: at(unknown), headers: {}, expect: 'refused' },
  );

  const cases: CheckCase[] = [];
  for (const step of plan) {
    const expected = step.expect === 'refused' ? '401, empty body' : step.expect === 'accepted' ? 'accepted' : 'not 401';
    try {
      const seen = await send(step.url, step.method, step.headers, timeoutMs);
      const problem = judge(seen, step.expect);
      const row: CheckCase = { name: step.name, expected, status: seen.status, bodyLength: seen.bodyLength, ok: problem === undefined };
      if (problem !== undefined) row.detail = problem;
      cases.push(row);
    } catch (error) {
      const reason = error instanceof Error ? error.message : 'request failed';
      // Node's messages name the address, never a header value.
      cases.push({ name: step.name, expected, status: undefined, bodyLength: undefined, ok: false, detail: reason });
    }
  }
  return { ok: cases.every((row) => row.ok), cases };
}

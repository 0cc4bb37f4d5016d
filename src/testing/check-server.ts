// checkServer: the test table of the README's "The CLI" section, run against a live server over HTTP, as a
// structured report for integrators' own test suites (and for `launcher-auth check`).
import { randomBytes } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import {
  request as httpRequest,
  type ClientRequest,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
} from 'node:http';
import { request as httpsRequest } from 'node:https';

/** Options of {@link checkServer}. */
export interface CheckServerOptions {
  /** The current token (from the launcher's settings): it must be accepted on `path`. */
  token: string;
  /** A token from before the latest "Regenerate token": it must be refused. @default undefined (case skipped) */
  previous?: string;
  /**
   * A path the host protects, appended to the base URL's path. The current token must be accepted there: any
   * answer but 401, 403 or a 5xx counts (a bare `GET` may well get 404 or 405).
   * @default '/'
   */
  path?: string;
  /** The host's health path, appended to the base URL's path. @default '/health' */
  healthPath?: string;
  /**
   * The deadline of the whole check, in ms, from 1 to 600000: the cases run at once, and every case without a
   * complete answer (connect, headers and the whole body) by then fails. A host that accepts and never answers
   * cannot hold the check longer.
   * @default 5000
   */
  timeoutMs?: number;
}

/** One row of the report. Never holds a token. */
export interface CheckCase {
  /** What was sent, in words: method, path and which credentials. */
  name: string;
  /** What the table expects, in words. */
  expected: string;
  /** The status seen, or `undefined` when no complete answer came. */
  status: number | undefined;
  /** The number of body bytes seen, or `undefined` when no complete answer came. */
  bodyLength: number | undefined;
  /** Whether the answer met the expectation. */
  ok: boolean;
  /** Why the case failed: set exactly when `ok` is false. */
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

/**
 * `refused`: 401, empty body and `WWW-Authenticate: Bearer` (RFC 6750 §3 makes the challenge a MUST, and a
 * client that retries on it needs it, so its absence fails the case rather than warning).
 * `accepted`: neither 401/403 nor a 5xx. `not refused`: neither 401 nor 403.
 */
type Expectation = 'refused' | 'accepted' | 'not refused';

const EXPECTED: Record<Expectation, string> = {
  refused: '401, empty body, WWW-Authenticate: Bearer',
  accepted: 'accepted (not 401/403/5xx)',
  'not refused': 'not 401/403',
};

interface Step {
  name: string;
  method: string;
  url: URL;
  headers: OutgoingHttpHeaders;
  expect: Expectation;
}

/** One request on its own connection, ended when `deadline` aborts: a host that trickles bytes cannot hold it. */
function send(step: Step, deadline: AbortSignal): Promise<Seen> {
  const request = step.url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    let req: ClientRequest | undefined;
    let settled = false;
    const settle = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      deadline.removeEventListener('abort', expire);
      outcome();
    };
    // Settles first, then destroys: whichever events the destroyed request and response emit come too late.
    const expire = (): void => {
      settle(() => reject(deadline.reason as Error));
      req?.destroy();
    };
    if (deadline.aborted) {
      expire();
      return;
    }
    deadline.addEventListener('abort', expire);
    try {
      // agent: false, so that no case reuses a connection another case left in a state of its own.
      req = request(step.url, { method: step.method, headers: step.headers, agent: false }, (res) => {
        let bodyLength = 0;
        res.on('data', (chunk: Buffer) => (bodyLength += chunk.length));
        res.on('end', () => settle(() => resolve({ status: res.statusCode ?? 0, headers: res.headers, bodyLength })));
        res.on('error', (error) => settle(() => reject(error)));
      });
    } catch (error) {
      // A header value Node refuses (a token with a line break) throws here; its message names the header only.
      settle(() => reject(error));
      return;
    }
    req.on('error', (error) => settle(() => reject(error)));
    req.end();
  });
}

function judge(seen: Seen, expectation: Expectation): string | undefined {
  if (expectation === 'refused') {
    if (seen.status !== 401) return `expected status 401, got ${seen.status}`;
    if (seen.bodyLength !== 0) return `the 401 has a body of ${seen.bodyLength} bytes; it must be empty`;
    const challenge = seen.headers['www-authenticate'];
    if (typeof challenge !== 'string' || !/^bearer(?:$|[ ,])/i.test(challenge)) {
      return 'the 401 has no `WWW-Authenticate: Bearer` header';
    }
    return undefined;
  }
  if (seen.status === 401 || seen.status === 403) {
    // The usual cause: a token copied before the latest "Regenerate token", or copied incompletely.
    const hint =
      expectation === 'accepted'
        ? ": the token was refused; copy it from the launcher's settings again (was it regenerated?)"
        : '';
    return `expected the request to pass, got ${seen.status}${hint}`;
  }
  if (expectation === 'accepted' && seen.status >= 500)
    return `the token passed but the host failed with ${seen.status}`;
  return undefined;
}

/** The token with its first signature character changed: JWT-shaped, canonical, and signed by nobody. */
function forgeSignature(token: string): string {
  const dot = token.lastIndexOf('.');
  if (dot < 0 || dot === token.length - 1) return `${token}.AAAA`;
  const first = token.charAt(dot + 1);
  return `${token.slice(0, dot + 1)}${first === 'A' ? 'B' : 'A'}${token.slice(dot + 2)}`;
}

/** The token's claims under an `alg: none` header and no signature: the classic JWT downgrade. */
function forgeUnsigned(token: string): string {
  const parts = token.split('.');
  const claims =
    parts.length === 3 && parts[1] !== ''
      ? (parts[1] as string)
      : Buffer.from('{"sub":"launcher"}').toString('base64url');
  return `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${claims}.`;
}

/** The largest `timeoutMs`: ten minutes. */
export const MAX_TIMEOUT_MS = 600_000;

interface Resolved {
  base: URL;
  prefix: string;
  token: string;
  previous: string | undefined;
  path: string;
  healthPath: string;
  timeoutMs: number;
}

function resolveOptions(baseUrl: unknown, options: CheckServerOptions): Resolved {
  let base: URL | undefined;
  try {
    base = typeof baseUrl === 'string' ? new URL(baseUrl) : undefined;
  } catch {
    base = undefined;
  }
  if (base === undefined || (base.protocol !== 'http:' && base.protocol !== 'https:')) {
    throw new TypeError('checkServer: `baseUrl` must be an absolute http(s) URL.');
  }
  // Node would send the user name and password as an Authorization header, even on the "without" cases.
  if (base.username !== '' || base.password !== '') {
    throw new TypeError('checkServer: `baseUrl` must not contain a user name or password.');
  }
  if (typeof options !== 'object' || options === null) throw new TypeError('checkServer: `options` must be an object.');
  const { token, previous, path = '/', healthPath = '/health', timeoutMs = 5000 } = options;
  if (typeof token !== 'string' || token.length === 0)
    throw new TypeError('checkServer: `token` must be a non-empty string.');
  if (previous !== undefined && (typeof previous !== 'string' || previous.length === 0)) {
    throw new TypeError('checkServer: `previous` must be a non-empty string when set.');
  }
  for (const [name, value] of [
    ['path', path],
    ['healthPath', healthPath],
  ] as const) {
    // "//host" and "/\host" would resolve to another origin, and the token would be sent there.
    if (
      typeof value !== 'string' ||
      !/^\/(?![/\\])[\x21-\x7e]*$/.test(value) ||
      value.includes('\\') ||
      /[?#]/.test(value)
    ) {
      throw new TypeError(
        `checkServer: \`${name}\` must be a path that starts with a single "/" and has no spaces, backslashes, "?" or "#".`,
      );
    }
  }
  // Node's timers hold at most 2^31 - 1 ms and fire at once beyond it; ten minutes is far past any real answer.
  if (!Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_TIMEOUT_MS) {
    throw new TypeError(
      `checkServer: \`timeoutMs\` must be a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS}.`,
    );
  }
  return { base, prefix: base.pathname.replace(/\/+$/, ''), token, previous, path, healthPath, timeoutMs };
}

/**
 * Runs the test table against a live server, every case at once, each on its own connection, all under the one
 * deadline `timeoutMs` (requests without the token, and GETs with it: nothing a host should mind in parallel):
 *
 * - the protected `path` without Authorization, with a forged signature, an unsigned (`alg: none`) token, a
 *   garbage token, the token under the `Basic` scheme, and the `previous` token: each 401 with an empty body
 *   and `WWW-Authenticate: Bearer`;
 * - the protected `path` with the current token: accepted (neither 401/403 nor a 5xx);
 * - `GET` of the health path without a token: not refused;
 * - `POST` of the health path, `<health>/`, `<health>z`, `<health>/x` and an unknown path, without a token:
 *   401 as above (a host that exempts the health path by prefix or for any method fails here).
 *
 * A misbehaving or unreachable server never makes it throw: every fault is a failed case. Bad options throw a
 * `TypeError` naming the option. The report never contains a token. Tokens are only ever sent to the origin of
 * `baseUrl`, and redirects are not followed.
 */
export async function checkServer(baseUrl: string, options: CheckServerOptions): Promise<CheckReport> {
  const { base, prefix, token, previous, path, healthPath, timeoutMs } = resolveOptions(baseUrl, options);
  const at = (p: string): URL => {
    const url = new URL(`${prefix}${p}`, base);
    if (url.origin !== base.origin) throw new TypeError('checkServer: a path resolved to another origin.');
    return url;
  };
  const bearer = (value: string): OutgoingHttpHeaders => ({ authorization: `Bearer ${value}` });
  const unknown = `/launcher-auth-check-${randomBytes(6).toString('hex')}`;
  const protectedUrl = at(path);
  const refusedOn = (name: string, headers: OutgoingHttpHeaders): Step => ({
    name: `GET ${path} ${name}`,
    method: 'GET',
    url: protectedUrl,
    headers,
    expect: 'refused',
  });
  const withoutToken = (method: string, p: string, name = `${method} ${p} without Authorization`): Step => ({
    name,
    method,
    url: at(p),
    headers: {},
    expect: 'refused',
  });

  const plan: Step[] = [
    refusedOn('without Authorization', {}),
    refusedOn('with a forged signature', bearer(forgeSignature(token))),
    refusedOn('with an unsigned (alg none) token', bearer(forgeUnsigned(token))),
    refusedOn('with a garbage token', bearer('not-a-token')),
    refusedOn('with the token under the Basic scheme', { authorization: `Basic ${token}` }),
  ];
  if (previous !== undefined)
    plan.push(refusedOn('with the token from before the latest regeneration', bearer(previous)));
  plan.push(
    {
      name: `GET ${path} with the current token`,
      method: 'GET',
      url: protectedUrl,
      headers: bearer(token),
      expect: 'accepted',
    },
    {
      name: `GET ${healthPath} without Authorization`,
      method: 'GET',
      url: at(healthPath),
      headers: {},
      expect: 'not refused',
    },
    withoutToken('POST', healthPath),
    withoutToken('GET', `${healthPath}/`),
    withoutToken('GET', `${healthPath}z`),
    withoutToken('GET', `${healthPath}/x`),
    withoutToken('GET', unknown, 'GET an unknown path without Authorization'),
  );

  const deadline = new AbortController();
  setMaxListeners(plan.length, deadline.signal); // one listener per case in flight, all on purpose
  const timer = setTimeout(() => deadline.abort(new Error(`no complete answer within ${timeoutMs} ms`)), timeoutMs);
  const cases = await Promise.all(
    plan.map(async (step): Promise<CheckCase> => {
      const expected = EXPECTED[step.expect];
      try {
        const seen = await send(step, deadline.signal);
        const problem = judge(seen, step.expect);
        const row: CheckCase = {
          name: step.name,
          expected,
          status: seen.status,
          bodyLength: seen.bodyLength,
          ok: problem === undefined,
        };
        if (problem !== undefined) row.detail = problem;
        return row;
      } catch (error) {
        // Node's messages name the address or the header, never a header's value; the scrub is for certainty.
        const message = error instanceof Error ? error.message : '';
        const leaks = message.includes(token) || (previous !== undefined && message.includes(previous));
        const reason = message === '' || leaks ? 'the request failed' : message;
        return { name: step.name, expected, status: undefined, bodyLength: undefined, ok: false, detail: reason };
      }
    }),
  ).finally(() => clearTimeout(timer));
  return { ok: cases.every((row) => row.ok), cases };
}

// The one table of requests every adapter must answer alike: the required answers (missing, invalid, old,
// current token, open health check), Authorization syntax, forged tokens, and spellings of the health path.
// A case names what must happen, not how: see `Expectation`. Tokens are built at run time by `openCaseAuthority`.
import { createHmac, randomBytes } from 'node:crypto';
import { MemorySecretStore, TokenAuthority } from 'launcher-auth';
import type { HostKind } from './harness.js';

/**
 * - `401`: the uniform refusal (empty body, `WWW-Authenticate: Bearer`, `Content-Length: 0`), no handler ran.
 * - `'protected'`: 200 from a protected handler, which saw `auth` with the current key's id.
 * - `'health'`: 200 from the health handler, and no other handler ran.
 * - `{ status }`: the framework or the HTTP parser answered `status` on its own (404 for a path no route has,
 *   400 for a request it cannot parse); no handler ran.
 */
export type Expectation = 401 | 'protected' | 'health' | { status: number };

/** Every token a case can use, built for one authority after one rotation. */
export interface Tokens {
  /** From the latest `rotate()`. */
  current: string;
  /** The current token before the latest `rotate()`. */
  previous: string;
  /** Header and claims of `current`, signed with another key. */
  wrongKey: string;
  /** Other claims than `current`'s, with `current`'s signature. */
  tamperedPayload: string;
  /** `alg: none`, no signature. */
  algNone: string;
  /** `alg: none` in the header, signed with the right key: the header must not choose the algorithm. */
  algNoneSigned: string;
  /** Signed with the right key, but HS512. */
  hs512: string;
  /** HS256 with the right key and an extra claim: valid, and not byte-equal to `current`, so jose verifies it. */
  resigned: string;
  /** HS256 with the right key, padded to 8 KB: over the length limit however well signed. */
  big: string;
}

export interface StructuredRequest {
  method: string;
  /** The request target exactly as it goes on the request line. */
  target: string;
  /** Header lines in order, names as written; `Host` and (for a body method) `Content-Length: 0` are added. */
  headers?: (tokens: Tokens) => Array<[string, string]>;
}

export interface RawCaseRequest {
  /** The whole request, sent byte for byte (latin1: one character, one byte). `host` is `127.0.0.1:<port>`. */
  raw: (tokens: Tokens, host: string) => string;
}

export interface AdapterCase {
  name: string;
  request: StructuredRequest | RawCaseRequest;
  expect: Expectation;
  /** A platform that answers otherwise, for the reason in `why`; never a relaxation of the gate. */
  per?: Partial<Record<HostKind, Expectation>>;
  why?: string;
  /**
   * `false` for a request after which the server closes the connection on purpose (a refused upgrade or
   * `Expect: 100-continue`, a relayed `h2c` upgrade): no probe is pipelined behind it.
   * @default true
   */
  framed?: boolean;
}

/** What `kind` must answer to `c`. */
export function expectationFor(c: AdapterCase, kind: HostKind): Expectation {
  return c.per?.[kind] ?? c.expect;
}

/** The bytes of `c`'s request (as a latin1 string) for a host on `port`. */
export function requestText(c: AdapterCase, tokens: Tokens, port: number): string {
  const host = `127.0.0.1:${port}`;
  if ('raw' in c.request) return c.request.raw(tokens, host);
  const { method, target, headers } = c.request;
  const lines = [`${method} ${target} HTTP/1.1`, `Host: ${host}`];
  const given = headers?.(tokens) ?? [];
  for (const [name, value] of given) lines.push(`${name}: ${value}`);
  const hasLength = given.some(([name]) => name.toLowerCase() === 'content-length');
  if (!hasLength && (method === 'POST' || method === 'PUT' || method === 'PATCH')) lines.push('Content-Length: 0');
  return `${lines.join('\r\n')}\r\n\r\n`;
}

// ---------------------------------------------------------------------------------------------------------
// Tokens

const b64 = (value: string | Buffer): string => Buffer.from(value).toString('base64url');
const json = (value: unknown): string => b64(JSON.stringify(value));

function hmac(algorithm: 'sha256' | 'sha512', key: Uint8Array, input: string): string {
  return createHmac(algorithm, key).update(input).digest('base64url');
}

/**
 * A fresh authority on a memory store, rotated once, with every token of {@link Tokens}. The store is
 * returned so that a suite can forge more tokens with the current key.
 */
export async function openCaseAuthority(): Promise<{
  authority: TokenAuthority;
  store: MemorySecretStore;
  tokens: Tokens;
}> {
  const store = new MemorySecretStore();
  const authority = await TokenAuthority.open({ store });
  const previous = authority.issue();
  await authority.rotate();
  return { authority, store, tokens: await forgeTokens(authority, store, previous) };
}

/** Every token of {@link Tokens} for the authority's current key (read from its memory store). */
export async function forgeTokens(
  authority: TokenAuthority,
  store: MemorySecretStore,
  previous: string,
): Promise<Tokens> {
  const record = await store.load();
  if (record?.id !== authority.keyId) throw new Error('forgeTokens: the store does not hold the current key');
  const current = authority.issue();
  const [header = '', payload = '', signature = ''] = current.split('.');
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
  const hs256 = (h: string, p: string): string => `${h}.${p}.${hmac('sha256', record.key, `${h}.${p}`)}`;

  const noneHeader = json({ alg: 'none', typ: 'JWT', kid: record.id });
  const hs512Header = json({ alg: 'HS512', typ: 'JWT', kid: record.id });
  const tampered = json({ ...claims, iat: Number(claims['iat']) - 1 });
  return {
    current,
    previous,
    wrongKey: `${header}.${payload}.${hmac('sha256', randomBytes(32), `${header}.${payload}`)}`,
    tamperedPayload: `${header}.${tampered}.${signature}`,
    algNone: `${noneHeader}.${payload}.`,
    algNoneSigned: hs256(noneHeader, payload),
    hs512: `${hs512Header}.${payload}.${hmac('sha512', record.key, `${hs512Header}.${payload}`)}`,
    resigned: hs256(header, json({ ...claims, scope: 'launcher' })),
    big: hs256(header, json({ ...claims, pad: 'x'.repeat(6_000) })),
  };
}

// ---------------------------------------------------------------------------------------------------------
// The table

type Headers = (tokens: Tokens) => Array<[string, string]>;

const bearer =
  (pick: (t: Tokens) => string): Headers =>
  (t) => [['Authorization', `Bearer ${pick(t)}`]];
const authorization =
  (value: (t: Tokens) => string): Headers =>
  (t) => [['Authorization', value(t)]];
const get = (target: string, headers?: Headers): StructuredRequest =>
  headers === undefined ? { method: 'GET', target } : { method: 'GET', target, headers };
const request = (method: string, target: string, headers?: Headers): StructuredRequest =>
  headers === undefined ? { method, target } : { method, target, headers };
const current = (t: Tokens): string => t.current;
const valid = (t: Tokens): string => `Bearer ${t.current}`;
/** Two Authorization headers; the second's name spelled `secondName`. */
const twice =
  (first: (t: Tokens) => string, second: (t: Tokens) => string, secondName = 'Authorization'): Headers =>
  (t) => [
    ['Authorization', first(t)],
    [secondName, second(t)],
  ];

/** The fetch platform parses the target as a WHATWG URL before any code sees it. */
const FETCH_RESOLVES =
  'the fetch platform (fetch and Hono on @hono/node-server) resolves the URL before the guard and the router see it, so this request IS GET /health ' +
  'there: only the health handler can run, which is safe';
const NOT_FOUND = { status: 404 } as const;

export const CASES: readonly AdapterCase[] = [
  // The required answers
  { name: 'no Authorization header', request: get('/apps'), expect: 401 },
  {
    name: 'an invalid token',
    request: get(
      '/apps',
      bearer(() => 'not.a.token'),
    ),
    expect: 401,
  },
  {
    name: 'the token before the latest rotate()',
    request: get(
      '/apps',
      bearer((t) => t.previous),
    ),
    expect: 401,
  },
  { name: 'the token from the latest rotate()', request: get('/apps', bearer(current)), expect: 'protected' },
  {
    name: 'POST with the token from the latest rotate()',
    request: request('POST', '/apps/editor/launch', bearer(current)),
    expect: 'protected',
  },
  { name: 'POST without a token', request: request('POST', '/apps/editor/launch'), expect: 401 },
  { name: 'GET /events without a token', request: get('/events'), expect: 401 },
  { name: 'GET /health without a token', request: get('/health'), expect: 'health' },

  // Authorization syntax
  {
    name: 'scheme in lower case',
    request: get(
      '/apps',
      authorization((t) => `bearer ${t.current}`),
    ),
    expect: 'protected',
  },
  {
    name: 'scheme in upper case',
    request: get(
      '/apps',
      authorization((t) => `BEARER ${t.current}`),
    ),
    expect: 'protected',
  },
  {
    name: 'header name in lower case',
    request: get('/apps', (t) => [['authorization', `Bearer ${t.current}`]]),
    expect: 'protected',
  },
  {
    name: 'header name in upper case',
    request: get('/apps', (t) => [['AUTHORIZATION', `Bearer ${t.current}`]]),
    expect: 'protected',
  },
  {
    name: 'several spaces after the scheme',
    request: get(
      '/apps',
      authorization((t) => `Bearer    ${t.current}`),
    ),
    expect: 'protected',
  },
  // Leading whitespace is the field's optional whitespace: the HTTP parser strips it before anyone sees it.
  {
    name: 'a tab before the value (OWS)',
    request: get('/apps', (t) => [['Authorization', `\tBearer ${t.current}`]]),
    expect: 'protected',
  },
  {
    name: 'a trailing space after the token (OWS)',
    request: get(
      '/apps',
      authorization((t) => `Bearer ${t.current} `),
    ),
    expect: 'protected',
  },
  {
    name: 'a trailing tab after the token (OWS)',
    request: get(
      '/apps',
      authorization((t) => `Bearer ${t.current}\t`),
    ),
    expect: 'protected',
  },
  {
    name: 'a tab after the scheme',
    request: get(
      '/apps',
      authorization((t) => `Bearer\t${t.current}`),
    ),
    expect: 401,
  },
  {
    name: 'a no-break space (0xA0) after the scheme',
    request: get(
      '/apps',
      authorization((t) => `Bearer\xa0${t.current}`),
    ),
    expect: 401,
  },
  {
    name: 'no space after the scheme',
    request: get(
      '/apps',
      authorization((t) => `Bearer${t.current}`),
    ),
    expect: 401,
  },
  {
    name: 'the scheme alone',
    request: get(
      '/apps',
      authorization(() => 'Bearer'),
    ),
    expect: 401,
  },
  {
    name: 'an empty value',
    request: get(
      '/apps',
      authorization(() => ''),
    ),
    expect: 401,
  },
  { name: 'the token without a scheme', request: get('/apps', authorization(current)), expect: 401 },
  {
    name: 'the Basic scheme with the token',
    request: get(
      '/apps',
      authorization((t) => `Basic ${b64(`u:${t.current}`)}`),
    ),
    expect: 401,
  },
  {
    name: 'the Token scheme',
    request: get(
      '/apps',
      authorization((t) => `Token ${t.current}`),
    ),
    expect: 401,
  },
  {
    name: 'the scheme "Bearer:"',
    request: get(
      '/apps',
      authorization((t) => `Bearer: ${t.current}`),
    ),
    expect: 401,
  },
  // Which of two values would count is ambiguous (and proxies differ on it): always refused.
  {
    name: 'two Authorization headers, valid first',
    request: get(
      '/apps',
      twice(valid, () => 'Bearer not.a.token'),
    ),
    expect: 401,
  },
  {
    name: 'two Authorization headers, valid second',
    request: get(
      '/apps',
      twice(() => 'Bearer not.a.token', valid),
    ),
    expect: 401,
  },
  {
    name: 'two Authorization headers, both valid',
    request: get('/apps', twice(valid, valid, 'authorization')),
    expect: 401,
  },
  {
    name: 'two Authorization headers, old then current',
    request: get(
      '/apps',
      twice((t) => `Bearer ${t.previous}`, valid),
    ),
    expect: 401,
  },
  {
    name: 'two Authorization headers, empty then valid',
    request: get(
      '/apps',
      twice(() => '', valid),
    ),
    expect: 401,
  },
  {
    name: 'two Authorization headers, valid then empty',
    request: get(
      '/apps',
      twice(valid, () => ''),
    ),
    expect: 401,
  },
  {
    name: 'two tokens in one value',
    request: get(
      '/apps',
      authorization((t) => `Bearer ${t.current}, Bearer ${t.current}`),
    ),
    expect: 401,
  },
  {
    name: 'an 8 KB token of junk',
    request: get(
      '/apps',
      bearer(() => 'a'.repeat(8_192)),
    ),
    expect: 401,
  },
  {
    name: 'an 8 KB token signed with the right key',
    request: get(
      '/apps',
      bearer((t) => t.big),
    ),
    expect: 401,
  },
  {
    name: 'trailing garbage after the token',
    request: get(
      '/apps',
      authorization((t) => `Bearer ${t.current}x`),
    ),
    expect: 401,
  },
  {
    name: 'a second word after the token',
    request: get(
      '/apps',
      authorization((t) => `Bearer ${t.current} x`),
    ),
    expect: 401,
  },
  {
    name: 'a comma after the token',
    request: get(
      '/apps',
      authorization((t) => `Bearer ${t.current},`),
    ),
    expect: 401,
  },
  {
    name: 'a latin1 byte after the token',
    request: get(
      '/apps',
      authorization((t) => `Bearer ${t.current}\xe9`),
    ),
    expect: 401,
  },
  {
    name: 'a latin1 byte inside the token',
    request: get(
      '/apps',
      authorization((t) => `Bearer \xe9${t.current.slice(1)}`),
    ),
    expect: 401,
  },
  {
    name: 'a latin1 byte in the scheme',
    request: get(
      '/apps',
      authorization((t) => `B\xe9arer ${t.current}`),
    ),
    expect: 401,
  },
  {
    name: 'a NUL byte after the token',
    request: get(
      '/apps',
      authorization((t) => `Bearer ${t.current}\0`),
    ),
    expect: { status: 400 },
  },
  {
    name: 'a CR alone inside the value',
    request: get(
      '/apps',
      authorization((t) => `Bearer ${t.current}\rx`),
    ),
    expect: { status: 400 },
  },
  {
    name: 'the token folded onto a continuation line (obs-fold)',
    request: {
      raw: (t, host) => `GET /apps HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer\r\n ${t.current}\r\n\r\n`,
    },
    expect: { status: 400 },
  },
  {
    name: 'a space before the colon of Authorization',
    request: { raw: (t, host) => `GET /apps HTTP/1.1\r\nHost: ${host}\r\nAuthorization : Bearer ${t.current}\r\n\r\n` },
    expect: { status: 400 },
  },
  {
    name: 'the token in another header',
    request: get('/apps', (t) => [['X-Authorization', `Bearer ${t.current}`]]),
    expect: 401,
  },
  {
    name: 'the token in Proxy-Authorization',
    request: get('/apps', (t) => [['Proxy-Authorization', `Bearer ${t.current}`]]),
    expect: 401,
  },
  {
    name: 'the token in the query string (not supported)',
    request: { raw: (t, host) => `GET /apps?access_token=${t.current} HTTP/1.1\r\nHost: ${host}\r\n\r\n` },
    expect: 401,
  },

  // Forgeries
  {
    name: 'the right claims signed with another key',
    request: get(
      '/apps',
      bearer((t) => t.wrongKey),
    ),
    expect: 401,
  },
  {
    name: 'other claims with the right signature',
    request: get(
      '/apps',
      bearer((t) => t.tamperedPayload),
    ),
    expect: 401,
  },
  {
    name: 'alg none, no signature',
    request: get(
      '/apps',
      bearer((t) => t.algNone),
    ),
    expect: 401,
  },
  {
    name: 'alg none, signed with the right key',
    request: get(
      '/apps',
      bearer((t) => t.algNoneSigned),
    ),
    expect: 401,
  },
  {
    name: 'HS512 with the right key',
    request: get(
      '/apps',
      bearer((t) => t.hs512),
    ),
    expect: 401,
  },
  {
    name: 'HS256 with the right key and other claims (verified by jose, asynchronously)',
    request: get(
      '/apps',
      bearer((t) => t.resigned),
    ),
    expect: 'protected',
  },

  // The health exemption: exactly GET and HEAD of exactly the path
  { name: 'GET /health with a query', request: get('/health?x=1'), expect: 'health' },
  { name: 'GET /health with an empty query', request: get('/health?'), expect: 'health' },
  { name: 'HEAD /health', request: request('HEAD', '/health'), expect: 'health' },
  { name: 'HEAD /health with a query', request: request('HEAD', '/health?x=1'), expect: 'health' },
  { name: 'GET /health over HTTP/1.0', request: { raw: () => 'GET /health HTTP/1.0\r\n\r\n' }, expect: 'health' },
  {
    name: 'GET /health with an invalid token (the token is not looked at)',
    request: get(
      '/health',
      bearer(() => 'not.a.token'),
    ),
    expect: 'health',
  },
  { name: 'GET /health with the current token', request: get('/health', bearer(current)), expect: 'health' },
  { name: 'POST /health', request: request('POST', '/health'), expect: 401 },
  { name: 'PUT /health', request: request('PUT', '/health'), expect: 401 },
  { name: 'DELETE /health', request: request('DELETE', '/health'), expect: 401 },
  { name: 'OPTIONS /health', request: request('OPTIONS', '/health'), expect: 401 },
  { name: 'GET /health/', request: get('/health/'), expect: 401 },
  { name: 'GET /HEALTH', request: get('/HEALTH'), expect: 401 },
  { name: 'GET /Health', request: get('/Health'), expect: 401 },
  { name: 'GET //health', request: get('//health'), expect: 401 },
  { name: 'GET /health;x', request: get('/health;x'), expect: 401 },
  { name: 'GET /%68ealth', request: get('/%68ealth'), expect: 401 },
  { name: 'GET /health%2F', request: get('/health%2F'), expect: 401 },
  { name: 'GET /health%3Fx=1', request: get('/health%3Fx=1'), expect: 401 },
  { name: 'GET /health%20', request: get('/health%20'), expect: 401 },
  { name: 'GET /healthz', request: get('/healthz'), expect: 401 },
  { name: 'GET /health/x', request: get('/health/x'), expect: 401 },
  { name: 'GET /health.json', request: get('/health.json'), expect: 401 },
  { name: 'GET /health/..', request: get('/health/..'), expect: 401 },
  {
    name: 'GET /files/../health',
    request: get('/files/../health'),
    expect: 401,
    per: { fetch: 'health', hono: 'health' },
    why: FETCH_RESOLVES,
  },
  {
    name: 'GET /./health',
    request: get('/./health'),
    expect: 401,
    per: { fetch: 'health', hono: 'health' },
    why: FETCH_RESOLVES,
  },
  {
    name: 'GET /files/%2e%2e/health',
    request: get('/files/%2e%2e/health'),
    expect: 401,
    per: { fetch: 'health', hono: 'health' },
    why: FETCH_RESOLVES,
  },
  {
    name: 'GET /apps/../health',
    request: get('/apps/../health'),
    expect: 401,
    per: { fetch: 'health', hono: 'health' },
    why: FETCH_RESOLVES,
  },
  {
    name: 'GET /health#fragment',
    request: get('/health#x'),
    expect: 401,
    per: { fetch: 'health', hono: 'health' },
    why: FETCH_RESOLVES,
  },
  {
    name: 'GET absolute-form http://127.0.0.1/health',
    request: { raw: (_t, host) => `GET http://127.0.0.1/health HTTP/1.1\r\nHost: ${host}\r\n\r\n` },
    expect: 401,
    per: { fetch: 'health', hono: 'health' },
    why: FETCH_RESOLVES,
  },
  {
    name: 'GET absolute-form http://evil.example/health',
    request: { raw: (_t, host) => `GET http://evil.example/health HTTP/1.1\r\nHost: ${host}\r\n\r\n` },
    expect: 401,
    per: { fetch: 'health', hono: 'health' },
    why: FETCH_RESOLVES,
  },
  {
    name: 'GET absolute-form http://127.0.0.1/apps without a token',
    request: { raw: (_t, host) => `GET http://127.0.0.1/apps HTTP/1.1\r\nHost: ${host}\r\n\r\n` },
    expect: 401,
  },
  {
    name: 'GET /health with a backslash (/\\health)',
    request: get('/\\health'),
    expect: 401,
    per: { fetch: { status: 400 }, hono: { status: 400 } },
    why: '@hono/node-server refuses a backslash in the path with 400 before any handler',
  },
  // Node's HTTP parser refuses these before any handler: the same 400 on every platform here.
  { name: 'GET health (no leading slash)', request: get('health'), expect: { status: 400 } },
  {
    name: 'GET * (asterisk-form)',
    request: get('*'),
    expect: 401,
    per: { fetch: { status: 400 }, hono: { status: 400 } },
    why: '@hono/node-server cannot build a URL from it and answers 400 before any handler',
  },
  { name: 'GET /health with a latin1 byte', request: get('/health\xe9'), expect: { status: 400 } },
  {
    name: 'GET /health with a tab in the request line',
    request: { raw: (_t, host) => `GET\t/health HTTP/1.1\r\nHost: ${host}\r\n\r\n` },
    expect: { status: 400 },
  },
  { name: 'get /health (method in lower case)', request: request('get', '/health'), expect: { status: 400 } },

  // Unknown paths: 401 without a token (nothing to enumerate), the framework's 404 with one
  { name: 'unknown path without a token', request: get('/nope'), expect: 401 },
  { name: 'GET / without a token', request: get('/'), expect: 401 },
  {
    name: 'unknown path with an invalid token',
    request: get(
      '/nope',
      bearer((t) => t.wrongKey),
    ),
    expect: 401,
  },
  { name: 'unknown path with the current token', request: get('/nope', bearer(current)), expect: NOT_FOUND },
  {
    name: 'a protected path with a method it lacks, with the current token',
    request: request('DELETE', '/apps', bearer(current)),
    expect: NOT_FOUND,
  },
];

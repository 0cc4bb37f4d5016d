// Cross-origin access for browser clients (a web page or an extension on another origin): which requests are
// preflights, which origins may call, and the exact headers of every answer, built once per options.
import { HTTP_TOKEN } from '../authority/bearer.js';

/** The `cors` option of every adapter. Without it no CORS header is ever sent and a preflight is refused. */
export interface CorsOptions {
  /**
   * The origins whose pages may call the API, each exactly `scheme://host[:port]` as a browser sends it (lower
   * case, no path, no trailing slash, no wildcard): `'http://127.0.0.1:5173'`, `'chrome-extension://<id>'`.
   * `'*'` allows every origin (the token still decides; a page from anywhere can then read the answers).
   */
  origins: readonly string[] | '*';
  /**
   * How long a browser may cache a preflight's answer, in seconds (`Access-Control-Max-Age`; browsers cap it,
   * Chromium at 7200).
   * @default 600
   */
  maxAge?: number;
  /**
   * Request headers a page may send besides `Authorization`, which is always allowed (`Content-Type` for a JSON
   * body, for example).
   * @default []
   */
  allowHeaders?: readonly string[];
  /**
   * The methods a page may use (`Access-Control-Allow-Methods`).
   * @default ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']
   */
  allowMethods?: readonly string[];
}

/** What an adapter does about CORS for one request, from {@link corsFor}. */
export interface CorsOutcome {
  /** Set for a preflight: the whole answer (no body), written instead of asking for a token: 204 or the 401. */
  readonly answer: { readonly status: number; readonly headers: string[] } | undefined;
  /** The headers of the 401 for this origin, as a flat list for `writeHead`. */
  readonly unauthorized: string[];
  /** The headers to set on a request that passes, before the handler runs: name, value, name, value… */
  readonly pass: readonly string[];
  /** True for a preflight from an origin that is not allowed (for `onReject`). */
  readonly refused: boolean;
}

/** `cors` after validation: an outcome per allowed origin, built once. */
export interface ResolvedCors {
  /** The outcomes of an allowed origin: a preflight and any other request. */
  readonly byOrigin: ReadonlyMap<string, readonly [preflight: CorsOutcome, other: CorsOutcome]>;
  /** For `origins: '*'`: the same outcomes for every origin. */
  readonly any: readonly [preflight: CorsOutcome, other: CorsOutcome] | undefined;
  readonly refusedPreflight: CorsOutcome;
  /** A request without `Origin`, or from an origin not allowed: only `Vary: Origin`, so no cache mixes answers. */
  readonly vary: CorsOutcome;
}

// scheme "://" host [":" port]: a browser's serialization of a tuple origin, lower case, nothing after it.
const ORIGIN = /^[a-z][a-z0-9+.-]*:\/\/(?:[a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])(?::[0-9]{1,5})?$/;
const DEFAULT_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

function tokenList(value: unknown, name: string, where: string): readonly string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string' && HTTP_TOKEN.test(item))) {
    throw new TypeError(`${where}: \`cors.${name}\` must be an array of header-token strings when set.`);
  }
  return value as readonly string[];
}

function outcomes(origin: string, options: Required<CorsOptions>, unauthorized: readonly string[]) {
  const headers = [...new Set(['authorization', ...options.allowHeaders.map((name) => name.toLowerCase())])];
  const preflight: CorsOutcome = Object.freeze({
    answer: Object.freeze({
      status: 204,
      headers: Object.freeze([
        'Access-Control-Allow-Origin',
        origin,
        'Access-Control-Allow-Headers',
        headers.join(', '),
        'Access-Control-Allow-Methods',
        options.allowMethods.join(', '),
        'Access-Control-Max-Age',
        String(options.maxAge),
        'Vary',
        'Origin',
        'Content-Length',
        '0',
      ]) as string[],
    }),
    unauthorized: unauthorized as string[],
    pass: [],
    refused: false,
  });
  // So that the page can read the status and the challenge of a 401 (and the answer of a pass).
  const pass = Object.freeze([
    'Access-Control-Allow-Origin',
    origin,
    'Access-Control-Expose-Headers',
    'WWW-Authenticate',
    'Vary',
    'Origin',
  ]);
  const other: CorsOutcome = Object.freeze({
    answer: undefined,
    unauthorized: Object.freeze([...unauthorized, ...pass]) as string[],
    pass,
    refused: false,
  });
  return Object.freeze([preflight, other] as const);
}

/**
 * Validates the `cors` option at construction (a `TypeError` names it) and builds every answer's headers.
 * `unauthorized` is the flat header list of the adapter's 401, which CORS answers extend.
 */
export function resolveCors(value: unknown, where: string, unauthorized: readonly string[]): ResolvedCors | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null) {
    throw new TypeError(`${where}: \`cors\` must be an object when set.`);
  }
  const { origins, maxAge = 600, allowHeaders, allowMethods } = value as CorsOptions;
  if (origins !== '*') {
    if (!Array.isArray(origins) || origins.length === 0) {
      throw new TypeError(`${where}: \`cors.origins\` must be '*' or a non-empty array of origins.`);
    }
    for (const origin of origins as unknown[]) {
      if (typeof origin !== 'string' || !ORIGIN.test(origin)) {
        throw new TypeError(
          `${where}: \`cors.origins\` must hold origins written exactly scheme://host[:port] in lower case, ` +
            `without a path, a trailing slash or a wildcard (such as 'http://127.0.0.1:5173').`,
        );
      }
    }
  }
  if (!Number.isSafeInteger(maxAge) || maxAge < 0) {
    throw new TypeError(`${where}: \`cors.maxAge\` must be a whole number of seconds, 0 or more.`);
  }
  const options: Required<CorsOptions> = {
    origins,
    maxAge,
    allowHeaders: tokenList(allowHeaders, 'allowHeaders', where) ?? [],
    allowMethods: tokenList(allowMethods, 'allowMethods', where) ?? DEFAULT_METHODS,
  };
  if (options.allowMethods.length === 0) throw new TypeError(`${where}: \`cors.allowMethods\` must not be empty.`);
  // Every answer at a URL may differ by Origin once CORS is on, so every answer says so (Fetch standard,
  // "CORS protocol and HTTP caches"): a cache must not hand one origin's answer to another, or to none.
  const varied = Object.freeze([...unauthorized, 'Vary', 'Origin']) as string[];
  const refusedPreflight: CorsOutcome = Object.freeze({
    answer: Object.freeze({ status: 401, headers: varied }),
    unauthorized: varied,
    pass: [],
    refused: true,
  });
  const vary: CorsOutcome = Object.freeze({
    answer: undefined,
    unauthorized: varied,
    pass: Object.freeze(['Vary', 'Origin']),
    refused: false,
  });
  return Object.freeze({
    byOrigin: new Map(
      origins === '*'
        ? []
        : origins.map((origin: string) => [origin, outcomes(origin, options, unauthorized)] as const),
    ),
    any: origins === '*' ? outcomes('*', options, unauthorized) : undefined,
    refusedPreflight,
    vary,
  });
}

// Neither a serialized origin nor a method has a comma: one in a value means the header was sent twice (a Web
// `Headers` joins repeated values with ", ") or is not what a browser sends. Either way it counts as absent, so
// that every adapter, whichever form of headers it sees, gives the same answer.
/** The one value of header `name` (lower case) in Node's `rawHeaders`; `undefined` when absent, repeated or listed. */
function single(raw: readonly string[], name: string): string | undefined {
  let found: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    if ((raw[i] as string).toLowerCase() === name) {
      if (found !== undefined) return undefined;
      found = raw[i + 1];
    }
  }
  return found === undefined || found.includes(',') ? undefined : found;
}

/** The same for a Web `Headers`, which has already joined repeated values. */
function singleOf(headers: Headers, name: string): string | undefined {
  const value = headers.get(name);
  return value === null || value.includes(',') ? undefined : value;
}

function header(headers: readonly string[] | Headers, name: string): string | undefined {
  return Array.isArray(headers) ? single(headers as readonly string[], name) : singleOf(headers as Headers, name);
}

/**
 * What CORS asks of an adapter for one request, from its headers (Node's `rawHeaders` or a Web `Headers`).
 * A preflight is `OPTIONS` with one `Origin` and one `Access-Control-Request-Method`; it never reaches a
 * handler: an allowed origin gets the 204, any other the uniform 401. Any other request from an allowed origin
 * gets the CORS headers on its 401 or its pass; from any other origin (or without one), only `Vary: Origin`.
 */
export function corsFor(
  cors: ResolvedCors,
  method: string | undefined,
  headers: readonly string[] | Headers,
): CorsOutcome {
  const origin = header(headers, 'origin');
  if (origin === undefined) return cors.vary;
  const allowed = cors.any ?? cors.byOrigin.get(origin);
  if (method === 'OPTIONS' && header(headers, 'access-control-request-method') !== undefined) {
    return allowed === undefined ? cors.refusedPreflight : allowed[0];
  }
  return allowed?.[1] ?? cors.vary;
}

/** Sets a flat header list (name, value, …) on a node:http response, for a request that passes. */
export function setHeaders(res: { setHeader(name: string, value: string): unknown }, list: readonly string[]): void {
  for (let i = 0; i < list.length; i += 2) res.setHeader(list[i] as string, list[i + 1] as string);
}

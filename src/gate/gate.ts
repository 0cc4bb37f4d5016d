// The one decision every adapter asks for: exempt health check, authenticated, or the uniform 401. Adapters
// only translate their framework's request into (method, target, authorization) and the answer back.
import { corsFor, resolveCors, type CorsOptions, type CorsOutcome, type ResolvedCors } from './cors.js';
import { authenticateNow } from '../authority/internal.js';
export { assertAuthority } from '../authority/assert-authority.js';
import type { TokenAuthority } from '../authority/token-authority.js';
import type { AuthContext, RejectReason, VerifyResult } from '../authority/types.js';

/** What `onReject` is told about a refused request. Never the token or the Authorization value. */
export interface RejectInfo {
  /** The request method, as received. */
  method: string;
  /** The request path, without the query string (which may carry secrets of the host's own). */
  path: string;
  /** Why the request was refused; `rotated` tells a script that still uses a regenerated token from a forgery. */
  reason: RejectReason;
  /**
   * The client's address as the socket reports it (`'127.0.0.1'`, `'::1'`), for the host's log or rate limit;
   * `undefined` when the socket is already closed, and with `launcher-auth/fetch` unless the host passes it.
   */
  remoteAddress: string | undefined;
}

/** Where a request came from: a node:http socket, or what a fetch runtime tells the host. Read only on a refusal. */
export interface Peer {
  readonly remoteAddress?: string | undefined;
}

/** Options every adapter takes. */
export interface AuthOptions {
  /**
   * The one path that `GET` and `HEAD` may reach without a token, compared with the request target as
   * received (exact spelling, query string allowed). `false` exempts nothing.
   * @default '/health'
   */
  healthPath?: string | false;
  /**
   * Called for every refused request, before the 401 is sent: for the host's logging or rate limiting.
   * An exception it throws is ignored so the answer stays the same 401.
   * @default undefined
   */
  onReject?: (info: RejectInfo) => void;
  /**
   * The realm of the challenge every 401 carries, `WWW-Authenticate: Bearer realm="<realm>"` (RFC 6750 §3: the
   * scheme is followed by at least one auth-param, and parsers that follow it refuse a bare `Bearer`). 1 to 128
   * visible ASCII characters (inner spaces allowed), without `"` or `\`, so that it is a quoted-string as it stands.
   * @default 'launcher'
   */
  realm?: string;
  /**
   * Lets pages of the listed origins call the API from a browser: the adapter answers their preflights itself
   * and adds the CORS headers to its 401s and to the requests it passes. A preflight from any other origin gets
   * the 401 (`onReject` reason `missing`: a preflight never carries the token).
   * @default undefined (no CORS header is ever sent)
   */
  cors?: CorsOptions;
}

/** Options after validation, with the 401 built once for them. */
export interface ResolvedAuthOptions {
  readonly healthPath: string | false;
  readonly onReject: ((info: RejectInfo) => void) | undefined;
  /** The 401's headers as an object, for a Web `Response`. */
  readonly unauthorizedHeaders: Readonly<Record<string, string>>;
  /**
   * The same headers as a flat list, for `writeHead`: Node stores a list as it is, where an object costs it a walk
   * over its keys (about a sixth of a microsecond per 401). Frozen: writeHead only reads it.
   */
  readonly unauthorizedHeaderList: string[];
  /** The same answer written raw on a socket, for a refused upgrade (WebSocket) request. */
  readonly unauthorizedRaw: string;
  /** CORS, when the `cors` option is set: its answers built once, from the 401 above. */
  readonly cors?: ResolvedCors | undefined;
}

/** The 401 every adapter sends, for every failure: no body and nothing that tells the failures apart. */
export const UNAUTHORIZED_STATUS = 401;

/** The decision for a request that needs no token: the health check. */
export const EXEMPT: unique symbol = Symbol('launcher-auth.exempt');
export type Decision = typeof EXEMPT | AuthContext | undefined;

/** A quoted-string's content that needs no escaping (RFC 9110 §5.6.4 qdtext, ASCII only). */
const REALM = /^[\x21\x23-\x5b\x5d-\x7e](?:[\x20\x21\x23-\x5b\x5d-\x7e]{0,126}[\x21\x23-\x5b\x5d-\x7e])?$/;
const DEFAULT_REALM = 'launcher';

/** The 401's headers and raw form for `realm`: built once per options, never per request. */
function unauthorized(realm: string) {
  const challenge = `Bearer realm="${realm}"`;
  return {
    unauthorizedHeaders: Object.freeze({ 'www-authenticate': challenge, 'content-length': '0' }),
    unauthorizedHeaderList: Object.freeze(['WWW-Authenticate', challenge, 'Content-Length', '0']) as string[],
    unauthorizedRaw: `HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: ${challenge}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
  };
}

const DEFAULTS: ResolvedAuthOptions = Object.freeze({
  healthPath: '/health',
  onReject: undefined,
  ...unauthorized(DEFAULT_REALM),
});

/** Validates adapter options once, at construction: a `TypeError` names the wrong option. */
export function resolveAuthOptions(options: AuthOptions | undefined, where: string): ResolvedAuthOptions {
  if (options === undefined) return DEFAULTS;
  if (typeof options !== 'object' || options === null) throw new TypeError(`${where}: options must be an object.`);
  const { healthPath = '/health', onReject, realm = DEFAULT_REALM } = options;
  if (
    healthPath !== false &&
    (typeof healthPath !== 'string' || !/^\/[\x21-\x7e]*$/.test(healthPath) || /[?#]/.test(healthPath))
  ) {
    throw new TypeError(
      `${where}: \`healthPath\` must be false or a path that starts with "/" and has no spaces, "?" or "#".`,
    );
  }
  if (onReject !== undefined && typeof onReject !== 'function') {
    throw new TypeError(`${where}: \`onReject\` must be a function when set.`);
  }
  if (typeof realm !== 'string' || !REALM.test(realm)) {
    throw new TypeError(
      `${where}: \`realm\` must be 1 to 128 visible ASCII characters (inner spaces allowed), without '"' or '\\'.`,
    );
  }
  const answers = unauthorized(realm);
  const cors = resolveCors(options.cors, where, answers.unauthorizedHeaderList);
  return Object.freeze({ healthPath, onReject, ...answers, cors });
}

/** The headers of the 401 for a request: the uniform ones, plus CORS's for an allowed origin. */
export function unauthorizedHeaderList(options: ResolvedAuthOptions, cors: CorsOutcome | undefined): string[] {
  return cors?.unauthorized ?? options.unauthorizedHeaderList;
}

/**
 * True when an `Upgrade` field value (RFC 9110 §7.8: a list such as `h2c, websocket/13`) names a protocol of
 * `accepted` (lower-case names, compared without their `/version` and in any letter case). Such a request asks
 * for a long-lived connection: it is never the health check, whatever its path.
 */
export function namesAcceptedUpgrade(value: string, accepted: ReadonlySet<string>): boolean {
  for (const item of value.split(',')) {
    // A split with a limit of 1 gives exactly one item.
    const [name] = item.split('/', 1) as [string];
    if (accepted.has(name.trim().toLowerCase())) return true;
  }
  return false;
}

/** The options with nothing exempt, for upgrade requests: built once per options, never per request. */
export function withoutExemption(options: ResolvedAuthOptions): ResolvedAuthOptions {
  return Object.freeze({ ...options, healthPath: false });
}

/** The `health` option of an adapter that serves the health check itself: a function, or absent. */
export function healthHandler<H extends (...args: never[]) => unknown>(
  health: H | undefined,
  where: string,
): H | undefined {
  if (health !== undefined && typeof health !== 'function') {
    throw new TypeError(`${where}: \`health\` must be a function when set.`);
  }
  return health;
}

/**
 * Exactly `GET` or `HEAD` of exactly the health path, with or without a query string. Every other spelling
 * (`/health/`, `/HEALTH`, `//health`, `/health;x`, `%2F`, dot segments, absolute form) is not exempt.
 */
export function isHealthRequest(
  method: string | undefined,
  target: string | undefined,
  healthPath: string | false,
): boolean {
  if (healthPath === false || (method !== 'GET' && method !== 'HEAD') || typeof target !== 'string') return false;
  if (!target.startsWith(healthPath)) return false;
  return target.length === healthPath.length || target.charCodeAt(healthPath.length) === 0x3f; // '?'
}

function reject(
  method: string | undefined,
  target: string | undefined,
  reason: RejectReason,
  options: ResolvedAuthOptions,
  peer: Peer | undefined,
): undefined {
  if (options.onReject !== undefined) {
    // A split with a limit of 1 gives exactly one item.
    const [path] = typeof target === 'string' ? (target.split('?', 1) as [string]) : [''];
    try {
      options.onReject({
        method: typeof method === 'string' ? method : '',
        path,
        reason,
        remoteAddress: peer?.remoteAddress,
      });
    } catch {
      // The host's hook failed; the answer must still be the uniform 401.
    }
  }
  return undefined;
}

function settle(result: VerifyResult, request: GateRequest, options: ResolvedAuthOptions): Decision {
  if (result.ok) return result;
  reject(request.method, request.target, result.reason, options, request.peer);
  return undefined;
}

/** One request as an adapter hands it to {@link decide}. */
export interface GateRequest {
  readonly method: string | undefined;
  /** The request target (path and query) as the client sent it. */
  readonly target: string | undefined;
  /** The Authorization value, or every line of it (Node's `headersDistinct`), so that two lines are refused. */
  readonly authorization: string | readonly string[] | undefined;
  /** The route the framework matched, where it reports one (Fastify): the exemption then needs it to be the health path. */
  readonly route?: string | undefined;
  /** The socket, read only when the request is refused, for `onReject`. */
  readonly peer?: Peer | undefined;
}

/**
 * The decision for one request: {@link EXEMPT} for the health check, the `AuthContext` to attach when the token
 * is good, `undefined` to answer {@link UNAUTHORIZED_STATUS}. Synchronous whenever no signature needs jose
 * (the current token, every cheap rejection), so an adapter can go on in the same tick. An adapter whose
 * framework reports the route that matched passes it as `route`: the exemption then also needs that route to
 * be the health path, so no other handler can be reached without a token.
 */
export function decide(
  authority: TokenAuthority,
  request: GateRequest,
  options: ResolvedAuthOptions,
): Decision | Promise<Decision> {
  const { method, target, route } = request;
  if (isHealthRequest(method, target, options.healthPath) && (route === undefined || route === options.healthPath)) {
    return EXEMPT;
  }
  const result = authority[authenticateNow](request.authorization);
  if (result instanceof Promise) return result.then((settled) => settle(settled, request, options));
  return settle(result, request, options);
}

/**
 * What CORS asks of the adapter for this request (see {@link corsFor}); `undefined` when the `cors` option is off. Call it before {@link decide}: when the outcome has an `answer` (a preflight), write that
 * and stop. A refused preflight is reported to `onReject` here.
 */
export function decideCors(
  method: string | undefined,
  target: string | undefined,
  headers: readonly string[] | Headers,
  options: ResolvedAuthOptions,
  peer?: Peer,
): CorsOutcome | undefined {
  if (options.cors === undefined) return undefined;
  const outcome = corsFor(options.cors, method, headers);
  if (outcome.refused) reject(method, target, 'missing', options, peer);
  return outcome;
}

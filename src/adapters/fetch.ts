// launcher-auth/fetch: for Web Request/Response servers (Hono, Bun, Deno, Next.js route handlers, Workers).
import {
  EXEMPT,
  UNAUTHORIZED_STATUS,
  assertAuthority,
  decide,
  decideCors,
  resolveAuthOptions,
  type AuthOptions,
  type Decision,
  type Peer,
} from '../core/gate.js';
import { corsFor, type CorsOptions } from '../core/cors.js';
import type { TokenAuthority } from '../core/token-authority.js';
import type { AuthContext } from '../core/types.js';

export type { AuthContext, AuthOptions, CorsOptions, Peer };
export type { RejectInfo } from '../core/gate.js';

/** What {@link fetchAuth}'s guard resolves with: the 401 to return, the context, or `undefined` for the health check. */
export type FetchAuthResult = Response | AuthContext | undefined;

/**
 * The request target (path and query) of a Request. The platform has already parsed the URL, so dot segments
 * are resolved before this adapter sees them; the router sees the same URL, so such a request can only reach
 * the health handler.
 */
function targetOf(url: string): string {
  const scheme = url.indexOf('://');
  const slash = url.indexOf('/', scheme < 0 ? 0 : scheme + 3);
  if (slash < 0) return '/';
  const hash = url.indexOf('#', slash);
  return hash < 0 ? url.slice(slash) : url.slice(slash, hash);
}

/** A flat header list (name, value, …) as `HeadersInit`. */
function pairs(list: readonly string[]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let i = 0; i < list.length; i += 2) out.push([list[i] as string, list[i + 1] as string]);
  return out;
}

function outcome(decision: Decision, headers: HeadersInit): FetchAuthResult {
  if (decision === undefined) return new Response(null, { status: UNAUTHORIZED_STATUS, headers });
  return decision === EXEMPT ? undefined : decision;
}

/** The guard {@link fetchAuth} makes. */
export interface FetchGuard {
  /**
   * Resolves with the 401 or the answer to a preflight (a `Response` to return as is), the `AuthContext` of an
   * authenticated request, or `undefined` for the health check. `peer` is the client's address for `onReject`.
   */
  (request: Request, peer?: Peer): Promise<FetchAuthResult>;
  /**
   * With the `cors` option: adds the CORS headers for `request`'s origin to the `response` of a request that
   * passed, so that the page can read it (a `fetch()` response's headers are immutable: then a copy is
   * returned); for an origin not allowed, or none, only `Vary: Origin`. Without `cors`, returns `response`
   * unchanged.
   */
  cors(request: Request, response: Response): Response;
}

/**
 * Makes a guard for Web `Request`s: it resolves with a 401 `Response` (empty body) to return as is, with the
 * `AuthContext` of an authenticated request, or with `undefined` for `GET`/`HEAD` of the health path.
 * A Web `Request` does not carry the client's address: pass what the runtime offers as `peer` for `onReject`
 * (Bun: `server.requestIP(request)?.address`; Deno: `info.remoteAddr.hostname`; @hono/node-server:
 * `c.env.incoming.socket.remoteAddress`); without it `onReject` gets `remoteAddress: undefined`.
 *
 * @example
 * const guard = fetchAuth(authority);
 * const result = await guard(request);
 * if (result instanceof Response) return result;
 */
export function fetchAuth(
  authority: TokenAuthority,
  options?: AuthOptions,
): FetchGuard {
  assertAuthority(authority, 'fetchAuth');
  const resolved = resolveAuthOptions(options, 'fetchAuth');
  const guard = async (request: Request, peer?: Peer): Promise<FetchAuthResult> => {
    const target = targetOf(request.url);
    const cors = decideCors(request.method, target, request.headers, resolved, peer);
    if (cors?.answer !== undefined) {
      return new Response(null, { status: cors.answer.status, headers: pairs(cors.answer.headers) });
    }
    const authorization = request.headers.get('authorization') ?? undefined;
    const decision = await decide(authority, request.method, target, authorization, resolved, undefined, peer);
    return outcome(decision, cors === undefined ? resolved.unauthorizedHeaders : pairs(cors.unauthorized));
  };
  const cors = (request: Request, response: Response): Response => {
    const found = resolved.cors === undefined ? undefined : corsFor(resolved.cors, request.method, request.headers);
    if (found === undefined || found.answer !== undefined || found.pass.length === 0) return response;
    const add = (target: Response): Response => {
      const list = found.pass;
      for (let i = 0; i < list.length; i += 2) {
        const name = list[i] as string;
        // The host's own Vary stays: Origin is added to it, once.
        if (name === 'Vary') {
          if (!/(?:^|,)\s*origin\s*(?:,|$)/i.test(target.headers.get('vary') ?? '')) target.headers.append(name, 'Origin');
        }
        else target.headers.set(name, list[i + 1] as string);
      }
      return target;
    };
    try {
      return add(response);
    } catch {
      // Immutable headers (a response from fetch()); the first set threw, so nothing was changed.
      return add(new Response(response.body, response));
    }
  };
  return Object.assign(guard, { cors });
}

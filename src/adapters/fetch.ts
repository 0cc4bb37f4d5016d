// launcher-auth/fetch: for Web Request/Response servers (Hono, Bun, Deno, Next.js route handlers, Workers).
import {
  EXEMPT,
  UNAUTHORIZED_STATUS,
  assertAuthority,
  decide,
  resolveAuthOptions,
  type AuthOptions,
  type Decision,
  type ResolvedAuthOptions,
} from '../core/gate.js';
import type { TokenAuthority } from '../core/token-authority.js';
import type { AuthContext } from '../core/types.js';

export type { AuthContext, AuthOptions };
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

function outcome(decision: Decision, resolved: ResolvedAuthOptions): FetchAuthResult {
  if (decision === undefined) return new Response(null, { status: UNAUTHORIZED_STATUS, headers: resolved.unauthorizedHeaders });
  return decision === EXEMPT ? undefined : decision;
}

/**
 * Makes a guard for Web `Request`s: it resolves with a 401 `Response` (empty body) to return as is, with the
 * `AuthContext` of an authenticated request, or with `undefined` for `GET`/`HEAD` of the health path.
 *
 * @example
 * const guard = fetchAuth(authority);
 * const result = await guard(request);
 * if (result instanceof Response) return result;
 */
export function fetchAuth(
  authority: TokenAuthority,
  options?: AuthOptions,
): (request: Request) => Promise<FetchAuthResult> {
  assertAuthority(authority, 'fetchAuth');
  const resolved = resolveAuthOptions(options, 'fetchAuth');
  return async (request) => {
    const authorization = request.headers.get('authorization') ?? undefined;
    return outcome(await decide(authority, request.method, targetOf(request.url), authorization, resolved), resolved);
  };
}

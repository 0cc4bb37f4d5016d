// launcher-auth/fetch: for Web Request/Response servers (Bun, Deno, Next.js route handlers, Workers); a Hono app uses
// launcher-auth/hono.
import type { AuthOptions, Peer } from '../gate/gate.js';
import type { CorsOptions } from '../gate/cors.js';
import type { TokenAuthority } from '../authority/token-authority.js';
import type { AuthContext } from '../authority/types.js';
import { webGuard, type WebAuthResult } from './shared/web.js';

export type { AuthContext, AuthOptions, CorsOptions, Peer };
export type { RejectInfo } from '../gate/gate.js';

/** What {@link fetchAuth}'s guard resolves with: the 401 to return, the context, or `undefined` for the health check. */
export type FetchAuthResult = WebAuthResult;

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
export function fetchAuth(authority: TokenAuthority, options?: AuthOptions): FetchGuard {
  const web = webGuard(authority, options, 'fetchAuth');
  const guard = (request: Request, peer?: Peer): Promise<FetchAuthResult> => web.check(request, peer);
  const cors = (request: Request, response: Response): Response => {
    const list = web.corsPass(request);
    if (list === undefined) return response;
    const add = (target: Response): Response => {
      for (let i = 0; i < list.length; i += 2) {
        const name = list[i] as string;
        // The host's own Vary stays: Origin is added to it, once.
        if (name === 'Vary') {
          if (!/(?:^|,)\s*origin\s*(?:,|$)/i.test(target.headers.get('vary') ?? ''))
            target.headers.append(name, 'Origin');
        } else target.headers.set(name, list[i + 1] as string);
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

// The guard of the adapters for Web `Request`s (launcher-auth/fetch, launcher-auth/hono): one request in, a 401
// or preflight `Response`, the `AuthContext`, or `undefined` for the health check out. Not an entry of its own.
import {
  EXEMPT,
  UNAUTHORIZED_STATUS,
  assertAuthority,
  decide,
  decideCors,
  resolveAuthOptions,
  namesAcceptedUpgrade,
  withoutExemption,
  type AuthOptions,
  type Decision,
  type Peer,
  type ResolvedAuthOptions,
} from '../../gate/gate.js';
import { corsFor } from '../../gate/cors.js';
import type { TokenAuthority } from '../../authority/token-authority.js';
import type { AuthContext } from '../../authority/types.js';

/** What a Web guard resolves with: the answer to return as is, the context, or `undefined` for the health check. */
export type WebAuthResult = Response | AuthContext | undefined;

export interface WebGuard {
  readonly options: ResolvedAuthOptions;
  /**
   * `authorization`, when given, is what the wire carried (a Node server's `rawHeaders`), in place of the
   * Request's header, which a server may have built from deduplicated headers.
   */
  check(request: Request, peer: Peer | undefined, authorization?: string | readonly string[]): Promise<WebAuthResult>;
  /** The CORS headers (name, value, …) for a request that passed, or `undefined` when there are none. */
  corsPass(request: Request): readonly string[] | undefined;
}

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

function outcome(decision: Decision, headers: HeadersInit): WebAuthResult {
  if (decision === undefined) return new Response(null, { status: UNAUTHORIZED_STATUS, headers });
  return decision === EXEMPT ? undefined : decision;
}

const WEBSOCKET: ReadonlySet<string> = new Set(['websocket']);

/** True for a WebSocket handshake: its `Upgrade` names `websocket`. */
export function asksWebSocket(headers: Headers): boolean {
  const upgrade = headers.get('upgrade');
  return upgrade !== null && namesAcceptedUpgrade(upgrade, WEBSOCKET);
}

/** Validates `options` (a `TypeError` names `where`) and makes the guard. */
export function webGuard(authority: TokenAuthority, options: AuthOptions | undefined, where: string): WebGuard {
  assertAuthority(authority, where);
  const resolved = resolveAuthOptions(options, where);
  // A WebSocket handshake reaches the same handler chain as any request (Bun's server.upgrade, Deno's
  // upgradeWebSocket, Hono's helper): it opens a connection, so it is never the health check.
  const upgrades = withoutExemption(resolved);
  const check = async (
    request: Request,
    peer: Peer | undefined,
    authorization: string | readonly string[] | undefined = request.headers.get('authorization') ?? undefined,
  ): Promise<WebAuthResult> => {
    const target = targetOf(request.url);
    const cors = decideCors(request.method, target, request.headers, resolved, peer);
    if (cors?.answer !== undefined) {
      return new Response(null, { status: cors.answer.status, headers: pairs(cors.answer.headers) });
    }
    const rules = asksWebSocket(request.headers) ? upgrades : resolved;
    const decision = await decide(authority, { method: request.method, target, authorization, peer }, rules);
    return outcome(decision, cors === undefined ? resolved.unauthorizedHeaders : pairs(cors.unauthorized));
  };
  const corsPass = (request: Request): readonly string[] | undefined => {
    const found = resolved.cors === undefined ? undefined : corsFor(resolved.cors, request.method, request.headers);
    return found === undefined || found.answer !== undefined || found.pass.length === 0 ? undefined : found.pass;
  };
  return { options: resolved, check, corsPass };
}

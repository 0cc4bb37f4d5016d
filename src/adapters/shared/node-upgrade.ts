// launcher-auth/node, upgrades: guards the 'upgrade' requests of the protocols the host serves (WebSocket), and
// hands every other upgrade (`Upgrade: h2c` from curl --http2 or Java's HttpClient) back to the server as the
// ordinary request it also is (RFC 9110 §7.8: a server may ignore an upgrade it does not support).
import type { IncomingMessage } from 'node:http';
import { Server as NetServer } from 'node:net';
import type { Duplex } from 'node:stream';
import { TLSSocket } from 'node:tls';
import { HTTP_TOKEN, authorizationFromRawHeaders } from '../../authority/bearer.js';
import {
  assertAuthority,
  decide,
  resolveAuthOptions,
  namesAcceptedUpgrade,
  withoutExemption,
  type AuthOptions,
  type Decision,
  type ResolvedAuthOptions,
} from '../../gate/gate.js';
import {
  handshakeOfNode,
  protocolCredentials,
  protocolsFromRawHeaders,
  resolveSubprotocolToken,
  stripTokenEntry,
  type SubprotocolTokenOptions,
} from '../../gate/subprotocol.js';
import type { TokenAuthority } from '../../authority/token-authority.js';
import type { AuthContext } from '../../authority/types.js';

/** A request that came with a valid token (node.ts's `AuthenticatedRequest`, which imports this file). */
type Authenticated<Request> = Request & { auth: AuthContext };

/** The options of {@link withUpgradeAuth}. */
export interface UpgradeAuthOptions extends AuthOptions, SubprotocolTokenOptions {
  /**
   * The protocols (`Upgrade` tokens, compared without their `/version` and in any letter case) that the handler
   * serves. An upgrade that names none of them is not this handler's: it goes back to the server that emitted
   * `'upgrade'` as an ordinary request (without its `Upgrade` header, and with `Connection: close`), so the
   * server's request listener (the handler wrapped by `withAuth`) answers it, token rules included.
   * @default ['websocket']
   */
  protocols?: readonly string[];
}

/** How long a refused upgrade's socket may stay open when its 401 cannot be flushed: a client that never reads. */
export const REFUSED_UPGRADE_LINGER_MS = 1_000;

const DEFAULT_PROTOCOLS: readonly string[] = ['websocket'];

function destroyOnError(this: Duplex): void {
  this.destroy();
}

function resolveProtocols(options: UpgradeAuthOptions | undefined): ReadonlySet<string> {
  const protocols = options?.protocols ?? DEFAULT_PROTOCOLS;
  if (
    !Array.isArray(protocols) ||
    protocols.length === 0 ||
    !protocols.every((p) => typeof p === 'string' && HTTP_TOKEN.test(p))
  ) {
    throw new TypeError(
      'withUpgradeAuth: `protocols` must be a non-empty array of protocol names such as "websocket".',
    );
  }
  return new Set(protocols.map((p: string) => p.toLowerCase()));
}

/** True when one of the request's `Upgrade` values names a protocol of `accepted`. */
function wantsAccepted(rawHeaders: readonly string[], accepted: ReadonlySet<string>): boolean {
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (
      (rawHeaders[i] as string).toLowerCase() === 'upgrade' &&
      namesAcceptedUpgrade(rawHeaders[i + 1] as string, accepted)
    )
      return true;
  }
  return false;
}

/**
 * True while node:http still writes the response of an earlier request on this connection (pipelined): its
 * server keeps that in the socket's `_httpMessage`, as it has since Node 0.x.
 */
function inFlight(socket: Duplex): boolean {
  return Boolean((socket as { _httpMessage?: unknown })._httpMessage);
}

// A socket is handed back at most once: the relayed request closes its connection, so no second upgrade can
// follow on it; one that does anyway (pipelined) is dropped rather than relayed again.
const relayed = new WeakSet<Duplex>();

/**
 * Hands the request back to `server` as the ordinary request it also is: the head rebuilt as received, without
 * `Upgrade` and `Connection` lines and with `Connection: close`, and the bytes after it, go back into the
 * socket, which the server then parses as a new connection. False when that cannot be done safely.
 */
function relay(server: unknown, req: IncomingMessage, socket: Duplex, head: Buffer): boolean {
  if (!(server instanceof NetServer) || relayed.has(socket)) return false;
  // A response of an earlier (pipelined) request still being written: a second parser would wait behind it forever.
  if (inFlight(socket)) return false;
  const lines = [`${req.method ?? 'GET'} ${req.url ?? '/'} HTTP/${req.httpVersion}`];
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = (raw[i] as string).toLowerCase();
    if (name !== 'upgrade' && name !== 'connection') lines.push(`${raw[i] as string}: ${raw[i + 1] as string}`);
  }
  lines.push('Connection: close', '', '');
  relayed.add(socket);
  socket.off('error', destroyOnError);
  socket.unshift(Buffer.concat([Buffer.from(lines.join('\r\n'), 'latin1'), head]));
  // http.Server parses plain sockets on 'connection'; https.Server on 'secureConnection', once TLS is up.
  server.emit(socket instanceof TLSSocket ? 'secureConnection' : 'connection', socket);
  return true;
}

/** Writes the raw 401, then closes the socket once it is flushed, or after the linger bound, whatever the client does. */
function refuse(socket: Duplex, answer: string): void {
  const timer = setTimeout(() => socket.destroy(), REFUSED_UPGRADE_LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
  // Read and drop what the client still sends, so that closing does not reset the connection before it has
  // read the answer (RFC 9112 §9.6); a half-open client is cut off once the answer is out.
  socket.resume();
  socket.end(answer, () => socket.destroy());
}

/**
 * Wraps a server's `'upgrade'` handler (WebSocket): an authenticated upgrade to one of `protocols` reaches
 * `handler` with `req.auth` set; any other gets a raw `HTTP/1.1 401 Unauthorized` with an empty body, and the
 * socket is destroyed as soon as that is flushed (within {@link REFUSED_UPGRADE_LINGER_MS} at most). No such
 * upgrade is exempt, not even one to the health path: the exemption is for the host's health handler.
 * `healthPath` is validated but has no effect here. An upgrade to another protocol (`h2c`) is served as an
 * ordinary request by the server it came in on (see {@link UpgradeAuthOptions.protocols}); register the result
 * with `server.on('upgrade', …)` so that it knows that server.
 */
export function withUpgradeAuth<Request extends IncomingMessage = IncomingMessage>(
  authority: TokenAuthority,
  handler: (req: Authenticated<Request>, socket: Duplex, head: Buffer) => void,
  options?: UpgradeAuthOptions,
): (req: Request, socket: Duplex, head: Buffer) => void {
  assertAuthority(authority, 'withUpgradeAuth');
  if (typeof handler !== 'function') throw new TypeError('withUpgradeAuth: `handler` must be a function.');
  const resolved: ResolvedAuthOptions = withoutExemption(resolveAuthOptions(options, 'withUpgradeAuth'));
  const accepted = resolveProtocols(options);
  const subprotocolToken = resolveSubprotocolToken(options, 'withUpgradeAuth');

  const apply = (req: Request, socket: Duplex, head: Buffer, decision: Decision): void => {
    if (decision === undefined) {
      refuse(socket, resolved.unauthorizedRaw);
      return;
    }
    socket.off('error', destroyOnError);
    // Never EXEMPT: healthPath is false here.
    const authed = req as Authenticated<Request>;
    authed.auth = decision as AuthContext;
    handler(authed, socket, head);
  };

  // A function, not an arrow: as a listener it is called with the server that emitted 'upgrade' as `this`.
  return function upgradeListener(this: unknown, req, socket, head) {
    // Node hands the socket over without an error listener: until it reaches the handler (or while it is
    // being refused), an error on it must not become an uncaught exception.
    socket.on('error', destroyOnError);
    if (!wantsAccepted(req.rawHeaders, accepted)) {
      const server = this instanceof NetServer ? this : (socket as { server?: unknown }).server;
      if (relay(server, req, socket, head)) return;
      // Nowhere to serve it as an ordinary request: refused as any unauthenticated upgrade would be, or, when an
      // answer cannot be written in order (see relay), closed without one.
      if (relayed.has(socket) || inFlight(socket)) socket.destroy();
      else refuse(socket, resolved.unauthorizedRaw);
      return;
    }
    let authorization: string | readonly string[] | undefined = authorizationFromRawHeaders(req.rawHeaders);
    if (subprotocolToken) {
      const offered = protocolCredentials(
        handshakeOfNode(req.method, req.rawHeaders),
        authorization,
        protocolsFromRawHeaders(req.rawHeaders),
      );
      authorization = offered.authorization;
      if (offered.protocols !== undefined) stripTokenEntry(req, offered.protocols);
    }
    const decision = decide(
      authority,
      { method: req.method, target: req.url, authorization, peer: req.socket },
      resolved,
    );
    if (decision instanceof Promise) void decision.then((settled) => apply(req, socket, head, settled));
    else apply(req, socket, head, decision);
  };
}

// The token carried as one `Sec-WebSocket-Protocol` entry (`authorization.bearer.<token>`), for browser WebSocket
// clients, which cannot send an Authorization header. Parsing and the ambiguity rules live here; an adapter only
// reads the header values, hands the result's `authorization` to `decide`, and strips the entry from the request.
import { HTTP_TOKEN } from '../authority/bearer.js';
import { namesAcceptedUpgrade } from './gate.js';

/** The prefix of the entry that carries the token: `new WebSocket(url, ['app.v1', TOKEN_PROTOCOL_PREFIX + token])`. */
export const TOKEN_PROTOCOL_PREFIX = 'authorization.bearer.';

const PREFIX_LENGTH = TOKEN_PROTOCOL_PREFIX.length;
const HEADER = 'sec-websocket-protocol';

/** The options of the adapters that guard WebSocket upgrades. */
export interface SubprotocolTokenOptions {
  /**
   * Also accepts the token as one `Sec-WebSocket-Protocol` entry `authorization.bearer.<token>`, the only place a
   * browser's `new WebSocket(url, protocols)` lets a page put it. The same rules as the header: the current
   * token only, the same 401 otherwise; a request with both an Authorization header and such an entry, or with
   * two such entries, is refused (`malformed`). The entry (matched in any letter case) is removed from the
   * request before the handler sees it, so it never reaches the host's protocol choice, the answer or a log;
   * the page must offer at least one protocol of the host's beside it, since a browser fails a handshake whose
   * answer names none of the protocols it offered. The entry counts in a WebSocket handshake only (`GET`,
   * `Connection: Upgrade`, `Upgrade: websocket`); any other request is judged by its Authorization header alone.
   * `honoAuth` throws a `TypeError` for it on Bun and Deno, where the entry could not be removed.
   * @default false
   */
  subprotocolToken?: boolean;
}

/** Validates the option at construction. */
export function resolveSubprotocolToken(options: SubprotocolTokenOptions | undefined, where: string): boolean {
  const value = options?.subprotocolToken ?? false;
  if (typeof value !== 'boolean') throw new TypeError(`${where}: \`subprotocolToken\` must be a boolean when set.`);
  return value;
}

/** What an upgrade request offers once its protocol entries are read. */
export interface ProtocolCredentials {
  /** What to pass to `decide` as the Authorization value(s). */
  readonly authorization: string | readonly string[] | undefined;
  /**
   * The entries left for the host, in the order offered, when a token entry was found and must be stripped from
   * the request; `undefined` when there was none (the request stays as it is).
   */
  readonly protocols: readonly string[] | undefined;
}

/** A header's values as an adapter finds them: one string, one per line, or none. */
export type HeaderValues = string | readonly string[] | null | undefined;

/** What makes a request a WebSocket handshake (RFC 6455 §4.1): its method, `Connection` and `Upgrade`. */
export interface HandshakeParts {
  readonly method: string | undefined;
  readonly connection: HeaderValues;
  readonly upgrade: HeaderValues;
}

const WEBSOCKET: ReadonlySet<string> = new Set(['websocket']);
const UPGRADE: ReadonlySet<string> = new Set(['upgrade']);

function names(values: HeaderValues, accepted: ReadonlySet<string>): boolean {
  if (typeof values === 'string') return namesAcceptedUpgrade(values, accepted);
  if (values === null || values === undefined) return false;
  // A framework's loosely typed request may hold something else than a string: it names nothing.
  return values.some((value) => typeof value === 'string' && namesAcceptedUpgrade(value, accepted));
}

/**
 * True for a WebSocket handshake only: `GET`, `Connection` naming `upgrade`, `Upgrade` naming `websocket`. The
 * token entry counts there and nowhere else: any other request is judged by its Authorization header alone.
 */
export function isWebSocketHandshake(parts: HandshakeParts): boolean {
  return parts.method === 'GET' && names(parts.connection, UPGRADE) && names(parts.upgrade, WEBSOCKET);
}

/** Two credentials where one is expected: `singleValue` refuses it as `malformed`, whatever they hold. */
const AMBIGUOUS: readonly string[] = Object.freeze(['', '']);
/** An entry that is not a well-formed token: refused as `malformed` by `bearerToken`. */
const MALFORMED = '';

function isTokenEntry(entry: string): boolean {
  return entry.slice(0, PREFIX_LENGTH).toLowerCase() === TOKEN_PROTOCOL_PREFIX;
}

function present(authorization: string | readonly string[] | undefined): boolean {
  return authorization !== undefined && !(Array.isArray(authorization) && authorization.length === 0);
}

/**
 * Reads the request's `Sec-WebSocket-Protocol` values (one per header line, each a comma-separated list) and its
 * Authorization value(s). Without a token entry the Authorization value goes on unchanged. With one, it becomes
 * the credential, unless the Authorization header is there too or a second token entry is (ambiguous). A request
 * that is not a WebSocket handshake ({@link isWebSocketHandshake}) keeps its Authorization value and its entries:
 * every adapter that offers the entry asks this one function, so none can take it elsewhere.
 */
export function protocolCredentials(
  request: HandshakeParts,
  authorization: string | readonly string[] | undefined,
  protocolValues: string | readonly string[] | undefined,
): ProtocolCredentials {
  if (protocolValues === undefined || !isWebSocketHandshake(request)) return { authorization, protocols: undefined };
  const values = typeof protocolValues === 'string' ? [protocolValues] : protocolValues;
  const protocols: string[] = [];
  const tokens: string[] = [];
  for (const value of values) {
    // Something else than a string (a loosely typed request) holds no entry.
    if (typeof value !== 'string') continue;
    for (const item of value.split(',')) {
      const entry = item.trim();
      if (entry === '') continue;
      if (!isTokenEntry(entry)) {
        protocols.push(entry);
        continue;
      }
      tokens.push(entry.slice(PREFIX_LENGTH));
    }
  }
  if (tokens.length === 0) return { authorization, protocols: undefined };
  if (tokens.length > 1 || present(authorization)) return { authorization: AMBIGUOUS, protocols };
  const token = tokens[0] as string;
  // A JWT is base64url segments and dots, all HTTP token characters; anything else is not a token entry.
  const credential = HTTP_TOKEN.test(token) ? `Bearer ${token}` : MALFORMED;
  return { authorization: credential, protocols };
}

/** The values of header `name` (lower case) in a flat header list (Node's `rawHeaders`), `undefined` when none. */
export function valuesFromRawHeaders(rawHeaders: readonly string[], name: string): string[] | undefined {
  let found: string[] | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if ((rawHeaders[i] as string).toLowerCase() === name) (found ??= []).push(rawHeaders[i + 1] as string);
  }
  return found;
}

/** The `Sec-WebSocket-Protocol` values of a flat header list (Node's `rawHeaders`), `undefined` when none. */
export function protocolsFromRawHeaders(rawHeaders: readonly string[]): string[] | undefined {
  return valuesFromRawHeaders(rawHeaders, HEADER);
}

/** The handshake parts of a Node request, read from every header line as received. */
export function handshakeOfNode(method: string | undefined, rawHeaders: readonly string[]): HandshakeParts {
  return {
    method,
    connection: valuesFromRawHeaders(rawHeaders, 'connection'),
    upgrade: valuesFromRawHeaders(rawHeaders, 'upgrade'),
  };
}

/**
 * Rewrites a flat header list in place: every `Sec-WebSocket-Protocol` line is removed, and, when `protocols` is
 * not empty, one line with them takes the first one's place. Returns the new value, `undefined` when none is left.
 */
export function replaceProtocolsInRawHeaders(rawHeaders: string[], protocols: readonly string[]): string | undefined {
  const value = protocols.length === 0 ? undefined : protocols.join(', ');
  let placed = false;
  for (let i = 0; i < rawHeaders.length;) {
    if ((rawHeaders[i] as string).toLowerCase() !== HEADER) {
      i += 2;
    } else if (!placed && value !== undefined) {
      rawHeaders[i + 1] = value;
      placed = true;
      i += 2;
    } else {
      rawHeaders.splice(i, 2);
    }
  }
  return value;
}

/** The parts of a Node request (`IncomingMessage`) that hold its headers. */
export interface NodeHeaders {
  readonly rawHeaders: string[];
  readonly headers: Record<string, unknown>;
  readonly headersDistinct: Record<string, unknown>;
}

/**
 * Removes the token entry from a Node request before anything of the host's reads it: `rawHeaders`, `headers` and
 * `headersDistinct`. Node builds the last two from `rawHeaders` on first read, walking as many lines as it
 * parsed, so they are built before `rawHeaders` shrinks and then changed alike.
 */
export function stripTokenEntry(req: NodeHeaders, protocols: readonly string[]): void {
  const { headers, headersDistinct } = req;
  const value = replaceProtocolsInRawHeaders(req.rawHeaders, protocols);
  if (value === undefined) {
    delete headers[HEADER];
    delete headersDistinct[HEADER];
  } else {
    headers[HEADER] = value;
    headersDistinct[HEADER] = [value];
  }
}

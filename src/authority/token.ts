// The token's shape: how the launcher's token is built from a record, and the cheap checks that refuse a
// string before jose is asked (syntax, canonical base64url, an HMAC of the signing input, the header).
import { createHmac, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { RejectReason, SecretRecord } from './types.js';

/** Length of the base64url text of an HMAC-SHA256 signature (32 bytes, unpadded). */
const SIGNATURE_LENGTH = 43;

// base64url alphabet value of each ASCII code, or -1.
const B64URL = new Int8Array(128).fill(-1);
for (let i = 0; i < 64; i++) {
  B64URL['ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'.charCodeAt(i)] = i;
}

/**
 * True when `text[start, end)`, already known to be of the base64url alphabet, is canonical: a length that encodes
 * whole bytes, and zero bits in the unused low bits of the last character, so that decoding and re-encoding gives
 * the same text (RFC 7515 §2, RFC 4648 §3.5).
 */
function hasCanonicalEnd(text: string, start: number, end: number): boolean {
  const tail = (end - start) % 4;
  if (tail === 1) return false;
  const last = B64URL[text.charCodeAt(end - 1)] as number;
  if (tail === 2) return (last & 0x0f) === 0;
  if (tail === 3) return (last & 0x03) === 0;
  return true;
}

/** True when `text[start, end)` is canonical unpadded base64url: only the URL-safe alphabet, and a canonical end. */
export function isCanonicalBase64url(text: string, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    // A code of 128 or more is past the table: undefined, refused like the table's -1.
    if (!((B64URL[text.charCodeAt(i)] as number) >= 0)) return false;
  }
  return hasCanonicalEnd(text, start, end);
}

/**
 * Three non-empty segments of the base64url alphabet, the last as long as an HS256 signature. Without the `u` flag
 * `\w` is exactly `[A-Za-z0-9_]`, and `$` matches only at the very end; the engine scans this about twice as fast
 * as a loop over the characters.
 */
const COMPACT = new RegExp(`^[\\w-]+\\.[\\w-]+\\.[\\w-]{${SIGNATURE_LENGTH}}$`);

/** Where the two dots of a compact JWS are, or `malformed` when the string is not three canonical segments. */
export function splitCompact(token: string): { headerEnd: number; payloadEnd: number } | 'malformed' {
  // Only called on a token no longer than `maxTokenLength`.
  if (!COMPACT.test(token)) return 'malformed';
  const headerEnd = token.indexOf('.');
  const payloadEnd = token.indexOf('.', headerEnd + 1);
  if (
    !hasCanonicalEnd(token, 0, headerEnd) ||
    !hasCanonicalEnd(token, headerEnd + 1, payloadEnd) ||
    !hasCanonicalEnd(token, payloadEnd + 1, token.length)
  ) {
    return 'malformed';
  }
  return { headerEnd, payloadEnd };
}

/** Constant-time check of the HS256 signature with node:crypto: rejects a forgery before jose is asked. */
export function signatureMatches(token: string, payloadEnd: number, key: KeyObject): boolean {
  const expected = createHmac('sha256', key).update(token.slice(0, payloadEnd)).digest();
  // 43 canonical characters (splitCompact) are always the 32 bytes of an HMAC-SHA256.
  return timingSafeEqual(Buffer.from(token.slice(payloadEnd + 1), 'base64url'), expected);
}

function parseObject(segment: string): Record<string, unknown> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
  } catch {
    // Not JSON: `value` stays undefined, which is not an object.
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/**
 * True for a `typ` that names the JWT media type: `JWT` in any letter case, with or without `application/`
 * (RFC 7515 §4.1.9: media types are case-insensitive and the prefix may be omitted; RFC 7519 §5.1).
 */
function isJwtType(typ: unknown): boolean {
  if (typeof typ !== 'string') return false;
  const lower = typ.toLowerCase();
  return lower === 'jwt' || lower === 'application/jwt';
}

/**
 * The header and claims rules jose does not enforce on its own (it checks `alg` itself): a JSON object header,
 * `typ` absent or the JWT media type, no `crit` and no `b64`; a JSON object claims set. Only called on
 * a token whose signature already matched, so only a holder of the key gets this far.
 */
export function checkStructure(token: string, headerEnd: number, payloadEnd: number): RejectReason | undefined {
  const header = parseObject(token.slice(0, headerEnd));
  // `malformed` before `invalid`, as the reasons table in docs/adapters.md orders them.
  if (header === undefined || parseObject(token.slice(headerEnd + 1, payloadEnd)) === undefined) return 'malformed';
  if (Object.hasOwn(header, 'typ') && !isJwtType(header.typ)) return 'invalid';
  if (Object.hasOwn(header, 'crit') || Object.hasOwn(header, 'b64')) return 'invalid';
  return undefined;
}

/** The claims of the launcher's token for a record: `jti`, `iat` and, when set, `iss` and `aud`, in that order. */
export function tokenClaims(
  record: SecretRecord,
  issuer: string | undefined,
  audience?: string,
): Record<string, string | number> {
  const claims: Record<string, string | number> = {
    jti: record.id,
    iat: Math.floor(record.createdAt.getTime() / 1000),
  };
  if (issuer !== undefined) claims.iss = issuer;
  if (audience !== undefined) claims.aud = audience;
  return claims;
}

/**
 * Signs the launcher's token: base64url of the header and of the claims, then HMAC-SHA256 of the two (RFC 7515's
 * compact serialisation, byte for byte what jose's CompactSign writes). HMAC is deterministic and the JSON is
 * written in a fixed order, so one record always yields byte for byte the same token. Synchronous, so that a new
 * key is ready without a trip through the thread pool, which WebCrypto's asynchronous sign takes.
 */
export function signToken(record: SecretRecord, claims: Record<string, string | number>, key: KeyObject): string {
  const header = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT', kid: record.id })).toString('base64url');
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  const signingInput = `${header}.${payload}`;
  return `${signingInput}.${createHmac('sha256', key).update(signingInput).digest('base64url')}`;
}

// Parsing of the Authorization value (RFC 6750 §2.1), kept apart from the JWT checks so each reads alone.
import type { RejectReason } from './types.js';

/** The longest token any `maxTokenLength` allows: what the parsing below never scans past. */
export const MAX_TOKEN_LENGTH = 4096;
/** The shortest `maxTokenLength`: room for a token of this library with a short `issuer` and `audience`. */
const MIN_TOKEN_LENGTH = 512;
/** `maxTokenLength`'s default: several times a token of this library (~170 characters), far below a forgery's 4 KB. */
export const DEFAULT_MAX_TOKEN_LENGTH = 1024;

/** Validates `maxTokenLength` at construction: a `TypeError` names it. */
export function resolveMaxTokenLength(value: unknown, where: string): number {
  if (value === undefined) return DEFAULT_MAX_TOKEN_LENGTH;
  if (!Number.isInteger(value) || (value as number) < MIN_TOKEN_LENGTH || (value as number) > MAX_TOKEN_LENGTH) {
    throw new TypeError(
      `${where}: \`maxTokenLength\` must be a whole number of characters from ${MIN_TOKEN_LENGTH} to ${MAX_TOKEN_LENGTH}.`,
    );
  }
  return value as number;
}

/** An HTTP `token` (RFC 9110 §5.6.2): what a header name, a method or a protocol name is made of. */
export const HTTP_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** At most this many spaces between `Bearer` and the token (RFC 6750 allows any number). */
const MAX_SPACES = 64;

/**
 * A refusal found while parsing the header: the very object `verify()` answers with, made once and frozen, so a
 * refusal allocates nothing. Being an object, it can never be mistaken for a header value or a token that
 * happens to read `missing`.
 */
export interface ParseRefusal {
  readonly ok: false;
  readonly reason: Extract<RejectReason, 'missing' | 'malformed'>;
}

/** No Authorization value at all. */
export const MISSING: ParseRefusal = Object.freeze({ ok: false, reason: 'missing' });
/** Not one well-formed `Bearer <token>` value. */
export const MALFORMED: ParseRefusal = Object.freeze({ ok: false, reason: 'malformed' });

/**
 * The single Authorization value of a request (a string), or a refusal: no value is `missing`; an empty
 * array is `missing`; two or more values are `malformed` (which one would count is ambiguous). The value itself
 * is returned as it is, never wrapped: the current token's path allocates nothing here.
 */
export function singleValue(authorization: string | readonly string[] | undefined): string | ParseRefusal {
  if (typeof authorization === 'string') return authorization;
  if (authorization === undefined || authorization === null) return MISSING;
  if (!Array.isArray(authorization)) return MALFORMED;
  if (authorization.length === 0) return MISSING;
  if (authorization.length !== 1) return MALFORMED;
  const only: unknown = authorization[0];
  return typeof only === 'string' ? only : MALFORMED;
}

/**
 * The Authorization value(s) of a Node request, read from `rawHeaders` as the parser left them: a string for
 * one header, an array for two or more (so they are refused), `undefined` for none. Unlike `req.headers`,
 * which keeps only the first duplicate, this sees every header; unlike `req.headersDistinct`, it builds nothing.
 */
export function authorizationFromRawHeaders(rawHeaders: readonly string[]): string | string[] | undefined {
  let found: string | string[] | undefined;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string;
    if (name.length !== 13 || !isAuthorizationName(name)) continue;
    const value = rawHeaders[i + 1] as string;
    if (found === undefined) found = value;
    else if (typeof found === 'string') found = [found, value];
    else found.push(value);
  }
  return found;
}

const AUTHORIZATION = 'authorization';

function isAuthorizationName(name: string): boolean {
  for (let i = 0; i < 13; i++) {
    // Letters only, so folding with 0x20 is exact.
    if ((name.charCodeAt(i) | 0x20) !== AUTHORIZATION.charCodeAt(i)) return false;
  }
  return true;
}

/** Length of `Bearer ` (the scheme and the one space that must follow it). */
export const SCHEME_LENGTH = 7;

/** True when `value` starts with the scheme in any letter case and one space: `Bearer `, `bearer `, `BEARER `. */
export function startsWithScheme(value: string): boolean {
  // 0x20 ORed in folds ASCII upper case to lower case; no other character maps onto these letters.
  return (
    (value.charCodeAt(0) | 0x20) === 0x62 && // b
    (value.charCodeAt(1) | 0x20) === 0x65 && // e
    (value.charCodeAt(2) | 0x20) === 0x61 && // a
    (value.charCodeAt(3) | 0x20) === 0x72 && // r
    (value.charCodeAt(4) | 0x20) === 0x65 && // e
    (value.charCodeAt(5) | 0x20) === 0x72 && // r
    value.charCodeAt(6) === 0x20
  );
}

/**
 * The token of a `Bearer` value (a string): the scheme in any letter case, one or more spaces (SP only, no
 * tabs), then the token and nothing else. {@link MALFORMED} for anything else, including an empty value.
 */
export function bearerToken(value: string): string | ParseRefusal {
  if (!startsWithScheme(value)) return MALFORMED;
  let start = SCHEME_LENGTH;
  // Past the end charCodeAt gives NaN, which ends the loop. A token too long is refused by `maxTokenLength`.
  while (value.charCodeAt(start) === 0x20) start++;
  if (start - 6 > MAX_SPACES || start === value.length) return MALFORMED;
  return value.slice(start);
}

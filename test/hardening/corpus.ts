// The hostile-input corpus: named attacks, each with its source (an RFC section, a published advisory of a JWT
// library, or a routing differential), run by corpus.test.ts through every adapter over real loopback sockets.
// Tokens are built at run time from the host's current key (`Kit`), so no case holds a secret of its own.
import { createHash, createHmac, generateKeyPairSync, sign as signWith, type KeyObject } from 'node:crypto';
import type { AdapterCase, Expectation, Tokens } from '../adapters/cases.js';
import type { HostKind } from '../adapters/harness.js';

export const CORPUS_CLASSES = [
  'header syntax',
  'JWT structure',
  'algorithm',
  'header injection',
  'crit and b64',
  'signature',
  'claims',
  'size',
  'health spelling',
  'upgrade',
  'expect 100-continue',
] as const;
export type CorpusClass = (typeof CORPUS_CLASSES)[number];

/** What a case can build its request from: the host's tokens and key, and the listener `jku`/`x5u` point at. */
export interface Kit {
  tokens: Tokens;
  /** The current key: only a holder of it can sign what the library must accept. */
  key: Uint8Array;
  kid: string;
  /** The current token's claims, parsed. */
  claims: Record<string, unknown>;
  /** A loopback URL that must never be fetched (`http://127.0.0.1:<port>/`). */
  trap: string;
}

type Build = (kit: Kit) => string;

export interface CorpusCase {
  name: string;
  source: string;
  class: CorpusClass;
  /**
   * - `auth`: `GET /apps` with one `Authorization` line per value (latin1: one character, one byte);
   * - `target`: that method and request target, no Authorization;
   * - `raw`: the whole request.
   */
  send:
    { auth: (kit: Kit) => string[] } | { method: string; target: string } | { raw: (kit: Kit, host: string) => string };
  expect: Expectation;
  per?: Partial<Record<HostKind, Expectation>>;
  why?: string;
  /** `false` when the server closes the connection after its answer on purpose (see `AdapterCase.framed`). */
  framed?: false;
}

// ---------------------------------------------------------------------------------------------------------
// Token building blocks

const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64url');
/** A segment from an object (JSON.stringify) or from JSON text as written (duplicate keys, odd spacing). */
const seg = (value: unknown): string => b64(typeof value === 'string' ? value : JSON.stringify(value));
const hmac = (algorithm: string, key: Uint8Array | string, input: string): string =>
  createHmac(algorithm, key).update(input).digest('base64url');

/** `header.claims` signed with HMAC-`algorithm` under `key` (the current key unless given). */
function signed(
  kit: Kit,
  header: unknown,
  claims: unknown,
  key: Uint8Array | string = kit.key,
  algorithm = 'sha256',
): string {
  const input = `${seg(header)}.${seg(claims)}`;
  return `${input}.${hmac(algorithm, key, input)}`;
}
const hs256 = (kit: Kit, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  alg: 'HS256',
  typ: 'JWT',
  kid: kit.kid,
  ...extra,
});
const now = (): number => Math.floor(Date.now() / 1000);
const attackerKey = createHash('sha256').update('launcher-auth corpus attacker').digest();

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const ed = generateKeyPairSync('ed25519');
const rsaPublicPem = rsa.publicKey.export({ type: 'spki', format: 'pem' }).toString();
const rsaPublicJwk = JSON.stringify(rsa.publicKey.export({ format: 'jwk' }));

function asymmetric(
  kit: Kit,
  alg: string,
  key: KeyObject,
  digest: string | null,
  options: { dsaEncoding?: 'ieee-p1363'; padding?: number } = {},
): string {
  const input = `${seg(hs256(kit, { alg }))}.${seg(kit.claims)}`;
  return `${input}.${signWith(digest, Buffer.from(input), { key, ...options }).toString('base64url')}`;
}

const parts = (token: string): [string, string, string] => token.split('.') as [string, string, string];
/** `token` with the character at `index` (negative: from the end) replaced by the next in the alphabet. */
function flip(token: string, index: number): string {
  const at = index < 0 ? token.length + index : index;
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const next = alphabet[(alphabet.indexOf(token.charAt(at)) + 1) % 64] as string;
  return `${token.slice(0, at)}${next}${token.slice(at + 1)}`;
}

const bearer =
  (build: Build) =>
  (kit: Kit): string[] => [`Bearer ${build(kit)}`];
const values =
  (...builds: Build[]) =>
  (kit: Kit): string[] =>
    builds.map((build) => build(kit));

/**
 * Signed with the right key, but every segment in the standard base64 alphabet: the claims get a filler until
 * their standard encoding holds a '+' or '/', so the token cannot happen to be canonical base64url.
 */
function standardAlphabet(kit: Kit): string {
  let claims = { ...kit.claims, q: '' };
  while (!/[+/]/.test(Buffer.from(JSON.stringify(claims)).toString('base64')))
    claims = { ...claims, q: `${claims.q}?` };
  const std = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64').replace(/=+$/, '');
  const input = `${std(hs256(kit))}.${std(claims)}`;
  return `${input}.${createHmac('sha256', kit.key).update(input).digest('base64').replace(/=+$/, '')}`;
}

/** Claims padded so the whole token is about `length` characters, signed with the current key. */
function sized(kit: Kit, length: number): string {
  const bare = signed(kit, hs256(kit), { ...kit.claims, pad: '' }).length;
  return signed(kit, hs256(kit), {
    ...kit.claims,
    pad: 'x'.repeat(Math.max(0, Math.floor(((length - bare) * 3) / 4))),
  });
}

/** A request hidden in another's body: it must stay a body. */
const SMUGGLED = 'GET /apps HTTP/1.1\r\nHost: x\r\n\r\n';

/** A request line and headers that ask to switch to `protocol`, as curl --http2 (h2c) or a WebSocket client sends. */
function upgradeTo(protocol: string, method: string, target: string, extra: (kit: Kit) => string = () => '') {
  return (kit: Kit, host: string): string => {
    const ws = /websocket/i.test(protocol)
      ? 'Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n'
      : '';
    const h2c = /h2c/i.test(protocol) ? 'HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n' : '';
    const connection = h2c === '' ? 'Upgrade' : 'Upgrade, HTTP2-Settings';
    return `${method} ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: ${connection}\r\nUpgrade: ${protocol}\r\n${ws}${h2c}${extra(kit)}\r\n`;
  };
}
const withBearer =
  (pick: (kit: Kit) => string) =>
  (kit: Kit): string =>
    `Authorization: Bearer ${pick(kit)}\r\n`;

/** A POST that asks `Expect: 100-continue` before a 5-byte body; `body` sends the body right behind the head. */
function expectingContinue(
  target: string,
  options: { auth?: (kit: Kit) => string; body?: boolean; length?: number } = {},
) {
  return (kit: Kit, host: string): string => {
    const auth = options.auth === undefined ? '' : `Authorization: Bearer ${options.auth(kit)}\r\n`;
    const head = `POST ${target} HTTP/1.1\r\nHost: ${host}\r\n${auth}Content-Type: text/plain\r\nContent-Length: ${options.length ?? 5}\r\nExpect: 100-continue\r\n\r\n`;
    return options.body === true ? `${head}hello` : head;
  };
}

const RELAYED =
  'an upgrade to a protocol the host does not serve is ignored (RFC 9110 §7.8): the request goes back to the server ' +
  'as an ordinary one, which closes its connection after the answer';
const CONTINUED = 'the token is good: `100 Continue`, then the body, then the handler';

const FETCH_RESOLVES =
  'the fetch platform (fetch and Hono on @hono/node-server) parses the target as a WHATWG URL before any code sees it: this request IS GET /health ' +
  'there, so only the health handler can run';

// ---------------------------------------------------------------------------------------------------------
// The corpus

export const CORPUS: readonly CorpusCase[] = [
  // Header syntax (RFC 6750 §2.1: credentials = "Bearer" 1*SP b64token; RFC 9110 §11.4, §5.3)
  {
    class: 'header syntax',
    name: 'an empty Authorization value',
    source: 'RFC 9110 §11.6.2',
    send: { auth: () => [''] },
    expect: 401,
  },
  {
    class: 'header syntax',
    name: 'the scheme only',
    source: 'RFC 6750 §2.1',
    send: { auth: () => ['Bearer'] },
    expect: 401,
  },
  {
    class: 'header syntax',
    name: 'the scheme and spaces only',
    source: 'RFC 6750 §2.1',
    send: { auth: () => ['Bearer    '] },
    expect: 401,
  },
  {
    class: 'header syntax',
    name: 'Basic with the token as password',
    source: 'RFC 7617 §2',
    send: { auth: (k) => [`Basic ${b64(`launcher:${k.tokens.current}`)}`] },
    expect: 401,
  },
  {
    class: 'header syntax',
    name: 'Digest scheme with the token',
    source: 'RFC 7616 §3.4',
    send: { auth: (k) => [`Digest ${k.tokens.current}`] },
    expect: 401,
  },
  {
    class: 'header syntax',
    name: 'Negotiate scheme with the token',
    source: 'RFC 4559 §4',
    send: { auth: (k) => [`Negotiate ${k.tokens.current}`] },
    expect: 401,
  },
  {
    class: 'header syntax',
    name: 'DPoP scheme with the token',
    source: 'RFC 9449 §7.1',
    send: { auth: (k) => [`DPoP ${k.tokens.current}`] },
    expect: 401,
  },
  {
    class: 'header syntax',
    name: 'a tab between scheme and token',
    source: 'RFC 6750 §2.1 (1*SP)',
    send: { auth: (k) => [`Bearer\t${k.tokens.current}`] },
    expect: 401,
  },
  {
    class: 'header syntax',
    name: 'the token in double quotes',
    source: 'RFC 9110 §11.4 (token68 is not a quoted-string)',
    send: { auth: (k) => [`Bearer "${k.tokens.current}"`] },
    expect: 401,
  },
  {
    class: 'header syntax',
    name: 'the token as an auth-param',
    source: 'RFC 9110 §11.4',
    send: { auth: (k) => [`Bearer token=${k.tokens.current}`] },
    expect: 401,
  },
  {
    class: 'header syntax',
    name: 'the token then a comma and an auth-param',
    source: 'RFC 9110 §11.4 (list of challenges)',
    send: { auth: (k) => [`Bearer ${k.tokens.current}, realm="x"`] },
    expect: 401,
  },
  {
    class: 'header syntax',
    name: 'a forged token, a comma, then the current token',
    source: 'RFC 9110 §5.3 (a list in one field)',
    send: { auth: (k) => [`Bearer ${k.tokens.wrongKey}, Bearer ${k.tokens.current}`] },
    expect: 401,
  },
  {
    class: 'header syntax',
    name: 'two headers: current first, forged second',
    source: 'RFC 9110 §5.3 (field lines combined)',
    send: {
      auth: values(
        (k) => `Bearer ${k.tokens.current}`,
        (k) => `Bearer ${k.tokens.wrongKey}`,
      ),
    },
    expect: 401,
  },
  {
    class: 'header syntax',
    name: 'two headers: forged first, current second',
    source: 'RFC 9110 §5.3 (field lines combined)',
    send: {
      auth: values(
        (k) => `Bearer ${k.tokens.wrongKey}`,
        (k) => `Bearer ${k.tokens.current}`,
      ),
    },
    expect: 401,
  },
  {
    class: 'header syntax',
    name: 'two headers: previous first, current second',
    source: 'RFC 9110 §5.3',
    send: {
      auth: values(
        (k) => `Bearer ${k.tokens.previous}`,
        (k) => `Bearer ${k.tokens.current}`,
      ),
    },
    expect: 401,
  },
  {
    class: 'header syntax',
    name: 'a UTF-8 é (two bytes) inside the token',
    source: 'RFC 9110 §5.5 (obs-text)',
    send: { auth: (k) => [`Bearer ${k.tokens.current.slice(0, 20)}\xc3\xa9${k.tokens.current.slice(22)}`] },
    expect: 401,
  },
  {
    class: 'header syntax',
    name: 'a zero-width space (UTF-8) before the token',
    source: 'RFC 9110 §5.5 (obs-text)',
    send: { auth: (k) => [`Bearer \xe2\x80\x8b${k.tokens.current}`] },
    expect: 401,
  },
  {
    class: 'header syntax',
    name: 'a Cyrillic е (UTF-8) in the scheme',
    source: 'RFC 9110 §11.1 (scheme is a token)',
    send: { auth: (k) => [`B\xd0\xb5arer ${k.tokens.current}`] },
    expect: 401,
  },
  {
    class: 'header syntax',
    name: 'a latin1 ÿ (0xFF) at the end of the token',
    source: 'RFC 9110 §5.5 (obs-text)',
    send: { auth: (k) => [`Bearer ${k.tokens.current}\xff`] },
    expect: 401,
  },
  {
    class: 'header syntax',
    name: 'the scheme in mixed case with a forged token',
    source: 'RFC 9110 §11.1 (case-insensitive scheme)',
    send: { auth: (k) => [`bEaReR ${k.tokens.wrongKey}`] },
    expect: 401,
  },
  {
    class: 'header syntax',
    name: 'no Authorization at all: the challenge names the realm',
    source: 'RFC 6750 §3 (the scheme MUST be followed by an auth-param)',
    send: { auth: () => [] },
    expect: 401,
  },
  {
    class: 'header syntax',
    name: '65 spaces between scheme and token (over the limit)',
    source: 'RFC 6750 §2.1 (1*SP; bounded here)',
    send: { auth: (k) => [`Bearer ${' '.repeat(65)}${k.tokens.current}`] },
    expect: 401,
  },

  // JWT structure (RFC 7515 §7.1, RFC 7519 §7.2)
  {
    class: 'JWT structure',
    name: 'two segments (no signature part)',
    source: 'RFC 7519 §7.2 step 1',
    send: { auth: bearer((k) => parts(k.tokens.current).slice(0, 2).join('.')) },
    expect: 401,
  },
  {
    class: 'JWT structure',
    name: 'four segments',
    source: 'RFC 7515 §7.1',
    send: { auth: bearer((k) => `${k.tokens.current}.${parts(k.tokens.current)[2]}`) },
    expect: 401,
  },
  {
    class: 'JWT structure',
    name: 'five segments (JWE compact shape)',
    source: 'RFC 7516 §7.1',
    send: {
      auth: bearer((k) => `${parts(k.tokens.current)[0]}..${b64('iv')}.${parts(k.tokens.current)[1]}.${b64('tag')}`),
    },
    expect: 401,
  },
  {
    class: 'JWT structure',
    name: 'an empty header segment',
    source: 'RFC 7515 §7.1',
    send: { auth: bearer((k) => `.${parts(k.tokens.current)[1]}.${parts(k.tokens.current)[2]}`) },
    expect: 401,
  },
  {
    class: 'JWT structure',
    name: 'an empty claims segment, signed with the right key',
    source: 'RFC 7515 Appendix F (detached content)',
    send: {
      auth: bearer((k) => {
        const h = seg(hs256(k));
        return `${h}..${hmac('sha256', k.key, `${h}.`)}`;
      }),
    },
    expect: 401,
  },
  {
    class: 'JWT structure',
    name: 'an empty signature segment',
    source: 'RFC 7515 §7.1',
    send: { auth: bearer((k) => `${parts(k.tokens.current).slice(0, 2).join('.')}.`) },
    expect: 401,
  },
  {
    class: 'JWT structure',
    name: 'base64 padding on the claims segment',
    source: 'RFC 7515 §2 (base64url without padding)',
    send: {
      auth: bearer((k) => {
        const [h, p, s] = parts(k.tokens.current);
        return `${h}.${p}==.${s}`;
      }),
    },
    expect: 401,
  },
  {
    class: 'JWT structure',
    name: 'the signature in the standard base64 alphabet (+ and /)',
    source: 'RFC 4648 §5',
    send: { auth: bearer(standardAlphabet) },
    expect: 401,
  },
  {
    class: 'JWT structure',
    name: 'a non-canonical last signature character (same bytes, other unused bits)',
    source: 'RFC 4648 §3.5 (canonical encoding)',
    send: { auth: bearer((k) => flip(k.tokens.current, -1)) },
    expect: 401,
  },
  {
    class: 'JWT structure',
    name: 'a space inside the claims segment',
    source: 'RFC 7515 §7.1',
    send: {
      auth: bearer((k) => {
        const [h, p, s] = parts(k.tokens.current);
        return `${h}.${p.slice(0, 5)} ${p.slice(5)}.${s}`;
      }),
    },
    expect: 401,
  },
  {
    class: 'JWT structure',
    name: 'header a JSON string, signed with the right key',
    source: 'RFC 7515 §4',
    send: { auth: bearer((k) => signed(k, '"HS256"', k.claims)) },
    expect: 401,
  },
  {
    class: 'JWT structure',
    name: 'header a JSON array, signed with the right key',
    source: 'RFC 7515 §4',
    send: { auth: bearer((k) => signed(k, '[{"alg":"HS256"}]', k.claims)) },
    expect: 401,
  },
  {
    class: 'JWT structure',
    name: 'header null, signed with the right key',
    source: 'RFC 7515 §4',
    send: { auth: bearer((k) => signed(k, 'null', k.claims)) },
    expect: 401,
  },
  {
    class: 'JWT structure',
    name: 'header not JSON, signed with the right key',
    source: 'RFC 7515 §5.2 step 3',
    send: { auth: bearer((k) => signed(k, '{alg:HS256}', k.claims)) },
    expect: 401,
  },
  {
    class: 'JWT structure',
    name: 'claims a JSON array, signed with the right key',
    source: 'RFC 7519 §7.2 step 10',
    send: { auth: bearer((k) => signed(k, hs256(k), '[1,2]')) },
    expect: 401,
  },
  {
    class: 'JWT structure',
    name: 'claims a JSON number, signed with the right key',
    source: 'RFC 7519 §7.2 step 10',
    send: { auth: bearer((k) => signed(k, hs256(k), '42')) },
    expect: 401,
  },
  {
    class: 'JWT structure',
    name: 'claims null, signed with the right key',
    source: 'RFC 7519 §7.2 step 10',
    send: { auth: bearer((k) => signed(k, hs256(k), 'null')) },
    expect: 401,
  },
  {
    class: 'JWT structure',
    name: 'claims not UTF-8 JSON (a latin1 byte), signed with the right key',
    source: 'RFC 7519 §7.2 step 10',
    send: {
      auth: bearer((k) => {
        const h = seg(hs256(k));
        const p = Buffer.from('{"jti":"\xe9"}', 'latin1').toString('base64url');
        return `${h}.${p}.${hmac('sha256', k.key, `${h}.${p}`)}`;
      }),
    },
    expect: 401,
  },
  {
    class: 'JWT structure',
    name: 'duplicate alg, the last one none, signed with the right key',
    source: 'RFC 7515 §4 (lexically last member)',
    send: { auth: bearer((k) => signed(k, `{"alg":"HS256","typ":"JWT","alg":"none"}`, k.claims)) },
    expect: 401,
  },
  {
    class: 'JWT structure',
    name: 'duplicate alg, the last one HS256, signed by the key holder',
    source: 'RFC 7515 §4 (lexically last member)',
    send: { auth: bearer((k) => signed(k, `{"alg":"none","typ":"JWT","alg":"HS256"}`, k.claims)) },
    expect: 'protected',
    why: 'the key holder signed it and the header that counts says HS256',
  },
  {
    class: 'JWT structure',
    name: 'duplicate exp, the last one past, signed with the right key',
    source: 'RFC 7519 §4 (lexically last member)',
    send: { auth: bearer((k) => signed(k, hs256(k), `{"exp":${now() + 3600},"jti":"x","exp":${now() - 60}}`)) },
    expect: 401,
  },
  {
    class: 'JWT structure',
    name: 'deeply nested claims (1,400 levels), signed with another key',
    source: 'RFC 8259 §9 (parsers may limit nesting)',
    send: { auth: bearer((k) => signed(k, hs256(k), `{"a":${'['.repeat(1400)}${']'.repeat(1400)}}`, attackerKey)) },
    expect: 401,
  },
  {
    class: 'JWT structure',
    name: 'deeply nested header (1,400 levels), signed with another key',
    source: 'RFC 8259 §9 (parsers may limit nesting)',
    send: {
      auth: bearer((k) =>
        signed(k, `{"alg":"HS256","x":${'['.repeat(1400)}${']'.repeat(1400)}}`, k.claims, attackerKey),
      ),
    },
    expect: 401,
  },
  {
    class: 'JWT structure',
    name: 'a __proto__ member in the header, signed with another key',
    source: 'CWE-1321 (prototype pollution through JSON.parse)',
    send: {
      auth: bearer((k) => signed(k, `{"alg":"HS256","__proto__":{"alg":"none","crit":["x"]}}`, k.claims, attackerKey)),
    },
    expect: 401,
  },
  {
    class: 'JWT structure',
    name: 'a __proto__ member in the claims, signed with the right key',
    source: 'CWE-1321 (prototype pollution through JSON.parse)',
    send: { auth: bearer((k) => signed(k, hs256(k), `{"jti":"x","__proto__":{"isAdmin":true,"exp":1}}`)) },
    expect: 'protected',
    why: 'JSON.parse makes __proto__ an own member: the key holder signed it, and nothing is polluted (checked after the corpus)',
  },
  {
    class: 'JWT structure',
    name: 'a constructor.prototype member in the header, signed with the right key',
    source: 'CWE-1321 (prototype pollution through JSON.parse)',
    send: { auth: bearer((k) => signed(k, `{"alg":"HS256","constructor":{"prototype":{"alg":"none"}}}`, k.claims)) },
    expect: 'protected',
    why: 'an unknown header member; the key holder signed it',
  },

  // Algorithm (RFC 8725 §3.1-3.2, RFC 7518 §3.1)
  ...['none', 'None', 'NONE', 'nOnE'].map((alg): CorpusCase => ({
    class: 'algorithm',
    name: `alg "${alg}" with no signature`,
    source: 'RFC 8725 §3.1; CVE-2015-9235 (jsonwebtoken)',
    send: { auth: bearer((k) => `${seg(hs256(k, { alg }))}.${parts(k.tokens.current)[1]}.`) },
    expect: 401,
  })),
  {
    class: 'algorithm',
    name: 'alg "none" with the right key\'s HS256 signature',
    source: 'RFC 8725 §2.1',
    send: { auth: bearer((k) => signed(k, hs256(k, { alg: 'none' }), k.claims)) },
    expect: 401,
  },
  {
    class: 'algorithm',
    name: 'alg missing, signed with the right key',
    source: 'RFC 7515 §4.1.1 (alg is required)',
    send: { auth: bearer((k) => signed(k, { typ: 'JWT', kid: k.kid }, k.claims)) },
    expect: 401,
  },
  {
    class: 'algorithm',
    name: 'alg an empty string, signed with the right key',
    source: 'RFC 7515 §4.1.1',
    send: { auth: bearer((k) => signed(k, hs256(k, { alg: '' }), k.claims)) },
    expect: 401,
  },
  {
    class: 'algorithm',
    name: 'alg a number, signed with the right key',
    source: 'RFC 7515 §4.1.1 (a case-sensitive string)',
    send: { auth: bearer((k) => signed(k, hs256(k, { alg: 256 }), k.claims)) },
    expect: 401,
  },
  {
    class: 'algorithm',
    name: 'alg null, signed with the right key',
    source: 'RFC 7515 §4.1.1',
    send: { auth: bearer((k) => signed(k, hs256(k, { alg: null }), k.claims)) },
    expect: 401,
  },
  {
    class: 'algorithm',
    name: 'alg ["HS256"], signed with the right key',
    source: 'RFC 7515 §4.1.1',
    send: { auth: bearer((k) => signed(k, hs256(k, { alg: ['HS256'] }), k.claims)) },
    expect: 401,
  },
  {
    class: 'algorithm',
    name: 'alg "hs256" (lower case), signed with the right key',
    source: 'RFC 7515 §4.1.1 (case-sensitive)',
    send: { auth: bearer((k) => signed(k, hs256(k, { alg: 'hs256' }), k.claims)) },
    expect: 401,
  },
  {
    class: 'algorithm',
    name: 'alg "HS256 " (trailing space), signed with the right key',
    source: 'RFC 7515 §4.1.1',
    send: { auth: bearer((k) => signed(k, hs256(k, { alg: 'HS256 ' }), k.claims)) },
    expect: 401,
  },
  {
    class: 'algorithm',
    name: 'HS384 signed with the right key',
    source: 'RFC 8725 §3.1 (pin the algorithm)',
    send: { auth: bearer((k) => signed(k, hs256(k, { alg: 'HS384' }), k.claims, k.key, 'sha384')) },
    expect: 401,
  },
  {
    class: 'algorithm',
    name: 'HS512 signed with the right key',
    source: 'RFC 8725 §3.1 (pin the algorithm)',
    send: { auth: bearer((k) => signed(k, hs256(k, { alg: 'HS512' }), k.claims, k.key, 'sha512')) },
    expect: 401,
  },
  {
    class: 'algorithm',
    name: 'HS256 label over an HMAC-SHA512 signature truncated to 32 bytes',
    source: 'RFC 7518 §3.2',
    send: {
      auth: bearer((k) => {
        const input = `${seg(hs256(k))}.${seg(k.claims)}`;
        return `${input}.${createHmac('sha512', k.key).update(input).digest().subarray(0, 32).toString('base64url')}`;
      }),
    },
    expect: 401,
  },
  {
    class: 'algorithm',
    name: 'RS256 signed with an attacker RSA key',
    source: 'RFC 7518 §3.3; RFC 8725 §3.1',
    send: { auth: bearer((k) => asymmetric(k, 'RS256', rsa.privateKey, 'sha256')) },
    expect: 401,
  },
  {
    class: 'algorithm',
    name: 'PS256 signed with an attacker RSA key',
    source: 'RFC 7518 §3.5',
    send: { auth: bearer((k) => asymmetric(k, 'PS256', rsa.privateKey, 'sha256', { padding: 6 })) },
    expect: 401,
  },
  {
    class: 'algorithm',
    name: 'ES256 signed with an attacker EC key',
    source: 'RFC 7518 §3.4',
    send: { auth: bearer((k) => asymmetric(k, 'ES256', ec.privateKey, 'sha256', { dsaEncoding: 'ieee-p1363' })) },
    expect: 401,
  },
  {
    class: 'algorithm',
    name: 'ES256 with an all-zero signature (psychic signature)',
    source: 'CVE-2022-21449 (Java ECDSA)',
    send: {
      auth: bearer(
        (k) => `${seg(hs256(k, { alg: 'ES256' }))}.${seg(k.claims)}.${Buffer.alloc(64).toString('base64url')}`,
      ),
    },
    expect: 401,
  },
  {
    class: 'algorithm',
    name: 'EdDSA signed with an attacker Ed25519 key',
    source: 'RFC 8037 §3.1',
    send: { auth: bearer((k) => asymmetric(k, 'EdDSA', ed.privateKey, null)) },
    expect: 401,
  },
  {
    class: 'algorithm',
    name: 'HS256 keyed with an RSA public key (PEM text)',
    source: 'CVE-2016-10555 (jwt-simple); CVE-2015-9235 (key confusion)',
    send: { auth: bearer((k) => signed(k, hs256(k), k.claims, rsaPublicPem)) },
    expect: 401,
  },
  {
    class: 'algorithm',
    name: 'HS256 keyed with an RSA public key (JWK text)',
    source: 'CVE-2016-10555 (key confusion, JWK form)',
    send: { auth: bearer((k) => signed(k, hs256(k), k.claims, rsaPublicJwk)) },
    expect: 401,
  },
  {
    class: 'algorithm',
    name: 'HS256 keyed with an empty key',
    source: 'RFC 7518 §3.2 (key at least the hash size)',
    send: { auth: bearer((k) => signed(k, hs256(k), k.claims, '')) },
    expect: 401,
  },

  // Header injection (RFC 8725 §3.10, RFC 7515 §4.1.2-4.1.6)
  {
    class: 'header injection',
    name: 'jwk embedding an attacker key, signed with it',
    source: 'CVE-2018-0114 (node-jose embedded jwk)',
    send: {
      auth: bearer((k) =>
        signed(k, hs256(k, { jwk: { kty: 'oct', k: attackerKey.toString('base64url') } }), k.claims, attackerKey),
      ),
    },
    expect: 401,
  },
  {
    class: 'header injection',
    name: 'jku at a loopback listener, signed with another key',
    source: 'RFC 8725 §3.10; RFC 7515 §4.1.2',
    send: { auth: bearer((k) => signed(k, hs256(k, { jku: `${k.trap}jwks.json` }), k.claims, attackerKey)) },
    expect: 401,
  },
  {
    class: 'header injection',
    name: 'jku at a loopback listener, signed with the right key (never fetched)',
    source: 'RFC 8725 §3.10',
    send: { auth: bearer((k) => signed(k, hs256(k, { jku: `${k.trap}jwks.json` }), k.claims)) },
    expect: 'protected',
    why: 'the key holder signed it; the URL is never fetched (the trap listener counts zero connections)',
  },
  {
    class: 'header injection',
    name: 'x5u at a loopback listener, signed with another key',
    source: 'RFC 7515 §4.1.5; RFC 8725 §3.10',
    send: { auth: bearer((k) => signed(k, hs256(k, { x5u: `${k.trap}cert.pem` }), k.claims, attackerKey)) },
    expect: 401,
  },
  {
    class: 'header injection',
    name: 'x5u at a loopback listener, signed with the right key (never fetched)',
    source: 'RFC 7515 §4.1.5',
    send: { auth: bearer((k) => signed(k, hs256(k, { x5u: `${k.trap}cert.pem` }), k.claims)) },
    expect: 'protected',
    why: 'the key holder signed it; the URL is never fetched',
  },
  {
    class: 'header injection',
    name: 'x5c with an attacker certificate chain',
    source: 'RFC 7515 §4.1.6',
    send: { auth: bearer((k) => signed(k, hs256(k, { x5c: [b64(rsaPublicPem)] }), k.claims, attackerKey)) },
    expect: 401,
  },
  {
    class: 'header injection',
    name: 'kid path traversal to /dev/null, signed with an empty key',
    source: 'RFC 8725 §3.10 (kid as a file path)',
    send: { auth: bearer((k) => signed(k, hs256(k, { kid: '../../../../../../dev/null' }), k.claims, '')) },
    expect: 401,
  },
  {
    class: 'header injection',
    name: 'kid SQL injection selecting a known key',
    source: 'RFC 8725 §3.10 (kid in a query)',
    send: { auth: bearer((k) => signed(k, hs256(k, { kid: "x' UNION SELECT 'attacker" }), k.claims, 'attacker')) },
    expect: 401,
  },
  {
    class: 'header injection',
    name: 'kid of the previous key with the current claims, signed with another key',
    source: 'RFC 7515 §4.1.4 (kid is a hint)',
    send: { auth: bearer((k) => signed(k, hs256(k, { kid: parts(k.tokens.previous)[0] }), k.claims, attackerKey)) },
    expect: 401,
  },
  {
    class: 'header injection',
    name: 'no kid, signed with the right key',
    source: 'RFC 7515 §4.1.4 (kid is optional)',
    send: { auth: bearer((k) => signed(k, { alg: 'HS256', typ: 'JWT' }, k.claims)) },
    expect: 'protected',
    why: 'kid never chooses the key: the current key verifies it',
  },
  {
    class: 'header injection',
    name: 'typ JOSE, signed with the right key',
    source: 'RFC 8725 §3.11 (explicit typing)',
    send: { auth: bearer((k) => signed(k, hs256(k, { typ: 'JOSE' }), k.claims)) },
    expect: 401,
  },
  {
    class: 'header injection',
    name: 'typ at+jwt (an access token of another protocol), signed with the right key',
    source: 'RFC 9068 §2.1; RFC 8725 §3.11',
    send: { auth: bearer((k) => signed(k, hs256(k, { typ: 'at+jwt' }), k.claims)) },
    expect: 401,
  },
  {
    class: 'header injection',
    name: 'typ application/at+jwt, signed with the right key',
    source: 'RFC 9068 §2.1; RFC 7515 §4.1.9',
    send: { auth: bearer((k) => signed(k, hs256(k, { typ: 'application/at+jwt' }), k.claims)) },
    expect: 401,
  },
  {
    class: 'header injection',
    name: 'typ jwt in lower case, signed with the right key',
    source: 'RFC 7515 §4.1.9 (media types are case-insensitive)',
    send: { auth: bearer((k) => signed(k, hs256(k, { typ: 'jwt' }), k.claims)) },
    expect: 'protected',
    why: 'the JWT media type in another letter case, signed by the key holder',
  },
  {
    class: 'header injection',
    name: 'typ application/JWT, signed with the right key',
    source: 'RFC 7515 §4.1.9 (the application/ prefix may be omitted, or not)',
    send: { auth: bearer((k) => signed(k, hs256(k, { typ: 'application/JWT' }), k.claims)) },
    expect: 'protected',
    why: 'the full media type name, signed by the key holder',
  },

  // crit and b64 (RFC 7515 §4.1.11, RFC 7797)
  {
    class: 'crit and b64',
    name: 'crit ["exp"], signed with the right key',
    source: 'RFC 7515 §4.1.11',
    send: { auth: bearer((k) => signed(k, hs256(k, { crit: ['exp'] }), k.claims)) },
    expect: 401,
  },
  {
    class: 'crit and b64',
    name: 'crit [] (empty), signed with the right key',
    source: 'RFC 7515 §4.1.11 (must not be empty)',
    send: { auth: bearer((k) => signed(k, hs256(k, { crit: [] }), k.claims)) },
    expect: 401,
  },
  {
    class: 'crit and b64',
    name: 'crit "b64" (not an array), signed with the right key',
    source: 'RFC 7515 §4.1.11',
    send: { auth: bearer((k) => signed(k, hs256(k, { crit: 'b64', b64: true }), k.claims)) },
    expect: 401,
  },
  {
    class: 'crit and b64',
    name: 'b64 false with crit, over the unencoded claims, right key',
    source: 'RFC 7797 §3, §5.2',
    send: {
      auth: bearer((k) => {
        const h = seg(hs256(k, { b64: false, crit: ['b64'] }));
        const p = JSON.stringify(k.claims);
        return `${h}.${b64(p)}.${createHmac('sha256', k.key).update(`${h}.${p}`).digest('base64url')}`;
      }),
    },
    expect: 401,
  },
  {
    class: 'crit and b64',
    name: 'b64 false without crit, signed with the right key',
    source: 'RFC 7797 §6',
    send: { auth: bearer((k) => signed(k, hs256(k, { b64: false }), k.claims)) },
    expect: 401,
  },
  {
    class: 'crit and b64',
    name: 'b64 true with crit, signed with the right key',
    source: 'RFC 7797 §3',
    send: { auth: bearer((k) => signed(k, hs256(k, { b64: true, crit: ['b64'] }), k.claims)) },
    expect: 401,
  },

  // Signature (RFC 7515 §5.2 step 8, RFC 7518 §3.2)
  {
    class: 'signature',
    name: 'the signature truncated by one character',
    source: 'RFC 7518 §3.2',
    send: { auth: bearer((k) => k.tokens.current.slice(0, -1)) },
    expect: 401,
  },
  {
    class: 'signature',
    name: 'the signature truncated to 16 bytes',
    source: 'RFC 7518 §3.2',
    send: {
      auth: bearer((k) => {
        const [h, p, s] = parts(k.tokens.current);
        return `${h}.${p}.${Buffer.from(s, 'base64url').subarray(0, 16).toString('base64url')}`;
      }),
    },
    expect: 401,
  },
  {
    class: 'signature',
    name: 'a bit flipped in the first signature character',
    source: 'RFC 7515 §5.2 step 8',
    send: { auth: bearer((k) => flip(k.tokens.current, k.tokens.current.lastIndexOf('.') + 1)) },
    expect: 401,
  },
  {
    class: 'signature',
    name: 'a bit flipped mid-signature',
    source: 'RFC 7515 §5.2 step 8',
    send: { auth: bearer((k) => flip(k.tokens.current, -20)) },
    expect: 401,
  },
  {
    class: 'signature',
    name: 'a bit flipped in the header',
    source: 'RFC 7515 §5.2 step 8',
    send: { auth: bearer((k) => flip(k.tokens.current, 10)) },
    expect: 401,
  },
  {
    class: 'signature',
    name: 'a bit flipped in the claims',
    source: 'RFC 7515 §5.2 step 8',
    send: { auth: bearer((k) => flip(k.tokens.current, k.tokens.current.indexOf('.') + 5)) },
    expect: 401,
  },
  {
    class: 'signature',
    name: 'the signature doubled',
    source: 'RFC 7518 §3.2',
    send: { auth: bearer((k) => `${k.tokens.current}${parts(k.tokens.current)[2]}`) },
    expect: 401,
  },
  {
    class: 'signature',
    name: "the previous key's signature over the current claims",
    source: 'RFC 7515 §5.2 step 8',
    send: { auth: bearer((k) => `${parts(k.tokens.current).slice(0, 2).join('.')}.${parts(k.tokens.previous)[2]}`) },
    expect: 401,
  },
  {
    class: 'signature',
    name: 'an HMAC over the decoded JSON instead of the encoded segments',
    source: 'RFC 7515 §5.1 step 5 (signing input)',
    send: {
      auth: bearer(
        (k) =>
          `${seg(hs256(k))}.${seg(k.claims)}.${hmac('sha256', k.key, `${JSON.stringify(hs256(k))}.${JSON.stringify(k.claims)}`)}`,
      ),
    },
    expect: 401,
  },
  {
    class: 'signature',
    name: 'the signature of the raw key bytes (key as the token)',
    source: 'RFC 7518 §3.2',
    send: { auth: bearer((k) => `${seg(hs256(k))}.${seg(k.claims)}.${Buffer.from(k.key).toString('base64url')}`) },
    expect: 401,
  },

  // Claims (RFC 7519 §4.1)
  {
    class: 'claims',
    name: 're-serialised claims (spaces, other order), the current signature kept',
    source: 'RFC 7515 §5.2 (the signature covers the bytes)',
    send: {
      auth: bearer((k) => {
        const [h, , s] = parts(k.tokens.current);
        return `${h}.${seg(`{ "iat": ${String(k.claims['iat'])}, "jti": "${String(k.claims['jti'])}" }`)}.${s}`;
      }),
    },
    expect: 401,
  },
  {
    class: 'claims',
    name: 're-serialised claims re-signed with the right key',
    source: 'RFC 7515 §5.2',
    send: {
      auth: bearer((k) =>
        signed(k, hs256(k), `{ "iat": ${String(k.claims['iat'])}, "jti": "${String(k.claims['jti'])}" }`),
      ),
    },
    expect: 'protected',
    why: 'a JWT the key holder signed correctly is accepted by design (through jose)',
  },
  {
    class: 'claims',
    name: 'exp one minute ago, signed with the right key',
    source: 'RFC 7519 §4.1.4',
    send: { auth: bearer((k) => signed(k, hs256(k), { ...k.claims, exp: now() - 60 })) },
    expect: 401,
  },
  {
    class: 'claims',
    name: 'exp 0, signed with the right key',
    source: 'RFC 7519 §4.1.4',
    send: { auth: bearer((k) => signed(k, hs256(k), { ...k.claims, exp: 0 })) },
    expect: 401,
  },
  {
    class: 'claims',
    name: 'exp a string, signed with the right key',
    source: 'RFC 7519 §4.1.4 (NumericDate)',
    send: { auth: bearer((k) => signed(k, hs256(k), { ...k.claims, exp: String(now() + 3600) })) },
    expect: 401,
  },
  {
    class: 'claims',
    name: 'exp in an hour, signed with the right key',
    source: 'RFC 7519 §4.1.4',
    send: { auth: bearer((k) => signed(k, hs256(k), { ...k.claims, exp: now() + 3600 })) },
    expect: 'protected',
    why: 'valid until then, and signed by the key holder',
  },
  {
    class: 'claims',
    name: 'nbf in an hour, signed with the right key',
    source: 'RFC 7519 §4.1.5',
    send: { auth: bearer((k) => signed(k, hs256(k), { ...k.claims, nbf: now() + 3600 })) },
    expect: 401,
  },
  {
    class: 'claims',
    name: 'nbf a string, signed with the right key',
    source: 'RFC 7519 §4.1.5 (NumericDate)',
    send: { auth: bearer((k) => signed(k, hs256(k), { ...k.claims, nbf: '0' })) },
    expect: 401,
  },
  {
    class: 'claims',
    name: 'nbf a minute ago, signed with the right key',
    source: 'RFC 7519 §4.1.5',
    send: { auth: bearer((k) => signed(k, hs256(k), { ...k.claims, nbf: now() - 60 })) },
    expect: 'protected',
    why: 'already valid, and signed by the key holder',
  },
  {
    class: 'claims',
    name: 'iat a string, signed with the right key',
    source: 'RFC 7519 §4.1.6 (NumericDate)',
    send: { auth: bearer((k) => signed(k, hs256(k), { ...k.claims, iat: 'yesterday' })) },
    expect: 401,
  },
  {
    class: 'claims',
    name: 'aud naming another service, signed with the right key',
    source: 'RFC 7519 §4.1.3 (a recipient not in aud MUST reject)',
    send: { auth: bearer((k) => signed(k, hs256(k), { ...k.claims, aud: 'another-service' })) },
    expect: 401,
  },
  {
    class: 'claims',
    name: 'aud as a list, signed with the right key',
    source: 'RFC 7519 §4.1.3',
    send: { auth: bearer((k) => signed(k, hs256(k), { ...k.claims, aud: ['a', 'b'] })) },
    expect: 401,
  },
  {
    class: 'claims',
    name: 'aud empty, signed with the right key',
    source: 'RFC 7519 §4.1.3',
    send: { auth: bearer((k) => signed(k, hs256(k), { ...k.claims, aud: '' })) },
    expect: 401,
  },
  {
    class: 'claims',
    name: 'exp in an hour, signed with another key',
    source: 'RFC 7519 §7.2',
    send: { auth: bearer((k) => signed(k, hs256(k), { ...k.claims, exp: now() + 3600 }, attackerKey)) },
    expect: 401,
  },
  {
    class: 'claims',
    name: 'the claims of the previous token under the current header, signed with another key',
    source: 'RFC 7519 §7.2',
    send: {
      auth: bearer(
        (k) => `${parts(k.tokens.current)[0]}.${parts(k.tokens.previous)[1]}.${parts(k.tokens.previous)[2]}`,
      ),
    },
    expect: 401,
  },

  // Size (RFC 8259 §9: parsers may bound their input; RFC 9110 §5.4 field limits)
  {
    class: 'size',
    name: 'a 1 KB token signed with the right key (under the default 1024 limit)',
    source: 'RFC 8259 §9; RFC 9110 §5.4',
    send: { auth: bearer((k) => sized(k, 1_000)) },
    expect: 'protected',
    why: 'under the length limit and signed by the key holder',
  },
  {
    class: 'size',
    name: 'a 4 KB token signed with the right key (above the default 1024 limit)',
    source: 'RFC 8259 §9 (bounded input)',
    send: { auth: bearer((k) => sized(k, 4_000)) },
    expect: 401,
  },
  {
    class: 'size',
    name: 'a 4097-character token signed with the right key',
    source: 'RFC 8259 §9 (bounded input)',
    send: {
      auth: bearer((k) => {
        const t = sized(k, 4_100);
        return t.length > 4_096 ? t : `${t}${'A'.repeat(4_097 - t.length)}`;
      }),
    },
    expect: 401,
  },
  {
    class: 'size',
    name: 'an 8 KB token signed with the right key',
    source: 'RFC 8259 §9; RFC 9110 §5.4',
    send: { auth: bearer((k) => sized(k, 8_192)) },
    expect: 401,
  },
  {
    class: 'size',
    name: 'a 15 KB token signed with the right key',
    source: 'RFC 9110 §5.4 (field limits)',
    send: { auth: bearer((k) => sized(k, 15_000)) },
    expect: 401,
  },
  {
    class: 'size',
    name: 'a 15 KB value of spaces after the scheme',
    source: 'RFC 6750 §2.1; RFC 9110 §5.4',
    send: { auth: () => [`Bearer ${' '.repeat(15_000)}x`] },
    expect: 401,
  },

  // Health spellings (routing differentials: the exemption is exactly GET/HEAD of exactly the path)
  {
    class: 'health spelling',
    name: 'PATCH /health',
    source: 'RFC 9110 §9.1 (only GET and HEAD are exempt)',
    send: { method: 'PATCH', target: '/health' },
    expect: 401,
  },
  {
    class: 'health spelling',
    name: 'TRACE /health',
    source: 'RFC 9110 §9.3.8',
    send: { method: 'TRACE', target: '/health' },
    expect: 401,
  },
  {
    class: 'health spelling',
    name: 'GET /health/.',
    source: 'RFC 3986 §5.2.4 (dot segments)',
    send: { method: 'GET', target: '/health/.' },
    expect: 401,
  },
  {
    class: 'health spelling',
    name: 'GET /heal%74h',
    source: 'RFC 3986 §6.2.2.2 (percent-encoding normalisation)',
    send: { method: 'GET', target: '/heal%74h' },
    expect: 401,
  },
  {
    class: 'health spelling',
    name: 'GET /%2Fhealth',
    source: 'routing differential (encoded slash)',
    send: { method: 'GET', target: '/%2Fhealth' },
    expect: 401,
  },
  {
    class: 'health spelling',
    name: 'GET ///health',
    source: 'routing differential (empty segments)',
    send: { method: 'GET', target: '///health' },
    expect: 401,
  },
  {
    class: 'health spelling',
    name: 'GET /health%00',
    source: 'routing differential (NUL truncation)',
    send: { method: 'GET', target: '/health%00' },
    expect: 401,
  },
  {
    class: 'health spelling',
    name: 'GET /health%2e',
    source: 'RFC 3986 §2.3',
    send: { method: 'GET', target: '/health%2e' },
    expect: 401,
  },
  {
    class: 'health spelling',
    name: 'GET /HEALTH?x=1',
    source: 'routing differential (case-insensitive routers)',
    send: { method: 'GET', target: '/HEALTH?x=1' },
    expect: 401,
  },
  {
    class: 'health spelling',
    name: 'GET /health/%2e%2e/apps',
    source: 'RFC 3986 §5.2.4 (encoded dot segments)',
    send: { method: 'GET', target: '/health/%2e%2e/apps' },
    expect: 401,
  },
  {
    class: 'health spelling',
    name: 'GET /health/../apps',
    source: 'RFC 3986 §5.2.4 (dot segments)',
    send: { method: 'GET', target: '/health/../apps' },
    expect: 401,
  },
  {
    class: 'health spelling',
    name: 'GET /apps/..%2fhealth',
    source: 'routing differential (encoded slash in a dot segment)',
    send: { method: 'GET', target: '/apps/..%2fhealth' },
    expect: 401,
  },
  {
    class: 'health spelling',
    name: 'GET /files/../health',
    source: 'RFC 3986 §5.2.4 (dot segments)',
    send: { method: 'GET', target: '/files/../health' },
    expect: 401,
    per: { fetch: 'health', hono: 'health' },
    why: FETCH_RESOLVES,
  },
  {
    class: 'health spelling',
    name: 'GET absolute-form http://localhost/health',
    source: 'RFC 9112 §3.2.2 (absolute-form)',
    send: { raw: (_k, host) => `GET http://localhost/health HTTP/1.1\r\nHost: ${host}\r\n\r\n` },
    expect: 401,
    per: { fetch: 'health', hono: 'health' },
    why: FETCH_RESOLVES,
  },
  {
    class: 'health spelling',
    name: 'GET /health with X-Original-URL: /apps',
    source: 'routing differential (X-Original-URL override)',
    send: {
      raw: (_k, host) =>
        `GET /health HTTP/1.1\r\nHost: ${host}\r\nX-Original-URL: /apps\r\nX-Rewrite-URL: /apps\r\n\r\n`,
    },
    expect: 'health',
    why: 'the exemption reaches the health handler and only it; the override headers are not routing input',
  },
  {
    class: 'health spelling',
    name: 'GET /health with a body smuggling a second request',
    source: 'RFC 9112 §6.3 (request smuggling)',
    send: {
      raw: (_k, host) =>
        `GET /health HTTP/1.1\r\nHost: ${host}\r\nContent-Length: ${SMUGGLED.length}\r\n\r\n${SMUGGLED}`,
    },
    expect: 'health',
    why: "the declared body is the health request's own; the smuggled line is never a request",
  },
  {
    class: 'health spelling',
    name: 'GET /health with Transfer-Encoding and Content-Length',
    source: 'RFC 9112 §6.1 (CL.TE smuggling)',
    send: {
      raw: (_k, host) =>
        `GET /health HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /apps HTTP/1.1\r\nHost: x\r\n\r\n`,
    },
    expect: { status: 400 },
    why: "Node's parser refuses both framings at once",
  },

  // Upgrades (RFC 9110 §7.8; RFC 6455 §4.1 WebSocket; RFC 7540 §3.2 h2c): only the host's protocols are guarded as
  // upgrades, every other is served as the ordinary request it is; no upgrade is exempt, health path included.
  {
    class: 'upgrade',
    name: 'GET /health with Upgrade: h2c (curl --http2, Java HttpClient)',
    source: 'RFC 9110 §7.8; RFC 7540 §3.2',
    send: { raw: upgradeTo('h2c', 'GET', '/health') },
    expect: 'health',
    framed: false,
    why: RELAYED,
  },
  {
    class: 'upgrade',
    name: 'GET /apps with Upgrade: h2c and the current token',
    source: 'RFC 9110 §7.8; RFC 7540 §3.2',
    send: {
      raw: upgradeTo(
        'h2c',
        'GET',
        '/apps',
        withBearer((k) => k.tokens.current),
      ),
    },
    expect: 'protected',
    framed: false,
    why: RELAYED,
  },
  {
    class: 'upgrade',
    name: 'GET /apps with Upgrade: h2c and no token',
    source: 'RFC 9110 §7.8',
    send: { raw: upgradeTo('h2c', 'GET', '/apps') },
    expect: 401,
    framed: false,
    why: RELAYED,
  },
  {
    class: 'upgrade',
    name: 'GET /apps with Upgrade: h2c and the previous token',
    source: 'RFC 9110 §7.8',
    send: {
      raw: upgradeTo(
        'h2c',
        'GET',
        '/apps',
        withBearer((k) => k.tokens.previous),
      ),
    },
    expect: 401,
    framed: false,
    why: RELAYED,
  },
  {
    class: 'upgrade',
    name: 'POST /health with Upgrade: h2c and no token',
    source: 'RFC 9110 §7.8, §9.1',
    send: { raw: upgradeTo('h2c', 'POST', '/health', () => 'Content-Length: 0\r\n') },
    expect: 401,
    framed: false,
    why: RELAYED,
  },
  {
    class: 'upgrade',
    name: 'WebSocket upgrade of /health without a token',
    source: 'RFC 6455 §4.1; RFC 6750 §3.1',
    send: { raw: upgradeTo('websocket', 'GET', '/health') },
    expect: 401,
    framed: false,
    why: "the refused upgrade's socket is closed after the 401",
  },
  {
    class: 'upgrade',
    name: 'WebSocket upgrade with a token signed by another key',
    source: 'RFC 6455 §4.1; RFC 7515 §5.2',
    send: {
      raw: upgradeTo(
        'websocket',
        'GET',
        '/ws',
        withBearer((k) => k.tokens.wrongKey),
      ),
    },
    expect: 401,
    framed: false,
    why: "the refused upgrade's socket is closed after the 401",
  },
  {
    class: 'upgrade',
    name: 'Upgrade: WEBSOCKET in upper case without a token',
    source: 'RFC 9110 §7.8 (case-insensitive protocol names)',
    send: { raw: upgradeTo('WEBSOCKET', 'GET', '/health') },
    expect: 401,
    framed: false,
    why: "the refused upgrade's socket is closed after the 401",
  },
  {
    class: 'upgrade',
    name: 'Upgrade: h2c, websocket/13 on /health without a token',
    source: 'RFC 9110 §7.8 (a list of protocols)',
    send: { raw: upgradeTo('h2c, websocket/13', 'GET', '/health') },
    expect: 401,
    framed: false,
    why: "one of the protocols is the host's: it is a guarded upgrade",
  },

  // Expect: 100-continue (RFC 9110 §10.1.1): refused before the client uploads; the refusal closes the connection.
  {
    class: 'expect 100-continue',
    name: 'POST with Expect: 100-continue and no token',
    source: 'RFC 9110 §10.1.1',
    send: { raw: expectingContinue('/apps/editor/launch') },
    expect: 401,
    framed: false,
    why: 'refused before the body, the connection is closed rather than read',
  },
  {
    class: 'expect 100-continue',
    name: 'POST with Expect: 100-continue and the previous token',
    source: 'RFC 9110 §10.1.1',
    send: { raw: expectingContinue('/apps/editor/launch', { auth: (k) => k.tokens.previous }) },
    expect: 401,
    framed: false,
    why: 'refused before the body, the connection is closed rather than read',
  },
  {
    class: 'expect 100-continue',
    name: 'POST with Expect: 100-continue and a forged token',
    source: 'RFC 9110 §10.1.1; RFC 7515 §5.2',
    send: { raw: expectingContinue('/apps/editor/launch', { auth: (k) => k.tokens.wrongKey }) },
    expect: 401,
    framed: false,
    why: 'refused before the body, the connection is closed rather than read',
  },
  {
    class: 'expect 100-continue',
    name: 'POST /health with Expect: 100-continue',
    source: 'RFC 9110 §10.1.1, §9.1',
    send: { raw: expectingContinue('/health') },
    expect: 401,
    framed: false,
    why: 'refused before the body, the connection is closed rather than read',
  },
  {
    class: 'expect 100-continue',
    name: 'Expect: 100-continue announcing 1 GB, no token',
    source: 'RFC 9110 §10.1.1',
    send: { raw: expectingContinue('/apps/editor/launch', { length: 1_000_000_000 }) },
    expect: 401,
    framed: false,
    why: 'refused before the body, the connection is closed rather than read',
  },
  {
    class: 'expect 100-continue',
    name: 'POST with Expect: 100-continue and the current token',
    source: 'RFC 9110 §10.1.1',
    send: { raw: expectingContinue('/apps/editor/launch', { auth: (k) => k.tokens.current, body: true }) },
    expect: 'protected',
    why: CONTINUED,
  },
];

/** The number of cases in each class, in the order of {@link CORPUS_CLASSES}. */
export function corpusCounts(): Array<[CorpusClass, number]> {
  return CORPUS_CLASSES.map((name) => [name, CORPUS.filter((c) => c.class === name).length]);
}

/** `c` as a case of the adapter table, its request built from `kit` (as latin1 text: one character, one byte). */
export function asAdapterCase(c: CorpusCase, kit: Kit): AdapterCase {
  const { send } = c;
  const raw = (host: string): string => {
    if ('raw' in send) return send.raw(kit, host);
    if ('auth' in send) {
      const lines = send
        .auth(kit)
        .map((value) => `Authorization: ${value}\r\n`)
        .join('');
      return `GET /apps HTTP/1.1\r\nHost: ${host}\r\n${lines}\r\n`;
    }
    const length =
      send.method === 'GET' || send.method === 'HEAD' || send.method === 'TRACE' ? '' : 'Content-Length: 0\r\n';
    return `${send.method} ${send.target} HTTP/1.1\r\nHost: ${host}\r\n${length}\r\n`;
  };
  return {
    name: c.name,
    request: { raw: (_tokens, host) => raw(host) },
    expect: c.expect,
    ...(c.per === undefined ? {} : { per: c.per }),
    ...(c.why === undefined ? {} : { why: c.why }),
    ...(c.framed === undefined ? {} : { framed: c.framed }),
  };
}

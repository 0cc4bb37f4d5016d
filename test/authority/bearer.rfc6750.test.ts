// The Authorization syntax of RFC 6750 §2.1 (`Bearer` 1*SP b64token) as authenticate() reads it, with the
// library's documented bound of 64 spaces, and authorizationFromRawHeaders (one, several, none).
import { createHash } from 'node:crypto';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemorySecretStore, TokenAuthority, type SecretRecord } from 'launcher-auth';
import { authorizationFromRawHeaders } from '../../src/authority/bearer.js';

const KEY = new Uint8Array(createHash('sha256').update('launcher-auth rfc6750 key').digest());
const RECORD: SecretRecord = { id: 'rfc6750', key: KEY, createdAt: new Date('2024-05-01T12:00:00.000Z') };

const MALFORMED = { ok: false, reason: 'malformed' } as const;
const MISSING = { ok: false, reason: 'missing' } as const;

let authority: TokenAuthority;
/** The current token (compared on the fast path). */
let current: string;
/** Another JWT signed with the current key (verified by jose). */
let other: string;

beforeAll(async () => {
  authority = await TokenAuthority.open({ store: new MemorySecretStore(RECORD) });
  current = authority.issue();
  other = await new SignJWT({ sub: 'rfc6750' }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(KEY);
});
afterAll(() => authority.close());

/** Both kinds of valid token, by name, so a failing case names the kind and never shows the token. */
const KINDS = ['current', 'other'] as const;
const tokenOf = (kind: (typeof KINDS)[number]): string => (kind === 'current' ? current : other);

describe('accepted spellings', () => {
  it.each(
    KINDS.flatMap(
      (kind) =>
        [
          [kind, 'Bearer', 1],
          [kind, 'bearer', 1],
          [kind, 'BEARER', 1],
          [kind, 'bEaReR', 1],
          [kind, 'Bearer', 2],
          [kind, 'Bearer', 10],
          [kind, 'Bearer', 64],
          [kind, 'bearer', 64],
        ] as const,
    ),
  )('%s token after "%s" and %i space(s)', async (kind, scheme, spaces) => {
    const result = await authority.authenticate(`${scheme}${' '.repeat(spaces)}${tokenOf(kind)}`);
    expect(result).toMatchObject({ ok: true, keyId: RECORD.id });
  });
});

describe('refused spellings, with the exact reason', () => {
  it.each(KINDS)('65 spaces, one past the documented limit of 64: malformed (%s token)', async (kind) => {
    expect(await authority.authenticate(`Bearer${' '.repeat(65)}${tokenOf(kind)}`)).toEqual(MALFORMED);
    expect(await authority.authenticate(`bearer${' '.repeat(200)}${tokenOf(kind)}`)).toEqual(MALFORMED);
  });

  const cases: Array<[string, (token: string) => string]> = [
    ['an empty value', () => ''],
    ['"Bearer" alone', () => 'Bearer'],
    ['"Bearer " and no token', () => 'Bearer '],
    ['"Bearer" and only spaces', () => `Bearer${' '.repeat(20)}`],
    ['a tab as separator', (t) => `Bearer\t${t}`],
    ['a space then a tab', (t) => `Bearer \t${t}`],
    ['no separator', (t) => `Bearer${t}`],
    ['a colon as separator', (t) => `Bearer:${t}`],
    ['a leading space', (t) => ` Bearer ${t}`],
    ['the Basic scheme', (t) => `Basic ${t}`],
    ['the token without a scheme', (t) => t],
    ['a longer scheme name', (t) => `Bearers ${t}`],
    ['a trailing word', (t) => `Bearer ${t} extra`],
    ['a trailing space', (t) => `Bearer ${t} `],
    ['a trailing comma', (t) => `Bearer ${t},`],
    ['a trailing CRLF', (t) => `Bearer ${t}\r\n`],
    ['a trailing NUL', (t) => `Bearer ${t}\0`],
    ['two tokens in one value', (t) => `Bearer ${t}, Bearer ${t}`],
    ['U+0130 in "Bearer"', (t) => `Be\u0130rer ${t}`],
    ['U+0162, whose low byte is "b"', (t) => `\u0162earer ${t}`],
    ['U+0165, whose low byte is "e"', (t) => `B\u0165arer ${t}`],
    ['U+212A KELVIN SIGN among the letters', (t) => `Bea\u212Aer ${t}`],
    ['fullwidth "Ｂｅａｒｅｒ"', (t) => `\uFF22\uFF45\uFF41\uFF52\uFF45\uFF52 ${t}`],
    ['a no-break space as separator', (t) => `Bearer\u00A0${t}`],
    ['an ideographic space as separator', (t) => `Bearer\u3000${t}`],
    ['a space whose low byte is a space (U+0120)', (t) => `Bearer\u0120${t}`],
  ];

  it.each(KINDS.flatMap((kind) => cases.map(([name, build]) => [name, kind, build] as const)))(
    '%s: malformed (%s token)',
    async (_, kind, build) => {
      expect(await authority.authenticate(build(tokenOf(kind)))).toEqual(MALFORMED);
    },
  );

  it.each(KINDS)(
    'one token character replaced by a non-ASCII one with the same low byte: malformed (%s token)',
    async (kind) => {
      const token = tokenOf(kind);
      for (const at of [0, 1, token.indexOf('.') - 1, token.indexOf('.') + 1, token.length - 2, token.length - 1]) {
        const changed = token.slice(0, at) + String.fromCharCode(0x100 + token.charCodeAt(at)) + token.slice(at + 1);
        expect(changed.length === token.length).toBe(true);
        expect(await authority.authenticate(`Bearer ${changed}`)).toEqual(MALFORMED);
        expect(await authority.verify(changed)).toEqual(MALFORMED);
      }
    },
  );

  it.each(KINDS)('two values, in either order: malformed (%s token)', async (kind) => {
    const good = `Bearer ${tokenOf(kind)}`;
    expect(await authority.authenticate([good, 'Bearer nonsense'])).toEqual(MALFORMED);
    expect(await authority.authenticate(['Bearer nonsense', good])).toEqual(MALFORMED);
    expect(await authority.authenticate([good, good])).toEqual(MALFORMED);
    expect(await authority.authenticate([good, ''])).toEqual(MALFORMED);
  });

  it('no value at all: missing', async () => {
    expect(await authority.authenticate(undefined)).toEqual(MISSING);
    expect(await authority.authenticate([])).toEqual(MISSING);
  });
});

describe('authorizationFromRawHeaders', () => {
  it('finds the one Authorization header', () => {
    expect(authorizationFromRawHeaders(['Host', 'x', 'Authorization', 'Bearer a', 'Accept', '*/*'])).toBe('Bearer a');
    expect(authorizationFromRawHeaders(['authorization', ''])).toBe('');
  });

  it('finds several, in order, as an array', () => {
    const raw = ['authorization', 'one', 'X-Other', 'y', 'AUTHORIZATION', 'two', 'AuThOrIzAtIoN', 'three'];
    expect(authorizationFromRawHeaders(raw)).toEqual(['one', 'two', 'three']);
    expect(authorizationFromRawHeaders(['Authorization', 'a', 'Authorization', 'a'])).toEqual(['a', 'a']);
  });

  it('matches the name in any letter case', () => {
    for (const name of ['Authorization', 'authorization', 'AUTHORIZATION', 'aUTHORIZATIOn', 'AuthoriZation']) {
      expect(authorizationFromRawHeaders([name, 'v'])).toBe('v');
    }
  });

  it('finds none: undefined, and names that only look alike do not count', () => {
    expect(authorizationFromRawHeaders([])).toBeUndefined();
    expect(authorizationFromRawHeaders(['Host', 'x', 'Accept', '*/*'])).toBeUndefined();
    const lookalikes = [
      'Proxy-Authorization',
      'Authorization ',
      ' Authorization',
      'Authorizations',
      'Authorizatio',
      'Authorization2',
      'Authori\u017Aation', // U+017A, whose low byte is "z"
      'AuthorizatioN\0',
      'X-Authorization',
    ];
    for (const name of lookalikes) expect(authorizationFromRawHeaders([name, 'v'])).toBeUndefined();
  });

  it('two headers found this way are refused by authenticate(): malformed', async () => {
    const value = `Bearer ${current}`;
    const one = authorizationFromRawHeaders(['Authorization', value]);
    const two = authorizationFromRawHeaders(['Authorization', value, 'authorization', value]);
    expect(await authority.authenticate(one)).toMatchObject({ ok: true, keyId: RECORD.id });
    expect(await authority.authenticate(two)).toEqual(MALFORMED);
  });
});

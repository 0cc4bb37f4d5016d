// The token's exact shape, and what verify() accepts and refuses among JWTs that a holder of the key could
// sign. Tokens are compared as booleans, never printed.
import { createHash, createHmac } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CompactSign, SignJWT, jwtVerify } from 'jose';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { MemorySecretStore, TokenAuthority, type SecretRecord, type VerifyResult } from 'launcher-auth';

const KEY = new Uint8Array(createHash('sha256').update('launcher-auth token shape key').digest());
const OTHER_KEY = new Uint8Array(createHash('sha256').update('launcher-auth token shape other key').digest());
// Half a second past the minute: iat is whole seconds, rounded down.
const RECORD: SecretRecord = { id: 'shape-key_01', key: KEY, createdAt: new Date('2024-05-01T12:00:00.500Z') };
const IAT = 1_714_564_800;
const ISSUER = 'launcher.example';

const INVALID = { ok: false, reason: 'invalid' } as const;
const MALFORMED = { ok: false, reason: 'malformed' } as const;
const now = (): number => Math.floor(Date.now() / 1000);

const b64 = (text: string): string => Buffer.from(text, 'utf8').toString('base64url');
const decode = (segment: string): string => Buffer.from(segment, 'base64url').toString('utf8');

/** `header.payload.signature` with the HMAC of exactly the given segment texts, whatever they are. */
function signSegments(header: string, payload: string, key: Uint8Array = KEY, hash = 'sha256'): string {
  const input = `${header}.${payload}`;
  return `${input}.${createHmac(hash, key).update(input, 'latin1').digest('base64url')}`;
}

/** Signs any JSON values (arrays and strings too) as header and claims, with no library in between. */
function signJson(header: unknown, claims: unknown, key: Uint8Array = KEY, hash = 'sha256'): string {
  return signSegments(b64(JSON.stringify(header)), b64(JSON.stringify(claims)), key, hash);
}

const HS256 = { alg: 'HS256', typ: 'JWT' };

/** A correctly signed HS256 JWT of exactly `length` characters: a claim padded until it fits. */
function tokenOfLength(length: number, key: Uint8Array = KEY): string {
  // Unpadded base64url lengths are never 1 mod 4, so vary the header too to reach every total.
  for (let extra = 0; extra < 4; extra++) {
    const header = b64(JSON.stringify({ ...HS256, x: 'h'.repeat(extra) }));
    for (let pad = 0; pad < length; pad++) {
      const payload = b64(JSON.stringify({ sub: 'padded', pad: 'p'.repeat(pad) }));
      const total = header.length + payload.length + 2 + 43;
      if (total === length) return signSegments(header, payload, key);
      if (total > length) break;
    }
  }
  throw new Error(`no token of length ${length}`);
}

let authority: TokenAuthority;
let withIssuer: TokenAuthority;

beforeAll(async () => {
  authority = await TokenAuthority.open({ store: new MemorySecretStore(RECORD) });
  withIssuer = await TokenAuthority.open({ store: new MemorySecretStore(RECORD), issuer: ISSUER });
  return async () => {
    await authority.close();
    await withIssuer.close();
  };
});

/**
 * An authority with this `maxTokenLength`, opened by the test itself: an open() that throws fails the tests that
 * need it, where a hook that threw would skip the whole file.
 */
async function limited(maxTokenLength: number): Promise<TokenAuthority> {
  const opened = await TokenAuthority.open({ store: new MemorySecretStore(RECORD), maxTokenLength });
  onTestFinished(() => opened.close());
  return opened;
}

function expectAccepted(result: VerifyResult): Extract<VerifyResult, { ok: true }> {
  expect(result).toMatchObject({ ok: true, keyId: RECORD.id });
  return result as Extract<VerifyResult, { ok: true }>;
}

describe('the launcher token', () => {
  it('has the header bytes {"alg":"HS256","typ":"JWT","kid":<id>} and the claims {"jti":<id>,"iat":<seconds>}', () => {
    const [header, claims, signature, ...rest] = authority.issue().split('.');
    expect(rest.length).toBe(0);
    expect(decode(header as string)).toBe('{"alg":"HS256","typ":"JWT","kid":"shape-key_01"}');
    expect(decode(claims as string)).toBe(`{"jti":"shape-key_01","iat":${IAT}}`);
    expect(signature?.length).toBe(43);
  });

  it('is accepted with exactly its own claims: jti and iat, and iss only when an issuer is set', async () => {
    // Opened here, not in beforeAll: the claims are made when an authority opens.
    for (const [issuer, claims] of [
      [undefined, { jti: RECORD.id, iat: IAT }],
      [ISSUER, { jti: RECORD.id, iat: IAT, iss: ISSUER }],
    ] as const) {
      const own = await TokenAuthority.open({ store: new MemorySecretStore(RECORD), ...(issuer && { issuer }) });
      onTestFinished(() => own.close());
      expect(expectAccepted(await own.verify(own.issue())).claims).toStrictEqual(claims);
      expect(expectAccepted(await own.authenticate(`Bearer ${own.issue()}`)).claims).toStrictEqual(claims);
    }
  });

  it('puts "iss" last when an issuer is set', () => {
    const [header, claims] = withIssuer.issue().split('.');
    expect(decode(header as string)).toBe('{"alg":"HS256","typ":"JWT","kid":"shape-key_01"}');
    expect(decode(claims as string)).toBe(`{"jti":"shape-key_01","iat":${IAT},"iss":"launcher.example"}`);
  });

  it('is exactly base64url(header).base64url(claims).HMAC-SHA256, computed independently', () => {
    const expected = signSegments(
      b64('{"alg":"HS256","typ":"JWT","kid":"shape-key_01"}'),
      b64(`{"jti":"shape-key_01","iat":${IAT}}`),
    );
    expect(authority.issue()).toBeSameToken(expected);
  });

  it('is byte for byte the same for the same record across two separate authorities', async () => {
    for (const issuer of [undefined, ISSUER]) {
      const options = issuer === undefined ? {} : { issuer };
      const a = await TokenAuthority.open({ store: new MemorySecretStore(RECORD), ...options });
      const b = await TokenAuthority.open({
        store: new MemorySecretStore({ ...RECORD, key: new Uint8Array(KEY) }),
        ...options,
      });
      onTestFinished(async () => {
        await a.close();
        await b.close();
      });
      expect(a.issue()).toBeSameToken(b.issue());
      expect(a.issue()).toBeSameToken((issuer === undefined ? authority : withIssuer).issue());
    }
  });

  it("is byte for byte what jose's CompactSign writes, for ids, dates, issuers and audiences of every shape", async () => {
    // A token users copied stays the same string across versions of the library, whoever signs it.
    const ids = ['a', 'shape-key_01', 'x'.repeat(128), '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~', '0123456789ABCDEFabcdef'];
    const dates = [new Date(0), new Date('2024-05-01T12:00:00.999Z'), new Date('2199-12-31T23:59:59Z')];
    const claimOptions = [{}, { issuer: ISSUER }, { audience: 'automation' }, { issuer: 'ü €', audience: 'a"b\\c' }];
    let compared = 0;
    for (const [index, id] of ids.entries()) {
      for (const createdAt of dates) {
        for (const options of claimOptions) {
          const key = new Uint8Array(createHash('sha256').update(`jose parity ${index}`).digest());
          const authority = await TokenAuthority.open({
            store: new MemorySecretStore({ id, key, createdAt }),
            ...options,
          });
          const claims = {
            jti: id,
            iat: Math.floor(createdAt.getTime() / 1000),
            ...('issuer' in options ? { iss: options.issuer } : {}),
            ...('audience' in options ? { aud: options.audience } : {}),
          };
          const cryptoKey = await crypto.subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, [
            'sign',
          ]);
          const byJose = await new CompactSign(new TextEncoder().encode(JSON.stringify(claims)))
            .setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: id })
            .sign(cryptoKey);
          expect(
            authority.issue(),
            `record ${index}, ${createdAt.toISOString()}, ${JSON.stringify(options)}`,
          ).toBeSameToken(byJose);
          await authority.close();
          compared += 1;
        }
      }
    }
    expect(compared).toBe(60);
  });

  it('is accepted by jose jwtVerify with the key, HS256 only', async () => {
    const { payload, protectedHeader } = await jwtVerify(authority.issue(), KEY, { algorithms: ['HS256'] });
    expect(payload).toEqual({ jti: RECORD.id, iat: IAT });
    expect(protectedHeader).toEqual({ alg: 'HS256', typ: 'JWT', kid: RECORD.id });
    const issued = await jwtVerify(withIssuer.issue(), KEY, { algorithms: ['HS256'], issuer: ISSUER });
    expect(issued.payload).toEqual({ jti: RECORD.id, iat: IAT, iss: ISSUER });
  });
});

describe('accepted: other JWTs a holder of the current key signed correctly', () => {
  it('extra claims and no typ (signed with jose)', async () => {
    const token = await new SignJWT({ sub: 'automation', scope: ['launch'], n: 1 })
      .setProtectedHeader({ alg: 'HS256' })
      .sign(KEY);
    const result = expectAccepted(await authority.verify(token));
    expect(result.claims).toEqual({ sub: 'automation', scope: ['launch'], n: 1 });
    expect(Object.isFrozen(result.claims)).toBe(true);
    expect(await authority.authenticate(`Bearer ${token}`)).toMatchObject({ ok: true, keyId: RECORD.id });
  });

  it('exp in the future, nbf in the past (and now)', async () => {
    const t = now();
    expectAccepted(await authority.verify(signJson(HS256, { exp: t + 3600 })));
    expectAccepted(await authority.verify(signJson(HS256, { nbf: t - 3600 })));
    expectAccepted(await authority.verify(signJson(HS256, { nbf: t - 1, exp: t + 3600, iat: t })));
    expectAccepted(await authority.verify(signJson({ alg: 'HS256' }, {})));
  });

  it('a kid that names another key changes nothing: the current key verifies', async () => {
    const elsewhere = await new SignJWT({ sub: 'x' })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: 'not-this-key' })
      .sign(KEY);
    expectAccepted(await authority.verify(elsewhere));
    // Signed with another key and naming the current kid: still refused.
    const named = await new SignJWT({ sub: 'x' })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: RECORD.id })
      .sign(OTHER_KEY);
    expect(await authority.verify(named)).toEqual(INVALID);
  });

  it('jku, x5u, jwk and x5c choose no key and are never fetched', async () => {
    let fetched = 0;
    const server = createServer((_req, res) => {
      fetched++;
      res.end('{"keys":[]}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`;
    const otherJwk = { kty: 'oct', k: Buffer.from(OTHER_KEY).toString('base64url') };

    // Not a real certificate: nothing may parse it, let alone take a key from it.
    const x5c = [Buffer.from(OTHER_KEY).toString('base64')];
    for (const extra of [{ jku: url }, { x5u: url }, { jwk: otherJwk }, { x5c }, { jku: url, kid: 'elsewhere' }]) {
      expectAccepted(await authority.verify(signJson({ ...HS256, ...extra }, { sub: 'x' })));
      expect(await authority.verify(signJson({ ...HS256, ...extra }, { sub: 'x' }, OTHER_KEY))).toEqual(INVALID);
    }
    expect(fetched).toBe(0);
  });

  it('a correctly signed token of exactly 1024 characters (the default maxTokenLength) is accepted', async () => {
    const token = tokenOfLength(1024);
    expect(token.length).toBe(1024);
    expectAccepted(await authority.verify(token));
    expectAccepted(await authority.authenticate(`Bearer ${token}`));
  });

  it('with maxTokenLength 4096, the largest allowed, a correctly signed token of exactly 4096 characters is accepted', async () => {
    const token = tokenOfLength(4096);
    expect(token.length).toBe(4096);
    const wide = await limited(4096);
    expectAccepted(await wide.verify(token));
    expectAccepted(await wide.authenticate(`Bearer ${token}`));
  });
});

describe('maxTokenLength', () => {
  it('a correctly signed token one character above the limit: malformed, before any HMAC; at the limit: accepted', async () => {
    for (const [limit, checked] of [
      [1024, authority],
      [600, await limited(600)],
      [4096, await limited(4096)],
    ] as const) {
      const at = tokenOfLength(limit);
      const above = tokenOfLength(limit + 1);
      expect([at.length, above.length]).toEqual([limit, limit + 1]);
      // jose would take it: only the length limit refuses it.
      await jwtVerify(above, KEY, { algorithms: ['HS256'] });
      expectAccepted(await checked.verify(at));
      expectAccepted(await checked.authenticate(`Bearer ${at}`));
      expect(await checked.verify(above)).toEqual(MALFORMED);
      expect(await checked.authenticate(`Bearer ${above}`)).toEqual(MALFORMED);
      expect(await checked.authenticate(`Bearer  ${above}`)).toEqual(MALFORMED);
    }
  });

  it.each<[string, unknown]>([
    ['a string', '1024'],
    ['a fraction', 1024.5],
    ['below 512', 511],
    ['above 4096', 4097],
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
  ])('%s: open() rejects with a TypeError naming maxTokenLength', async (_, maxTokenLength) => {
    const error = await TokenAuthority.open({ store: new MemorySecretStore(RECORD), maxTokenLength } as never).then(
      () => undefined,
      (reason: unknown) => reason,
    );
    expect(error).toBeInstanceOf(TypeError);
    expect((error as TypeError).message).toMatch(
      /`maxTokenLength` must be a whole number of characters from 512 to 4096/,
    );
  });

  it('the bounds themselves, 512 and 4096, are allowed', async () => {
    for (const maxTokenLength of [512, 4096]) {
      const bounded = await limited(maxTokenLength);
      expectAccepted(await bounded.verify(bounded.issue()));
    }
  });

  it('the longest Authorization value, "Bearer", 64 spaces and a 4096-character token, is read; one space more is not', async () => {
    const token = tokenOfLength(4096);
    const wide = await limited(4096);
    expectAccepted(await wide.authenticate(`Bearer${' '.repeat(64)}${token}`));
    expect(await wide.authenticate(`Bearer${' '.repeat(65)}${token}`)).toEqual(MALFORMED);
  });

  it("open() rejects a limit shorter than the authority's own token, naming maxTokenLength", async () => {
    const long = 'i'.repeat(300);
    await expect(
      TokenAuthority.open({ store: new MemorySecretStore(RECORD), issuer: long, audience: long, maxTokenLength: 512 }),
    ).rejects.toThrow(/`maxTokenLength` \(512\) is shorter than this authority's own token/);
  });

  it("a limit of exactly the authority's own token's length is allowed; one less names both lengths", async () => {
    const long = { issuer: 'i'.repeat(300), audience: 'a'.repeat(300) };
    const own = (await limited(4096)).issue().length;
    const sized = await TokenAuthority.open({ store: new MemorySecretStore(RECORD), ...long, maxTokenLength: 4096 });
    const length = sized.issue().length;
    await sized.close();
    expect(length).toBeGreaterThan(own);
    const exact = await TokenAuthority.open({ store: new MemorySecretStore(RECORD), ...long, maxTokenLength: length });
    expectAccepted(await exact.verify(exact.issue()));
    await exact.close();
    await expect(
      TokenAuthority.open({ store: new MemorySecretStore(RECORD), ...long, maxTokenLength: length - 1 }),
    ).rejects.toThrow(
      new TypeError(
        `TokenAuthority.open: \`maxTokenLength\` (${length - 1}) is shorter than this authority's own token ` +
          `(${length} characters, with this \`issuer\` and \`audience\`).`,
      ),
    );
  });
});

describe('refused, with the exact reason', () => {
  it('exp in the past, nbf in the future: invalid', async () => {
    const t = now();
    expect(await authority.verify(signJson(HS256, { exp: t - 60 }))).toEqual(INVALID);
    expect(await authority.verify(signJson(HS256, { nbf: t + 3600 }))).toEqual(INVALID);
    expect(await authority.verify(signJson(HS256, { exp: 'tomorrow' }))).toEqual(INVALID);
  });

  it('HS384 and HS512 signed with the right key: malformed (no HS256 signature length)', async () => {
    expect(await authority.verify(signJson({ alg: 'HS384', typ: 'JWT' }, { sub: 'x' }, KEY, 'sha384'))).toEqual(
      MALFORMED,
    );
    expect(await authority.verify(signJson({ alg: 'HS512', typ: 'JWT' }, { sub: 'x' }, KEY, 'sha512'))).toEqual(
      MALFORMED,
    );
    const viaJose = await new SignJWT({ sub: 'x' }).setProtectedHeader({ alg: 'HS512' }).sign(KEY);
    expect(await authority.verify(viaJose)).toEqual(MALFORMED);
  });

  it('an alg other than exactly HS256, signed with HMAC-SHA256 and the right key: invalid', async () => {
    for (const alg of ['HS384', 'HS512', 'none', 'hs256', 'HS256 ', 'RS256', null, 256]) {
      expect(await authority.verify(signJson({ alg, typ: 'JWT' }, { sub: 'x' }))).toEqual(INVALID);
    }
    expect(await authority.verify(signJson({ typ: 'JWT' }, { sub: 'x' }))).toEqual(INVALID);
  });

  it('alg none without a signature: malformed', async () => {
    const unsigned = `${b64('{"alg":"none","typ":"JWT"}')}.${b64('{"sub":"x"}')}.`;
    expect(await authority.verify(unsigned)).toEqual(MALFORMED);
    expect(await authority.authenticate(`Bearer ${unsigned}`)).toEqual(MALFORMED);
  });

  it('typ naming the JWT media type in any letter case, with or without application/ (RFC 7515 §4.1.9): accepted', async () => {
    for (const typ of ['JWT', 'jwt', 'Jwt', 'application/jwt', 'APPLICATION/JWT', 'application/JWT']) {
      expect(await authority.verify(signJson({ alg: 'HS256', typ }, { sub: 'x' }))).toMatchObject({ ok: true });
    }
  });

  it('typ other than the JWT media type, crit present, b64 present: invalid', async () => {
    for (const typ of [
      'at+jwt',
      'JOSE',
      '',
      null,
      'application/jose',
      'application/at+jwt',
      'jwt ',
      ' jwt',
      'application/',
      'x/jwt',
      'application/jwt;q=1',
    ]) {
      expect(await authority.verify(signJson({ alg: 'HS256', typ }, { sub: 'x' }))).toEqual(INVALID);
    }
    expect(await authority.verify(signJson({ ...HS256, crit: ['exp'] }, { exp: now() + 60 }))).toEqual(INVALID);
    expect(await authority.verify(signJson({ ...HS256, crit: [] }, { sub: 'x' }))).toEqual(INVALID);
    expect(await authority.verify(signJson({ ...HS256, b64: true }, { sub: 'x' }))).toEqual(INVALID);
    expect(await authority.verify(signJson({ ...HS256, b64: false }, { sub: 'x' }))).toEqual(INVALID);
  });

  it('padded base64url: malformed', async () => {
    const header = b64(JSON.stringify(HS256));
    const payload = b64('{"n":1}');
    expect(payload.length % 4).not.toBe(0);
    const padded = payload + '='.repeat(4 - (payload.length % 4));
    expect(await authority.verify(signSegments(header, padded))).toEqual(MALFORMED);
    const token = signSegments(header, payload);
    expectAccepted(await authority.verify(token));
    expect(await authority.verify(`${token}=`)).toEqual(MALFORMED);
  });

  it('the base64 alphabet (+ /) or whitespace inside a segment: malformed', async () => {
    // A claim whose base64url text has a "-" or "_", then the same bytes in standard base64.
    let payload = '';
    for (let i = 0; !/[-_]/.test(payload); i++) payload = b64(JSON.stringify({ q: `??>>${i}` }));
    const header = b64(JSON.stringify(HS256));
    expectAccepted(await authority.verify(signSegments(header, payload)));
    const standard = payload.replaceAll('-', '+').replaceAll('_', '/');
    expect(await authority.verify(signSegments(header, standard))).toEqual(MALFORMED);
    const middle = payload.length >> 1;
    for (const space of [' ', '\n', '\t']) {
      const spaced = payload.slice(0, middle) + space + payload.slice(middle);
      expect(await authority.verify(signSegments(header, spaced))).toEqual(MALFORMED);
    }
  });

  it('a non-canonical last character (same bytes, other text): malformed', async () => {
    const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const header = b64(JSON.stringify(HS256));
    const payload = b64('{"n":1}'); // 7 bytes: 10 characters, the last one carries 4 unused bits
    const bump = (segment: string): string =>
      `${segment.slice(0, -1)}${ALPHABET.charAt(ALPHABET.indexOf(segment.at(-1) as string) ^ 1)}`;
    const loose = bump(payload);
    // Node decodes both to the same bytes: only the canonical check tells them apart.
    expect(Buffer.from(loose, 'base64url').equals(Buffer.from(payload, 'base64url'))).toBe(true);
    expect(await authority.verify(signSegments(header, loose))).toEqual(MALFORMED);

    const token = signSegments(header, payload);
    const looseSignature = bump(token);
    expect(
      Buffer.from(looseSignature.split('.')[2] as string, 'base64url').equals(
        Buffer.from(token.split('.')[2] as string, 'base64url'),
      ),
    ).toBe(true);
    expect(await authority.verify(looseSignature)).toEqual(MALFORMED);
  });

  it('two or four segments, or empty ones: malformed', async () => {
    const [header, payload, signature] = authority.issue().split('.') as [string, string, string];
    for (const token of [
      `${header}.${payload}`,
      `${header}.${payload}.${signature}.${signature}`,
      `${header}.${payload}.${signature}.`,
      `.${payload}.${signature}`,
      `${header}..${signature}`,
      `${header}.${payload}.`,
      '..',
      header,
    ]) {
      expect(await authority.verify(token)).toEqual(MALFORMED);
    }
  });

  it('a correctly signed token of 4097 characters: malformed, before any decoding, even with maxTokenLength 4096', async () => {
    const token = tokenOfLength(4097);
    expect(token.length).toBe(4097);
    // jose would take it: only the length limit refuses it.
    await jwtVerify(token, KEY, { algorithms: ['HS256'] });
    expect(await authority.verify(token)).toEqual(MALFORMED);
    expect(await authority.authenticate(`Bearer ${token}`)).toEqual(MALFORMED);
    const wide = await limited(4096);
    expect(await wide.verify(token)).toEqual(MALFORMED);
    expect(await wide.authenticate(`Bearer ${token}`)).toEqual(MALFORMED);
    expect(await authority.verify('x'.repeat(1_000_000))).toEqual(MALFORMED);
  });

  it('header or claims that are JSON arrays, strings, numbers or null, correctly signed: malformed', async () => {
    for (const header of [['HS256'], 'HS256', 256, null, [HS256]]) {
      expect(await authority.verify(signJson(header, { sub: 'x' }))).toEqual(MALFORMED);
    }
    for (const claims of [['x'], 'x', 1, null, true]) {
      expect(await authority.verify(signJson(HS256, claims))).toEqual(MALFORMED);
    }
    expect(await authority.verify(signSegments(b64(JSON.stringify(HS256)), b64('{"sub":')))).toEqual(MALFORMED);
    expect(await authority.verify(signSegments(b64('{"alg":"HS256"'), b64('{}')))).toEqual(MALFORMED);
  });

  it('claims that are not a JSON object, correctly signed: malformed, whatever the header says of alg, typ, crit or b64', async () => {
    const headers = [
      { alg: 'HS384', typ: 'JWT' },
      { typ: 'JWT' },
      { alg: 'HS256', typ: 'text/plain' },
      { ...HS256, crit: ['b64'], b64: false },
      { ...HS256, b64: true },
    ];
    for (const header of headers) {
      for (const claims of [['sub'], 'sub', 1, null]) {
        expect(await authority.verify(signJson(header, claims))).toEqual(MALFORMED);
      }
    }
  });

  it('a header or claims segment of 4n+1 characters (no whole number of bytes): malformed, whatever the signature', async () => {
    const [header = '', payload = ''] = authority.issue().split('.');
    const oneOver = (segment: string): string => segment + 'A'.repeat((5 - (segment.length % 4)) % 4);
    for (const [h, p] of [
      [oneOver(header), payload],
      [header, oneOver(payload)],
    ] as const) {
      expect([h.length % 4, p.length % 4]).toContain(1);
      expect(await authority.verify(signSegments(h, p))).toEqual(MALFORMED);
      expect(await authority.verify(signSegments(h, p, OTHER_KEY))).toEqual(MALFORMED);
      expect(await authority.authenticate(`Bearer ${signSegments(h, p, OTHER_KEY)}`)).toEqual(MALFORMED);
    }
  });

  it('a token of the old key after rotation, whatever its kid: invalid', async () => {
    const own = await TokenAuthority.open({ store: new MemorySecretStore(RECORD) });
    onTestFinished(() => own.close());
    const old = own.issue();
    const oldOther = await new SignJWT({ sub: 'x' }).setProtectedHeader({ alg: 'HS256', kid: RECORD.id }).sign(KEY);
    await own.rotate();
    const oldWithNewKid = await new SignJWT({ sub: 'x' })
      .setProtectedHeader({ alg: 'HS256', kid: own.keyId })
      .sign(KEY);
    // The token itself is recognised as the one "Regenerate token" replaced (for the host's log); anything else
    // signed with the old key is simply invalid.
    for (const [token, refusal] of [
      [old, { ok: false, reason: 'rotated' }],
      [oldOther, INVALID],
      [oldWithNewKid, INVALID],
    ] as const) {
      expect(await own.verify(token)).toEqual(refusal);
      expect(await own.authenticate(`Bearer ${token}`)).toEqual(refusal);
    }
    expect(await own.verify(own.issue())).toMatchObject({ ok: true, keyId: own.keyId });
  });
});

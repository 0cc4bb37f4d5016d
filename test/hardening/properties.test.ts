// Property-based tests of the core decision: whatever the Authorization value, authenticate() never throws and
// accepts exactly what an independent oracle (the spec's rules, then jose's jwtVerify) accepts.
//
// Runs: LAUNCHER_AUTH_PROPERTY_RUNS in all (default 20,000, shared out below; the soak asks for 1,000,000).
// Seed: LAUNCHER_AUTH_PROPERTY_SEED (default fixed, so `npm test` is reproducible); fast-check prints the seed
// and the shrunk counterexample on failure. Counterexamples are descriptions (strings, header and claims JSON,
// a mutation's position and character), never a token of the authority: tokens are built inside the checks.
import { createHash, createHmac } from 'node:crypto';
import fc from 'fast-check';
import { jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemorySecretStore, TokenAuthority, type SecretRecord, type VerifyResult } from 'launcher-auth';
import { envCount, reportFigures } from './fixtures/support.js';
import { budget } from '../support/machine.js';

const TOTAL_RUNS = envCount('LAUNCHER_AUTH_PROPERTY_RUNS', 20_000);
const SEED = envCount('LAUNCHER_AUTH_PROPERTY_SEED', 20_250_601);
/** Each property's share of the runs; the shares add up to 1. */
const SHARE = {
  strings: 0.2,
  arrays: 0.08,
  bytes: 0.12,
  anything: 0.05,
  signed: 0.25,
  mutateCurrent: 0.15,
  mutateOther: 0.1,
  mutateHeader: 0.05,
} as const;
const runsOf = (name: keyof typeof SHARE): number => Math.max(1, Math.round(TOTAL_RUNS * SHARE[name]));
// A deadline only a stuck run reaches, stretched by the machine factor like every other budget. A run takes about
// 0.2 ms on a busy 2-core machine, but the runs are all CPU and the factor measured at start does not see load that
// comes later (5,000 signed runs took over 20 s with four times more work than cores): the deadline is 100 times
// the runs' quiet time, at least two minutes, so that load never reaches it and a hang does.
const timeoutOf = (name: keyof typeof SHARE): number => budget(Math.max(120_000, runsOf(name) * 24));
const params = (name: keyof typeof SHARE): fc.Parameters<unknown> => ({ numRuns: runsOf(name), seed: SEED });

const KEY = new Uint8Array(createHash('sha256').update('launcher-auth property key').digest());
const OTHER_KEY = new Uint8Array(createHash('sha256').update('launcher-auth some other key').digest());
const RECORD: SecretRecord = { id: 'property-key', key: KEY, createdAt: new Date('2024-05-01T12:00:00.000Z') };
const ISSUER = 'launcher.example';

let plain: TokenAuthority;
let withIssuer: TokenAuthority;
let runsDone = 0;
const started = performance.now();

beforeAll(async () => {
  plain = await TokenAuthority.open({ store: new MemorySecretStore(RECORD) });
  withIssuer = await TokenAuthority.open({ store: new MemorySecretStore(RECORD), issuer: ISSUER });
});
afterAll(async () => {
  await plain.close();
  await withIssuer.close();
  reportFigures('properties', { runs: runsDone, seed: SEED, ms: Math.round(performance.now() - started) });
});

// What must never change, whatever JSON was parsed along the way.
const PROTOTYPE_KEYS = Reflect.ownKeys(Object.prototype);
const PROTOTYPE_VALUES = PROTOTYPE_KEYS.map((key) => Object.getOwnPropertyDescriptor(Object.prototype, key));
const ARRAY_PROTOTYPE_KEYS = Reflect.ownKeys(Array.prototype);

// ---------------------------------------------------------------------------------------------------------
// The oracle: written from the rules of verification, sharing no code with src/.

const CANONICAL_SEGMENT = /^[A-Za-z0-9_-]+$/;

function canonicalSegment(segment: string): boolean {
  return CANONICAL_SEGMENT.test(segment) && Buffer.from(segment, 'base64url').toString('base64url') === segment;
}

function jsonObject(segment: string): Record<string, unknown> | undefined {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/** Whether a bare token must be accepted by an authority holding KEY (and requiring `issuer` when set). */
async function oracleToken(token: string, issuer: string | undefined): Promise<boolean> {
  // The default maxTokenLength.
  if (token.length === 0 || token.length > 1024) return false;
  const segments = token.split('.');
  if (segments.length !== 3 || !segments.every(canonicalSegment)) return false;
  const header = jsonObject(segments[0] as string);
  if (header === undefined || jsonObject(segments[1] as string) === undefined) return false;
  if (!Object.hasOwn(header, 'alg') || header['alg'] !== 'HS256') return false;
  // RFC 7515 §4.1.9: the media type in any letter case, `application/` optional.
  const typ = header['typ'];
  if (
    Object.hasOwn(header, 'typ') &&
    !(typeof typ === 'string' && ['jwt', 'application/jwt'].includes(typ.toLowerCase()))
  ) {
    return false;
  }
  if (Object.hasOwn(header, 'crit') || Object.hasOwn(header, 'b64')) return false;
  try {
    const { payload } = await jwtVerify(
      token,
      KEY,
      issuer === undefined ? { algorithms: ['HS256'] } : { algorithms: ['HS256'], issuer },
    );
    // RFC 7519 §4.1.3: with no audience of its own, the recipient refuses any token that names one.
    return !Object.hasOwn(payload, 'aud');
  } catch {
    return false;
  }
}

/**
 * Whether an Authorization value (or list of them) must be accepted: exactly one value; `Bearer` in any case,
 * one to 64 spaces (the library's documented bound on the run of spaces), the token and nothing else.
 */
async function oracle(authorization: unknown, issuer: string | undefined): Promise<boolean> {
  let value = authorization;
  if (Array.isArray(value)) {
    if (value.length !== 1) return false;
    value = value[0];
  }
  if (typeof value !== 'string') return false;
  const match = /^[Bb][Ee][Aa][Rr][Ee][Rr]( +)([^]*)$/.exec(value);
  if (match === null || (match[1] as string).length > 64) return false;
  return oracleToken(match[2] as string, issuer);
}

// ---------------------------------------------------------------------------------------------------------
// The check every property makes.

const REASONS = new Set(['missing', 'malformed', 'invalid']);
let accepted = 0;

/** Asserts that `result` is well formed and agrees with the oracle; throws a message without any token. */
function agree(result: VerifyResult, expected: boolean, what: string): void {
  runsDone++;
  if (result.ok) {
    accepted++;
    if (!expected) throw new Error(`${what}: accepted, but the oracle refuses it`);
    if (result.keyId !== RECORD.id || !(result.signal instanceof AbortSignal) || !Object.isFrozen(result.claims)) {
      throw new Error(`${what}: accepted with a malformed result`);
    }
  } else {
    if (expected) throw new Error(`${what}: refused (${result.reason}), but the oracle accepts it`);
    if (!REASONS.has(result.reason) || Object.keys(result).length !== 2) {
      throw new Error(`${what}: refused with a malformed result`);
    }
  }
}

async function check(
  authority: TokenAuthority,
  authorization: unknown,
  issuer: string | undefined,
  what: string,
): Promise<void> {
  // Called directly, not in a try: a synchronous throw or a rejection fails the property.
  const result = await authority.authenticate(authorization as string);
  agree(result, await oracle(authorization, issuer), what);
}

// ---------------------------------------------------------------------------------------------------------
// Arbitraries.

/**
 * Stands for the current token after a scheme and a run of spaces (`<current bEaReR 65>`), so that a
 * counterexample shows which spelling failed but never the token.
 */
const current = fc
  .tuple(fc.mixedCase(fc.constant('bearer')), fc.oneof(fc.constant(1), fc.integer({ min: 1, max: 80 })))
  .map(([scheme, spaces]) => `<current ${scheme} ${spaces}>`);
const CURRENT = /^<current (\w+) (\d+)>$/;
const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

const anyString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 120 }),
  fc.string({ unit: 'binary-ascii', maxLength: 120 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
);
const bearerPrefix = fc.oneof(
  fc.constant('Bearer '),
  fc
    .tuple(
      fc.mixedCase(fc.constant('bearer')),
      fc.integer({ min: 0, max: 70 }),
      fc.constantFrom(' ', '\t', '', '\u00a0'),
    )
    .map(([scheme, spaces, tail]) => `${scheme}${' '.repeat(spaces)}${tail}`),
  fc.constantFrom('Basic ', 'Token ', 'bearer', 'Bearer:', 'Bearer=', ' Bearer ', 'Bearer\u0130 ', 'Bearer\u017f '),
);
const segment = fc.string({ unit: fc.constantFrom(...B64URL, '=', '+', '/', ' ', '%', '\u00e9'), maxLength: 60 });
const jwtLike = fc.oneof(
  fc.array(segment, { minLength: 1, maxLength: 6 }).map((parts) => parts.join('.')),
  // The real token's header and claims with a signature of the right length but made up.
  fc
    .string({ unit: fc.constantFrom(...B64URL), minLength: 43, maxLength: 43 })
    .map((signature) => `<head>.${signature}`),
);
const authorizationString = fc.oneof(
  { arbitrary: anyString, weight: 3 },
  { arbitrary: fc.tuple(bearerPrefix, fc.oneof(anyString, jwtLike)).map(([prefix, rest]) => prefix + rest), weight: 4 },
  { arbitrary: current, weight: 1 },
);

/** Replaces the placeholders by the current token's parts; the placeholders are what a report shows. */
function expand(value: string, authority: TokenAuthority): string {
  const spelling = CURRENT.exec(value);
  if (spelling !== null) return `${spelling[1]}${' '.repeat(Number(spelling[2]))}${authority.issue()}`;
  if (value.includes('<head>.')) {
    const token = authority.issue();
    return value.replace('<head>', token.slice(0, token.lastIndexOf('.')));
  }
  return value;
}

// JSON members written by hand so that a key may repeat and "__proto__" is an own member, as in a real attack.
const memberKey = fc.oneof(
  {
    arbitrary: fc.constantFrom('alg', 'typ', 'crit', 'b64', 'kid', 'jku', 'jwk', 'x5u', 'x5c', 'cty', 'zip'),
    weight: 3,
  },
  { arbitrary: fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty'), weight: 2 },
  { arbitrary: fc.constantFrom('exp', 'nbf', 'iat', 'iss', 'jti', 'sub', 'aud'), weight: 2 },
  { arbitrary: fc.string({ maxLength: 8 }), weight: 1 },
);
const pollutingValue = fc.constantFrom<unknown>(
  { crit: ['b64'], alg: 'none', b64: false, polluted: true },
  { prototype: { polluted: true, crit: ['x'] } },
  { __proto__: null, polluted: 1 },
);
const memberValue = fc.oneof(
  { arbitrary: fc.jsonValue({ maxDepth: 2 }), weight: 3 },
  { arbitrary: fc.constantFrom<unknown>('HS256', 'JWT', 'none', 'HS384', 'RS256', ['b64'], false, true), weight: 2 },
  { arbitrary: pollutingValue, weight: 1 },
);
const NOW_S = Math.floor(Date.now() / 1000);
// Far from now on both sides, so the oracle's clock and the library's agree on every one.
const timeClaim = fc.oneof(
  fc.integer({ min: NOW_S + 3_600, max: NOW_S + 10 ** 9 }),
  fc.integer({ min: 0, max: NOW_S - 3_600 }),
  fc.constantFrom<unknown>('1', null, true, 1e300, -1, 2 ** 53),
);
type Member = [string, unknown];
const member: fc.Arbitrary<Member> = fc.tuple(memberKey, memberValue);
/** Members that never decide the outcome (a header's `kid`, `jku`, `jwk`, `x5u` choose nothing): good tokens. */
const harmlessMember: fc.Arbitrary<Member> = fc.tuple(
  fc.constantFrom('kid', 'jku', 'jwk', 'x5u', 'x5c', 'sub', 'jti', '__proto__', 'constructor', 'prototype', 'toString'),
  memberValue,
);

/** `{"k":v,...}` from members in order, keeping duplicates and own "__proto__" members. */
function objectText(members: readonly Member[]): string {
  return `{${members.map(([key, value]) => `${JSON.stringify(key)}:${JSON.stringify(value) ?? 'null'}`).join(',')}}`;
}

const headerText = fc.oneof(
  {
    arbitrary: fc
      .tuple(
        fc.option(fc.constantFrom<unknown>('HS256', 'HS256', 'HS256', 'hs256', 'none', 'HS512', 1, null), {
          nil: undefined,
          freq: 6,
        }),
        fc.option(
          fc.constantFrom<unknown>(
            'JWT',
            'jwt',
            'application/jwt',
            'Application/JWT',
            'at+jwt',
            'application/at+jwt',
            1,
          ),
          { nil: undefined, freq: 2 },
        ),
        fc.array(member, { maxLength: 4 }),
      )
      .map(([alg, typ, rest]) => {
        const members: Member[] = [];
        if (alg !== undefined) members.push(['alg', alg]);
        if (typ !== undefined) members.push(['typ', typ]);
        return objectText([...members, ...rest]);
      }),
    weight: 8,
  },
  {
    arbitrary: fc
      .tuple(fc.boolean(), fc.array(harmlessMember, { maxLength: 3 }))
      .map(([typ, rest]) => objectText([['alg', 'HS256'], ...(typ ? [['typ', 'JWT'] as Member] : []), ...rest])),
    weight: 6,
  },
  { arbitrary: fc.constantFrom('[]', '"HS256"', '1', 'null', '{"alg":"HS256"', '{"alg":"HS256"}x', ''), weight: 1 },
);
const claimsText = fc.oneof(
  {
    arbitrary: fc
      .tuple(
        fc.option(timeClaim, { nil: undefined, freq: 2 }),
        fc.option(timeClaim, { nil: undefined, freq: 2 }),
        fc.option(timeClaim, { nil: undefined, freq: 3 }),
        fc.option(fc.constantFrom<unknown>(ISSUER, 'someone.else', 1), { nil: undefined, freq: 2 }),
        fc.array(member, { maxLength: 4 }),
      )
      .map(([exp, nbf, iat, iss, rest]) => {
        const members: Member[] = [];
        if (exp !== undefined) members.push(['exp', exp]);
        if (nbf !== undefined) members.push(['nbf', nbf]);
        if (iat !== undefined) members.push(['iat', iat]);
        if (iss !== undefined) members.push(['iss', iss]);
        return objectText([...members, ...rest]);
      }),
    weight: 8,
  },
  {
    arbitrary: fc
      .tuple(
        fc.option(fc.integer({ min: NOW_S + 3_600, max: NOW_S + 10 ** 9 }), { nil: undefined }),
        fc.array(harmlessMember, { maxLength: 3 }),
      )
      .map(([exp, rest]) =>
        objectText([['iss', ISSUER], ...(exp === undefined ? [] : [['exp', exp] as Member]), ...rest]),
      ),
    weight: 6,
  },
  { arbitrary: fc.constantFrom('[]', '"claims"', '1', 'null', '{"sub":', '{}'), weight: 1 },
);
/** How the signature is made: mostly right; sometimes another hash, another key, or none. */
const signing = fc.constantFrom(
  'right',
  'right',
  'right',
  'right',
  'right',
  'right',
  'sha384',
  'sha512',
  'other-key',
  'empty',
);

function signed(header: string | Buffer, claims: string | Buffer, how: string): string {
  const input = `${Buffer.from(header).toString('base64url')}.${Buffer.from(claims).toString('base64url')}`;
  if (how === 'empty') return `${input}.`;
  const hash = how === 'sha384' || how === 'sha512' ? how : 'sha256';
  return `${input}.${createHmac(hash, how === 'other-key' ? OTHER_KEY : KEY)
    .update(input)
    .digest('base64url')}`;
}

interface Mutation {
  kind: 'substitute' | 'insert' | 'delete';
  at: number;
  char: string;
}
const mutation: fc.Arbitrary<Mutation> = fc.record({
  kind: fc.constantFrom('substitute', 'insert', 'delete'),
  at: fc.nat({ max: 10_000 }),
  char: fc.oneof(
    { arbitrary: fc.constantFrom(...B64URL), weight: 4 },
    {
      arbitrary: fc.constantFrom('.', ' ', '=', '+', '/', '\t', '\0', '\u00e9', '\u0130', '\u212a', '\ud800', '\uff0e'),
      weight: 2,
    },
    { arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }), weight: 2 },
  ),
});

/** `text` with one character substituted, inserted or deleted; `undefined` when that changes nothing. */
function mutate(text: string, { kind, at, char }: Mutation): string | undefined {
  const position = at % (kind === 'insert' ? text.length + 1 : text.length);
  if (kind === 'insert') return text.slice(0, position) + char + text.slice(position);
  if (kind === 'delete') return text.slice(0, position) + text.slice(position + 1);
  if (text[position] === char) return undefined;
  return text.slice(0, position) + char + text.slice(position + 1);
}

// ---------------------------------------------------------------------------------------------------------

describe('authenticate() on arbitrary input: never throws, accepts exactly what the oracle accepts', () => {
  it(
    `arbitrary strings, bare and after Bearer spellings (${runsOf('strings')} runs, both authorities)`,
    async () => {
      const before = runsDone;
      await fc.assert(
        fc.asyncProperty(authorizationString, async (value) => {
          await check(plain, expand(value, plain), undefined, 'plain');
          await check(withIssuer, expand(value, withIssuer), ISSUER, 'issuer');
        }),
        params('strings'),
      );
      // Every run reached the oracle's comparison (a property that returned early would check nothing).
      expect(runsDone - before).toBeGreaterThanOrEqual(runsOf('strings'));
    },
    timeoutOf('strings'),
  );

  it(
    `arrays of strings, empty, one, or several, the current value among them (${runsOf('arrays')} runs)`,
    async () => {
      const before = runsDone;
      await fc.assert(
        fc.asyncProperty(fc.array(authorizationString, { maxLength: 4 }), async (values) => {
          const expanded = values.map((value) => expand(value, plain));
          await check(plain, expanded, undefined, `list of ${values.length}`);
          // Two copies of the current value are as ambiguous as any other two.
          if (values.length === 1) await check(plain, [expanded[0], expanded[0]], undefined, 'the same value twice');
        }),
        params('arrays'),
      );
      // Every run reached the oracle's comparison (a property that returned early would check nothing).
      expect(runsDone - before).toBeGreaterThanOrEqual(runsOf('arrays'));
    },
    timeoutOf('arrays'),
  );

  it(
    `byte sequences decoded as latin1 and as UTF-8, with or without a Bearer prefix (${runsOf('bytes')} runs)`,
    async () => {
      const before = runsDone;
      await fc.assert(
        fc.asyncProperty(fc.uint8Array({ maxLength: 200 }), fc.boolean(), async (bytes, prefixed) => {
          const body = Buffer.from(bytes);
          for (const encoding of ['latin1', 'utf8'] as const) {
            const text = body.toString(encoding);
            await check(plain, prefixed ? `Bearer ${text}` : text, undefined, encoding);
          }
        }),
        params('bytes'),
      );
      // Every run reached the oracle's comparison (a property that returned early would check nothing).
      expect(runsDone - before).toBeGreaterThanOrEqual(runsOf('bytes'));
    },
    timeoutOf('bytes'),
  );

  it(
    `any JavaScript value where a header value belongs (${runsOf('anything')} runs)`,
    async () => {
      const before = runsDone;
      await fc.assert(
        fc.asyncProperty(
          fc.anything({ maxDepth: 2, withNullPrototype: true, withBoxedValues: true }),
          async (value) => {
            await check(plain, value, undefined, 'a value');
          },
        ),
        params('anything'),
      );
      // Every run reached the oracle's comparison (a property that returned early would check nothing).
      expect(runsDone - before).toBeGreaterThanOrEqual(runsOf('anything'));
    },
    timeoutOf('anything'),
  );
});

describe('authenticate() on JWTs signed over arbitrary headers and claims', () => {
  let acceptedBefore = 0;
  let signedRuns = 0;

  it(
    `accepts exactly the ones the spec and jose accept, with and without an issuer (${runsOf('signed')} runs)`,
    async () => {
      acceptedBefore = accepted;
      await fc.assert(
        fc.asyncProperty(
          headerText,
          claimsText,
          signing,
          fc.integer({ min: 1, max: 3 }),
          async (header, claims, how, spaces) => {
            signedRuns++;
            const token = signed(header, claims, how);
            const value = `bearer${' '.repeat(spaces)}${token}`;
            await check(plain, value, undefined, 'plain');
            await check(withIssuer, value, ISSUER, 'issuer');
            // verify() takes the bare token and must agree too.
            agree(await plain.verify(token), await oracleToken(token, undefined), 'verify');
          },
        ),
        params('signed'),
      );
      // The property is only worth something if a fair share of the tokens were good ones.
      expect(accepted - acceptedBefore).toBeGreaterThanOrEqual(Math.floor(signedRuns / 10));
    },
    timeoutOf('signed'),
  );

  it('"__proto__", "constructor" and "prototype" members signed with the right key are data, not prototypes', async () => {
    const header =
      '{"alg":"HS256","__proto__":{"crit":["b64"],"b64":false,"alg":"none","polluted":1},"constructor":{"prototype":{"crit":1}}}';
    const claims =
      '{"__proto__":{"polluted":true,"exp":1},"constructor":{"prototype":{"polluted":true}},"prototype":{"alg":"none"}}';
    const token = signed(header, claims, 'right');
    expect(await oracleToken(token, undefined)).toBe(true);
    const result = await plain.authenticate(`Bearer ${token}`);
    agree(result, true, 'own __proto__ members');
    if (!result.ok) throw new Error('unreachable');
    expect(Object.getPrototypeOf(result.claims)).toBe(Object.prototype);
    expect(Object.hasOwn(result.claims, '__proto__')).toBe(true);
    expect((result.claims as Record<string, unknown>)['polluted']).toBeUndefined();
    expect((result.claims as Record<string, unknown>)['exp']).toBeUndefined();
  });
});

describe('single-character mutations of valid tokens are all refused', () => {
  // A mutated token is a different string: canonical base64url makes every segment's text one-to-one with its
  // bytes, so any change reaches the HMAC input or the signature. No mutation may be accepted.
  it(
    `of the current token, through verify() and authenticate() (${runsOf('mutateCurrent')} runs)`,
    async () => {
      const token = plain.issue();
      await fc.assert(
        fc.asyncProperty(mutation, async (change) => {
          const mutated = mutate(token, change);
          fc.pre(mutated !== undefined);
          const bare = await plain.verify(mutated);
          agree(bare, false, `verify ${change.kind}`);
          // After "Bearer ", spaces before the token are the header's own syntax: a space inserted first is the
          // one mutation that leaves the same token.
          const same = change.kind === 'insert' && change.char === ' ' && change.at % (token.length + 1) === 0;
          agree(await plain.authenticate(`Bearer ${mutated}`), same, `authenticate ${change.kind}`);
        }),
        params('mutateCurrent'),
      );
      expect(await plain.verify(token)).toMatchObject({ ok: true, keyId: RECORD.id });
    },
    timeoutOf('mutateCurrent'),
  );

  it(
    `of another token signed with the current key (${runsOf('mutateOther')} runs, both authorities)`,
    async () => {
      const other = signed(
        '{"alg":"HS256","typ":"JWT"}',
        `{"sub":"other","iss":"${ISSUER}","exp":${NOW_S + 86_400 * 365}}`,
        'right',
      );
      expect(await plain.verify(other)).toMatchObject({ ok: true, keyId: RECORD.id });
      expect(await withIssuer.verify(other)).toMatchObject({ ok: true, keyId: RECORD.id });
      await fc.assert(
        fc.asyncProperty(mutation, async (change) => {
          const mutated = mutate(other, change);
          fc.pre(mutated !== undefined);
          agree(await plain.verify(mutated), false, `verify ${change.kind}`);
          agree(await withIssuer.verify(mutated), false, `verify with issuer ${change.kind}`);
        }),
        params('mutateOther'),
      );
    },
    timeoutOf('mutateOther'),
  );

  it(
    `of the whole "Bearer <token>" value: only a scheme's letter case or one more space keeps it (${runsOf('mutateHeader')} runs)`,
    async () => {
      const before = runsDone;
      const value = `Bearer ${plain.issue()}`;
      await fc.assert(
        fc.asyncProperty(mutation, async (change) => {
          const mutated = mutate(value, change);
          fc.pre(mutated !== undefined);
          await check(plain, mutated, undefined, `header ${change.kind}`);
        }),
        params('mutateHeader'),
      );
      // Every run reached the oracle's comparison (a property that returned early would check nothing).
      expect(runsDone - before).toBeGreaterThanOrEqual(runsOf('mutateHeader'));
    },
    timeoutOf('mutateHeader'),
  );
});

describe('prototype pollution', () => {
  it('after every run above, Object.prototype and Array.prototype are as they were', () => {
    const probe = {} as Record<string, unknown>;
    for (const key of ['crit', 'alg', 'b64', 'typ', 'kid', 'jku', 'jwk', 'exp', 'iss', 'polluted', 'prototype']) {
      expect({ key, value: probe[key] }).toEqual({ key, value: undefined });
    }
    expect(Object.getPrototypeOf(probe)).toBe(Object.prototype);
    expect(Reflect.ownKeys(Object.prototype)).toEqual(PROTOTYPE_KEYS);
    PROTOTYPE_KEYS.forEach((key, index) => {
      expect(Object.getOwnPropertyDescriptor(Object.prototype, key)).toEqual(PROTOTYPE_VALUES[index]);
    });
    expect(Reflect.ownKeys(Array.prototype)).toEqual(ARRAY_PROTOTYPE_KEYS);
    // Every property ran: the counts are what the runs asked for (a vacuous run would leave this short).
    expect(runsDone).toBeGreaterThanOrEqual(TOTAL_RUNS);
  });
});

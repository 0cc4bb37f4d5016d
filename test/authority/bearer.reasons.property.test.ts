// For any Authorization header, the reason `onReject` is told is the one the table of docs/adapters.md gives:
// fast-check draws header lists (none, one, two), sent over a real loopback socket to `withAuth`; an oracle made of
// the table's rows, in its order, says what the reason must be. The rows' text is checked against the docs, so the
// table and this test cannot drift apart.
// Runs: LAUNCHER_AUTH_REASON_RUNS (default 400). Seed: LAUNCHER_AUTH_REASON_SEED (default fixed).
import { readFile } from 'node:fs/promises';
import { Agent, createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemorySecretStore, TokenAuthority, type RejectReason } from 'launcher-auth';
import { withAuth } from 'launcher-auth/node';
import { envCount } from '../hardening/fixtures/support.js';

const RUNS = envCount('LAUNCHER_AUTH_REASON_RUNS', 400);
const SEED = envCount('LAUNCHER_AUTH_REASON_SEED', 20_261_124);
const MAX_TOKEN_LENGTH = 1024;

/** The docs' rows that a client without the key can reach, as written there, with their outcome. */
const ROWS = {
  none: ['none (no such header)', 'missing'],
  several: ['two or more Authorization headers', 'malformed'],
  notBearer: [
    'not `Bearer` in any letter case, then 1 to 64 spaces, then a token with no space in it (an empty value, another scheme, a tab, `Bearer` alone)',
    'malformed',
  ],
  tooLong: ['a token longer than `maxTokenLength`', 'malformed'],
  notCompact: [
    'a token that is not three segments of canonical base64url, the last one 43 characters (an HS256 signature)',
    'malformed',
  ],
  current: ['the current token', 'accepted'],
  rotated: ['a token of one of the last two keys that "Regenerate token" replaced', 'rotated'],
  other: ["any other token: a forgery, another key's token, a wrong `alg`, `typ`, `iss` or `aud`", 'invalid'],
} as const satisfies Record<string, readonly [string, RejectReason | 'accepted']>;

const B64URL = /^[A-Za-z0-9_-]*$/;
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** A segment's end is canonical when its length encodes whole bytes and the unused low bits are zero. */
function canonicalSegment(segment: string): boolean {
  if (segment.length === 0 || !B64URL.test(segment)) return false;
  const tail = segment.length % 4;
  const last = ALPHABET.indexOf(segment.charAt(segment.length - 1));
  return tail === 1 ? false : tail === 2 ? (last & 0x0f) === 0 : tail === 3 ? (last & 0x03) === 0 : true;
}

/** The row of the table for `values` (the Authorization lines as sent), written from the docs alone. */
function rowOf(values: readonly string[], current: string, retired: string): keyof typeof ROWS {
  if (values.length === 0) return 'none';
  if (values.length > 1) return 'several';
  // As the HTTP parser hands it over: spaces and tabs around the value removed.
  const value = (values[0] as string).replace(/^[ \t]+|[ \t]+$/g, '');
  const match = /^bearer( {1,64})([^ ]+)$/i.exec(value);
  if (match === null) return 'notBearer';
  const token = match[2] as string;
  if (token.length > MAX_TOKEN_LENGTH) return 'tooLong';
  const parts = token.split('.');
  if (parts.length !== 3 || !parts.every(canonicalSegment) || (parts[2] as string).length !== 43) return 'notCompact';
  if (token === current) return 'current';
  if (token === retired) return 'rotated';
  return 'other';
}

let authority: TokenAuthority;
let server: Server;
let port: number;
const agent = new Agent({ keepAlive: true, maxSockets: 1 });
let current = '';
let retired = '';
/** What `onReject` was told for each request, by the request's id. */
const told = new Map<string, RejectReason>();

beforeAll(async () => {
  authority = await TokenAuthority.open({ store: new MemorySecretStore() });
  retired = authority.issue();
  await authority.rotate();
  current = authority.issue();
  const handler = withAuth(authority, (_req, res) => res.end('ran'), {
    onReject: (info) => void told.set(info.path, info.reason),
  });
  server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  agent.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await authority.close();
});

let requests = 0;

/** Sends one request with these Authorization lines; its status, body, and the reason `onReject` got. */
function send(values: readonly string[]): Promise<{ status: number; body: string; reason: RejectReason | undefined }> {
  const path = `/r${++requests}`;
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | string[]> = {};
    if (values.length > 0) headers['authorization'] = values.length === 1 ? (values[0] as string) : [...values];
    const req = request({ host: '127.0.0.1', port, path, headers, agent }, (res) => {
      let body = '';
      res.setEncoding('latin1').on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, reason: told.get(path) }));
    });
    req.on('error', reject);
    req.end();
  });
}

// What a header value may hold on the wire: visible ASCII, space, tab and obs-text (Node's client sends these).
const wireChar = fc.oneof(
  { weight: 8, arbitrary: fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code)) },
  { weight: 1, arbitrary: fc.constantFrom('\t', '\u00e9', '\u00ff') },
);
const wireString = (maxLength: number): fc.Arbitrary<string> => fc.string({ unit: wireChar, maxLength });
const REASON_WORDS = ['missing', 'malformed', 'invalid', 'rotated', 'suspended', 'accepted', 'Bearer', ''];
const scheme = fc.constantFrom('Bearer', 'bearer', 'BEARER', 'bEaReR', 'Basic', 'Bearer\t', 'Bearerx', '');
const segment = fc.string({ unit: fc.constantFrom(...ALPHABET, '=', '+', '/'), minLength: 0, maxLength: 60 });
const compact = fc
  .tuple(
    segment,
    segment,
    fc.oneof(segment, fc.string({ unit: fc.constantFrom(...ALPHABET), minLength: 43, maxLength: 43 })),
  )
  .map((parts) => parts.join('.'));
const token = fc.oneof(
  fc.constantFrom(...REASON_WORDS),
  compact,
  wireString(40),
  fc.constantFrom('current', 'retired', 'current+x', 'long', 'forged').map((name) => name as string),
  // Three canonical segments: what only the HMAC can tell from a token.
  fc
    .tuple(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 12 }), fc.integer({ min: 0, max: 15 }))
    .map(([a, b, c]) => `${'eyJh'.repeat(a)}.${'eyJz'.repeat(b)}.${'A'.repeat(42)}${ALPHABET.charAt(c * 4)}`),
);
/** One header value: a scheme, some spaces, a token (tokens named `current` etc. are made from the real ones). */
const value = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(scheme, fc.integer({ min: 0, max: 70 }), token).map(([s, n, t]) => ({ s, n, t })) },
  { weight: 2, arbitrary: fc.oneof(wireString(60), fc.constantFrom(...REASON_WORDS)).map((raw) => ({ raw })) },
);

function build(spec: { s: string; n: number; t: string } | { raw: string }): string {
  if ('raw' in spec) return spec.raw;
  const tokenText =
    spec.t === 'current'
      ? current
      : spec.t === 'retired'
        ? retired
        : spec.t === 'current+x'
          ? `${current}x`
          : spec.t === 'forged'
            ? `${current.slice(0, -43)}${'A'.repeat(43)}`
            : spec.t === 'long'
              ? `${current.slice(0, -43)}${'A'.repeat(MAX_TOKEN_LENGTH)}`
              : spec.t;
  return `${spec.s}${' '.repeat(spec.n)}${tokenText}`;
}

describe("the reason onReject gets is the docs table's", () => {
  it("the rows the oracle uses are the docs table's rows, word for word", async () => {
    const docs = await readFile(new URL('../../docs/adapters.md', import.meta.url), 'utf8');
    for (const [row, outcome] of Object.values(ROWS)) {
      expect(docs).toContain(`| ${row} | ${outcome === 'accepted' ? 'accepted' : `\`${outcome}\``} |`);
    }
  });

  it('reason words as header values or tokens are malformed, never their own reason', async () => {
    for (const values of [
      ['Bearer missing'],
      ['invalid'],
      ['missing'],
      ['Bearer malformed'],
      ['Bearer rotated'],
      ['suspended'],
    ]) {
      const answer = await send(values);
      expect(answer).toEqual({ status: 401, body: '', reason: 'malformed' });
    }
  });

  it('for any list of Authorization values', { timeout: 120_000 }, async () => {
    const seen = new Set<keyof typeof ROWS>();
    await fc.assert(
      fc.asyncProperty(
        fc.array(value, { maxLength: 2 }).map((list) => list.map(build)),
        async (values) => {
          const row = rowOf(values, current, retired);
          seen.add(row);
          const answer = await send(values);
          const outcome = ROWS[row][1];
          if (outcome === 'accepted') {
            expect({ status: answer.status, reason: answer.reason }).toEqual({ status: 200, reason: undefined });
          } else {
            // The row's name, not the values: a counterexample may hold the current token.
            expect({ row, status: answer.status, body: answer.body, reason: answer.reason }).toEqual({
              row,
              status: 401,
              body: '',
              reason: outcome,
            });
          }
        },
      ),
      { numRuns: RUNS, seed: SEED },
    );
    // Every row was drawn at least once: the property did not pass by never reaching one.
    expect([...seen].sort()).toEqual(Object.keys(ROWS).sort());
  });
});

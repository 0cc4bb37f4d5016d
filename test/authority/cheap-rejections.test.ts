// The refusals that skip the HMAC (a recently rotated-away token; the current header and claims under another
// signature; a text without the token's shape) refuse exactly those and nothing that must pass, and really skip it:
// node:crypto's createHmac and timingSafeEqual are wrapped, unchanged, in counters. The settled promises are shared, never wrong.
import { createHash } from 'node:crypto';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFinished } from 'vitest';
import { TokenAuthority, type SecretRecord, type SecretStore, type VerifyResult } from 'launcher-auth';
import { until } from '../support/async.js';

// Patched on the module object that every `import ... from 'node:crypto'` reads (syncBuiltinESMExports), so the
// count holds however the test runner shares modules between files; put back after this file.
const hmacs = { count: 0 };
const comparisons = { count: 0 };
const crypto = createRequire(import.meta.url)('node:crypto') as typeof import('node:crypto');
const realCreateHmac = crypto.createHmac;
const realTimingSafeEqual = crypto.timingSafeEqual;
beforeAll(() => {
  crypto.createHmac = (...args: Parameters<typeof realCreateHmac>) => {
    hmacs.count++;
    return realCreateHmac(...args);
  };
  crypto.timingSafeEqual = (...args: Parameters<typeof realTimingSafeEqual>) => {
    comparisons.count++;
    return realTimingSafeEqual(...args);
  };
  syncBuiltinESMExports();
});
afterAll(() => {
  crypto.createHmac = realCreateHmac;
  crypto.timingSafeEqual = realTimingSafeEqual;
  syncBuiltinESMExports();
});
beforeEach(() => {
  hmacs.count = 0;
});

const INVALID = { ok: false, reason: 'invalid' } as const;
const ROTATED = { ok: false, reason: 'rotated' } as const;
const MALFORMED = { ok: false, reason: 'malformed' } as const;
const keyOf = (id: string): Uint8Array =>
  new Uint8Array(createHash('sha256').update(`launcher-auth cheap ${id}`).digest());
const recordOf = (id: string): SecretRecord => ({
  id,
  key: keyOf(id),
  createdAt: new Date('2025-03-04T05:06:07.000Z'),
});

/** A store whose record "another process" can replace, telling the authority through watch(). */
class SwappableStore implements SecretStore {
  #record: SecretRecord | undefined;
  #watchers = new Set<() => void>();
  constructor(record?: SecretRecord) {
    this.#record = record;
  }
  async load(): Promise<SecretRecord | undefined> {
    return this.#record === undefined ? undefined : { ...this.#record, key: new Uint8Array(this.#record.key) };
  }
  async save(record: SecretRecord): Promise<void> {
    this.#record = { ...record, key: new Uint8Array(record.key) };
  }
  watch(onChange: () => void): () => void {
    this.#watchers.add(onChange);
    return () => void this.#watchers.delete(onChange);
  }
  replace(record: SecretRecord): void {
    this.#record = record;
    for (const watcher of [...this.#watchers]) watcher();
  }
}

async function opened(store: SecretStore): Promise<TokenAuthority> {
  const authority = await TokenAuthority.open({ store });
  onTestFinished(() => authority.close());
  return authority;
}

/** The token with its signature replaced by `other`'s (both canonical, 43 characters). */
function withSignatureOf(token: string, other: string): string {
  return `${token.slice(0, token.lastIndexOf('.'))}${other.slice(other.lastIndexOf('.'))}`;
}

/** The answer and how many HMACs it took, through verify() and through authenticate() in two spellings. */
async function answers(
  authority: TokenAuthority,
  token: string,
): Promise<Array<{ result: VerifyResult; hmacs: number }>> {
  const out: Array<{ result: VerifyResult; hmacs: number }> = [];
  for (const call of [
    () => authority.verify(token),
    () => authority.authenticate(`Bearer ${token}`),
    () => authority.authenticate(`bEARER ${token}`),
  ]) {
    hmacs.count = 0;
    const result = await call();
    out.push({ result, hmacs: hmacs.count });
  }
  return out;
}

describe('refusals without an HMAC', () => {
  it('the tokens of the last 2 rotations cost no HMAC; an older one is refused by the HMAC; the current one passes', async () => {
    const authority = await opened(new SwappableStore()); // generated records: one token length for all
    const generations = [authority.issue()];
    for (let i = 0; i < 5; i++) generations.push(await authority.rotate());
    const current = generations.at(-1) as string;
    for (const { result, hmacs: count } of await answers(authority, current)) {
      expect(result.ok).toBe(true);
      expect(count).toBe(0);
    }
    const retired = generations.slice(0, -1).reverse(); // newest first
    for (const [age, old] of retired.entries()) {
      expect(old.length).toBe(current.length); // so every one of them reaches the same-length checks
      for (const { result, hmacs: count } of await answers(authority, old)) {
        // A fixed number of retired tokens is kept (and named as such); older ones cost the HMAC that refuses any forgery.
        expect(result).toEqual(age < 2 ? ROTATED : INVALID);
        expect(count).toBe(age < 2 ? 0 : 1);
      }
    }
  });

  it('what a client sends is never remembered: the same forgery costs its HMAC every time', async () => {
    const authority = await opened(new SwappableStore(recordOf('no-cache')));
    const current = authority.issue();
    const forged = withSignatureOf(
      await new SignJWT({ jti: 'x'.repeat(16), iat: 1 }).setProtectedHeader({ alg: 'HS256' }).sign(keyOf('attacker')),
      current,
    );
    // Counted from here: signing the authority's own token took an HMAC too.
    hmacs.count = 0;
    for (let i = 0; i < 50; i++) expect(await authority.verify(forged)).toEqual(INVALID);
    expect(hmacs.count).toBe(50);
  });

  it('the current header and claims under a signature made with another key: invalid, no HMAC', async () => {
    const authority = await opened(new SwappableStore(recordOf('signing-input')));
    const current = authority.issue();
    const other = await new SignJWT({ sub: 'x' }).setProtectedHeader({ alg: 'HS256' }).sign(keyOf('someone else'));
    const forged = withSignatureOf(current, other);
    expect(forged).not.toBeSameToken(current);
    expect(forged.length).toBe(current.length);
    for (const { result, hmacs: count } of await answers(authority, forged)) {
      expect(result).toEqual(INVALID);
      expect(count).toBe(0);
    }
  });

  it('the current header and claims with a signature that is not canonical base64url: malformed, as before', async () => {
    const authority = await opened(new SwappableStore(recordOf('non-canonical')));
    const current = authority.issue();
    // 43 characters encode 32 bytes and 2 spare bits, which must be zero: 'B' sets one. '!' is no base64url at all.
    for (const last of ['B', '!']) {
      const forged = `${current.slice(0, -1)}${last}`;
      expect(forged).not.toBeSameToken(current);
      for (const { result, hmacs: count } of await answers(authority, forged)) {
        expect(result).toEqual(MALFORMED);
        expect(count).toBe(0);
      }
    }
  });

  it('other claims of the same length signed with another key: only the HMAC can tell, and it does', async () => {
    const record = recordOf('other-claims');
    const authority = await opened(new SwappableStore(record));
    const current = authority.issue();
    const iat = Math.floor(record.createdAt.getTime() / 1000);
    const forged = await new SignJWT({ jti: record.id, iat: iat + 1 })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: record.id })
      .sign(keyOf('not the key'));
    expect(forged.length).toBe(current.length);
    for (const { result, hmacs: count } of await answers(authority, forged)) {
      expect(result).toEqual(INVALID);
      expect(count).toBe(1);
    }
  });

  it('another JWT of the same length, correctly signed with the current key, still passes (through jose)', async () => {
    const record = recordOf('same-length');
    const authority = await opened(new SwappableStore(record));
    const current = authority.issue();
    const iat = Math.floor(record.createdAt.getTime() / 1000);
    // Same header, claims that differ in one digit of iat: same length, other signing input, valid signature.
    const sibling = await new SignJWT({ jti: record.id, iat: iat + 1 })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT', kid: record.id })
      .sign(record.key);
    expect(sibling.length).toBe(current.length);
    expect(sibling === current).toBe(false);
    for (const { result, hmacs: count } of await answers(authority, sibling)) {
      expect(result.ok).toBe(true);
      expect(result.ok && result.claims.iat).toBe(iat + 1);
      expect(count).toBe(1);
    }
  });

  it('a text of the token length without its shape (garbage) is malformed without any comparison or HMAC', async () => {
    const authority = await opened(new SwappableStore(recordOf('garbage')));
    const current = authority.issue();
    const garbage = '#%!*'.repeat(current.length).slice(0, current.length);
    // Nor with one of the token's two dots in its place.
    const dotAt = (at: number): string => `${garbage.slice(0, at)}.${garbage.slice(at + 1)}`;
    const headerEnd = current.indexOf('.');
    const payloadEnd = current.indexOf('.', headerEnd + 1);
    comparisons.count = 0;
    for (const text of [garbage, dotAt(headerEnd), dotAt(payloadEnd)]) {
      for (const { result, hmacs: count } of await answers(authority, text)) {
        expect(result).toEqual(MALFORMED);
        expect(count).toBe(0);
      }
    }
    expect(comparisons.count).toBe(0);
    // The counter counts: the current token takes its one comparison.
    await authority.verify(current);
    expect(comparisons.count).toBe(1);
  });

  it('the current token with one character made non-ASCII is refused, however the character encodes', async () => {
    const authority = await opened(new SwappableStore(recordOf('non-ascii')));
    const current = authority.issue();
    for (const at of [0, 1, current.indexOf('.') + 1, current.length - 2, current.length - 1]) {
      const code = current.charCodeAt(at);
      // Two UTF-8 bytes; three; and one whose low byte is the original character (what Latin-1 would write).
      for (const replacement of [
        'é',
        '\u20ac',
        String.fromCharCode(0x100 + code),
        String.fromCharCode(0xff00 + code),
      ]) {
        const altered = `${current.slice(0, at)}${replacement}${current.slice(at + 1)}`;
        expect(altered.length).toBe(current.length);
        for (const { result } of await answers(authority, altered)) expect(result).toEqual(MALFORMED);
      }
    }
    // The scratch buffers still compare the current token after all those writes.
    for (const { result } of await answers(authority, current)) expect(result.ok).toBe(true);
  });

  it('a store that brings back an earlier secret (a restored backup) makes its token current again', async () => {
    const store = new SwappableStore(recordOf('restored'));
    const authority = await opened(store);
    const first = authority.issue();
    await authority.rotate();
    expect(await authority.verify(first)).toEqual(ROTATED);
    store.replace(recordOf('restored'));
    expect(await until(() => authority.issue() === first)).toBe(true);
    for (const { result, hmacs: count } of await answers(authority, first)) {
      expect(result.ok).toBe(true);
      expect(count).toBe(0);
    }
  });
});

describe('settled promises', () => {
  it('the current token and each cheap refusal get one shared, frozen answer; a rotation gives a new one', async () => {
    const authority = await opened(new SwappableStore(recordOf('promises')));
    const token = authority.issue();
    const first = authority.verify(token);
    expect(authority.verify(token)).toBe(first);
    expect(authority.authenticate(`Bearer ${token}`)).toBe(first);
    const result = await first;
    expect(Object.isFrozen(result)).toBe(true);
    expect(result.ok && Object.isFrozen(result.claims)).toBe(true);
    expect(authority.verify('garbage')).toBe(authority.verify('other garbage'));
    expect(await authority.verify('garbage')).toEqual({ ok: false, reason: 'malformed' });
    await authority.rotate();
    expect(await authority.verify(token)).toEqual(ROTATED);
    const next = authority.verify(authority.issue());
    expect(next).not.toBe(first);
    expect((await next).ok).toBe(true);
  });

  it("jose's answer is frozen all the way down, and its signal still aborts on rotation", async () => {
    const record = recordOf('nested');
    const authority = await opened(new SwappableStore(record));
    const nested = await new SignJWT({ scope: { apps: ['launch', 'list'] } })
      .setProtectedHeader({ alg: 'HS256' })
      .sign(record.key);
    const result = await authority.verify(nested);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const scope = result.claims['scope'] as { apps: string[] };
    expect([
      Object.isFrozen(result),
      Object.isFrozen(result.claims),
      Object.isFrozen(scope),
      Object.isFrozen(scope.apps),
    ]).toEqual([true, true, true, true]);
    expect(Object.isFrozen(result.signal)).toBe(false);
    await authority.rotate();
    expect(result.signal.aborted).toBe(true);
  });
});

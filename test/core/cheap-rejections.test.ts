// The refusals that skip the HMAC (a recently rotated-away token; the current header and claims under another
// signature) refuse exactly those and nothing that must pass; the settled promises are shared, never wrong.
import { createHash } from 'node:crypto';
import { SignJWT } from 'jose';
import { describe, expect, it, onTestFinished } from 'vitest';
import { TokenAuthority, type SecretRecord, type SecretStore } from 'launcher-auth';
import { until } from '../support/async.js';

const INVALID = { ok: false, reason: 'invalid' } as const;
const keyOf = (id: string): Uint8Array => new Uint8Array(createHash('sha256').update(`launcher-auth cheap ${id}`).digest());
const recordOf = (id: string): SecretRecord => ({ id, key: keyOf(id), createdAt: new Date('2025-03-04T05:06:07.000Z') });

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

/** The token with its signature replaced by `signature`'s (both canonical, 43 characters). */
function withSignatureOf(token: string, other: string): string {
  return `${token.slice(0, token.lastIndexOf('.'))}${other.slice(other.lastIndexOf('.'))}`;
}

describe('refusals without an HMAC', () => {
  it('the tokens of the last rotations are refused; so is an older one (by the HMAC); the current one passes', async () => {
    const authority = await opened(new SwappableStore()); // generated records: one token length for all
    const generations = [authority.issue()];
    for (let i = 0; i < 4; i++) generations.push(await authority.rotate());
    const current = generations.at(-1) as string;
    expect(await authority.verify(current)).toMatchObject({ ok: true });
    for (const old of generations.slice(0, -1)) {
      expect(old.length).toBe(current.length); // so every one of them reaches the same-length checks
      expect(await authority.verify(old)).toEqual(INVALID);
      expect(await authority.authenticate(`Bearer ${old}`)).toEqual(INVALID);
    }
  });

  it('the current header and claims under a signature made with another key: invalid', async () => {
    const authority = await opened(new SwappableStore(recordOf('signing-input')));
    const current = authority.issue();
    const other = await new SignJWT({ sub: 'x' }).setProtectedHeader({ alg: 'HS256' }).sign(keyOf('someone else'));
    const forged = withSignatureOf(current, other);
    expect(forged).not.toBe(current);
    expect(forged.length).toBe(current.length);
    expect(await authority.verify(forged)).toEqual(INVALID);
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
    expect(sibling).not.toBe(current);
    const result = await authority.verify(sibling);
    expect(result.ok).toBe(true);
    expect(result.ok && result.claims.iat).toBe(iat + 1);
  });

  it('a store that brings back an earlier secret (a restored backup) makes its token current again', async () => {
    const store = new SwappableStore(recordOf('restored'));
    const authority = await opened(store);
    const first = authority.issue();
    await authority.rotate();
    expect(await authority.verify(first)).toEqual(INVALID);
    store.replace(recordOf('restored'));
    expect(await until(() => authority.issue() === first)).toBe(true);
    expect(await authority.verify(first)).toMatchObject({ ok: true });
    expect(await authority.authenticate(`Bearer ${first}`)).toMatchObject({ ok: true });
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
    expect(await authority.verify(token)).toEqual(INVALID);
    const next = authority.verify(authority.issue());
    expect(next).not.toBe(first);
    expect((await next).ok).toBe(true);
  });
});

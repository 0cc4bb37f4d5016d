// The StoreLink that TokenAuthority hands to a store's watch(): a bound on how long tokens are trusted without the
// store's word (for stores that coordinate instances), the current key id, and reloads a store can wait for.
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  LauncherAuthError,
  TokenAuthority,
  isLauncherAuthError,
  tokenView,
  type SecretRecord,
  type SecretStore,
  type StoreLink,
  type TokenAuthorityOptions,
} from 'launcher-auth';
import { nodeRuntime, runtimeOption, type WithRuntime } from 'launcher-auth/store-kit';
import { until } from '../support/poll.js';

const SUSPENDED = { ok: false, reason: 'suspended' } as const;
const INVALID = { ok: false, reason: 'invalid' } as const;
const keyOf = (id: string): Uint8Array =>
  new Uint8Array(createHash('sha256').update(`launcher-auth link ${id}`).digest());
const recordOf = (id: string): SecretRecord => ({
  id,
  key: keyOf(id),
  createdAt: new Date('2025-06-07T08:09:10.000Z'),
});

/** A store that hands its link and change callback to the test, and whose record the test can replace. */
class LinkedStore implements SecretStore {
  #record: SecretRecord;
  link: StoreLink | undefined;
  onChange: (() => Promise<void>) | undefined;
  unwatched = 0;
  constructor(
    record: SecretRecord,
    readonly setUp?: (link: StoreLink) => Promise<void> | void,
  ) {
    this.#record = record;
  }
  async load(): Promise<SecretRecord> {
    return { ...this.#record, key: new Uint8Array(this.#record.key) };
  }
  async save(record: SecretRecord): Promise<void> {
    this.#record = { ...record, key: new Uint8Array(record.key) };
  }
  async watch(onChange: () => Promise<void>, link: StoreLink): Promise<() => void> {
    this.onChange = onChange;
    this.link = link;
    await this.setUp?.(link);
    return () => void this.unwatched++;
  }
  replace(record: SecretRecord): void {
    this.#record = record;
  }
}

async function opened(options: TokenAuthorityOptions): Promise<TokenAuthority> {
  const authority = await TokenAuthority.open(options);
  onTestFinished(() => authority.close());
  return authority;
}

/** What verify() and authenticate() answer for `token`. */
async function answers(authority: TokenAuthority, token: string): Promise<unknown[]> {
  return [await authority.verify(token), await authority.authenticate(`Bearer ${token}`)];
}

describe('StoreLink.trustUntil', () => {
  it('unbounded by default; a deadline in the past refuses every token as suspended; a later one trusts again', async () => {
    const store = new LinkedStore(recordOf('bound'));
    const authority = await opened({ store });
    const link = store.link as StoreLink;
    const token = authority.issue();
    for (const result of await answers(authority, token)) expect(result).toMatchObject({ ok: true, keyId: 'bound' });

    link.trustUntil(performance.now() - 1);
    for (const result of await answers(authority, token)) expect(result).toEqual(SUSPENDED);

    link.trustUntil(performance.now() + 60_000);
    for (const result of await answers(authority, token)) expect(result).toMatchObject({ ok: true, keyId: 'bound' });

    link.trustUntil(Infinity);
    for (const result of await answers(authority, token)) expect(result).toMatchObject({ ok: true, keyId: 'bound' });
  });

  it('the bound is read from the monotonic clock on every request: once it has passed, the next request is refused', async () => {
    const store = new LinkedStore(recordOf('clock'));
    const authority = await opened({ store });
    const token = authority.issue();
    const deadline = performance.now() + 20;
    (store.link as StoreLink).trustUntil(deadline);
    // No timer of the authority's is involved: the check itself compares the clock with the deadline.
    expect(await until(() => performance.now() > deadline)).toBe(true);
    for (const result of await answers(authority, token)) expect(result).toEqual(SUSPENDED);
  });

  it('a JWT signed with the current key is refused while suspended too (the jose path)', async () => {
    const { SignJWT } = await import('jose');
    const store = new LinkedStore(recordOf('jose'));
    const authority = await opened({ store });
    const other = await new SignJWT({ sub: 'x' }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(keyOf('jose'));
    expect(await authority.verify(other)).toMatchObject({ ok: true });
    (store.link as StoreLink).trustUntil(0);
    expect(await authority.verify(other)).toEqual(SUSPENDED);
  });

  it('a store that sets the bound before watch() resolves: open() returns an authority that already honours it', async () => {
    const store = new LinkedStore(recordOf('early'), (link) => link.trustUntil(-Infinity));
    const authority = await opened({ store });
    expect(await authority.verify(authority.issue())).toEqual(SUSPENDED);
  });

  it('close() wins over any bound: refused as invalid, and a later trustUntil() changes nothing', async () => {
    const store = new LinkedStore(recordOf('closed'));
    const authority = await TokenAuthority.open({ store });
    const token = authority.issue();
    await authority.close();
    (store.link as StoreLink).trustUntil(Infinity);
    expect(await authority.verify(token)).toEqual(INVALID);
    expect(store.unwatched).toBe(1);
  });

  it('a deadline that is not a number is a TypeError for the store', async () => {
    const store = new LinkedStore(recordOf('typed'));
    await opened({ store });
    const message = 'StoreLink.trustUntil: `deadline` must be a performance.now() time in milliseconds.';
    expect(() => (store.link as StoreLink).trustUntil(Number.NaN)).toThrow(new TypeError(message));
    expect(() => (store.link as StoreLink).trustUntil('1' as unknown as number)).toThrow(new TypeError(message));
  });

  it('a deadline without a key id bounds the current key', async () => {
    const store = new LinkedStore(recordOf('current'));
    const authority = await opened({ store });
    (store.link as StoreLink).trustUntil(performance.now() - 1);
    expect(await answers(authority, authority.issue())).toEqual([SUSPENDED, SUSPENDED]);
  });

  it('reportsErrors tells the store whether the host passed onStoreError', async () => {
    const told = new LinkedStore(recordOf('told'));
    await opened({ store: told, onStoreError: () => undefined });
    const silent = new LinkedStore(recordOf('silent'));
    await opened({ store: silent });
    expect([told.link?.reportsErrors, silent.link?.reportsErrors]).toEqual([true, false]);
  });
});

/** An authority on a clock the test sets: `clock.now` is what its `performance.now()` reads. */
async function onClock(store: LinkedStore): Promise<{ authority: TokenAuthority; clock: { now: number } }> {
  const clock = { now: 100 };
  const options: TokenAuthorityOptions & WithRuntime = {
    store,
    [runtimeOption]: { ...nodeRuntime, now: () => clock.now },
  };
  const authority = await opened(options);
  return { authority, clock };
}

describe('the clock', () => {
  it('is read by a verification only while a store bounds the trust (each read costs a request a heap number)', async () => {
    let reads = 0;
    const store = new LinkedStore(recordOf('clock'));
    const options: TokenAuthorityOptions & WithRuntime = {
      store,
      [runtimeOption]: { ...nodeRuntime, now: () => (reads++, performance.now()) },
    };
    const authority = await opened(options);
    reads = 0;
    await answers(authority, authority.issue());
    expect(reads).toBe(0);
    (store.link as StoreLink).trustUntil(performance.now() + 60_000);
    await answers(authority, authority.issue());
    expect(reads).toBe(2);
  });
});

/** The store reports that it now holds `id`'s record, and the authority has adopted it. */
async function changeTo(store: LinkedStore, id: string): Promise<void> {
  store.replace(recordOf(id));
  await (store.onChange as () => Promise<void>)();
  expect((store.link as StoreLink).keyId).toBe(id);
}

describe('StoreLink.trustUntil(deadline, keyId): a bound for the key a rotation is saving', () => {
  it('leaves the current key alone, and lifts a suspension once that key is current', async () => {
    const store = new LinkedStore(recordOf('a'));
    const { authority } = await onClock(store);
    const link = store.link as StoreLink;
    link.trustUntil(50, 'b');
    for (const result of await answers(authority, authority.issue())) expect(result).toMatchObject({ keyId: 'a' });
    link.trustUntil(50);
    link.trustUntil(200, 'b');
    for (const result of await answers(authority, authority.issue())) expect(result).toEqual(SUSPENDED);
    await changeTo(store, 'b');
    for (const result of await answers(authority, authority.issue())) expect(result).toMatchObject({ keyId: 'b' });
  });

  it('the later of the two bounds holds once that key is current', async () => {
    const store = new LinkedStore(recordOf('a'));
    const { authority, clock } = await onClock(store);
    const link = store.link as StoreLink;
    link.trustUntil(300);
    link.trustUntil(150, 'b');
    await changeTo(store, 'b');
    clock.now = 200;
    for (const result of await answers(authority, authority.issue())) expect(result).toMatchObject({ keyId: 'b' });
  });

  it('is dropped when another key becomes current instead', async () => {
    const store = new LinkedStore(recordOf('a'));
    const { authority } = await onClock(store);
    const link = store.link as StoreLink;
    link.trustUntil(50);
    link.trustUntil(500, 'b');
    await changeTo(store, 'c');
    for (const result of await answers(authority, authority.issue())) expect(result).toEqual(SUSPENDED);
  });
});

describe('StoreLink.trustUntil on a clock the test sets', () => {
  it('a token presented at exactly the deadline is refused; a moment before, accepted', async () => {
    const store = new LinkedStore(recordOf('edge'));
    const { authority, clock } = await onClock(store);
    (store.link as StoreLink).trustUntil(1000);
    clock.now = 999.999;
    for (const result of await answers(authority, authority.issue())) expect(result).toMatchObject({ ok: true });
    clock.now = 1000;
    for (const result of await answers(authority, authority.issue())) expect(result).toEqual(SUSPENDED);
  });

  it('a deadline that passes while jose verifies a token refuses it', async () => {
    const { SignJWT } = await import('jose');
    const store = new LinkedStore(recordOf('slow'));
    const { authority, clock } = await onClock(store);
    const other = await new SignJWT({ sub: 'x' }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(keyOf('slow'));
    (store.link as StoreLink).trustUntil(1000);
    expect(await authority.verify(other)).toMatchObject({ ok: true });
    const pending = authority.verify(other);
    clock.now = 1000;
    expect(await pending).toEqual(SUSPENDED);
  });
});

describe('a store whose secret went back (ERR_STORE_ROLLBACK from load)', () => {
  it('open() succeeds with a placeholder key whose token is refused, and onStoreError is told once', async () => {
    const lost = new LauncherAuthError('ERR_STORE_ROLLBACK', 'The stored secret went back to an earlier one.');
    const store = new LinkedStore(recordOf('kept'));
    store.load = () => Promise.reject(lost);
    const errors: Error[] = [];
    const authority = await opened({ store, onStoreError: (error) => void errors.push(error) });
    expect(authority.keyId).not.toBe('kept');
    for (const result of await answers(authority, authority.issue())) expect(result).toEqual(SUSPENDED);
    expect(errors).toEqual([lost]);
    expect(tokenView(authority).state).toBe('lost');
    // A rotation saves a real key: no longer lost, refused until the store vouches for it, then accepted.
    const token = await authority.rotate();
    expect(tokenView(authority).state).toBe('suspended');
    (store.link as StoreLink).trustUntil(Infinity);
    expect(tokenView(authority).state).toBe('ok');
    expect((await authority.verify(token)).ok).toBe(true);
  });
});

describe('StoreLink.keyId and onChange()', () => {
  it('onChange() settles once the reload it asked for is done; keyId then names the adopted key', async () => {
    const store = new LinkedStore(recordOf('first'));
    const authority = await opened({ store });
    const link = store.link as StoreLink;
    expect(link.keyId).toBe('first');
    store.replace(recordOf('second'));
    await (store.onChange as () => Promise<void>)();
    expect(link.keyId).toBe('second');
    expect(authority.keyId).toBe('second');
    // Reports that come while a reload is still queued join it.
    store.replace(recordOf('third'));
    const a = (store.onChange as () => Promise<void>)();
    const b = (store.onChange as () => Promise<void>)();
    expect(a).toBe(b);
    await a;
    expect(link.keyId).toBe('third');
  });

  it('a reload that fails still settles onChange() (it never rejects) and keeps the key', async () => {
    const store = new LinkedStore(recordOf('steady'));
    const errors: Error[] = [];
    await opened({ store, onStoreError: (error) => void errors.push(error) });
    store.replace({ ...recordOf('zeroed'), key: new Uint8Array(32) });
    await expect((store.onChange as () => Promise<void>)()).resolves.toBeUndefined();
    expect((store.link as StoreLink).keyId).toBe('steady');
    expect(errors).toHaveLength(1);
    expect(isLauncherAuthError(errors[0], 'ERR_INVALID_RECORD')).toBe(true);
  });
});

describe('an asynchronous watch()', () => {
  it('open() waits for it, and fails with its error when it rejects', async () => {
    const failure = new Error('the coordination server cannot be reached');
    const store = new LinkedStore(recordOf('down'), async () => {
      throw failure;
    });
    await expect(TokenAuthority.open({ store })).rejects.toBe(failure);
  });

  it('a watch() whose promise resolves to something other than a function: TypeError', async () => {
    const store = {
      load: async () => recordOf('odd'),
      save: async () => undefined,
      watch: async () => 'not a function',
    } as unknown as SecretStore;
    await expect(TokenAuthority.open({ store })).rejects.toThrow(/`store\.watch` must return an unsubscribe function/);
  });
});

describe('keys anyone can guess', () => {
  it.each([
    ['all zero', new Uint8Array(32)],
    ['all 0xff', new Uint8Array(32).fill(0xff)],
    ['64 bytes of one value', new Uint8Array(64).fill(0x41)],
  ])('open() refuses a key whose bytes are %s with ERR_INVALID_RECORD', async (_, key) => {
    const store = new LinkedStore({ ...recordOf('guessable'), key });
    const error = await TokenAuthority.open({ store }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(isLauncherAuthError(error, 'ERR_INVALID_RECORD')).toBe(true);
    expect((error as Error).message).toMatch(/same value/);
  });
});
